package cuda

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/kvcache"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
)

// Options configure an Engine. Zero values pick the defaults noted;
// negative sizes are errors from Open and New.
type Options struct {
	// Name identifies the engine in errors (default "cuda").
	Name string
	// Threads is the number of goroutines each kernel is split over
	// (default: GOMAXPROCS). Open uses it; New runs on the model's own
	// kernels.CPU.
	Threads int
	// BlockSize is the number of positions per KV block (default 16).
	BlockSize int
	// KVBlocks is the number of KV blocks. Default: as many as KVMemory
	// holds, but no more than MaxSeqs full contexts.
	KVBlocks int
	// KVMemory is the KV cache size in bytes when KVBlocks is 0 (default 1 GiB).
	KVMemory int64
	// KVCache is how the cache stores keys and values: model.KVF32 (or
	// empty: the default) or model.KVBF16 (a CPU model only), which holds
	// twice the positions in KVMemory and reads half the bytes per
	// position in decode.
	KVCache model.KVType
	// MaxBatchTokens is the per-step token budget: decode tokens plus
	// prefill chunks (default 512).
	MaxBatchTokens int
	// MaxSeqs caps the number of sequences running at once (default 64).
	MaxSeqs int
	// MaxContext caps prompt + output length (default: the model's
	// max_position_embeddings; never more than the whole KV cache).
	MaxContext int
	// Device is where Open puts the model: model.CPU (default) or
	// model.CUDA, which needs a binary built with the `cuda` tag (else
	// the error wraps model.ErrNoCUDA). New runs where its model is.
	Device model.Device
	// Weights is how Open stores a CPU model's matrices: model.WeightsAuto
	// (default: bf16 for a bf16 checkpoint, else fp32), WeightsBF16,
	// WeightsBF16Z (bf16 compressed losslessly: bf16's results from fewer
	// bytes), WeightsF32 or WeightsInt8 (llama.cpp's Q8_0 values,
	// quantized at load). Activations are fp32 in every case; the KV
	// cache is as KVCache says.
	Weights model.WeightType
	// CopyWeights loads every matrix into the engine's own memory.
	// Without it (the default) the matrices of a bf16 checkpoint, or of a
	// packed one (agentrl model pack), are used in place from a read-only
	// mapping of the files, as llama.cpp does: loading copies nothing, and
	// the files must be replaced by renaming new ones over them, never
	// rewritten in place, while the engine runs; a change in place fails
	// every request with an error naming the file (model.LoadOptions.Copy).
	CopyWeights bool
}

// Stats are engine counters since it started.
type Stats struct {
	Running, Waiting int
	KVBlocks         int
	FreeBlocks       int // unreferenced blocks (including cached ones)
	CachedBlocks     int // blocks findable in the prefix cache
	Requests         int64
	PromptTokens     int64 // prompt tokens of admitted requests
	CachedTokens     int64 // of those, served from the prefix cache
	PrefillTokens    int64 // positions computed for prompts (including recompute after preemption)
	DecodeTokens     int64 // tokens sampled
	Preemptions      int64
	Steps            int64
	BatchTokensMax   int   // most tokens in one forward pass
	BatchSeqsMax     int   // most sequences in one forward pass
	BatchSeqsSum     int64 // Σ sequences per step (mean = BatchSeqsSum/Steps)
	WeightVersion    int64
	Asleep           bool
	Paused           bool // by Pause, until Resume
	// KVPopulated: the KV cache's memory is all mapped. The scheduler maps
	// it while idle after start and wake-up; until then first uses of
	// cache blocks pay page faults inside steps (benchmarks wait for it).
	KVPopulated bool
}

// Engine is the in-process LLM engine. It implements server.LLMServer,
// server.Aborter, server.Sleeper, server.WeightUpdater,
// server.HealthChecker, server.CacheFlusher and server.Pauser. One scheduler goroutine owns all model, cache and
// request state; Close stops it.
type Engine struct {
	name    string
	m       *model.Model
	dir     string
	opts    Options
	vocab   int
	maxCtx  int
	blocks  int
	reqs    chan *request
	ctrl    chan ctrlOp
	quit    chan struct{}
	done    chan struct{}
	closing sync.Once
	version atomic.Int64
	// ownsModel: made by Open, so Close releases the model (its device
	// memory; nothing on the CPU).
	ownsModel bool
	closeErr  error // set by the scheduler goroutine before done closes

	statsMu sync.Mutex
	stats   Stats
}

// Compile-time checks of the capabilities.
var (
	_ server.LLMServer     = (*Engine)(nil)
	_ server.Aborter       = (*Engine)(nil)
	_ server.Sleeper       = (*Engine)(nil)
	_ server.WeightUpdater = (*Engine)(nil)
	_ server.HealthChecker = (*Engine)(nil)
	_ server.CacheFlusher  = (*Engine)(nil)
	_ server.Pauser        = (*Engine)(nil)
)

// Open loads the model in a Hugging Face directory and starts an engine.
// Negative sizes in opts are an error, before anything is loaded.
func Open(dir string, opts Options) (*Engine, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	m, err := model.LoadWith(dir, kernels.NewCPU(opts.Threads), model.LoadOptions{Device: opts.Device, Weights: opts.Weights, Copy: opts.CopyWeights})
	if err != nil {
		return nil, err
	}
	e, err := New(m, opts)
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	e.dir = dir
	e.ownsModel = true
	return e, nil
}

// New starts an engine on a loaded model. A nil model and negative sizes
// in opts are errors.
func New(m *model.Model, opts Options) (*Engine, error) {
	if m == nil {
		return nil, errors.New("cuda: New: nil model")
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	cfg := m.Config()
	if opts.Name == "" {
		opts.Name = "cuda"
	}
	if opts.BlockSize <= 0 {
		opts.BlockSize = 16
	}
	if opts.MaxBatchTokens <= 0 {
		opts.MaxBatchTokens = 512
	}
	if opts.MaxSeqs <= 0 {
		opts.MaxSeqs = 64
	}
	if opts.KVMemory <= 0 {
		opts.KVMemory = 1 << 30
	}
	kvType, err := model.ParseKVType(string(opts.KVCache))
	if err != nil {
		return nil, fmt.Errorf("cuda: Options.KVCache: %w", err)
	}
	if kvType == model.KVBF16 && m.Device() != model.CPU {
		return nil, fmt.Errorf("cuda: Options.KVCache: a bf16 KV cache is for models on the CPU, not %v", m.Device())
	}
	opts.KVCache = kvType
	maxCtx := cfg.MaxPositionEmbeddings
	if opts.MaxContext > 0 && opts.MaxContext < maxCtx {
		maxCtx = opts.MaxContext
	}
	nb := opts.KVBlocks
	if nb <= 0 {
		nb = int(opts.KVMemory / cfg.BytesPerBlock(opts.KVCache, opts.BlockSize))
		perSeq := (maxCtx + opts.BlockSize - 1) / opts.BlockSize
		nb = min(nb, opts.MaxSeqs*perSeq)
	}
	if nb < 1 {
		return nil, fmt.Errorf("cuda: KV cache of %d blocks is too small", nb)
	}
	// A single sequence must always fit in an empty cache, or it could be
	// preempted forever.
	maxCtx = min(maxCtx, nb*opts.BlockSize)
	e := &Engine{
		name: opts.Name, m: m, opts: opts, vocab: cfg.VocabSize, maxCtx: maxCtx, blocks: nb,
		reqs: make(chan *request), ctrl: make(chan ctrlOp), quit: make(chan struct{}), done: make(chan struct{}),
	}
	s, err := newSched(e)
	if err != nil {
		return nil, err
	}
	e.publish(s)
	go e.loop(s)
	return e, nil
}

// Model returns the engine's model.
func (e *Engine) Model() *model.Model { return e.m }

// MaxContext is the longest prompt + output the engine accepts.
func (e *Engine) MaxContext() int { return e.maxCtx }

// Close stops the scheduler. In-flight Generate calls return what they
// have with StopAbort and an error wrapping server.ErrUnavailable. It
// frees the KV cache and, for an engine made by Open, the model: on the
// GPU that is device memory, which the garbage collector cannot reclaim.
func (e *Engine) Close() error {
	var err error
	e.closing.Do(func() {
		close(e.quit)
		<-e.done
		err = e.closeErr
		if e.ownsModel {
			err = errors.Join(err, e.m.Close())
		}
	})
	<-e.done
	return err
}

func (e *Engine) err(op string, err error) error {
	return &server.Error{Server: e.name, Op: op, Err: err}
}

var errClosed = fmt.Errorf("%w: engine closed", server.ErrUnavailable)

type result struct {
	out server.TokenOutput
	err error
}

// Generate runs one request to completion (stop token, length, abort or
// context cancellation). Cancelling ctx aborts the request: the tokens
// produced so far come back with StopAbort, together with ctx's error.
func (e *Engine) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	r, err := e.submit(ctx, req, false)
	if err != nil {
		return server.TokenOutput{}, err
	}
	return e.await(ctx, r, nil)
}

// GenerateStream is Generate that hands each sampled token (and its logprob
// when asked) to emit as the scheduler samples it. The scheduler never
// waits for emit: it appends the token to the request's stream buffer and
// goes on with the next step, and emit runs on the caller's goroutine,
// receiving every token sampled since its previous call (one or more when
// the caller is slower than the steps). The output is the one Generate
// returns. An error from emit aborts the request; GenerateStream then
// returns that error.
func (e *Engine) GenerateStream(ctx context.Context, req server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	if emit == nil {
		return server.TokenOutput{}, &server.Error{Server: e.name, Op: "generate",
			Err: fmt.Errorf("%w: GenerateStream needs an emit function", server.ErrBadRequest)}
	}
	r, err := e.submit(ctx, req, true)
	if err != nil {
		return server.TokenOutput{}, err
	}
	return e.await(ctx, r, emit)
}

// tokenStream carries a streamed request's tokens from the scheduler to
// its caller without ever blocking the scheduler.
type tokenStream struct {
	mu     sync.Mutex
	ids    []int32
	lps    []float32
	tops   [][]server.TopLogprob // nil unless the request asked for them
	notify chan struct{}         // capacity 1: "there is something new"
}

// push runs on the scheduler goroutine; top is nil unless the request
// asked for alternatives.
func (t *tokenStream) push(tok int32, lp float32, top []server.TopLogprob) {
	t.mu.Lock()
	t.ids = append(t.ids, tok)
	t.lps = append(t.lps, lp)
	if top != nil {
		t.tops = append(t.tops, top)
	}
	t.mu.Unlock()
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// take returns what was pushed since the last take; the slices are the
// caller's.
func (t *tokenStream) take() streamed {
	t.mu.Lock()
	got := streamed{t.ids, t.lps, t.tops}
	t.ids, t.lps, t.tops = nil, nil, nil
	t.mu.Unlock()
	return got
}

// streamed is a run of tokens taken from a tokenStream.
type streamed struct {
	ids  []int32
	lps  []float32
	tops [][]server.TopLogprob
}

// submit validates req and hands it to the scheduler.
func (e *Engine) submit(ctx context.Context, req server.GenerateRequest, stream bool) (*request, error) {
	if err := e.validate(&req); err != nil {
		return nil, &server.Error{Server: e.name, Op: "generate", Err: err}
	}
	seed := rand.Uint64()
	if req.Params.Seed != nil {
		seed = *req.Params.Seed
	}
	r := &request{
		id: req.RequestID, priority: req.Priority, params: req.Params,
		prompt: len(req.PromptIDs), tokens: append([]int32(nil), req.PromptIDs...),
		rng:   rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		reply: make(chan result, 1),
		// Checked after every sampled token: a set, so a long list costs
		// its length once, not once per token.
		stops: server.NewStopSet(req.Params.StopTokenIDs),
	}
	r.params.StopTokenIDs = nil // the scheduler reads stops
	if stream {
		r.stream = &tokenStream{notify: make(chan struct{}, 1)}
	}
	select {
	case e.reqs <- r:
	case <-e.done:
		return nil, &server.Error{Server: e.name, Op: "generate", Retryable: true, Err: errClosed}
	case <-ctx.Done():
		return nil, &server.Error{Server: e.name, Op: "generate", Retryable: true, Err: ctx.Err()}
	}
	return r, nil
}

// await waits for r's reply, streaming its tokens to emit (when non-nil) as
// they come. Cancelling ctx, or emit failing, aborts r.
func (e *Engine) await(ctx context.Context, r *request, emit func(server.Chunk) error) (server.TokenOutput, error) {
	var notify chan struct{}
	if emit != nil {
		notify = r.stream.notify
	}
	emitted := 0
	send := func(got streamed) error {
		if len(got.ids) == 0 {
			return nil
		}
		c := server.Chunk{TokenIDs: got.ids}
		if r.params.Logprobs {
			c.Logprobs = got.lps
		}
		if r.params.TopLogprobs > 0 {
			c.TopLogprobs = got.tops
		}
		emitted += len(got.ids)
		return emit(c)
	}
	var emitErr error
wait:
	for {
		select {
		case res := <-r.reply:
			if emit != nil && res.err == nil {
				// Every token was pushed before the reply was sent.
				if err := send(r.stream.take()); err != nil {
					return res.out, err
				}
				if len(res.out.TokenIDs) > emitted { // not expected, by the push order; kept for the contract
					rest := streamed{ids: res.out.TokenIDs[emitted:]}
					if r.params.Logprobs {
						rest.lps = res.out.Logprobs[emitted:]
					}
					if r.params.TopLogprobs > 0 {
						rest.tops = res.out.TopLogprobs[emitted:]
					}
					if err := send(rest); err != nil {
						return res.out, err
					}
				}
			}
			return res.out, res.err
		case <-notify:
			if emitErr = send(r.stream.take()); emitErr != nil {
				break wait
			}
		case <-ctx.Done():
			break wait
		}
	}
	// Abort it; the scheduler replies exactly once either way.
	select {
	case e.ctrl <- ctrlOp{f: func(s *sched) error { s.abort(r, nil); return nil }}:
	case <-e.done:
	case res := <-r.reply:
		if emitErr != nil {
			return res.out, fmt.Errorf("streaming the output: %w", emitErr)
		}
		return res.out, res.err
	}
	res := <-r.reply
	if emitErr != nil {
		return res.out, fmt.Errorf("streaming the output: %w", emitErr)
	}
	if res.err == nil && res.out.StopReason == server.StopAbort {
		res.err = ctx.Err()
	}
	return res.out, res.err
}

// validate runs the check every engine shares (server.CheckRequest) and
// then this engine's own: the prompt must leave room in the context.
func (e *Engine) validate(req *server.GenerateRequest) error {
	if req.Vision != nil {
		// The decoder has no vision tower: placeholder pads would be
		// embedded as text tokens and the model would answer about no image.
		return fmt.Errorf("%w: Vision: the in-process engine is text-only and takes no images (%d in this request); serve vision-language models with SGLang or vLLM", server.ErrBadRequest, len(req.Vision.Images))
	}
	if n := len(req.Params.StopTokenIDs); n > e.vocab {
		// A longer list repeats ids or names ids the model cannot sample;
		// refused before anything walks it.
		return fmt.Errorf("%w: %d stop token ids: more than the vocabulary of %d", server.ErrBadRequest, n, e.vocab)
	}
	if err := server.CheckRequest(*req, e.vocab); err != nil {
		return err
	}
	if n := len(req.PromptIDs); n >= e.maxCtx {
		return fmt.Errorf("%w: PromptIDs: prompt of %d tokens leaves no room in the context of %d", server.ErrBadRequest, n, e.maxCtx)
	}
	return nil
}

type ctrlOp struct {
	f     func(*sched) error
	reply chan error // nil: no reply wanted
}

// do runs f on the scheduler goroutine between steps and returns its error.
func (e *Engine) do(ctx context.Context, op string, f func(*sched) error) error {
	reply := make(chan error, 1)
	select {
	case e.ctrl <- ctrlOp{f: f, reply: reply}:
	case <-e.done:
		return e.err(op, errClosed)
	case <-ctx.Done():
		return e.err(op, ctx.Err())
	}
	if err := <-reply; err != nil {
		return e.err(op, err)
	}
	return nil
}

// Abort stops every in-flight request with this RequestID; their Generate
// calls return the tokens so far with StopAbort.
func (e *Engine) Abort(ctx context.Context, requestID string) error {
	return e.do(ctx, "abort", func(s *sched) error {
		s.abortWhere(func(r *request) bool { return r.id == requestID })
		return nil
	})
}

// AbortAll aborts every in-flight request.
func (e *Engine) AbortAll(ctx context.Context) error {
	return e.do(ctx, "abort", func(s *sched) error {
		s.abortWhere(func(*request) bool { return true })
		return nil
	})
}

// Sleep frees the KV cache (and with SleepWeights the weights). Running
// requests are not lost: they go back to the queue and resume, recomputed,
// after WakeUp; new requests queue meanwhile.
func (e *Engine) Sleep(ctx context.Context, level server.SleepLevel) error {
	if level != server.SleepKVCache && level != server.SleepWeights {
		return e.err("sleep", fmt.Errorf("%w: unknown sleep level %d", server.ErrBadRequest, level))
	}
	return e.do(ctx, "sleep", func(s *sched) error { return s.sleep(level) })
}

// WakeUp reallocates the KV cache and resumes scheduling. If Sleep dropped
// the weights they must have been sent again with UpdateWeights, unless the
// engine was opened from a directory, which is then reloaded.
func (e *Engine) WakeUp(ctx context.Context) error {
	return e.do(ctx, "wake_up", func(s *sched) error { return s.wake() })
}

// UpdateWeights replaces weights by name (Tensors) or reloads a checkpoint
// directory (Path), then sets the weight version. Every tensor is checked
// before any is applied. Cached prefixes are dropped and running requests
// are recomputed under the new weights (their tokens are kept); the
// version in an output is the one in force when the request finished.
func (e *Engine) UpdateWeights(ctx context.Context, w server.Weights) error {
	for _, t := range w.Tensors {
		if err := e.m.CheckTensor(t.Name, t.Shape, len(t.Data)); err != nil {
			return e.err("update_weights", fmt.Errorf("%w: %w", server.ErrBadRequest, err))
		}
	}
	return e.do(ctx, "update_weights", func(s *sched) error { return s.updateWeights(w) })
}

// FlushCache forgets every cached prefix, so later requests recompute
// theirs. Requests in flight keep their blocks and their place; what they
// compute from now on is cached again as usual.
func (e *Engine) FlushCache(ctx context.Context) error {
	return e.do(ctx, "flush_cache", func(s *sched) error {
		if s.blocks != nil { // nil while asleep, when nothing is cached
			s.blocks.Reset()
		}
		return nil
	})
}

// Pause stops scheduling forward passes until Resume; Generate calls made
// meanwhile queue. The mode says what happens to the requests in flight:
//   - PauseAbort: every one (running or queued) is aborted and returns its
//     tokens so far with StopAbort (SGLang's "abort", vLLM's "abort");
//   - PauseKeep: they stay where they are, KV cache included, and continue
//     after Resume with the tokens they would have had anyway (SGLang's
//     "in_place", vLLM's "keep");
//   - PauseRetract: their KV cache is freed; after Resume they are
//     recomputed from their tokens so far and continue (SGLang's
//     "retract"); TokenOutput.Retractions counts it;
//   - PauseWait: the requests already admitted run to their end, nothing
//     new starts, and Pause returns once they have finished (vLLM's
//     "wait"). A Resume meanwhile ends the wait.
//
// Pausing a paused engine applies the mode to what is held.
func (e *Engine) Pause(ctx context.Context, mode server.PauseMode) error {
	mode, err := server.ParsePauseMode(string(mode))
	if err != nil {
		return e.err("pause", err)
	}
	var drained chan struct{}
	err = e.do(ctx, "pause", func(s *sched) error {
		switch mode {
		case server.PauseAbort:
			s.paused = true
			s.abortWhere(func(*request) bool { return true })
		case server.PauseKeep:
			s.paused = true
		case server.PauseRetract:
			s.paused = true
			s.preemptAll()
		case server.PauseWait:
			if s.paused {
				return nil // nothing runs while paused
			}
			drained = s.startDrain()
		}
		return nil
	})
	if err != nil || drained == nil {
		return err
	}
	select {
	case <-drained:
		return nil
	case <-e.done:
		return e.err("pause", errClosed)
	case <-ctx.Done():
		return e.err("pause", ctx.Err())
	}
}

// Resume ends a Pause (SGLang's /continue_generation), or a Pause(PauseWait)
// still draining; a no-op when not paused.
func (e *Engine) Resume(ctx context.Context) error {
	return e.do(ctx, "resume", func(s *sched) error {
		s.paused, s.draining = false, false
		s.releaseDrained()
		return nil
	})
}

// Health reports nil while the engine serves, an error wrapping
// server.ErrUnavailable when closed or asleep.
func (e *Engine) Health(ctx context.Context) error {
	select {
	case <-e.done:
		return e.err("health", errClosed)
	default:
	}
	if e.Stats().Asleep {
		return e.err("health", fmt.Errorf("%w: engine is asleep", server.ErrUnavailable))
	}
	return nil
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	return e.stats
}

func (e *Engine) publish(s *sched) {
	st := s.stats
	st.Running, st.Waiting = len(s.running), len(s.waiting)
	st.KVBlocks = e.blocks
	if s.blocks != nil {
		st.FreeBlocks, st.CachedBlocks = s.blocks.Free(), s.blocks.Cached()
	}
	st.WeightVersion = e.version.Load()
	st.Asleep, st.Paused = s.asleep, s.paused
	st.KVPopulated = s.kv != nil && s.kv.Populated()
	e.statsMu.Lock()
	e.stats = st
	e.statsMu.Unlock()
}

// CheckAccounting verifies the KV block accounting against the live
// requests (tests; it runs on the scheduler goroutine).
func (e *Engine) CheckAccounting(ctx context.Context) error {
	return e.do(ctx, "check", func(s *sched) error {
		if s.blocks == nil {
			return nil
		}
		var live []*kvcache.Table
		for _, r := range s.running {
			live = append(live, r.table)
		}
		for _, r := range s.waiting {
			if r.table != nil {
				return errors.New("cuda: waiting request holds blocks")
			}
		}
		return s.blocks.Check(live)
	})
}
