package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/agentrl/agentrl/cuda/kvcache"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
)

// request is one Generate call as the scheduler sees it.
type request struct {
	id       string
	priority int
	arrival  int64
	params   server.SamplingParams // StopTokenIDs cleared: see stops
	stops    server.StopSet
	prompt   int     // prompt length
	tokens   []int32 // prompt + output so far
	logprobs []float32
	tops     [][]server.TopLogprob // params.TopLogprobs > 0: per output token
	rng      *rand.Rand
	reply    chan result
	stream   *tokenStream // nil unless GenerateStream

	table    *kvcache.Table // nil while waiting
	computed int            // positions whose KV is in the cache
	cached   int            // prompt tokens served from the prefix cache
	admitted bool
	retracts int     // times preempted (its KV freed and recomputed): SGLang's num_retractions
	sampled  bool    // a token was sampled since the last (re)admission
	seen     []int32 // distinct ids in tokens (repetition penalty)
	seenSet  map[int32]struct{}

	planned bool // in the step being planned, with chunk tokens
	chunk   int

	// Prompt logprobs (params.PromptLogprobs): plp[i] is the logprob of
	// prompt position params.PromptLogprobsFrom+i, filled from the rows of
	// the prefill chunks that cover them; plpDone once the last one is.
	plp     []float32
	plpDone bool
}

// before orders requests: higher priority first, then earlier arrival.
func (r *request) before(o *request) bool {
	if r.priority != o.priority {
		return r.priority > o.priority
	}
	return r.arrival < o.arrival
}

type sched struct {
	e       *Engine
	m       *model.Model
	kv      *model.KVCache
	blocks  *kvcache.Manager
	waiting []*request // sorted by before
	running []*request // sorted by before
	asleep  bool
	paused  bool // by Engine.Pause: no steps until Resume
	// draining, by Engine.Pause(PauseWait): admitted requests run to their
	// end, new ones wait; when none is left the engine is paused and the
	// drained channels are closed.
	draining bool
	drained  []chan struct{}
	arrival  int64
	smp      []sampler // one per sampling goroutine
	stats    Stats
	// One step's work (plan → forward → sample → retire), kept between
	// steps for their capacity.
	batch   []model.Seq
	members []*request
	due     []int // indexes in members of the requests to sample
	toks    []int32
	lps     []float32
	tops    [][]server.TopLogprob
	// afterStep, when set (only by tests, through a control op), runs on
	// this goroutine after every step: a deterministic point to act at a
	// given decode count, which polling Stats from outside cannot give a
	// fast build.
	afterStep func(*sched)
}

func newSched(e *Engine) (*sched, error) {
	s := &sched{e: e, m: e.m, smp: make([]sampler, e.m.CPU().Threads())}
	if err := s.allocCache(); err != nil {
		return nil, err
	}
	return s, nil
}

// allocCache allocates the KV cache (in device memory when the model is on
// the GPU, where running out of it is an error here, not at a step).
func (s *sched) allocCache() error {
	var kv *model.KVCache
	var err error
	if s.e.opts.KVCache == model.KVBF16 {
		kv, err = s.m.NewKVCacheBF16(s.e.blocks, s.e.opts.BlockSize)
	} else {
		kv, err = s.m.AllocKVCache(s.e.blocks, s.e.opts.BlockSize)
	}
	if err != nil {
		return err
	}
	s.kv = kv
	s.blocks = kvcache.New(s.e.blocks, s.e.opts.BlockSize)
	return nil
}

// freeCache releases the KV cache.
func (s *sched) freeCache() error {
	var err error
	if s.kv != nil {
		err = s.kv.Close()
	}
	s.kv, s.blocks = nil, nil
	return err
}

func insertSorted(list []*request, r *request) []*request {
	i, _ := slices.BinarySearchFunc(list, r, func(a, b *request) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	return slices.Insert(list, i, r)
}

func remove(list []*request, r *request) ([]*request, bool) {
	if i := slices.Index(list, r); i >= 0 {
		return slices.Delete(list, i, i+1), true
	}
	return list, false
}

// populateStep is how much KV cache memory the idle scheduler maps per
// turn: a few milliseconds of page faults, the longest a request that
// arrives meanwhile waits.
const populateStep = 2 << 20

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (e *Engine) loop(s *sched) {
	defer close(e.done)
	for {
		idle := !s.stepping()
		if idle {
			// While idle, map the KV cache's memory a few milliseconds at a
			// time (model.KVCache.Populate), so that first requests do not
			// pay page faults inside their steps; a closed channel makes the
			// select return at once while there is some left.
			var populate <-chan struct{}
			if s.kv != nil && !s.kv.Populated() {
				populate = closedChan
			}
			select {
			case r := <-e.reqs:
				s.add(r)
			case op := <-e.ctrl:
				s.run(op)
			case <-e.quit:
				s.shutdown()
				return
			case <-populate:
				if s.kv.Populate(populateStep) {
					e.publish(s)
				}
				continue
			}
		}
	drain:
		for {
			select {
			case r := <-e.reqs:
				s.add(r)
			case op := <-e.ctrl:
				s.run(op)
			case <-e.quit:
				s.shutdown()
				return
			default:
				break drain
			}
		}
		if s.stepping() {
			s.step()
			if s.afterStep != nil {
				s.afterStep(s)
			}
		}
		s.checkDrained()
		e.publish(s)
	}
}

// stepping reports whether there is work to step: requests, and neither
// sleep nor pause holding them.
func (s *sched) stepping() bool {
	return !s.asleep && !s.paused && (len(s.running) > 0 || s.nextAdmit() >= 0)
}

// nextAdmit is the index in s.waiting of the request to admit next, -1 if
// none: the first, or while draining the first that was admitted before
// (preempted), as a draining engine starts nothing new.
func (s *sched) nextAdmit() int {
	if !s.draining {
		if len(s.waiting) > 0 {
			return 0
		}
		return -1
	}
	return slices.IndexFunc(s.waiting, func(r *request) bool { return r.admitted })
}

// startDrain starts (or joins) a drain: the channel is closed when it
// ends.
func (s *sched) startDrain() chan struct{} {
	s.draining = true
	ch := make(chan struct{})
	s.drained = append(s.drained, ch)
	return ch
}

// checkDrained ends a drain once nothing admitted is left: the engine is
// then paused, and Pause(PauseWait) returns.
func (s *sched) checkDrained() {
	if !s.draining || len(s.running) > 0 || s.nextAdmit() >= 0 {
		return
	}
	s.draining, s.paused = false, true
	s.e.publish(s) // before Pause returns, so its caller sees the pause in Stats
	s.releaseDrained()
}

func (s *sched) releaseDrained() {
	for _, ch := range s.drained {
		close(ch)
	}
	s.drained = nil
}

func (s *sched) run(op ctrlOp) {
	err := op.f(s)
	s.checkDrained()
	s.e.publish(s) // before replying, so callers see the op's effect in Stats
	if op.reply != nil {
		op.reply <- err
	}
}

func (s *sched) add(r *request) {
	if r.params.PromptLogprobs {
		r.plp = make([]float32, r.prompt-r.params.PromptLogprobsFrom)
		for i := range r.plp {
			r.plp[i] = float32(math.NaN())
		}
		r.plpDone = r.plpFirstRow() > r.prompt-2
	}
	s.arrival++
	r.arrival = s.arrival
	r.seenSet = map[int32]struct{}{}
	for _, id := range r.tokens {
		r.see(id)
	}
	s.stats.Requests++
	s.waiting = insertSorted(s.waiting, r)
}

func (r *request) see(id int32) {
	if _, ok := r.seenSet[id]; !ok {
		r.seenSet[id] = struct{}{}
		r.seen = append(r.seen, id)
	}
}

func (r *request) output(reason server.StopReason, version int64) server.TokenOutput {
	out := server.TokenOutput{
		TokenIDs:      slices.Clone(r.tokens[r.prompt:]),
		StopReason:    reason,
		PromptTokens:  r.prompt,
		CachedTokens:  r.cached,
		WeightVersion: version,
		Retractions:   r.retracts,
	}
	if r.params.Logprobs {
		out.Logprobs = slices.Clone(r.logprobs)
	}
	if r.params.PromptLogprobs {
		out.PromptLogprobs = slices.Clone(r.plp)
	}
	if r.params.TopLogprobs > 0 {
		// The inner slices are never written again: sharing them is safe.
		out.TopLogprobs = slices.Clone(r.tops)
	}
	return out
}

// finish releases r's blocks, removes it from the queues and replies.
func (s *sched) finish(r *request, reason server.StopReason, err error) {
	if r.table != nil {
		s.blocks.Release(r.table)
		r.table = nil
	}
	s.running, _ = remove(s.running, r)
	s.waiting, _ = remove(s.waiting, r)
	// Published before the reply, as run does for control ops: a caller
	// whose Generate has returned must not see its request still running
	// (or its blocks still held) in Stats, which the loop would otherwise
	// publish only after the step.
	s.e.publish(s)
	r.reply <- result{out: r.output(reason, s.e.version.Load()), err: err}
}

// abort finishes r with StopAbort if it is still in flight.
func (s *sched) abort(r *request, err error) {
	if slices.Contains(s.running, r) || slices.Contains(s.waiting, r) {
		s.finish(r, server.StopAbort, err)
	}
}

func (s *sched) abortWhere(pred func(*request) bool) {
	for _, list := range [][]*request{slices.Clone(s.running), slices.Clone(s.waiting)} {
		for _, r := range list {
			if pred(r) {
				s.finish(r, server.StopAbort, nil)
			}
		}
	}
}

func (s *sched) shutdown() {
	for _, list := range [][]*request{slices.Clone(s.running), slices.Clone(s.waiting)} {
		for _, r := range list {
			s.finish(r, server.StopAbort, &server.Error{Server: s.e.name, Op: "generate", Err: errClosed})
		}
	}
	s.e.closeErr = s.freeCache()
}

// preempt returns r's blocks and puts it back in the queue; it resumes by
// recomputing its KV (tokens are kept).
func (s *sched) preempt(r *request) {
	if r.table != nil {
		s.blocks.Release(r.table)
		r.table = nil
	}
	r.computed = 0
	r.retracts++
	s.running, _ = remove(s.running, r)
	s.waiting = insertSorted(s.waiting, r)
	s.stats.Preemptions++
}

func (s *sched) preemptAll() {
	for _, r := range slices.Clone(s.running) {
		s.preempt(r)
	}
}

// step runs one engine iteration in nano-vllm's stages: plan the batch,
// run the forward pass, sample the requests whose chunk reached the end
// of their tokens, and retire the ones that stopped.
func (s *sched) step() {
	if !s.plan() {
		return
	}
	logits, ok := s.forward()
	if !ok {
		return
	}
	s.sample(logits)
	s.retire()
}

// plan picks this step's work within the token budget: decode tokens and
// continuing prefills of running requests first (preempting the lowest
// priority to make room), then newly admitted requests. It fills
// s.batch and s.members (same order) and reports whether there is work.
func (s *sched) plan() bool {
	budget := s.e.opts.MaxBatchTokens
	s.batch, s.members = s.batch[:0], s.members[:0]
	for _, r := range s.running {
		r.planned, r.chunk = false, 0
	}
	for i := 0; i < len(s.running) && budget > 0; i++ {
		r := s.running[i]
		n := min(len(r.tokens)-r.computed, budget, s.chunkCap(r))
		// Make room for the positions this chunk writes; preempt the
		// lowest-priority latest request (possibly r) until it fits.
		preempted := false
		for {
			err := s.blocks.Grow(r.table, r.computed+n)
			if err == nil {
				break
			}
			victim := s.running[len(s.running)-1]
			if victim.planned {
				victim = r // never evict what is already in this batch
			}
			s.preempt(victim)
			if victim == r {
				preempted = true
				break
			}
		}
		if preempted {
			i--
			continue
		}
		r.planned, r.chunk = true, n
		budget -= n
	}
	for budget > 0 && len(s.running) < s.e.opts.MaxSeqs {
		i := s.nextAdmit()
		if i < 0 {
			break
		}
		r := s.waiting[i]
		table, cached, err := s.acquire(r)
		if errors.Is(err, kvcache.ErrNoSpace) {
			break
		}
		s.waiting = slices.Delete(s.waiting, i, i+1)
		r.table, r.computed, r.sampled = table, cached, false
		if !r.admitted {
			r.admitted = true
			r.cached = min(cached, r.prompt)
			s.stats.PromptTokens += int64(r.prompt)
			s.stats.CachedTokens += int64(r.cached)
		}
		s.running = insertSorted(s.running, r)
		n := min(len(r.tokens)-r.computed, budget, s.chunkCap(r))
		r.planned, r.chunk = true, n
		budget -= n
	}
	for _, r := range s.running {
		if !r.planned || r.chunk == 0 {
			continue
		}
		s.batch = append(s.batch, model.Seq{Tokens: r.tokens[r.computed : r.computed+r.chunk], Start: r.computed, Blocks: r.table.Blocks,
			AllLogits: r.wantsPromptRows(r.computed, r.computed+r.chunk)})
		s.members = append(s.members, r)
	}
	// Samples of one prompt decode together when they sit side by side in
	// the batch: the attention kernel then reads the prompt's cached
	// blocks once per step for all of them (decode groups). Sequences that
	// share their first block are put next to each other; a sequence's
	// results do not depend on its place in the batch.
	sort.Stable(batchOrder{s.batch, s.members})
	return len(s.batch) > 0
}

// batchOrder sorts a planned batch and its members together by the
// sequences' first cache block.
type batchOrder struct {
	b []model.Seq
	m []*request
}

func (o batchOrder) Len() int           { return len(o.b) }
func (o batchOrder) Less(i, j int) bool { return o.b[i].Blocks[0] < o.b[j].Blocks[0] }
func (o batchOrder) Swap(i, j int) {
	o.b[i], o.b[j] = o.b[j], o.b[i]
	o.m[i], o.m[j] = o.m[j], o.m[i]
}

// forward runs the planned batch, advances each member's computed
// positions, publishes their full blocks in the prefix cache and lists in
// s.due the members whose chunk reached the end of their tokens. A failed
// forward aborts the batch's requests (false).
func (s *sched) forward() ([][]float32, bool) {
	logits, err := s.m.Forward(s.kv, s.batch)
	if err != nil {
		for _, r := range slices.Clone(s.members) {
			s.finish(r, server.StopAbort, &server.Error{Server: s.e.name, Op: "generate", Err: fmt.Errorf("forward: %w", err)})
		}
		return nil, false
	}
	s.stats.Steps++
	tokens := 0
	for _, q := range s.batch {
		tokens += len(q.Tokens)
	}
	s.stats.BatchTokensMax = max(s.stats.BatchTokensMax, tokens)
	s.stats.BatchSeqsMax = max(s.stats.BatchSeqsMax, len(s.batch))
	s.stats.BatchSeqsSum += int64(len(s.batch))
	s.promptLogprobs(logits)
	s.due = s.due[:0]
	for i, r := range s.members {
		n := len(s.batch[i].Tokens)
		if !r.sampled {
			s.stats.PrefillTokens += int64(n)
		}
		r.computed += n
		s.blocks.Commit(r.table, r.tokens, r.computed)
		if r.computed == len(r.tokens) {
			s.due = append(s.due, i)
		}
	}
	return logits, true
}

// sample draws the next token of every due member into s.toks and
// s.lps. Sampling is per request (own random stream, own row of logits),
// so it splits over goroutines without changing any result.
func (s *sched) sample(logits [][]float32) {
	due := s.due
	s.toks, s.lps = slices.Grow(s.toks[:0], len(due))[:len(due)], slices.Grow(s.lps[:0], len(due))[:len(due)]
	s.tops = slices.Grow(s.tops[:0], len(due))[:len(due)]
	workers := min(len(s.smp), len(due))
	s.m.CPU().Split(workers, func(lo, hi int) {
		for w := lo; w < hi; w++ { // sampler w on one goroutine
			for j := w; j < len(due); j += workers {
				r := s.members[due[j]]
				smp := &s.smp[w]
				s.toks[j], s.lps[j] = smp.sample(logits[due[j]], &r.params, r.seenIfPenalized(), r.outputIfPenalized(), r.rng)
				s.tops[j] = nil
				if k := r.params.TopLogprobs; k > 0 {
					s.tops[j] = smp.top(make([]server.TopLogprob, 0, k), k)
				}
			}
		}
	})
}

// retire appends the sampled tokens and finishes the requests that hit a
// stop token, their token limit or the context's end.
func (s *sched) retire() {
	for j, i := range s.due {
		r := s.members[i]
		tok, lp, top := s.toks[j], s.lps[j], s.tops[j]
		r.sampled = true
		r.tokens = append(r.tokens, tok)
		r.logprobs = append(r.logprobs, lp)
		if r.params.TopLogprobs > 0 {
			r.tops = append(r.tops, top)
		}
		r.see(tok)
		if r.stream != nil {
			r.stream.push(tok, lp, top)
		}
		s.stats.DecodeTokens++
		switch {
		case r.stops.Has(tok):
			s.finish(r, server.StopEOS, nil)
		case r.params.MaxNewTokens > 0 && len(r.tokens)-r.prompt >= r.params.MaxNewTokens,
			len(r.tokens) >= s.e.maxCtx:
			s.finish(r, server.StopLength, nil)
		}
	}
}

// outputIfPenalized is r's output so far when a presence or frequency
// penalty needs it (vLLM counts the output tokens only), else nil.
func (r *request) outputIfPenalized() []int32 {
	if r.params.PresencePenalty != 0 || r.params.FrequencyPenalty != 0 {
		return r.tokens[r.prompt:]
	}
	return nil
}

func (r *request) seenIfPenalized() []int32 {
	if rp := r.params.RepetitionPenalty; rp > 0 && rp != 1 {
		return r.seen
	}
	return nil
}

func (s *sched) sleep(level server.SleepLevel) error {
	s.preemptAll()
	err := s.freeCache()
	if level == server.SleepWeights {
		s.m.DropWeights()
	}
	s.asleep = true
	return err
}

func (s *sched) wake() error {
	if !s.asleep {
		return nil
	}
	if miss := s.m.Missing(); len(miss) > 0 {
		if s.e.dir == "" {
			return fmt.Errorf("%w: %d weights missing after Sleep(SleepWeights) (first: %s); send them with UpdateWeights before WakeUp",
				server.ErrBadRequest, len(miss), miss[0])
		}
		if err := s.m.LoadWeights(s.e.dir); err != nil {
			return err
		}
	}
	if err := s.allocCache(); err != nil {
		return err
	}
	s.asleep = false
	return nil
}

func (s *sched) updateWeights(w server.Weights) error {
	if w.Path != "" {
		if err := s.m.LoadWeights(w.Path); err != nil {
			return err
		}
	}
	for _, t := range w.Tensors {
		if err := s.m.SetTensor(t.Name, t.Shape, t.Data); err != nil {
			return err
		}
	}
	s.e.version.Store(w.Version)
	// KV computed with the old weights is stale.
	s.preemptAll()
	if s.blocks != nil {
		s.blocks.Reset()
	}
	return nil
}
