package agentloop

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
)

// RewardInput is what a reward function scores.
type RewardInput struct {
	Sample     Sample
	Trajectory *trajectory.Trajectory
	// Response is the decoded response with special tokens skipped (model
	// and observation tokens: verl's solution_str).
	Response string
	// ModelText is the decoded text of the policy's own tokens (mask 1),
	// special tokens skipped: what the model wrote, without tool results.
	ModelText string
}

// RewardFunc scores a finished trajectory. It runs on the trajectory's
// goroutine as soon as the trajectory ends, so scoring overlaps generation.
type RewardFunc func(ctx context.Context, in RewardInput) (float64, error)

// ValidationOptions override sampling for validation runs (verl's
// val_kwargs).
type ValidationOptions struct {
	Sampling server.SamplingParams
	N        int // rollouts per prompt; 0 = 1
}

// Options configure a Manager.
type Options struct {
	// DefaultAgent runs samples with no AgentName; "" = single_turn_agent.
	DefaultAgent string
	// Concurrency bounds the trajectories in flight; 0 = 1024.
	Concurrency int
	// N is the number of rollouts per prompt (a group); 0 = 1.
	N int
	// Sampling is passed to every loop. A Seed here is a base: each rollout
	// is sent RolloutSeed(seed, group, id, rollout), so the N rollouts of a
	// group sample differently and a rerun samples the same.
	Sampling server.SamplingParams
	// Validation is used by ForValidation.
	Validation ValidationOptions
	// Timeout bounds one trajectory; when it fires the trajectory returns
	// partial with StopReason aborted and Extra[ExtraTimeout] true. 0 = none.
	Timeout time.Duration
	// Reward, when set, scores each trajectory as it finishes. Without it a
	// trajectory whose interaction gave a final score gets that score.
	Reward RewardFunc
	// KeepGroup, when set, decides whether a finished group is kept (e.g.
	// drop GRPO groups whose rewards are all equal). Dropped groups are
	// still delivered, with Filtered set, and left out of collation.
	KeepGroup func(group []*trajectory.Trajectory) bool
	// Collate shapes the Batch of Generate; a zero PromptLen skips
	// collation.
	Collate trajectory.CollateOptions
}

// Manager turns samples into trajectories with bounded concurrency. It is
// safe for concurrent use.
type Manager struct {
	reg  *Registry
	env  *Env
	opts Options

	mu    sync.Mutex
	loops map[string]AgentLoop
}

// NewManager checks the options and returns a Manager. Loops are built
// lazily, once per agent name.
func NewManager(reg *Registry, env *Env, opts Options) (*Manager, error) {
	if reg == nil {
		reg = NewRegistry()
	}
	if err := env.check(); err != nil {
		return nil, err
	}
	if opts.Concurrency < 0 || opts.N < 0 || opts.Timeout < 0 || opts.Validation.N < 0 {
		return nil, fmt.Errorf("%w: Concurrency %d, N %d, Timeout %v and Validation.N %d must not be negative",
			ErrConfig, opts.Concurrency, opts.N, opts.Timeout, opts.Validation.N)
	}
	if opts.DefaultAgent == "" {
		opts.DefaultAgent = SingleTurnAgent
	}
	if _, err := reg.Config(opts.DefaultAgent); err != nil {
		return nil, fmt.Errorf("default agent: %w", err)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 1024
	}
	if opts.N == 0 {
		opts.N = 1
	}
	if opts.Validation.N == 0 {
		opts.Validation.N = 1
	}
	return &Manager{reg: reg, env: env, opts: opts, loops: map[string]AgentLoop{}}, nil
}

// ForValidation returns a Manager sharing m's loops that samples with the
// validation settings and keeps every group.
func (m *Manager) ForValidation() *Manager {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := &Manager{reg: m.reg, env: m.env, opts: m.opts, loops: m.loops}
	v.opts.Sampling = m.opts.Validation.Sampling
	v.opts.N = m.opts.Validation.N
	v.opts.KeepGroup = nil
	// Both managers guard the shared map with their own mutex otherwise.
	v.mu = sync.Mutex{}
	v.loops = make(map[string]AgentLoop, len(m.loops))
	for k, l := range m.loops {
		v.loops[k] = l
	}
	return v
}

func (m *Manager) loop(name string) (AgentLoop, error) {
	if name == "" {
		name = m.opts.DefaultAgent
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.loops[name]; ok {
		return l, nil
	}
	l, err := m.reg.New(name, m.env)
	if err != nil {
		return nil, err
	}
	m.loops[name] = l
	return l, nil
}

// Result is one finished group: the n rollouts of one prompt.
type Result struct {
	// Sample is the dataset row the group was made from.
	Sample Sample
	// Trajectories are the rollouts in order; an entry is nil only when its
	// loop could not even encode the prompt (Errs says why).
	Trajectories []*trajectory.Trajectory
	// Errs[i] is the error that ended rollout i (a StopError trajectory, a
	// failed reward function, or no trajectory at all); nil when it ended
	// normally (including aborted).
	Errs []error
	// Outputs[i], for a rollout of a MultiAgentLoop that returned several
	// trajectories, is all of them in order, the last being
	// Trajectories[i]; nil for the other rollouts (and nil when no rollout
	// returned several). All gives every trajectory of the group.
	Outputs [][]*trajectory.Trajectory
	// Filtered is true when Options.KeepGroup dropped the group.
	Filtered bool

	seq int // position of the sample in the input
}

// Err joins the group's errors.
func (r Result) Err() error { return errors.Join(r.Errs...) }

type groupState struct {
	res  Result
	left int
}

// Stream runs every sample received from in and delivers each group as soon
// as all its rollouts finished. The channel is closed after in is closed (or
// ctx is done) and every started group was delivered; the caller must
// receive until then. When ctx is done, Stream stops reading in, and the
// groups already read finish at once with partial trajectories marked
// aborted.
//
// Samples are grouped as in Generate (Sample.GroupID) except that, not
// seeing the whole stream, Stream never numbers them by position: give
// streamed samples an ID, GroupID or distinct Index. A sample one of whose
// trajectory ids is still running is not run; its Result carries an
// ErrSample error for each rollout.
func (m *Manager) Stream(ctx context.Context, in <-chan Sample) <-chan Result {
	out := make(chan Result, 64)
	go func() {
		defer close(out)
		m.dispatch(ctx, func() (Sample, bool) {
			select {
			case <-ctx.Done():
				return Sample{}, false
			case s, ok := <-in:
				return s, ok
			}
		}, func(r Result) { out <- r }, time.Time{})
	}()
	return out
}

// dispatch runs the samples next yields, m.opts.N rollouts each, and calls
// deliver for each finished group (from many goroutines, one at a time per
// group). It returns once all are delivered.
//
// A sample with a rollout id that is still running is not run: its group
// is delivered at once with an ErrSample error for every rollout, since
// two live rollouts with one id would be one request to the engine (abort
// and sticky routing go by it) and one row to the trainer.
//
// Each rollout is traced queued, started and finished. queuedAt, when not
// zero, is when the caller already traced every rollout queued (Generate
// takes the whole batch in at once); otherwise a sample's rollouts are
// queued as it is read.
func (m *Manager) dispatch(ctx context.Context, next func() (Sample, bool), deliver func(Result), queuedAt time.Time) {
	sem := semaphore.NewWeighted(int64(m.opts.Concurrency))
	var g errgroup.Group
	n := m.opts.N
	var liveMu sync.Mutex
	live := map[string]int{} // rollout id → position of its sample
	for seq := 0; ; seq++ {
		s, ok := next()
		if !ok {
			break
		}
		gs := &groupState{res: Result{
			seq:          seq,
			Sample:       s,
			Trajectories: make([]*trajectory.Trajectory, n),
			Errs:         make([]error, n),
		}, left: n}
		rs := make([]Sample, n)
		for r := range rs {
			rs[r] = m.rolloutSample(s, r)
		}
		if err := claim(&liveMu, live, rs, seq); err != nil {
			for r := range gs.res.Errs {
				gs.res.Errs[r] = err
			}
			deliver(gs.res)
			continue
		}
		queued := queuedAt
		if queued.IsZero() {
			queued = time.Now()
			for _, s := range rs {
				m.trace(Event{Kind: EventQueued, TrajectoryID: s.ID, Agent: m.agentName(s)})
			}
		}
		var mu sync.Mutex
		for r := 0; r < n; r++ {
			work := func(start time.Time) {
				t, outs, err := m.runOne(ctx, rs[r])
				m.traceFinished(rs[r], start, t, err)
				liveMu.Lock()
				delete(live, rs[r].ID)
				liveMu.Unlock()
				mu.Lock()
				gs.res.Trajectories[r], gs.res.Errs[r] = t, err
				if outs != nil {
					if gs.res.Outputs == nil {
						gs.res.Outputs = make([][]*trajectory.Trajectory, n)
					}
					gs.res.Outputs[r] = outs
				}
				gs.left--
				done := gs.left == 0
				mu.Unlock()
				if done {
					m.finishGroup(&gs.res)
					deliver(gs.res)
				}
			}
			if err := sem.Acquire(ctx, 1); err != nil {
				// Cancelled: run inline so that the rollout still returns
				// (at once, aborted) without unbounded goroutines.
				work(m.traceStarted(rs[r], queued))
				continue
			}
			// Started is traced here, before the next sample is read and
			// queued, and finished before the slot is released: in the
			// trace's order, the queue and the rollouts running are exact.
			start := m.traceStarted(rs[r], queued)
			g.Go(func() error {
				defer sem.Release(1)
				work(start)
				return nil
			})
		}
	}
	_ = g.Wait() // work reports through deliver
}

func (m *Manager) trace(ev Event) {
	if m.env.Trace != nil {
		m.env.Trace(ev)
	}
}

func (m *Manager) agentName(s Sample) string {
	if s.AgentName == "" {
		return m.opts.DefaultAgent
	}
	return s.AgentName
}

// traceStarted traces rollout s started after waiting since queued, and
// returns the start time.
func (m *Manager) traceStarted(s Sample, queued time.Time) time.Time {
	start := time.Now()
	m.trace(Event{Kind: EventStarted, TrajectoryID: s.ID, Agent: m.agentName(s), Latency: start.Sub(queued)})
	return start
}

// traceFinished traces rollout s finished with what runOne returned.
func (m *Manager) traceFinished(s Sample, start time.Time, t *trajectory.Trajectory, err error) {
	if m.env.Trace == nil {
		return
	}
	ev := Event{Kind: EventFinished, TrajectoryID: s.ID, Agent: m.agentName(s), Latency: time.Since(start), Stop: trajectory.StopError, Err: err}
	if t != nil {
		ev.Stop = t.StopReason
	}
	m.env.Trace(ev)
}

// claim marks the rollouts' ids live, or says which live rollout one of
// them collides with.
func claim(mu *sync.Mutex, live map[string]int, rs []Sample, seq int) error {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range rs {
		if other, ok := live[s.ID]; ok {
			return fmt.Errorf("%w: duplicate trajectory id %q: sample %d came while sample %d still runs it; give samples distinct ID, GroupID or Index",
				ErrSample, s.ID, seq, other)
		}
	}
	for _, s := range rs {
		live[s.ID] = seq
	}
	return nil
}

// rolloutSample is rollout r of s, with its group and trajectory ids.
func (m *Manager) rolloutSample(s Sample, r int) Sample {
	s.GroupID = s.groupID()
	s.Rollout = r
	switch {
	case s.ID == "":
		s.ID = s.GroupID + "/" + strconv.Itoa(r)
	case m.opts.N > 1:
		s.ID = s.ID + "/" + strconv.Itoa(r)
	}
	return s
}

// nameBatch gives each sample of a batch its group id and checks that the
// batch's ids are unambiguous, before anything runs.
//
// verl gives every prompt row of a batch a fresh uid, then repeats the row
// n times, so a GRPO group is exactly the n rollouts of one row. Here a
// sample's group is its GroupID (verl's uid), else its ID, else its Index;
// samples built in code usually set none of them, so when two or more
// samples name nothing and all have Index 0 they are numbered by position
// instead ("0", "1", ...: stable, unlike a random uid, so reruns line up).
// What is left ambiguous is an error: two rollouts with one trajectory id,
// or a derived group id that another sample also has. Samples may share a
// GroupID they set on purpose (rollouts expanded by the caller).
func (m *Manager) nameBatch(samples []Sample) ([]Sample, error) {
	out := slices.Clone(samples)
	unnamed, allZero := 0, true
	for _, s := range out {
		if s.ID == "" && s.GroupID == "" {
			unnamed++
			allZero = allZero && s.Index == 0
		}
	}
	byPosition := unnamed > 1 && allZero
	type owner struct {
		pos     int
		derived bool
	}
	groups := make(map[string]owner, len(out))
	ids := make(map[string]int, len(out)*m.opts.N)
	for i := range out {
		s := &out[i]
		derived := s.GroupID == ""
		if derived && s.ID == "" && byPosition {
			s.GroupID = strconv.Itoa(i)
		} else {
			s.GroupID = s.groupID()
		}
		if o, ok := groups[s.GroupID]; ok && (o.derived || derived) {
			return nil, fmt.Errorf("%w: duplicate group id %q: samples %d and %d (a sample without GroupID is grouped by its ID, else its Index); give each prompt its own ID, GroupID or Index",
				ErrSample, s.GroupID, o.pos, i)
		} else if !ok {
			groups[s.GroupID] = owner{i, derived}
		}
		for r := 0; r < m.opts.N; r++ {
			id := m.rolloutSample(*s, r).ID
			if j, ok := ids[id]; ok {
				return nil, fmt.Errorf("%w: duplicate trajectory id %q: samples %d and %d; give each sample its own ID, GroupID or Index",
					ErrSample, id, j, i)
			}
			ids[id] = i
		}
	}
	return out, nil
}

func (m *Manager) finishGroup(res *Result) {
	if m.opts.KeepGroup == nil {
		return
	}
	for _, t := range res.Trajectories {
		if t == nil {
			return // an incomplete group is kept so that nothing is silently lost
		}
	}
	res.Filtered = !m.opts.KeepGroup(res.Trajectories)
}

// runOne runs one rollout and scores it. outs is non-nil when a
// MultiAgentLoop returned several trajectories; t is then the last.
func (m *Manager) runOne(ctx context.Context, s Sample) (t *trajectory.Trajectory, outs []*trajectory.Trajectory, err error) {
	loop, err := m.loop(s.AgentName)
	if err != nil {
		return nil, nil, fmt.Errorf("sample %s: %w", s.ID, err)
	}
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if m.opts.Timeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, m.opts.Timeout)
	}
	if ml, ok := loop.(MultiAgentLoop); ok {
		t, outs, err = m.runMulti(rctx, ml, s)
	} else {
		t, err = m.safeRun(rctx, loop, s)
	}
	timedOut := rctx.Err() != nil && ctx.Err() == nil
	cancel()
	if t == nil {
		if err == nil {
			err = fmt.Errorf("agentloop: agent %q returned neither a trajectory nor an error for sample %s", s.AgentName, s.ID)
		}
		return nil, nil, err
	}
	// Custom loops may leave the identity to the Manager.
	if t.ID == "" {
		t.ID = s.ID
	}
	if t.GroupID == "" {
		t.GroupID = s.GroupID
	}
	all := outs
	if all == nil {
		all = []*trajectory.Trajectory{t}
	}
	for _, x := range all {
		if x.StopReason == "" {
			x.StopReason = trajectory.StopCompleted
			if err != nil {
				x.StopReason = trajectory.StopError
			}
		}
		if timedOut && x.StopReason == trajectory.StopAborted {
			setExtra(x, ExtraTimeout, true)
		}
	}
	if ctx.Err() != nil {
		return t, outs, err
	}
	if rerr := m.score(ctx, s, t); rerr != nil && err == nil {
		err = rerr
	}
	shareReward(outs)
	return t, outs, err
}

// safeRun turns a panicking loop into an error: one bad custom loop must not
// take down thousands of trajectories.
func (m *Manager) safeRun(ctx context.Context, loop AgentLoop, s Sample) (t *trajectory.Trajectory, err error) {
	defer func() {
		if v := recover(); v != nil {
			t, err = nil, fmt.Errorf("agentloop: agent %q panicked on sample %s: %v", s.AgentName, s.ID, v)
		}
	}()
	return loop.Run(ctx, s, rolloutSampling(m.opts.Sampling, s))
}

// rolloutSampling gives one rollout its own sampling stream. A seed set in
// Options.Sampling is a base: were it passed as it is, every rollout of a
// group would sample the same tokens from the same prompt, and every GRPO
// advantage would be 0. Each rollout gets RolloutSeed(base, its group, its
// trajectory id, its rollout index) instead, the same on every run.
func rolloutSampling(p server.SamplingParams, s Sample) server.SamplingParams {
	if p.Seed != nil {
		seed := RolloutSeed(*p.Seed, s.GroupID, s.ID, s.Rollout)
		p.Seed = &seed
	}
	return p
}

// RolloutSeed derives the sampling seed of one rollout from a base seed, its
// group id (verl's uid), its trajectory id and its index in the group: the
// seeds of the N rollouts of a sample differ, and the same batch gives the
// same seeds on every run. The result fits in 63 bits, because vLLM's seed
// is a signed 64-bit integer (SGLang's sampling_seed and the in-process
// engine take any value). Custom code that issues its own requests for a
// rollout should seed them with it too.
func RolloutSeed(base uint64, group, id string, rollout int) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], base)
	binary.LittleEndian.PutUint64(b[8:], uint64(rollout))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(group))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(id))
	// splitmix64's finalizer: nearby inputs give unrelated seeds.
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return z & (1<<63 - 1)
}

func (m *Manager) score(ctx context.Context, s Sample, t *trajectory.Trajectory) error {
	if m.opts.Reward == nil {
		if raw, ok := t.Extra[ExtraInteractionScore]; ok && t.Reward == nil {
			var v float64
			if err := json.Unmarshal(raw, &v); err == nil {
				t.Reward = &v
			}
		}
		return nil
	}
	t0 := time.Now()
	in := RewardInput{Sample: s, Trajectory: t}
	policy := make([]int32, 0, len(t.ResponseIDs))
	for i, id := range t.ResponseIDs {
		if t.ResponseMask[i] == 1 {
			policy = append(policy, id)
		}
	}
	var err error
	if in.Response, err = m.env.Tokenizer.Decode(t.ResponseIDs, true); err == nil {
		in.ModelText, err = m.env.Tokenizer.Decode(policy, true)
	}
	var v float64
	if err == nil {
		v, err = m.opts.Reward(ctx, in)
		if err == nil {
			t.Reward = &v
		}
	}
	t.Timing.Reward = time.Since(t0)
	m.trace(Event{Kind: EventReward, TrajectoryID: s.ID, Reward: v, Latency: t.Timing.Reward, Err: err})
	if err != nil {
		setExtra(t, ExtraRewardError, err.Error())
		return fmt.Errorf("agentloop: reward of %s: %w", s.ID, err)
	}
	return nil
}

// Output is what Generate returns.
type Output struct {
	// Results has one entry per input sample, in input order.
	Results []Result
	// Trajectories are the kept ones (not filtered, not nil), in input and
	// rollout order; Batch rows follow this order.
	Trajectories []*trajectory.Trajectory
	// Batch is the collated batch; nil when Options.Collate.PromptLen is 0.
	Batch   *trajectory.Batch
	Metrics Metrics
}

// Generate runs a batch. Every sample gets its Result, also when ctx is
// cancelled midway (the unfinished trajectories are then partial and marked
// aborted). Per-trajectory errors are in the Results; the error is about
// the batch: ambiguous ids (wrapping ErrSample; nothing is run; see
// Sample.GroupID) or collation.
func (m *Manager) Generate(ctx context.Context, samples []Sample) (*Output, error) {
	acc := NewAccumulator()
	samples, err := m.nameBatch(samples)
	if err != nil {
		return nil, err
	}
	out := &Output{Results: make([]Result, len(samples))}
	// The whole batch is taken in at once: its rollouts are queued now.
	queued := time.Now()
	if m.env.Trace != nil {
		for _, s := range samples {
			for r := 0; r < m.opts.N; r++ {
				rs := m.rolloutSample(s, r)
				m.env.Trace(Event{Kind: EventQueued, TrajectoryID: rs.ID, Agent: m.agentName(rs)})
			}
		}
	}
	i := 0
	m.dispatch(ctx, func() (Sample, bool) {
		if i == len(samples) {
			return Sample{}, false
		}
		i++
		return samples[i-1], true
	}, func(r Result) {
		out.Results[r.seq] = r // each group writes its own slot
	}, queued)
	for _, r := range out.Results { // in input order: the batch's row order
		acc.Add(r)
	}
	out.Trajectories = acc.Trajectories()
	out.Metrics = acc.Metrics()
	if m.opts.Collate.PromptLen > 0 {
		b, err := acc.Collate(m.opts.Collate)
		if err != nil {
			return out, err
		}
		out.Batch = b
	}
	return out, nil
}
