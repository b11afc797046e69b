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
	N        int // rollouts per prompt; 0 = 1, at most MaxN
}

// Bounds NewManager and Generate check, so that a mistyped count is an
// error at once instead of a batch that never ends and grows without
// bound. Both are far above real use (verl's GRPO groups are 4 to 64
// rollouts; its batches thousands of prompts).
const (
	// MaxN is the largest Options.N and Options.Validation.N.
	MaxN = 1 << 16
	// MaxBatchRollouts is the most rollouts (samples × N) one Generate
	// batch may hold; a larger batch is an ErrConfig error and nothing runs.
	// Stream has no such bound: it holds only the groups in flight.
	MaxBatchRollouts = 1 << 24
)

// Options configure a Manager.
type Options struct {
	// DefaultAgent runs samples with no AgentName; "" = single_turn_agent.
	DefaultAgent string
	// Concurrency bounds the trajectories in flight; 0 = 1024.
	Concurrency int
	// N is the number of rollouts per prompt (a group); 0 = 1, at most
	// MaxN. A Generate batch holds at most MaxBatchRollouts rollouts
	// (samples × N).
	N int
	// Sampling is passed to every loop. A Seed here is a base: each rollout
	// is sent RolloutSeed(seed, group, id, rollout), so the N rollouts of a
	// group sample differently and a rerun samples the same. Logprobs is
	// set (trajectories that train need their rollout logprobs) unless
	// NoLogprobs says otherwise.
	Sampling server.SamplingParams
	// NoLogprobs rolls out without logprobs (Sampling.Logprobs false), for
	// rollouts that will not train or whose engine cannot return them;
	// setting it together with Sampling.Logprobs is an ErrConfig error.
	NoLogprobs bool
	// Validation is used by ForValidation; its Sampling is used as it is
	// (validation scores rollouts, it does not train on them, so logprobs
	// are on only when Validation.Sampling.Logprobs asks).
	Validation ValidationOptions
	// Timeout bounds one trajectory; when it fires the trajectory returns
	// partial with StopReason aborted and Extra[ExtraTimeout] true. 0 = none.
	Timeout time.Duration
	// Reward, when set, scores each trajectory as it finishes. It is
	// required unless RewardFromLoop is set: without a reward every
	// advantage is 0, and nothing else would say so.
	Reward RewardFunc
	// RewardFromLoop declares that the loops score the trajectories
	// themselves, so no Reward is needed: a trajectory whose interaction
	// gave a final score gets that score, and one a custom loop scored
	// keeps its Trajectory.Reward. Set it also for rollouts that need no
	// reward at all. With Reward set it has no effect.
	RewardFromLoop bool
	// KeepGroup, when set, decides whether a finished group is kept (e.g.
	// drop GRPO groups whose rewards are all equal). Dropped groups are
	// still delivered, with Filtered set, and left out of collation.
	KeepGroup func(group []*trajectory.Trajectory) bool
	// Collate shapes the Batch of Generate; a zero PromptLen skips
	// collation, and trajectory.FitLongest pads to the batch's longest.
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

// NewManager checks everything it can before a sample runs and returns a
// Manager: the environment (env must have a Server and a Tokenizer), the
// counts, Sampling and Validation.Sampling (server.SamplingParams.Validate),
// that a reward is given (Reward, or RewardFromLoop), and the default agent, whose loop it builds now, so that a bad factory
// or config (an unknown Config.Format, say) fails here instead of in every
// sample of the first batch. reg nil means NewRegistry(). Loops of other
// agent names are built the first time a sample names them; their configs
// were checked when they were registered.
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
	if opts.N > MaxN || opts.Validation.N > MaxN {
		return nil, fmt.Errorf("%w: N %d and Validation.N %d must be at most MaxN (%d)", ErrConfig, opts.N, opts.Validation.N, MaxN)
	}
	if opts.Reward == nil && !opts.RewardFromLoop {
		return nil, fmt.Errorf("%w: Options.Reward is nil: every trajectory would go unscored and every advantage be 0; set Reward, or RewardFromLoop when interactions or the loops give the rewards", ErrConfig)
	}
	if opts.NoLogprobs && opts.Sampling.Logprobs {
		return nil, fmt.Errorf("%w: Options.NoLogprobs and Options.Sampling.Logprobs are both set", ErrConfig)
	}
	opts.Sampling.Logprobs = !opts.NoLogprobs
	if err := opts.Sampling.Validate(); err != nil {
		return nil, fmt.Errorf("%w: Options.Sampling: %w", ErrConfig, err)
	}
	if err := opts.Validation.Sampling.Validate(); err != nil {
		return nil, fmt.Errorf("%w: Options.Validation.Sampling: %w", ErrConfig, err)
	}
	if opts.DefaultAgent == "" {
		opts.DefaultAgent = SingleTurnAgent
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
	m := &Manager{reg: reg, env: env, opts: opts, loops: map[string]AgentLoop{}}
	if _, err := m.loop(opts.DefaultAgent); err != nil {
		return nil, fmt.Errorf("default agent: %w", err)
	}
	return m, nil
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
// trajectory ids is still running is not run, nor is one that fails
// Sample.Validate; its Result carries an ErrSample error for each rollout.
func (m *Manager) Stream(ctx context.Context, in <-chan Sample) <-chan Result {
	out := make(chan Result, 64)
	go func() {
		defer close(out)
		m.dispatch(ctx, func() (Sample, bool) {
			if ctx.Err() != nil {
				return Sample{}, false // select would pick a ready sample half the time
			}
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
		err := s.Validate()
		if err != nil {
			err = fmt.Errorf("%s: %w", s.describe(seq), err)
		} else {
			err = claim(&liveMu, live, rs, seq)
		}
		if err != nil {
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
//
// The trajectory ids are not built here, only one key per sample: with
// N > 1 every id is "<base>/<rollout>" (base: the ID, else the group id),
// and since a rollout number has no "/", two samples' ids collide exactly
// when their bases do; with N = 1 the key is the one id. So naming takes
// memory for the samples, not for samples × N, and it stops when ctx ends.
func (m *Manager) nameBatch(ctx context.Context, samples []Sample) ([]Sample, error) {
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
	ids := make(map[string]int, len(out)) // rollout-id key → sample
	for i := range out {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("agentloop: naming the batch: %w", err)
			}
		}
		s := &out[i]
		derived := s.GroupID == ""
		if derived && s.ID == "" && byPosition {
			s.GroupID = strconv.Itoa(i)
		} else {
			s.GroupID = s.groupID()
		}
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.describe(i), err)
		}
		if o, ok := groups[s.GroupID]; ok && (o.derived || derived) {
			return nil, fmt.Errorf("%w: duplicate group id %q: samples %d and %d (a sample without GroupID is grouped by its ID, else its Index); give each prompt its own ID, GroupID or Index",
				ErrSample, s.GroupID, o.pos, i)
		} else if !ok {
			groups[s.GroupID] = owner{i, derived}
		}
		key := m.rolloutSample(*s, 0).ID
		if m.opts.N > 1 {
			key = s.ID
			if key == "" {
				key = s.GroupID
			}
		}
		if j, ok := ids[key]; ok {
			return nil, fmt.Errorf("%w: duplicate trajectory id %q: samples %d and %d; give each sample its own ID, GroupID or Index",
				ErrSample, m.rolloutSample(*s, 0).ID, j, i)
		}
		ids[key] = i
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
	// Batch is the collated batch; nil when Options.Collate.PromptLen is 0
	// or no trajectory was kept.
	Batch   *trajectory.Batch
	Metrics Metrics
}

// Generate runs a batch. Every sample gets its Result, also when ctx is
// cancelled midway (the unfinished trajectories are then partial and marked
// aborted; rollouts not started yet end at once, their prompt encoded and
// nothing generated). Per-trajectory errors are in the Results; the error
// is about the batch, and when it is returned nothing has run: ambiguous ids
// or a sample that fails Sample.Validate (wrapping ErrSample and naming the
// sample; see Sample.GroupID), a batch over MaxBatchRollouts
// (ErrConfig), ctx already done (wrapping ctx's error); or collation.
func (m *Manager) Generate(ctx context.Context, samples []Sample) (*Output, error) {
	if len(samples) > MaxBatchRollouts/m.opts.N {
		return nil, fmt.Errorf("%w: a batch of %d samples × N %d is over MaxBatchRollouts (%d); split it",
			ErrConfig, len(samples), m.opts.N, MaxBatchRollouts)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("agentloop: Generate: %w", err)
	}
	acc := NewAccumulator()
	samples, err := m.nameBatch(ctx, samples)
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
	if m.opts.Collate.PromptLen != 0 {
		b, err := acc.Collate(m.opts.Collate)
		if err != nil {
			return out, err
		}
		out.Batch = b
	}
	return out, nil
}
