package agentloop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// releaseTimeout bounds the release of tool instances and interactions at
// the end of a trajectory; it runs on a context detached from the
// trajectory's so a cancelled run still releases everything.
const releaseTimeout = 30 * time.Second

// Episode is the per-turn machinery of one trajectory, the building block
// of agent loops: SingleTurn and ToolAgent are written with it, and a
// custom AgentLoop composes it the same way:
//
//	e := agentloop.NewEpisode(env, cfg, s, p, nil)
//	if e.Start() { // render and encode the prompt (or end: prompt_length)
//		for ids, ok := e.Generate(ctx); ok; ids, ok = e.Generate(ctx) {
//			// decide: e.ModelText(ids), e.AddMessage(...), e.Observe(...) or e.Stop(...)
//		}
//	}
//	return e.Finish()
//
// It owns what every loop must get right: the response budget
// (Config.ResponseLength) and the prompt budget (PromptLength); resumable
// generation across engine aborts with the weight versions that produced
// the tokens (GenerateResumable); the partial turn kept on cancellation;
// observations appended as tokenizer deltas with mask 0, so history is
// never re-tokenized; stop reasons, verl's turn count, timing, counters
// and trace events. Tokens are assembled only through a trajectory.Builder,
// whose buffer is also each turn's prompt.
//
// After Generate, Observe or Start return false the loop must end and call
// Finish; Stopped says why. An Episode is used by one goroutine.
type Episode struct {
	env    *Env
	cfg    Config
	s      Sample
	params server.SamplingParams
	start  time.Time

	cc tokenizer.ChatContext // the conversation so far, tools and template kwargs
	b  *trajectory.Builder

	timing         trajectory.Timing
	minV, maxV     int64
	haveVersion    bool
	preempted      int
	routing        *server.Routing // the last turn's MoE routing of the sequence
	assistantTurns int
	userTurns      int
	turnRewards    []float64
	toolRewards    []float64
	toolCalls      int
	toolErrors     int
	extra          map[string]any
	images         []episodeImage // every image so far, in block order
	pending        []episodeImage // the images of the delta encodeDelta returned last

	stop   trajectory.StopReason
	err    error
	envErr error // NewEpisode got no usable Env
}

// NewEpisode starts the episode of sample s with sampling params p; tools
// are the schemas the chat template renders (nil for none). The stop tokens
// default to the tokenizer's EOS tokens. env and cfg are what the loop's
// Factory got; env must have a Server and a Tokenizer (NewManager checks).
func NewEpisode(env *Env, cfg Config, s Sample, p server.SamplingParams, tools []chat.ToolSchema) *Episode {
	e := &Episode{env: env, cfg: cfg, s: s, params: p, start: time.Now()}
	if env == nil || env.check() != nil {
		// Start reports it: a loop that never went through NewManager's
		// checks gets an error, not a panic.
		e.envErr = errors.New("agentloop: NewEpisode: env is nil or has no Server or Tokenizer")
		if env != nil {
			e.envErr = env.check()
		}
		e.env = &Env{}
		return e
	}
	e.cc = tokenizer.ChatContext{
		Messages:            append(make([]chat.Message, 0, len(s.Messages)+8), s.Messages...),
		Tools:               tools,
		AddGenerationPrompt: true,
		Extra:               cfg.ChatTemplateKwargs,
	}
	if len(p.StopTokenIDs) == 0 {
		e.params.StopTokenIDs = env.Tokenizer.EOSTokenIDs()
	}
	return e
}

// Start renders and encodes the prompt. It returns false when the loop must
// end: the prompt could not be rendered (StopError) or is over
// Config.PromptLength (StopPromptLength).
func (e *Episode) Start() bool {
	if e.stop != "" {
		return false
	}
	if e.envErr != nil {
		e.Fail(e.envErr)
		return false
	}
	if err := e.s.Validate(); err != nil {
		// Before the template, which would drop an unknown role or fail
		// on an empty conversation with a message about its own code.
		e.Fail(fmt.Errorf("agentloop: %s: %w", e.s.describe(e.s.Index), err))
		return false
	}
	t0 := time.Now()
	ids, err := e.env.Tokenizer.EncodeChat(e.cc)
	if err == nil {
		var imgs []episodeImage
		where := e.s.describe(e.s.Index)
		if imgs, err = e.loadImages(context.Background(), e.cc.Messages, where, true); err == nil {
			if ids, err = e.expand(ids, imgs, where); err == nil {
				e.images = imgs
			}
		}
	}
	e.Trace(Event{Kind: EventPrompt, Tokens: len(ids), Latency: time.Since(t0), Err: err})
	if err != nil {
		e.Fail(fmt.Errorf("agentloop: encoding the prompt of sample %d: %w", e.s.Index, err))
		return false
	}
	e.b = trajectory.NewBuilder(ids)
	if e.cfg.PromptLength > 0 && len(ids) > e.cfg.PromptLength {
		e.stop = trajectory.StopPromptLength
		return false
	}
	return true
}

// Fail ends the episode with StopError and err, which Finish returns.
func (e *Episode) Fail(err error) {
	e.stop, e.err = trajectory.StopError, err
}

// Stop ends the episode with reason (one of trajectory's Stop* or the
// loop's own).
func (e *Episode) Stop(reason trajectory.StopReason) { e.stop = reason }

// Stopped is the reason the episode ended and the error that ended it;
// "" while it goes on.
func (e *Episode) Stopped() (trajectory.StopReason, error) { return e.stop, e.err }

// Sample is the sample being run, with its Manager-assigned ids.
func (e *Episode) Sample() Sample { return e.s }

// Turns are the assistant turns generated and the observations appended
// so far.
func (e *Episode) Turns() (assistant, user int) { return e.assistantTurns, e.userTurns }

// Messages is the conversation so far: the prompt, and every message added
// by Observe and AddMessage. It must not be modified.
func (e *Episode) Messages() []chat.Message { return e.cc.Messages }

// AddMessage records a message whose tokens are already in the trajectory,
// typically the model's turn as parsed (content, tool calls), so that the
// next Observe renders its delta after it. It appends no tokens.
func (e *Episode) AddMessage(m chat.Message) { e.cc.Messages = append(e.cc.Messages, m) }

// Budget is the number of tokens the response may still grow by; -1 when
// unlimited.
func (e *Episode) Budget() int {
	if e.cfg.ResponseLength <= 0 {
		return -1
	}
	if e.b == nil {
		return e.cfg.ResponseLength
	}
	return e.cfg.ResponseLength - e.b.Len()
}

// started reports whether op may run: the episode has not ended and its
// prompt is encoded. Calling op before Start is the loop's bug; it ends the
// episode with an error rather than a panic.
func (e *Episode) started(op string) bool {
	if e.stop != "" {
		return false
	}
	if e.b == nil {
		e.Fail(fmt.Errorf("agentloop: Episode.%s called before Start on %s", op, e.s.ID))
		return false
	}
	return true
}

// Generate runs one model turn on the conversation so far and appends its
// tokens (mask 1, with logprobs). It returns the sampled ids, and false
// when the loop must end: the budget is used up or the engine stopped on
// length (StopResponseLength), ctx ended or the engine aborted for good
// (StopAborted, the partial turn kept), or the engine failed (StopError).
func (e *Episode) Generate(ctx context.Context) (ids []int32, ok bool) {
	if !e.started("Generate") {
		return nil, false
	}
	p := e.params
	if left := e.Budget(); left >= 0 {
		if left == 0 {
			e.stop = trajectory.StopResponseLength
			return nil, false
		}
		if p.MaxNewTokens <= 0 || p.MaxNewTokens > left {
			p.MaxNewTokens = left
		}
	}
	req := server.GenerateRequest{RequestID: e.s.ID, GroupID: e.s.GroupID, PromptIDs: e.b.Tokens(), Params: p, Vision: e.visionRequest()}
	t0 := time.Now()
	g, err := GenerateResumable(ctx, e.env.Server, req)
	lat := time.Since(t0)
	e.timing.Generate += lat
	e.assistantTurns++
	e.preempted += g.Preempted
	if len(g.TokenIDs) > 0 {
		if !e.haveVersion {
			e.minV, e.maxV, e.haveVersion = g.MinWeightVersion, g.MaxWeightVersion, true
		} else {
			e.minV, e.maxV = min(e.minV, g.MinWeightVersion), max(e.maxV, g.MaxWeightVersion)
		}
	}
	if g.RoutedExperts != nil {
		// Each turn's call covers the whole sequence: its routing
		// replaces the last (verl's ToolAgentLoop keeps the last output's).
		e.routing = g.RoutedExperts
	}
	if aerr := e.b.AppendModel(g.TokenIDs, g.Logprobs); aerr != nil && err == nil {
		err = fmt.Errorf("%w: %w", server.ErrBadResponse, aerr)
	}
	e.Trace(Event{Kind: EventGenerate, Tokens: len(g.TokenIDs), Latency: lat, EngineStop: g.StopReason, Preempted: g.Preempted,
		PromptTokens: g.PromptTokens, CachedTokens: g.CachedTokens, Err: err})
	switch {
	case ctx.Err() != nil:
		e.stop = trajectory.StopAborted
		return g.TokenIDs, false
	case err != nil:
		e.Fail(fmt.Errorf("agentloop: turn %d of %s: %w", e.assistantTurns, e.s.ID, err))
		return g.TokenIDs, false
	case g.StopReason == server.StopAbort:
		e.stop = trajectory.StopAborted
		return g.TokenIDs, false
	case g.StopReason == server.StopLength || (e.cfg.ResponseLength > 0 && e.b.Len() >= e.cfg.ResponseLength):
		e.stop = trajectory.StopResponseLength
		return g.TokenIDs, false
	}
	return g.TokenIDs, true
}

// Observe appends the messages that continue the conversation (tool
// results, a user turn) as the tokenizer's delta after the conversation so
// far (mask 0). It returns false when the loop must end: the delta would
// reach the response budget (it is then not appended, as verl does:
// StopResponseLength) or could not be encoded (StopError).
func (e *Episode) Observe(added ...chat.Message) bool {
	if !e.started("Observe") {
		return false
	}
	delta, err := e.encodeDelta(added)
	if err != nil {
		e.Fail(fmt.Errorf("agentloop: encoding the observation after turn %d of %s: %w", e.assistantTurns, e.s.ID, err))
		return false
	}
	if e.cfg.ResponseLength > 0 && e.b.Len()+len(delta) >= e.cfg.ResponseLength {
		e.stop = trajectory.StopResponseLength
		return false
	}
	if err := e.b.AppendObservation(delta); err != nil {
		e.Fail(fmt.Errorf("agentloop: observation after turn %d of %s: %w", e.assistantTurns, e.s.ID, err))
		return false
	}
	e.cc.Messages = append(e.cc.Messages, added...)
	e.images, e.pending = append(e.images, e.pending...), nil
	e.userTurns++
	e.Trace(Event{Kind: EventObservation, Tokens: len(delta)})
	return true
}

// encodeDelta is the tokenizer's delta for added, checked against verl's
// continuous-token rule when Env.Boundary is set.
func (e *Episode) encodeDelta(added []chat.Message) ([]int32, error) {
	delta, err := e.env.Tokenizer.EncodeDelta(e.cc, added)
	if err != nil || len(added) == 0 {
		return delta, err
	}
	if e.env.Boundary != nil {
		if err := e.env.Boundary.Check(e.b.Tokens(), delta, added[0].Role == chat.RoleTool); err != nil {
			return nil, err
		}
	}
	// The delta holds a collapsed block for each image of added and
	// nothing of the history: its blocks are expanded on their own.
	where := fmt.Sprintf("the observation after turn %d of %s", e.assistantTurns, e.s.ID)
	imgs, err := e.loadImages(context.Background(), added, where, false)
	if err != nil {
		return nil, err
	}
	if delta, err = e.expand(delta, imgs, where); err != nil {
		return nil, err
	}
	e.pending = imgs
	return delta, nil
}

// observeCut appends added like Observe, but as verl appends an
// interaction's reply: without Observe's budget check. The tokens past
// Config.ResponseLength are cut, as verl cuts the response to
// response_length when the loop ends (the reply is the last thing verl
// keeps: once it reaches the budget, verl's next turn is cut away whole).
// It returns false when the loop must end: the budget is used up
// (StopResponseLength) or the reply could not be encoded (StopError).
func (e *Episode) observeCut(added ...chat.Message) bool {
	if !e.started("Observe") {
		return false
	}
	delta, err := e.encodeDelta(added)
	if err != nil {
		e.Fail(fmt.Errorf("agentloop: encoding the observation after turn %d of %s: %w", e.assistantTurns, e.s.ID, err))
		return false
	}
	full := false
	if left := e.Budget(); left >= 0 && len(delta) >= left {
		delta, full = delta[:max(left, 0)], true
		delta = e.cutPending(delta)
	}
	if err := e.b.AppendObservation(delta); err != nil {
		e.Fail(fmt.Errorf("agentloop: observation after turn %d of %s: %w", e.assistantTurns, e.s.ID, err))
		return false
	}
	e.cc.Messages = append(e.cc.Messages, added...)
	e.images, e.pending = append(e.images, e.pending...), nil
	e.userTurns++
	e.Trace(Event{Kind: EventObservation, Tokens: len(delta)})
	if full {
		e.stop = trajectory.StopResponseLength
		return false
	}
	return true
}

// ModelText decodes a model turn for a parser: special tokens are kept
// (tool-call markers may be special), the trailing stop token is not.
func (e *Episode) ModelText(ids []int32) (string, error) {
	if n := len(ids); n > 0 {
		for _, eos := range e.params.StopTokenIDs {
			if ids[n-1] == eos {
				ids = ids[:n-1]
				break
			}
		}
	}
	return e.env.Tokenizer.Decode(ids, false)
}

// AddToolTime adds d to the time spent outside the engine (tools,
// interactions): Timing.Tool.
func (e *Episode) AddToolTime(d time.Duration) { e.timing.Tool += d }

// CountToolCall counts one attempted tool call (run, refused or
// unparsable) and whether it failed: Trajectory.ToolCalls and ToolErrors.
func (e *Episode) CountToolCall(failed bool) {
	e.toolCalls++
	if failed {
		e.toolErrors++
	}
}

// AddToolReward records the reward of one tool call that ran
// (Trajectory.ToolRewards): every such call adds one, 0 when it failed, as
// verl's _call_tool returns 0.0 for a call that raised.
func (e *Episode) AddToolReward(r float64) { e.toolRewards = append(e.toolRewards, r) }

// AddTurnReward records an interaction's reward for one turn
// (Trajectory.TurnRewards).
func (e *Episode) AddTurnReward(r float64) { e.turnRewards = append(e.turnRewards, r) }

// SetExtra stores v (a JSON-encodable value) under key in the
// trajectory's Extra when it is built.
func (e *Episode) SetExtra(key string, v any) {
	if e.extra == nil {
		e.extra = make(map[string]any)
	}
	e.extra[key] = v
}

// Trace sends ev to Env.Trace, filling its trajectory id and, when zero,
// its turn with the current assistant turn.
func (e *Episode) Trace(ev Event) {
	if e.env.Trace == nil {
		return
	}
	ev.TrajectoryID = e.s.ID
	if ev.Turn == 0 {
		ev.Turn = e.assistantTurns
	}
	e.env.Trace(ev)
}

// Finish builds the trajectory: tokens, ids, stop reason (completed when
// none was set), verl's turn count (the prompt is a turn), weight
// versions, rewards, timing, counters and extras. A trajectory that ended
// with StopError comes with its error. An episode that never encoded its
// prompt has no trajectory, only the error.
func (e *Episode) Finish() (*trajectory.Trajectory, error) {
	if e.b == nil {
		if e.err == nil {
			e.err = errors.New("agentloop: the loop ended before encoding the prompt")
		}
		e.Trace(Event{Kind: EventDone, Stop: trajectory.StopError, Err: e.err})
		return nil, e.err
	}
	t := e.b.Build()
	t.ID, t.Index, t.GroupID = e.s.ID, e.s.Index, e.s.GroupID
	t.StopReason = e.stop
	if t.StopReason == "" {
		t.StopReason = trajectory.StopCompleted
	}
	t.NumTurns = e.userTurns + e.assistantTurns + 1 // verl's count: the prompt is a turn
	t.MinWeightVersion, t.MaxWeightVersion = e.minV, e.maxV
	t.TurnRewards, t.ToolRewards = e.turnRewards, e.toolRewards
	e.timing.Total = time.Since(e.start)
	t.Timing = e.timing
	t.ToolCalls, t.ToolErrors, t.NumPreempted = e.toolCalls, e.toolErrors, e.preempted
	if r := e.routing; r != nil {
		// Rows past the sequence (tokens the budget cut) are dropped.
		w := r.Layers * r.TopK
		rows := min(r.Rows(), len(t.PromptIDs)+len(t.ResponseIDs))
		t.RoutedExperts = &trajectory.Routing{Layers: r.Layers, TopK: r.TopK, Experts: r.Experts[:rows*w]}
	}
	if mm, err := e.multiModal(e.b.Tokens()); err != nil && e.err == nil {
		e.Fail(err)
		t.StopReason = e.stop
	} else {
		t.MultiModal = mm
	}
	for k, v := range e.extra {
		setExtra(t, k, v)
	}
	if e.err != nil {
		setExtra(t, ExtraError, e.err.Error())
	}
	e.Trace(Event{Kind: EventDone, Stop: t.StopReason, Err: e.err})
	if t.StopReason == trajectory.StopError {
		return t, e.err
	}
	return t, nil
}

// SingleTurn renders the prompt, generates once and stops: verl's
// single_turn_agent.
type SingleTurn struct {
	env *Env
	cfg Config
}

// NewSingleTurn is the Factory of single_turn_agent.
func NewSingleTurn(env *Env, cfg Config) (AgentLoop, error) {
	if err := env.check(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &SingleTurn{env: env, cfg: cfg}, nil
}

// Run implements AgentLoop.
func (a *SingleTurn) Run(ctx context.Context, s Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	e := NewEpisode(a.env, a.cfg, s, p, nil)
	if e.Start() {
		e.Generate(ctx)
	}
	return e.Finish()
}

// cutPending keeps the pending images whose blocks the cut delta holds
// whole, and cuts the delta before a block it holds in part: a trainer
// cannot use half an image's tokens.
func (e *Episode) cutPending(delta []int32) []int32 {
	if len(e.pending) == 0 {
		return delta
	}
	p := e.env.Vision.Placeholders
	whole, start := 0, -1
	for i, id := range delta {
		switch int(id) {
		case p.VisionStart:
			start = i
		case p.VisionEnd:
			if start >= 0 && i > start+1 && int(delta[start+1]) == p.Pad {
				whole++
			}
			start = -1
		}
	}
	if start >= 0 { // a block the cut left open
		delta = delta[:start]
	}
	e.pending = e.pending[:min(whole, len(e.pending))]
	return delta
}
