package server

import (
	"context"
	"errors"
	"fmt"
)

// StopReason says why a generation ended.
type StopReason string

const (
	// StopEOS: a stop token (or stop condition) was produced; it is included in TokenIDs.
	StopEOS StopReason = "stop"
	// StopLength: MaxNewTokens (or the context window) was reached.
	StopLength StopReason = "length"
	// StopAbort: the request was aborted (by the caller, a weight update or a
	// shutdown). TokenIDs holds what was produced before the abort.
	StopAbort StopReason = "abort"
)

// SamplingParams are the per-request sampling settings every engine accepts.
// Zero values mean the engine's neutral setting: TopP 0 is read as 1, TopK 0
// (or negative) as disabled, Temperature 0 as greedy.
type SamplingParams struct {
	Temperature       float64
	TopP              float64
	TopK              int
	MinP              float64
	RepetitionPenalty float64 // 0 or 1 disables it
	// PresencePenalty and FrequencyPenalty follow vLLM (and the OpenAI
	// API): over the tokens generated so far (not the prompt), a token
	// id's logit is lowered by FrequencyPenalty × its count plus
	// PresencePenalty if it occurs at all, after the repetition penalty
	// and before temperature. Each lies in [-2, 2]; 0 disables it.
	PresencePenalty  float64
	FrequencyPenalty float64
	MaxNewTokens     int
	StopTokenIDs     []int32
	Seed             *uint64
	Logprobs         bool // return the logprob of every sampled token
	// TopLogprobs asks for the TopLogprobs most probable tokens at every
	// sampled position (0 to MaxTopLogprobs; 0: none), under the same
	// distribution as the sampled token's logprob (see
	// TokenOutput.TopLogprobs).
	TopLogprobs int
	// PromptLogprobs asks for the logprob of every prompt token from
	// position PromptLogprobsFrom on (SGLang input_token_logprobs from
	// logprob_start_len, vLLM prompt_logprobs from 0): each token's
	// log-probability given the tokens before it, under the model's raw
	// distribution (temperature 1, no penalty or truncation). Engines
	// that cannot compute them leave TokenOutput.PromptLogprobs nil.
	PromptLogprobs     bool
	PromptLogprobsFrom int
	// RoutedExperts asks a mixture-of-experts engine for the experts its
	// router chose at every position (routing replay, R3): SGLang's
	// return_routed_experts; vLLM reports them when the server runs with
	// --enable-return-routed-experts. TokenOutput.RoutedExperts carries
	// them; engines without routing (dense models, the in-process engine)
	// leave it nil.
	RoutedExperts bool
	// RoutedExpertsFrom asks for the routing from this position on
	// (SGLang's routed_experts_start_len, 0 ≤ it ≤ len(PromptIDs)), so a
	// resumed generation fetches only the rows it lacks; 0 is the whole
	// sequence. Engines that cannot cut it (vLLM) return the whole
	// sequence: TokenOutput.RoutedExperts.Start says where rows begin.
	RoutedExpertsFrom int
}

// GenerateRequest is one token-in/token-out generation call.
type GenerateRequest struct {
	// RequestID names the conversation the call belongs to. The contract:
	// one id per trajectory, the same on every turn and on every resume
	// of a turn after an engine abort; two trajectories never run under
	// one id at the same time, and an id may come back in a later
	// trajectory once the earlier one has ended. agentloop sends the
	// trajectory's id (Trajectory.ID). Engines abort by it
	// (Aborter.Abort stops every call with the id), routers route by it
	// (a trajectory's turns reach the server holding its prefix), and
	// servertest tells turns and resumes apart by it (servertest.Call).
	// Empty is allowed: such a call can be neither aborted by id nor
	// routed stickily.
	RequestID string
	// GroupID names a group of samples that share a prompt (a GRPO group), so a
	// router can start them on one server and reuse its prefix cache. Optional.
	GroupID string
	// Priority orders queued requests in engines that schedule (higher first).
	Priority  int
	PromptIDs []int32
	Params    SamplingParams
	// Vision is the prompt's images for a vision-language model; nil for
	// text. Engines that take no images (the in-process engine) refuse a
	// request that has it.
	Vision *Vision
}

// TokenOutput is what the engine sampled.
type TokenOutput struct {
	TokenIDs []int32
	// Logprobs[i] is the logprob of TokenIDs[i]; nil unless requested.
	Logprobs     []float32
	StopReason   StopReason
	PromptTokens int
	// CachedTokens is how many prompt tokens were served from a prefix cache.
	CachedTokens int
	// WeightVersion is the version of the weights that produced these tokens.
	WeightVersion int64
	// Retractions is how many times the engine took the request off to
	// free its KV cache and recomputed it later (SGLang's
	// meta_info.num_retractions): a pause in PauseRetract mode, memory
	// pressure, or (in-process) a weight update.
	Retractions int
	// PromptLogprobs[i] is the logprob of prompt token
	// Params.PromptLogprobsFrom+i; nil unless requested (or the engine
	// cannot compute them). Prompt position 0 has no tokens before it: its
	// entry is NaN (null on the wire).
	PromptLogprobs []float32
	// RoutedExperts is the MoE routing of the sequence (prompt ++ sampled
	// tokens) when Params.RoutedExperts asked for it and the engine has it.
	RoutedExperts *Routing
	// TopLogprobs[i] are the most probable tokens at TokenIDs[i]'s
	// position, most probable first (ties by lower id), at most
	// Params.TopLogprobs of them; nil unless requested. Their logprobs
	// are from the distribution the token was drawn from, as Logprobs[i]
	// is (so the sampled token, when among them, has Logprobs[i]);
	// tokens that distribution cannot draw (cut by top-k, top-p or
	// min-p) are left out, so a list can be shorter than asked.
	TopLogprobs [][]TopLogprob
}

// MaxTopLogprobs is the most SamplingParams.TopLogprobs may ask for: the
// OpenAI API's limit, and vLLM's default max_logprobs.
const MaxTopLogprobs = 20

// TopLogprob is one alternative at a sampled position.
type TopLogprob struct {
	TokenID int32
	Logprob float32
}

// Routing is the mixture-of-experts routing of consecutive positions of a
// sequence: for each position, each MoE layer, the TopK experts the router
// chose, as int16 (verl's dtype for routed_experts). Row r is position
// Start+r. Engines give no row for the last sampled token, which was never
// run through the model.
type Routing struct {
	Start   int
	Layers  int
	TopK    int
	Experts []int16 // Rows() × Layers × TopK, row-major
}

// Rows is the number of positions r covers.
func (r *Routing) Rows() int {
	if r == nil || r.Layers <= 0 || r.TopK <= 0 {
		return 0
	}
	return len(r.Experts) / (r.Layers * r.TopK)
}

// Check reports a malformed Routing: a negative start, a non-positive
// shape, or data that is not whole rows.
func (r *Routing) Check() error {
	switch {
	case r.Start < 0:
		return fmt.Errorf("routed experts: start %d < 0", r.Start)
	case r.Layers <= 0 || r.TopK <= 0:
		return fmt.Errorf("routed experts: layers %d and top-k %d must be > 0", r.Layers, r.TopK)
	case len(r.Experts)%(r.Layers*r.TopK) != 0:
		return fmt.Errorf("routed experts: %d values are not whole rows of %d layers × %d experts", len(r.Experts), r.Layers, r.TopK)
	}
	return nil
}

// LLMServer is a token-in/token-out engine: a remote server, a router over
// many servers, or the in-process engine.
type LLMServer interface {
	Generate(ctx context.Context, req GenerateRequest) (TokenOutput, error)
}

// Chunk is the tokens a streaming engine sampled since its previous chunk.
type Chunk struct {
	TokenIDs []int32
	// Logprobs[i] is the logprob of TokenIDs[i]; nil unless requested.
	Logprobs []float32
	// TopLogprobs[i] are TokenIDs[i]'s alternatives (as in
	// TokenOutput.TopLogprobs); nil unless requested.
	TopLogprobs [][]TopLogprob
}

// Streamer is implemented by engines that can hand out tokens as they are
// sampled, for streamed HTTP responses. GenerateStream behaves as Generate
// (same request, same final output, same abort and error semantics) and
// also calls emit with each run of newly sampled tokens, in order:
//   - emit is called sequentially, never concurrently, and never after
//     GenerateStream has returned; it may run on another goroutine than the
//     caller's, so it must not rely on goroutine-local state.
//   - On success the chunks' TokenIDs concatenated are a prefix of the
//     returned TokenIDs (equal to them unless the engine batches the tail
//     into the final output): a caller streams the chunks, then whatever
//     the final output holds beyond them.
//   - emit must not modify or keep the slices after it returns.
//   - A non-nil error from emit stops the generation (as an abort would)
//     and GenerateStream returns an error wrapping it.
type Streamer interface {
	GenerateStream(ctx context.Context, req GenerateRequest, emit func(Chunk) error) (TokenOutput, error)
}

// Aborter is implemented by engines that can stop requests early. An aborted
// Generate returns the tokens produced so far with StopReason StopAbort.
type Aborter interface {
	Abort(ctx context.Context, requestID string) error
	AbortAll(ctx context.Context) error
}

// SleepLevel says what Sleep frees.
type SleepLevel int

const (
	// SleepKVCache frees the KV cache and keeps the weights.
	SleepKVCache SleepLevel = 1
	// SleepWeights frees the KV cache and the weights (they must be
	// re-sent with UpdateWeights or reloaded before WakeUp returns).
	SleepWeights SleepLevel = 2
)

// Sleeper is implemented by engines that can release memory between rollout
// phases (for colocated training).
type Sleeper interface {
	Sleep(ctx context.Context, level SleepLevel) error
	WakeUp(ctx context.Context) error
}

// Tensor is a named float32 tensor for an in-process weight update.
type Tensor struct {
	Name  string
	Shape []int64
	Data  []float32
}

// Weights is a weight update: either a checkpoint path the server loads
// itself, or named tensors sent in-process. Version becomes the
// WeightVersion of every output produced with these weights.
type Weights struct {
	Version int64
	Path    string
	Tensors []Tensor
}

// WeightUpdater is implemented by engines that accept new policy weights.
type WeightUpdater interface {
	UpdateWeights(ctx context.Context, w Weights) error
}

// CacheFlusher is implemented by engines with a prefix cache that can be
// emptied (SGLang /flush_cache, vLLM /reset_prefix_cache). Requests in
// flight are not disturbed: what they computed stays theirs, it is only no
// longer found by new requests.
type CacheFlusher interface {
	FlushCache(ctx context.Context) error
}

// Pauser is implemented by engines that can stop generating without
// losing requests (SGLang /pause_generation and /continue_generation, vLLM
// /pause and /resume). While paused, new requests are accepted and queue;
// Resume ends any mode. The mode says what happens to the requests in
// flight. An engine that has no such mode returns an error wrapping
// errors.ErrUnsupported and changes nothing.
type Pauser interface {
	Pause(ctx context.Context, mode PauseMode) error
	Resume(ctx context.Context) error
}

// PauseMode is what Pause does with the requests in flight. The names are
// vLLM's (/pause?mode=) and SGLang's (pause_generation "mode").
type PauseMode string

const (
	// PauseAbort aborts every request in flight: its Generate returns the
	// tokens so far with StopAbort (vLLM "abort", SGLang "abort").
	PauseAbort PauseMode = "abort"
	// PauseKeep freezes the requests in flight where they are, KV cache
	// included; they continue after Resume (vLLM "keep", SGLang
	// "in_place").
	PauseKeep PauseMode = "keep"
	// PauseWait lets the requests in flight run to their end and returns
	// once they have; new ones queue meanwhile (vLLM "wait").
	PauseWait PauseMode = "wait"
	// PauseRetract takes the requests in flight off the engine, freeing
	// their KV cache; after Resume they are run again from their tokens so
	// far (prompt and sampled), which the engine recomputes (SGLang
	// "retract").
	PauseRetract PauseMode = "retract"
)

// ParsePauseMode reads a mode by its vLLM or SGLang name ("in_place" is
// PauseKeep).
func ParsePauseMode(s string) (PauseMode, error) {
	switch s {
	case "abort", "keep", "wait", "retract":
		return PauseMode(s), nil
	case "in_place":
		return PauseKeep, nil
	}
	return "", fmt.Errorf("%w: unknown pause mode %q (known: abort, keep or in_place, wait, retract)", ErrBadRequest, s)
}

// UnsupportedPause is the error of an engine that has no such pause mode.
func UnsupportedPause(engine string, mode PauseMode) error {
	return fmt.Errorf("%s: pause mode %q: %w", engine, mode, errors.ErrUnsupported)
}

// HealthChecker is implemented by engines that can report readiness. A nil
// error means healthy.
type HealthChecker interface {
	Health(ctx context.Context) error
}

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrUnavailable: the server could not be reached or said it is not
	// serving (connection refused, 503, closed).
	ErrUnavailable = errors.New("server unavailable")
	// ErrOverloaded: the server refused the request for load (429).
	ErrOverloaded = errors.New("server overloaded")
	// ErrBadRequest: the server rejected the request itself (4xx); sending it
	// elsewhere will not help.
	ErrBadRequest = errors.New("bad request")
	// ErrBadResponse: the server answered something that could not be read.
	ErrBadResponse = errors.New("bad response")
)

// Error is the typed error every server client returns: which server, which
// operation, and why.
type Error struct {
	Server string // base URL or name of the server
	Op     string // "generate", "abort", "health", ...
	Status int    // HTTP status, 0 if none
	// Retryable is true only when the call failed before the engine produced
	// any token, so sending the same request again (here or elsewhere) can
	// neither lose nor duplicate work.
	Retryable bool
	Err       error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s %s: HTTP %d: %v", e.Server, e.Op, e.Status, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Server, e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is a *Error that failed before any token
// was produced.
func IsRetryable(err error) bool {
	var se *Error
	return errors.As(err, &se) && se.Retryable
}
