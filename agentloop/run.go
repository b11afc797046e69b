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

// run is the state of one trajectory shared by the built-in loops. Token
// assembly goes only through b: model tokens with AppendModel as sampled,
// everything else with AppendObservation as a tokenizer delta.
type run struct {
	env    *Env
	cfg    Config
	s      Sample
	params server.SamplingParams
	start  time.Time

	cc tokenizer.ChatContext // the conversation so far, tools and template kwargs
	b  *trajectory.Builder
	// seq mirrors prompt ++ response as the Builder grows, so each turn's
	// request reuses it instead of copying the whole sequence; requests get
	// it with its capacity cut, and elements already handed out are never
	// written again.
	seq []int32

	timing         trajectory.Timing
	minV, maxV     int64
	haveVersion    bool
	preempted      int
	assistantTurns int
	userTurns      int
	turnRewards    []float64
	toolRewards    []float64
	toolCalls      int
	toolErrors     int
	extra          map[string]any

	stop trajectory.StopReason
	err  error
}

func newRun(env *Env, cfg Config, s Sample, p server.SamplingParams, tools []chat.ToolSchema) *run {
	r := &run{env: env, cfg: cfg, s: s, params: p, start: time.Now()}
	r.cc = tokenizer.ChatContext{
		Messages:            append(make([]chat.Message, 0, len(s.Messages)+8), s.Messages...),
		Tools:               tools,
		AddGenerationPrompt: true,
		Extra:               cfg.ChatTemplateKwargs,
	}
	if len(p.StopTokenIDs) == 0 {
		r.params.StopTokenIDs = env.Tokenizer.EOSTokenIDs()
	}
	return r
}

// encodePrompt renders and encodes the prompt. It returns false when the
// loop must end (the prompt is over budget or could not be rendered).
func (r *run) encodePrompt() bool {
	ids, err := r.env.Tokenizer.EncodeChat(r.cc)
	if err != nil {
		r.fail(fmt.Errorf("agentloop: encoding the prompt of sample %d: %w", r.s.Index, err))
		return false
	}
	r.b = trajectory.NewBuilder(ids)
	r.seq = append(make([]int32, 0, len(ids)+512), ids...)
	if r.cfg.PromptLength > 0 && len(ids) > r.cfg.PromptLength {
		r.stop = trajectory.StopPromptLength
		return false
	}
	return true
}

func (r *run) fail(err error) {
	r.stop, r.err = trajectory.StopError, err
}

// budget is the number of tokens the response may still grow by; -1 when
// unlimited.
func (r *run) budget() int {
	if r.cfg.ResponseLength <= 0 {
		return -1
	}
	return r.cfg.ResponseLength - r.b.Len()
}

// generate runs one model turn and appends its tokens. It returns the
// sampled ids, or ok=false when the loop must end (stop is set).
func (r *run) generate(ctx context.Context) (ids []int32, ok bool) {
	p := r.params
	if left := r.budget(); left >= 0 {
		if left == 0 {
			r.stop = trajectory.StopResponseLength
			return nil, false
		}
		if p.MaxNewTokens <= 0 || p.MaxNewTokens > left {
			p.MaxNewTokens = left
		}
	}
	req := server.GenerateRequest{RequestID: r.s.ID, GroupID: r.s.GroupID, PromptIDs: r.seq[:len(r.seq):len(r.seq)], Params: p}
	t0 := time.Now()
	g, err := GenerateResumable(ctx, r.env.Server, req)
	lat := time.Since(t0)
	r.timing.Generate += lat
	r.assistantTurns++
	r.preempted += g.Preempted
	if len(g.TokenIDs) > 0 {
		if !r.haveVersion {
			r.minV, r.maxV, r.haveVersion = g.MinWeightVersion, g.MaxWeightVersion, true
		} else {
			r.minV, r.maxV = min(r.minV, g.MinWeightVersion), max(r.maxV, g.MaxWeightVersion)
		}
	}
	if aerr := r.b.AppendModel(g.TokenIDs, g.Logprobs); aerr != nil {
		if err == nil {
			err = fmt.Errorf("%w: %w", server.ErrBadResponse, aerr)
		}
	} else {
		r.seq = append(r.seq, g.TokenIDs...)
	}
	r.env.trace(Event{Kind: EventGenerate, TrajectoryID: r.s.ID, Turn: r.assistantTurns, Tokens: len(g.TokenIDs),
		Latency: lat, EngineStop: g.StopReason, Preempted: g.Preempted, Err: err})
	switch {
	case ctx.Err() != nil:
		r.stop = trajectory.StopAborted
		return g.TokenIDs, false
	case err != nil:
		r.fail(fmt.Errorf("agentloop: turn %d of %s: %w", r.assistantTurns, r.s.ID, err))
		return g.TokenIDs, false
	case g.StopReason == server.StopAbort:
		r.stop = trajectory.StopAborted
		return g.TokenIDs, false
	case g.StopReason == server.StopLength || (r.cfg.ResponseLength > 0 && r.b.Len() >= r.cfg.ResponseLength):
		r.stop = trajectory.StopResponseLength
		return g.TokenIDs, false
	}
	return g.TokenIDs, true
}

// observe appends the delta that continues the conversation with added
// (mask 0). It returns false when the loop must end: the delta would reach
// the response budget (it is then not appended, as verl does) or could not
// be encoded.
func (r *run) observe(added []chat.Message) bool {
	delta, err := r.env.Tokenizer.EncodeDelta(r.cc, added)
	if err != nil {
		r.fail(fmt.Errorf("agentloop: encoding the observation after turn %d of %s: %w", r.assistantTurns, r.s.ID, err))
		return false
	}
	if r.cfg.ResponseLength > 0 && r.b.Len()+len(delta) >= r.cfg.ResponseLength {
		r.stop = trajectory.StopResponseLength
		return false
	}
	if err := r.b.AppendObservation(delta); err != nil {
		r.fail(fmt.Errorf("agentloop: observation after turn %d of %s: %w", r.assistantTurns, r.s.ID, err))
		return false
	}
	r.seq = append(r.seq, delta...)
	r.cc.Messages = append(r.cc.Messages, added...)
	r.userTurns++
	r.env.trace(Event{Kind: EventObservation, TrajectoryID: r.s.ID, Turn: r.assistantTurns, Tokens: len(delta)})
	return true
}

// modelText decodes a model turn for the parser: special tokens are kept
// (tool-call markers may be special), the trailing stop token is not.
func (r *run) modelText(ids []int32) (string, error) {
	if n := len(ids); n > 0 {
		for _, eos := range r.params.StopTokenIDs {
			if ids[n-1] == eos {
				ids = ids[:n-1]
				break
			}
		}
	}
	return r.env.Tokenizer.Decode(ids, false)
}

// finish builds the trajectory. A run that never encoded its prompt has no
// trajectory.
func (r *run) finish() (*trajectory.Trajectory, error) {
	if r.b == nil {
		if r.err == nil {
			r.err = errors.New("agentloop: the loop ended before encoding the prompt")
		}
		r.env.trace(Event{Kind: EventDone, TrajectoryID: r.s.ID, Stop: trajectory.StopError, Err: r.err})
		return nil, r.err
	}
	t := r.b.Build()
	t.ID, t.Index, t.GroupID = r.s.ID, r.s.Index, r.s.GroupID
	t.StopReason = r.stop
	if t.StopReason == "" {
		t.StopReason = trajectory.StopCompleted
	}
	t.NumTurns = r.userTurns + r.assistantTurns + 1 // verl's count: the prompt is a turn
	t.MinWeightVersion, t.MaxWeightVersion = r.minV, r.maxV
	t.TurnRewards, t.ToolRewards = r.turnRewards, r.toolRewards
	r.timing.Total = time.Since(r.start)
	t.Timing = r.timing
	if r.toolCalls > 0 || r.toolErrors > 0 {
		setExtra(t, ExtraToolCalls, r.toolCalls)
		setExtra(t, ExtraToolErrors, r.toolErrors)
	}
	if r.preempted > 0 {
		setExtra(t, ExtraNumPreempted, r.preempted)
	}
	for k, v := range r.extra {
		setExtra(t, k, v)
	}
	if r.err != nil {
		setExtra(t, ExtraError, r.err.Error())
	}
	r.env.trace(Event{Kind: EventDone, TrajectoryID: r.s.ID, Turn: r.assistantTurns, Stop: t.StopReason, Err: r.err})
	if t.StopReason == trajectory.StopError {
		return t, r.err
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
	r := newRun(a.env, a.cfg, s, p, nil)
	if r.encodePrompt() {
		r.generate(ctx)
	}
	return r.finish()
}
