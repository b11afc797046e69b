package servertest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/agentrl/agentrl/server"
)

// Call is what a Rule sees: the request and its turn in the conversation
// its RequestID names.
//
// Turn follows the request-id contract (see the package doc): the server
// remembers, per request id, the prompt and output of the last call that
// returned. A call whose prompt is exactly them after that call was
// aborted (StopAbort) resumes the same turn, as
// agentloop.GenerateResumable does after a partial rollout; otherwise a
// call whose prompt starts with them (the conversation so far, usually
// plus an observation) is the next turn; any other call, the first with
// an id included, starts a conversation at turn 0, so a request id reused
// by a new trajectory starts its script over. A call that fails is no
// turn: its retry gets the turn it would have had. Calls with one id that
// overlap see the conversation as the last returned call left it.
type Call struct {
	Req  server.GenerateRequest
	Turn int
}

// Reply is what the scripted model "samples" for one turn, before the
// server applies the request's StopTokenIDs and MaxNewTokens. A call that
// resumes an aborted turn (see Call) does not run the rule again: it plays
// the rest of the turn's reply, from where the aborted call stopped, with
// the logprobs of those positions; the reply's Fault applies to the turn's
// first call only.
type Reply struct {
	Tokens []int32
	// Logprobs, when set, must have one entry per token. When nil and the
	// request asks for logprobs, deterministic values are derived from the
	// token ids and positions.
	Logprobs []float32
	// TopLogprobs, when set, must have one entry per token: each token's
	// alternatives, cut to the request's TopLogprobs. When nil and the
	// request asks for them, DefaultTopLogprobs gives them.
	TopLogprobs [][]server.TopLogprob
	// Fault, when set, overrides the server-wide fault for this call.
	Fault *Fault
}

// Rule decides the reply to a call. Rules run concurrently and must be safe
// for that; the ones in this package are.
type Rule func(c Call) Reply

// Echo replies with the prompt itself.
func Echo() Rule {
	return func(c Call) Reply { return Reply{Tokens: c.Req.PromptIDs} }
}

// Constant replies with the same tokens to every call.
func Constant(tokens ...int32) Rule {
	return func(Call) Reply { return Reply{Tokens: tokens} }
}

// Scripts replies from a canned script per request id: scripts[id][turn] is
// the reply to the turn-th call with that id. Calls outside the scripts get
// fallback, or fail with server.ErrBadRequest when fallback is nil.
func Scripts(scripts map[string][][]int32, fallback Rule) Rule {
	return func(c Call) Reply {
		if turns, ok := scripts[c.Req.RequestID]; ok && c.Turn < len(turns) {
			return Reply{Tokens: turns[c.Turn]}
		}
		if fallback != nil {
			return fallback(c)
		}
		f := ErrorFault(fmt.Errorf("servertest: no script for request %q turn %d: %w",
			c.Req.RequestID, c.Turn, server.ErrBadRequest))
		return Reply{Fault: &f}
	}
}

// Random replies with pseudo-random tokens in [0, vocab), of a length in
// [minLen, maxLen]. The reply depends only on seed, the request id and the
// turn, so it is the same whichever server or goroutine serves the call.
func Random(seed uint64, vocab int32, minLen, maxLen int) Rule {
	return func(c Call) Reply {
		if f := randomArgs(vocab, minLen, maxLen); f != nil {
			return Reply{Fault: f}
		}
		h := fnv.New64a()
		_, _ = h.Write([]byte(c.Req.RequestID))
		r := rand.New(rand.NewPCG(seed, h.Sum64()^uint64(c.Turn)*0x9e3779b97f4a7c15))
		n := minLen
		if maxLen > minLen {
			n += r.IntN(maxLen - minLen + 1)
		}
		toks := make([]int32, n)
		for i := range toks {
			toks[i] = r.Int32N(vocab)
		}
		return Reply{Tokens: toks}
	}
}

// Seeded replies as a sampling engine does with a seed: pseudo-random
// tokens in [0, vocab), of a length in [minLen, maxLen], drawn from the
// request's Params.Seed and its prompt alone. Two requests with the same
// seed and prompt get the same tokens, whatever their ids, as from the
// in-process engine, SGLang's sampling_seed or vLLM's seed; a request
// without a seed is refused. Tests of seeded rollouts use it to see what an
// engine would do with the seeds they send.
func Seeded(vocab int32, minLen, maxLen int) Rule {
	return func(c Call) Reply {
		if f := randomArgs(vocab, minLen, maxLen); f != nil {
			return Reply{Fault: f}
		}
		if c.Req.Params.Seed == nil {
			f := ErrorFault(fmt.Errorf("servertest: Seeded: request %q has no Params.Seed: %w", c.Req.RequestID, server.ErrBadRequest))
			return Reply{Fault: &f}
		}
		h := fnv.New64a()
		for _, id := range c.Req.PromptIDs {
			_, _ = h.Write([]byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)})
		}
		r := rand.New(rand.NewPCG(*c.Req.Params.Seed, h.Sum64()))
		n := minLen
		if maxLen > minLen {
			n += r.IntN(maxLen - minLen + 1)
		}
		toks := make([]int32, n)
		for i := range toks {
			toks[i] = r.Int32N(vocab)
		}
		return Reply{Tokens: toks}
	}
}

// randomArgs refuses the arguments Random and Seeded cannot draw from.
func randomArgs(vocab int32, minLen, maxLen int) *Fault {
	if vocab <= 0 || minLen < 0 || maxLen < 0 {
		f := ErrorFault(fmt.Errorf("servertest: random reply needs vocab > 0 and lengths ≥ 0, got vocab %d, lengths [%d, %d]: %w",
			vocab, minLen, maxLen, server.ErrBadRequest))
		return &f
	}
	return nil
}

// Latency is a distribution of delays.
type Latency interface {
	Sample(r *rand.Rand) time.Duration
}

type fixedLatency time.Duration

func (f fixedLatency) Sample(*rand.Rand) time.Duration { return time.Duration(f) }

// Fixed is a constant delay.
func Fixed(d time.Duration) Latency { return fixedLatency(d) }

type uniformLatency struct{ lo, hi time.Duration }

func (u uniformLatency) Sample(r *rand.Rand) time.Duration {
	if u.hi <= u.lo {
		return u.lo
	}
	return u.lo + time.Duration(r.Int64N(int64(u.hi-u.lo)+1))
}

// Uniform draws delays uniformly from [lo, hi].
func Uniform(lo, hi time.Duration) Latency { return uniformLatency{lo, hi} }

type logNormalLatency struct {
	median time.Duration
	sigma  float64
}

func (l logNormalLatency) Sample(r *rand.Rand) time.Duration {
	return time.Duration(float64(l.median) * math.Exp(l.sigma*r.NormFloat64()))
}

// LogNormal draws delays whose logarithm is normal: median times
// exp(sigma·N(0,1)). Long-tailed like real generation times.
func LogNormal(median time.Duration, sigma float64) Latency {
	return logNormalLatency{median, sigma}
}

// FaultKind names an injected failure.
type FaultKind int

const (
	// FaultNone: the call runs normally.
	FaultNone FaultKind = iota
	// FaultError: the call fails with Fault.Err before producing any token.
	// Through httpapi, errors wrapping server.ErrUnavailable become 503 and
	// server.ErrOverloaded 429.
	FaultError
	// FaultHang: the call blocks until its context is done, ignoring aborts.
	FaultHang
	// FaultAbort: the call produces Fault.After tokens and then ends as if
	// aborted (StopAbort with the partial tokens).
	FaultAbort
)

// Fault is a failure to inject into calls.
type Fault struct {
	Kind  FaultKind
	Err   error
	After int
}

// ErrorFault fails calls with err before any token. Unless err is already a
// *server.Error, it is returned inside one, Retryable when err wraps
// server.ErrUnavailable or server.ErrOverloaded (the engine refused before
// doing any work).
func ErrorFault(err error) Fault { return Fault{Kind: FaultError, Err: err} }

// HangFault makes calls block until their context is done.
func HangFault() Fault { return Fault{Kind: FaultHang} }

// AbortFault ends calls after n tokens with StopAbort.
func AbortFault(n int) Fault { return Fault{Kind: FaultAbort, After: n} }

// Unavailable is an ErrorFault that httpapi turns into a 503.
func Unavailable() Fault {
	return ErrorFault(fmt.Errorf("servertest: injected: %w", server.ErrUnavailable))
}

// Overloaded is an ErrorFault that httpapi turns into a 429.
func Overloaded() Fault {
	return ErrorFault(fmt.Errorf("servertest: injected: %w", server.ErrOverloaded))
}

// ErrSleeping is returned by Generate while the server sleeps.
var ErrSleeping = errors.New("servertest: server is sleeping")

// Config configures a Server. The zero value is a usable echo server with no
// delays.
type Config struct {
	// Name is used in error messages.
	Name string
	// Rule makes the replies; nil means Echo.
	Rule Rule
	// Latency is the delay before the first token (prefill and queueing).
	Latency Latency
	// TokenLatency is the delay before each further token; with it, an abort
	// mid-way returns a real prefix of the reply.
	TokenLatency Latency
	// Seed seeds the latency draws.
	Seed uint64
	// Vocab, when > 0, is the vocabulary size requests are checked
	// against (prompt and stop ids below it), as an engine with that
	// vocabulary checks them; 0 checks only that ids are not negative.
	// Every request goes through server.CheckRequest either way.
	Vocab int
}

// Stats are the server's counters.
type Stats struct {
	Calls       int64 // Generate calls received
	Completed   int64 // returned tokens (including aborted ones)
	Failed      int64 // returned an error
	Aborted     int64 // ended with StopAbort
	InFlight    int64 // running now
	MaxInFlight int64 // highest InFlight seen
}

type inflight struct {
	rid    string
	abort  chan struct{}
	once   sync.Once
	active bool // generating: not held by a Pause (guarded by Server.mu)
}

func (f *inflight) stop() { f.once.Do(func() { close(f.abort) }) }

// conversation is what the server remembers of a request id (see Call).
type conversation struct {
	calls int // calls received (CallsFor), refused ones included
	// done: a call with this id returned; the fields below describe it.
	done bool
	turn int
	// seq is that call's prompt and output: the next turn's prompt extends
	// it, a resume's prompt equals it.
	seq     []int32
	aborted bool
	// turnStart is the prompt length of the turn's first call: what a
	// resume's prompt holds beyond it, the turn produced.
	turnStart int
	// reply is the rule's reply for the turn; nil when the rule has not
	// run (a call aborted while paused).
	reply *Reply
}

// turnOf says which turn a call with this prompt is, and whether it
// resumes that turn.
func (c *conversation) turnOf(prompt []int32) (turn int, resume bool) {
	switch {
	case !c.done:
		return 0, false
	case c.aborted && slices.Equal(prompt, c.seq):
		return c.turn, true
	case len(prompt) >= len(c.seq) && slices.Equal(prompt[:len(c.seq)], c.seq):
		return c.turn + 1, false
	}
	return 0, false
}

// turnCall is how one call stands in its conversation.
type turnCall struct {
	turn   int
	resume bool
	// reply and played, on a resume of a turn whose rule ran: the turn's
	// reply and how many of its tokens earlier calls produced.
	reply  *Reply
	played int
}

type faultRule struct {
	fault Fault
	left  int // calls it still applies to; <0 = forever
}

// Server is a deterministic scripted engine. It implements server.LLMServer,
// server.Aborter, server.Sleeper, server.WeightUpdater, server.HealthChecker
// and server.Streamer, plus FlushCache, Pause and Resume. Safe for
// concurrent use.
type Server struct {
	cfg Config

	mu          sync.Mutex
	rng         *rand.Rand
	stats       Stats
	convs       map[string]*conversation
	lastSeq     map[string][]int32 // per request id: prompt+output of the last call, for CachedTokens (FlushCache clears it)
	running     map[*inflight]struct{}
	faults      []faultRule
	healthy     bool
	sleeping    bool
	sleepLevel  server.SleepLevel
	version     int64
	weightsPath string
	flushes     int
	paused      chan struct{}   // non-nil while paused: closed by Resume
	active      int             // running calls not held by a Pause
	drained     []chan struct{} // Pause(PauseWait) callers, closed when active reaches 0
}

// New returns a server configured by cfg.
func New(cfg Config) *Server {
	if cfg.Rule == nil {
		cfg.Rule = Echo()
	}
	if cfg.Name == "" {
		cfg.Name = "servertest"
	}
	return &Server{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		convs:   map[string]*conversation{},
		lastSeq: map[string][]int32{},
		running: map[*inflight]struct{}{},
		healthy: true,
	}
}

// Name returns the configured name.
func (s *Server) Name() string { return s.cfg.Name }

// SetFault applies f to every following call until changed; SetFault(Fault{})
// clears it (and any pending FaultNext).
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Kind == FaultNone {
		s.faults = nil
		return
	}
	s.faults = []faultRule{{fault: f, left: -1}}
}

// FaultNext applies f to the next n calls only; queued after earlier
// FaultNext faults.
func (s *Server) FaultNext(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > 0 {
		s.faults = append(s.faults, faultRule{fault: f, left: n})
	}
}

// SetHealthy sets what Health reports.
func (s *Server) SetHealthy(ok bool) {
	s.mu.Lock()
	s.healthy = ok
	s.mu.Unlock()
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// CallsFor returns how many calls this server received with request id
// rid: every call, resumes and refused ones included (Call.Turn counts
// turns).
func (s *Server) CallsFor(rid string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.convs[rid]; c != nil {
		return c.calls
	}
	return 0
}

// RequestIDs returns how many distinct request ids this server has seen.
func (s *Server) RequestIDs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.convs)
}

// WeightVersion returns the current weight version.
func (s *Server) WeightVersion() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// WeightsPath returns the path of the last UpdateWeights with a Path.
func (s *Server) WeightsPath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.weightsPath
}

// Sleeping reports whether the server sleeps, and at which level.
func (s *Server) Sleeping() (bool, server.SleepLevel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sleeping, s.sleepLevel
}

// Flushes returns how many times FlushCache was called.
func (s *Server) Flushes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushes
}

func (s *Server) errorf(op string, err error) error {
	return &server.Error{Server: s.cfg.Name, Op: op, Err: err}
}

// Generate checks req as engines do (server.CheckRequest, against
// Config.Vocab), runs the rule for it and plays its reply out with the
// configured latencies. A cancelled context ends the call with the
// context's error; an Abort ends it with the tokens produced so far and
// StopAbort.
func (s *Server) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	return s.generate(ctx, req, nil)
}

// GenerateStream is Generate that also emits every token (with its logprob
// when requested) as soon as its latency has passed, on the caller's
// goroutine, so a slow scripted engine shows when a streamed response's
// bytes leave. An emit error ends the call with that error (wrapped).
func (s *Server) GenerateStream(ctx context.Context, req server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	if emit == nil {
		return server.TokenOutput{}, s.errorf("generate", fmt.Errorf("servertest: GenerateStream needs an emit function: %w", server.ErrBadRequest))
	}
	return s.generate(ctx, req, emit)
}

func (s *Server) generate(ctx context.Context, req server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	if err := ctx.Err(); err != nil {
		return server.TokenOutput{}, s.errorf("generate", err)
	}
	s.mu.Lock()
	s.stats.Calls++
	conv := s.convs[req.RequestID]
	if conv == nil {
		conv = &conversation{}
		s.convs[req.RequestID] = conv
	}
	conv.calls++
	if err := server.CheckRequest(req, s.cfg.Vocab); err != nil {
		s.stats.Failed++
		s.mu.Unlock()
		return server.TokenOutput{}, s.errorf("generate", fmt.Errorf("servertest: request %q: %w", req.RequestID, err))
	}
	tc := turnCall{}
	tc.turn, tc.resume = conv.turnOf(req.PromptIDs)
	if tc.resume && conv.reply != nil {
		tc.reply, tc.played = conv.reply, len(req.PromptIDs)-conv.turnStart
	}
	if s.sleeping {
		s.stats.Failed++
		s.mu.Unlock()
		return server.TokenOutput{}, &server.Error{Server: s.cfg.Name, Op: "generate", Retryable: true,
			Err: fmt.Errorf("%w: %w", ErrSleeping, server.ErrUnavailable)}
	}
	fault := s.takeFaultLocked()
	cached := commonPrefix(s.lastSeq[req.RequestID], req.PromptIDs)
	first := s.sampleLocked(s.cfg.Latency)
	paused := s.paused
	fl := &inflight{rid: req.RequestID, abort: make(chan struct{})}
	if paused == nil {
		s.activateLocked(fl)
	}
	s.running[fl] = struct{}{}
	s.stats.InFlight++
	s.stats.MaxInFlight = max(s.stats.MaxInFlight, s.stats.InFlight)
	s.mu.Unlock()

	out, reply, err := s.run(ctx, req, tc, fault, paused, first, fl, emit)

	s.mu.Lock()
	delete(s.running, fl)
	if fl.active {
		s.active--
		if s.active == 0 {
			for _, ch := range s.drained {
				close(ch)
			}
			s.drained = nil
		}
	}
	s.stats.InFlight--
	if err != nil {
		s.stats.Failed++
	} else {
		s.stats.Completed++
		if out.StopReason == server.StopAbort {
			s.stats.Aborted++
		}
		out.WeightVersion = s.version
		out.PromptTokens = len(req.PromptIDs)
		out.CachedTokens = cached
		seq := make([]int32, 0, len(req.PromptIDs)+len(out.TokenIDs))
		seq = append(append(seq, req.PromptIDs...), out.TokenIDs...)
		s.lastSeq[req.RequestID] = seq
		if !tc.resume {
			conv.turnStart = len(req.PromptIDs)
		}
		conv.done, conv.turn, conv.seq, conv.reply = true, tc.turn, seq, reply
		conv.aborted = out.StopReason == server.StopAbort
	}
	s.mu.Unlock()
	return out, err
}

// run plays one call out. It returns the turn's reply (the rule's, or the
// resumed one), which a later resume continues; nil when the rule did not
// run.
func (s *Server) run(ctx context.Context, req server.GenerateRequest, tc turnCall, fault Fault, paused chan struct{}, first time.Duration, fl *inflight, emit func(server.Chunk) error) (server.TokenOutput, *Reply, error) {
	if paused != nil {
		select {
		case <-paused:
			s.mu.Lock()
			s.activateLocked(fl)
			s.mu.Unlock()
		case <-fl.abort:
			return server.TokenOutput{StopReason: server.StopAbort, TokenIDs: []int32{}}, tc.reply, nil
		case <-ctx.Done():
			return server.TokenOutput{}, nil, s.errorf("generate", ctx.Err())
		}
	}
	whole := tc.reply
	if whole == nil {
		r := s.cfg.Rule(Call{Req: req, Turn: tc.turn})
		if r.Fault != nil {
			fault = *r.Fault
		}
		// Kept for a resume: a copy, as a rule may hand out slices it (or
		// the caller, through Echo's prompt) changes later.
		whole = &Reply{Tokens: slices.Clone(r.Tokens), Logprobs: slices.Clone(r.Logprobs), TopLogprobs: slices.Clone(r.TopLogprobs)}
	}
	switch fault.Kind {
	case FaultError:
		if err := wait(ctx, nil, first); err != nil {
			return server.TokenOutput{}, nil, s.errorf("generate", err)
		}
		var se *server.Error
		if errors.As(fault.Err, &se) {
			return server.TokenOutput{}, nil, fault.Err
		}
		// Nothing was produced: refusals (503/429-like) may be resent.
		retry := errors.Is(fault.Err, server.ErrUnavailable) || errors.Is(fault.Err, server.ErrOverloaded)
		return server.TokenOutput{}, nil, &server.Error{Server: s.cfg.Name, Op: "generate", Retryable: retry, Err: fault.Err}
	case FaultHang:
		<-ctx.Done()
		return server.TokenOutput{}, nil, s.errorf("generate", ctx.Err())
	}
	if whole.Logprobs != nil && len(whole.Logprobs) != len(whole.Tokens) {
		return server.TokenOutput{}, nil, s.errorf("generate", fmt.Errorf("servertest: rule gave %d logprobs for %d tokens: %w",
			len(whole.Logprobs), len(whole.Tokens), server.ErrBadRequest))
	}
	if whole.TopLogprobs != nil && len(whole.TopLogprobs) != len(whole.Tokens) {
		return server.TokenOutput{}, nil, s.errorf("generate", fmt.Errorf("servertest: rule gave %d top logprob lists for %d tokens: %w",
			len(whole.TopLogprobs), len(whole.Tokens), server.ErrBadRequest))
	}
	// A resume plays the rest of the turn, at the positions it would have
	// had unbroken.
	played := min(tc.played, len(whole.Tokens))
	reply := Reply{Tokens: whole.Tokens[played:]}
	if whole.Logprobs != nil {
		reply.Logprobs = whole.Logprobs[played:]
	}
	if whole.TopLogprobs != nil {
		reply.TopLogprobs = whole.TopLogprobs[played:]
	}
	toks, reason := truncate(reply.Tokens, req.Params)
	abortAt := -1
	if fault.Kind == FaultAbort && fault.After < len(toks) {
		abortAt = max(fault.After, 0)
	}
	out := server.TokenOutput{TokenIDs: make([]int32, 0, len(toks)), StopReason: reason}
	for i, t := range toks {
		if i == abortAt {
			out.StopReason = server.StopAbort
			break
		}
		d := first
		if i > 0 {
			d = s.sample(s.cfg.TokenLatency)
		}
		if err := wait(ctx, fl.abort, d); err != nil {
			if errors.Is(err, errAborted) {
				out.StopReason = server.StopAbort
				break
			}
			return server.TokenOutput{}, nil, s.errorf("generate", err)
		}
		out.TokenIDs = append(out.TokenIDs, t)
		if req.Params.Logprobs {
			lp := DefaultLogprob(t, played+i)
			if reply.Logprobs != nil {
				lp = reply.Logprobs[i]
			}
			out.Logprobs = append(out.Logprobs, lp)
		}
		if k := req.Params.TopLogprobs; k > 0 {
			var top []server.TopLogprob
			if reply.TopLogprobs != nil {
				top = slices.Clone(reply.TopLogprobs[i][:min(k, len(reply.TopLogprobs[i]))])
			} else {
				lp := DefaultLogprob(t, played+i)
				if reply.Logprobs != nil {
					lp = reply.Logprobs[i]
				}
				top = DefaultTopLogprobs(t, lp, k, s.cfg.Vocab)
			}
			out.TopLogprobs = append(out.TopLogprobs, top)
		}
		if emit != nil {
			c := server.Chunk{TokenIDs: out.TokenIDs[i : i+1 : i+1]}
			if req.Params.Logprobs {
				c.Logprobs = out.Logprobs[i : i+1 : i+1]
			}
			if req.Params.TopLogprobs > 0 {
				c.TopLogprobs = out.TopLogprobs[i : i+1 : i+1]
			}
			if err := emit(c); err != nil {
				return server.TokenOutput{}, nil, s.errorf("generate", fmt.Errorf("servertest: streaming token %d: %w", i, err))
			}
		}
	}
	if abortAt == 0 || (len(toks) == 0 && fault.Kind == FaultAbort) {
		out.StopReason = server.StopAbort
	}
	if req.Params.Logprobs && out.Logprobs == nil {
		out.Logprobs = []float32{}
	}
	if req.Params.TopLogprobs > 0 && out.TopLogprobs == nil {
		out.TopLogprobs = [][]server.TopLogprob{}
	}
	if req.Params.PromptLogprobs {
		from := min(max(req.Params.PromptLogprobsFrom, 0), len(req.PromptIDs))
		for p := from; p < len(req.PromptIDs); p++ {
			out.PromptLogprobs = append(out.PromptLogprobs, DefaultPromptLogprob(req.PromptIDs[p], p))
		}
	}
	return out, whole, nil
}

// DefaultPromptLogprob is the prompt logprob servertest reports for token t
// at prompt position p: NaN at position 0 (nothing precedes it), else a
// deterministic value in (-1, 0).
func DefaultPromptLogprob(t int32, p int) float32 {
	if p == 0 {
		return float32(math.NaN())
	}
	return DefaultLogprob(t, 1<<20+p)
}

// DefaultLogprob is the logprob servertest reports for token t at output
// position i when the rule gives none: a deterministic value in (-1, 0).
func DefaultLogprob(t int32, i int) float32 {
	return -float32((uint32(t)*2654435761+uint32(i)*40503)%1000+1) / 1001
}

// DefaultTopLogprobs are the alternatives servertest reports for sampled
// token t with logprob lp when the rule gives none: k entries, t first
// with lp (the scripted model always samples its most probable token),
// then the ids after t (modulo vocab when vocab > 0), each a nat less
// probable than the one before.
func DefaultTopLogprobs(t int32, lp float32, k, vocab int) []server.TopLogprob {
	top := make([]server.TopLogprob, 0, k)
	for j := range k {
		id := int64(t) + int64(j)
		if vocab > 0 {
			if j >= vocab {
				break
			}
			id %= int64(vocab)
		}
		top = append(top, server.TopLogprob{TokenID: int32(id), Logprob: lp - float32(j)})
	}
	return top
}

var errAborted = errors.New("aborted")

// wait sleeps d, returning early with ctx's error or errAborted.
func wait(ctx context.Context, abort <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-abort:
			return errAborted
		default:
			return nil
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-abort:
		return errAborted
	case <-t.C:
		return nil
	}
}

// truncate applies stop tokens (kept in the output, like no_stop_trim) and
// MaxNewTokens.
func truncate(toks []int32, p server.SamplingParams) ([]int32, server.StopReason) {
	for i, t := range toks {
		if p.MaxNewTokens > 0 && i == p.MaxNewTokens {
			return toks[:i], server.StopLength
		}
		for _, st := range p.StopTokenIDs {
			if t == st {
				return toks[:i+1], server.StopEOS
			}
		}
	}
	return toks, server.StopEOS
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func (s *Server) takeFaultLocked() Fault {
	for len(s.faults) > 0 {
		f := &s.faults[0]
		if f.left < 0 {
			return f.fault
		}
		if f.left > 0 {
			f.left--
			fault := f.fault
			if f.left == 0 {
				s.faults = s.faults[1:]
			}
			return fault
		}
		s.faults = s.faults[1:]
	}
	return Fault{}
}

func (s *Server) sampleLocked(l Latency) time.Duration {
	if l == nil {
		return 0
	}
	return l.Sample(s.rng)
}

func (s *Server) sample(l Latency) time.Duration {
	if l == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.Sample(s.rng)
}

// Abort ends the running calls with request id rid (StopAbort, partial
// tokens). Aborting an id that is not running is not an error, as on SGLang.
func (s *Server) Abort(ctx context.Context, rid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fl := range s.running {
		if fl.rid == rid {
			fl.stop()
		}
	}
	return nil
}

// AbortAll ends every running call.
func (s *Server) AbortAll(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fl := range s.running {
		fl.stop()
	}
	return nil
}

// Sleep makes following Generate calls fail with ErrSleeping (wrapping
// server.ErrUnavailable) until WakeUp.
func (s *Server) Sleep(ctx context.Context, level server.SleepLevel) error {
	if level != server.SleepKVCache && level != server.SleepWeights {
		return s.errorf("sleep", fmt.Errorf("sleep level %d is not 1 or 2: %w", level, server.ErrBadRequest))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sleeping, s.sleepLevel = true, level
	return nil
}

// WakeUp ends a Sleep.
func (s *Server) WakeUp(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sleeping, s.sleepLevel = false, 0
	return nil
}

// UpdateWeights records w.Version; every output completed afterwards carries it.
func (s *Server) UpdateWeights(ctx context.Context, w server.Weights) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = w.Version
	if w.Path != "" {
		s.weightsPath = w.Path
	}
	return nil
}

// Health returns an error wrapping server.ErrUnavailable when SetHealthy(false).
func (s *Server) Health(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.healthy {
		return s.errorf("health", fmt.Errorf("servertest: marked unhealthy: %w", server.ErrUnavailable))
	}
	return nil
}

// FlushCache forgets the prefix-cache state (CachedTokens starts from zero).
func (s *Server) FlushCache(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.lastSeq)
	s.flushes++
	return nil
}

// Pause holds calls that have not started generating until Resume. Mode
// PauseAbort also aborts the running ones; PauseWait returns once the
// running ones have finished (or ctx ends); PauseKeep and PauseRetract
// leave them running, as a scripted engine has no KV cache to keep or free.
func (s *Server) Pause(ctx context.Context, mode server.PauseMode) error {
	mode, err := server.ParsePauseMode(string(mode))
	if err != nil {
		return s.errorf("pause", err)
	}
	s.mu.Lock()
	if s.paused == nil {
		s.paused = make(chan struct{})
	}
	if mode == server.PauseAbort {
		for fl := range s.running {
			fl.stop()
		}
	}
	if mode != server.PauseWait || s.active == 0 {
		s.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	s.drained = append(s.drained, done)
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return s.errorf("pause", ctx.Err())
	}
}

// activateLocked counts fl as generating (see Pause's PauseWait).
func (s *Server) activateLocked(fl *inflight) {
	fl.active = true
	s.active++
}

// Resume releases the calls held by Pause.
func (s *Server) Resume(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused != nil {
		close(s.paused)
		s.paused = nil
	}
	return nil
}
