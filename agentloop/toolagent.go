package agentloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// State is a ToolAgent state. Each state does one job and names the next.
type State int

const (
	StatePending         State = iota // render and encode the prompt, start the interaction
	StateGenerating                   // generate a turn, check limits, parse calls
	StateProcessingTools              // run the calls, append their results as one delta
	StateInteracting                  // let the interaction answer, append its text
	StateTerminated                   // record why and release everything
)

func (s State) String() string {
	switch s {
	case StatePending:
		return "PENDING"
	case StateGenerating:
		return "GENERATING"
	case StateProcessingTools:
		return "PROCESSING_TOOLS"
	case StateInteracting:
		return "INTERACTING"
	case StateTerminated:
		return "TERMINATED"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ToolAgent is the multi-turn tool-calling loop (verl's tool_agent):
// PENDING → GENERATING → PROCESSING_TOOLS | INTERACTING → … → TERMINATED.
//
// Unlike verl, malformed calls and tool failures become observations the
// model sees; MaxConsecutiveInvalidToolCalls ends loops that keep failing;
// calls beyond MaxParallelCalls are answered with an observation saying they
// were not run; tool instances live for the whole trajectory and are always
// released; every termination has a stop reason.
type ToolAgent struct {
	env    *Env
	cfg    Config
	stops  map[int32]string // the format's stop markers (parser.StopMarkers) by token id
	parser parser.Parser    // for samples that use all of env.Tools
}

// NewToolAgent is the Factory of tool_agent.
func NewToolAgent(env *Env, cfg Config) (AgentLoop, error) {
	if err := env.check(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Format == "" {
		cfg.Format = "hermes"
	}
	if cfg.MaxParallelCalls == 0 {
		cfg.MaxParallelCalls = 1
	}
	if cfg.MaxToolResponseLength == 0 {
		cfg.MaxToolResponseLength = 256
	}
	a := &ToolAgent{env: env, cfg: cfg}
	p, err := a.newParser(env.Tools)
	if err != nil {
		return nil, err
	}
	a.parser = p
	if a.stops, err = stopMarkerIDs(env.Tokenizer, cfg.Format); err != nil {
		return nil, err
	}
	return a, nil
}

// stopMarkerIDs maps the token ids of the format's stop markers
// (parser.StopMarkers) to their text, for a tokenizer that can look tokens
// up (*tokenizer.Tokenizer can).
func stopMarkerIDs(tok Tokenizer, format string) (map[int32]string, error) {
	markers := parser.StopMarkers(format)
	lookup, ok := tok.(interface{ TokenID(string) (int32, bool) })
	if len(markers) == 0 || !ok {
		return nil, nil
	}
	ids := make(map[int32]string, len(markers))
	for _, m := range markers {
		id, ok := lookup.TokenID(m)
		if !ok {
			return nil, fmt.Errorf("%w: format %q stops generation at %s, which the tokenizer has no token for (is it the model's tokenizer?)", ErrConfig, format, m)
		}
		ids[id] = m
	}
	return ids, nil
}

func (a *ToolAgent) newParser(tools *tool.Set) (parser.Parser, error) {
	var schemas []chat.ToolSchema
	if tools != nil {
		schemas = tools.Schemas()
	}
	p, err := parser.New(a.cfg.Format, parser.Options{ThinkAware: a.cfg.ThinkAware, Tools: schemas})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return p, nil
}

// toolRun is the ToolAgent's part of a trajectory's state.
type toolRun struct {
	*Episode
	parser      parser.Parser
	tools       *tool.Set
	session     *tool.Session
	sessionAt   time.Time // when the session opened, for EventSessionClose
	interaction Interaction
	interID     string
	interActive bool
	last        parser.Result // the last model turn, parsed
	invalidRun  int           // consecutive turns whose calls were all invalid
}

// Run implements AgentLoop.
func (a *ToolAgent) Run(ctx context.Context, s Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	tr := &toolRun{parser: a.parser, tools: a.env.Tools}
	state := StatePending
	defer func() {
		// Release on every path, also a panic in a hook or tool that
		// escaped tool's own recovery.
		if tr.Episode != nil {
			tr.release(ctx)
		}
	}()
	for state != StateTerminated {
		switch state {
		case StatePending:
			if !a.pending(ctx, tr, s, p) {
				state = StateTerminated
				continue
			}
			state = StateGenerating
		case StateGenerating:
			state = a.generating(ctx, tr)
		case StateProcessingTools:
			state = a.processTools(ctx, tr)
		case StateInteracting:
			state = a.interacting(ctx, tr)
		}
	}
	tr.release(ctx)
	return tr.Finish()
}

func (a *ToolAgent) pending(ctx context.Context, tr *toolRun, s Sample, p server.SamplingParams) bool {
	var selErr error
	if len(s.Tools) > 0 && tr.tools == nil {
		selErr = fmt.Errorf("%w: sample %d selects tools %v but no tools are configured", ErrConfig, s.Index, s.Tools)
	}
	if s.Tools != nil && tr.tools != nil {
		sub, err := tr.tools.Subset(s.Tools)
		if err != nil {
			selErr = fmt.Errorf("agentloop: tool selection of sample %d: %w", s.Index, err)
		} else {
			tr.tools = sub
			if tr.parser, err = a.newParser(sub); err != nil {
				selErr = err
			}
		}
	}
	var schemas []chat.ToolSchema
	if tr.tools != nil && selErr == nil {
		schemas = tr.tools.Schemas()
	}
	if len(a.stops) > 0 {
		// The format's stop markers join the stop tokens (the EOS tokens
		// when none are set).
		if len(p.StopTokenIDs) == 0 {
			p.StopTokenIDs = a.env.Tokenizer.EOSTokenIDs()
		}
		p.StopTokenIDs = slices.Clone(p.StopTokenIDs)
		ids := make([]int32, 0, len(a.stops))
		for id := range a.stops {
			ids = append(ids, id)
		}
		slices.Sort(ids) // the same request every run
		for _, id := range ids {
			if !slices.Contains(p.StopTokenIDs, id) {
				p.StopTokenIDs = append(p.StopTokenIDs, id)
			}
		}
	}
	tr.Episode = NewEpisode(a.env, a.cfg, s, p, schemas)
	if selErr != nil {
		tr.Fail(selErr)
		return false
	}
	if !tr.Start() {
		return false
	}
	// As in verl, interactions start only when some are configured
	// (interaction_config_path): verl's own datasets write
	// interaction_kwargs into every row whether or not they are used.
	if len(s.InteractionKwargs) > 0 && len(a.env.Interactions) > 0 {
		in, err := a.pickInteraction(s)
		if err != nil {
			tr.Fail(err)
			return false
		}
		id, err := in.Start(ctx, s.InteractionKwargs)
		if err != nil {
			if ctx.Err() != nil {
				tr.Stop(trajectory.StopAborted)
			} else {
				tr.Fail(fmt.Errorf("agentloop: starting the interaction of %s: %w", s.ID, err))
			}
			return false
		}
		tr.interaction, tr.interID, tr.interActive = in, id, true
	}
	if tr.tools != nil {
		var opts tool.SessionOptions
		if a.env.Trace != nil {
			opts.Observe = instanceObserver(a.env.Trace, s.ID)
		}
		tr.session = tr.tools.SessionWith(s.ToolsKwargs, opts)
		tr.sessionAt = time.Now()
		tr.Trace(Event{Kind: EventSessionOpen})
	}
	return true
}

// instanceObserver reports a session's tool instances as trace events.
// It may run on a tool's goroutine after the trajectory ended (a call
// abandoned at its timeout), so it holds only what never changes: the
// trace hook and the trajectory id, not the Episode.
func instanceObserver(trace TraceFunc, id string) func(tool.InstanceEvent) {
	return func(ie tool.InstanceEvent) {
		ev := Event{Kind: EventToolCreate, TrajectoryID: id, Tool: ie.Tool, Latency: ie.Latency, Err: ie.Err}
		if ie.Released {
			ev.Kind, ev.Latency = EventToolRelease, ie.Lifetime
		}
		trace(ev)
	}
}

func (a *ToolAgent) pickInteraction(s Sample) (Interaction, error) {
	name, _ := s.InteractionKwargs["name"].(string)
	if name == "" && len(a.env.Interactions) == 1 {
		for _, in := range a.env.Interactions {
			return in, nil
		}
	}
	in, ok := a.env.Interactions[name]
	if !ok {
		names := make([]string, 0, len(a.env.Interactions))
		for n := range a.env.Interactions {
			names = append(names, n)
		}
		return nil, fmt.Errorf("%w: sample %d: interaction %q is not configured (configured: %v)", ErrConfig, s.Index, name, names)
	}
	return in, nil
}

func (a *ToolAgent) generating(ctx context.Context, tr *toolRun) State {
	ids, ok := tr.Generate(ctx)
	if !ok {
		return StateTerminated
	}
	assistant, user := tr.Turns()
	if a.cfg.MaxAssistantTurns > 0 && assistant >= a.cfg.MaxAssistantTurns ||
		a.cfg.MaxUserTurns > 0 && user >= a.cfg.MaxUserTurns {
		tr.Stop(trajectory.StopMaxTurns)
		return StateTerminated
	}
	text, err := tr.ModelText(ids)
	if err != nil {
		tr.Fail(fmt.Errorf("agentloop: decoding turn %d of %s: %w", assistant, tr.Sample().ID, err))
		return StateTerminated
	}
	if n := len(ids); n > 0 && a.stops[ids[n-1]] != "" {
		text += a.stops[ids[n-1]] // ModelText drops the stop token; this one closes the call
	}
	res := tr.parser.Parse(text, ids)
	for i := range res.Calls {
		if res.Calls[i].ID == "" {
			res.Calls[i].ID = "call_" + strconv.Itoa(assistant) + "_" + strconv.Itoa(i)
		}
		if res.Calls[i].Type == "" {
			res.Calls[i].Type = "function"
		}
	}
	tr.last = res
	tr.Trace(Event{Kind: EventParse, Calls: len(res.Calls), ParseErrors: len(res.Errors)})
	tr.AddMessage(chat.Message{
		Role:             chat.RoleAssistant,
		Content:          res.Content,
		ReasoningContent: res.Reasoning,
		ToolCalls:        res.Calls,
	})
	switch {
	case len(res.Calls) > 0 || len(res.Errors) > 0:
		return StateProcessingTools
	case tr.interActive:
		return StateInteracting
	}
	tr.Stop(trajectory.StopCompleted)
	return StateTerminated
}

// invalid reports whether a failed call is the model's fault (as opposed to
// the tool's): such turns count towards MaxConsecutiveInvalidToolCalls.
func invalid(err error) bool {
	return errors.Is(err, tool.ErrUnknownTool) || errors.Is(err, tool.ErrInvalidArguments)
}

// callContext attaches the trajectory's tool.CallInfo for call c (verl's
// agent_data): the conversation so far and the sample. The loop does not
// touch the conversation while calls run.
func (tr *toolRun) callContext(ctx context.Context, c chat.ToolCall) context.Context {
	s := tr.Sample()
	return tool.WithCallInfo(ctx, &tool.CallInfo{
		TrajectoryID: s.ID, GroupID: s.GroupID, Index: s.Index,
		Messages: tr.Messages(), Call: c,
		DataSource: s.DataSource, GroundTruth: s.GroundTruth, Extra: s.Extra,
	})
}

func (a *ToolAgent) processTools(ctx context.Context, tr *toolRun) State {
	calls := tr.last.Calls
	run := calls[:min(len(calls), a.cfg.MaxParallelCalls)]
	results := make([]tool.CallResult, len(run))
	t0 := time.Now()
	if tr.session == nil {
		for i, c := range run {
			results[i] = tool.CallResult{Name: c.Function.Name, Text: "Error: no tools are available.", Err: tool.ErrUnknownTool}
		}
	} else if len(run) == 1 {
		results[0] = tr.session.Call(tr.callContext(ctx, run[0]), run[0])
	} else {
		var g errgroup.Group
		for i, c := range run {
			cctx := tr.callContext(ctx, c)
			g.Go(func() error {
				results[i] = tr.session.Call(cctx, c)
				return nil
			})
		}
		_ = g.Wait() // calls report failures in their results
	}
	tr.AddToolTime(time.Since(t0))
	if ctx.Err() != nil {
		tr.Stop(trajectory.StopAborted)
		return StateTerminated
	}

	added := make([]chat.Message, 0, len(calls)+len(tr.last.Errors))
	good, bad := 0, len(tr.last.Errors)
	for i, res := range results {
		text := tool.Truncate(res.Text, a.cfg.MaxToolResponseLength, a.cfg.truncateSide())
		tr.Trace(Event{Kind: EventTool, Tool: res.Name, Latency: res.Duration, Err: res.Err,
			Truncated: text != res.Text, Metrics: res.Metrics})
		tr.CountToolCall(res.Err != nil)
		if res.Err != nil {
			if invalid(res.Err) {
				bad++
			} else {
				good++ // a tool failure is not the model's: the call itself was valid
			}
		} else {
			good++
		}
		// Every call that was run has a tool reward, 0 when it failed, as
		// verl's _call_tool returns 0.0 for a call that raised.
		tr.AddToolReward(res.Reward)
		added = append(added, chat.Message{
			Role:       chat.RoleTool,
			Content:    text,
			ToolCallID: run[i].ID,
			Name:       run[i].Function.Name,
		})
	}
	for _, c := range calls[len(run):] {
		tr.CountToolCall(true)
		added = append(added, chat.Message{
			Role: chat.RoleTool,
			Content: fmt.Sprintf("Error: the call to %q was not run: at most %d tool calls are run per turn.",
				c.Function.Name, a.cfg.MaxParallelCalls),
			ToolCallID: c.ID,
			Name:       c.Function.Name,
		})
	}
	for _, pe := range tr.last.Errors {
		tr.CountToolCall(true)
		added = append(added, chat.Message{Role: chat.RoleTool, Content: "Error: " + pe.Message})
	}
	if good == 0 && bad > 0 {
		tr.invalidRun++
	} else {
		tr.invalidRun = 0
	}
	if a.cfg.MaxConsecutiveInvalidToolCalls > 0 && tr.invalidRun >= a.cfg.MaxConsecutiveInvalidToolCalls {
		tr.Stop(trajectory.StopInvalidCalls)
		return StateTerminated
	}
	if !tr.Observe(added...) {
		return StateTerminated
	}
	return StateGenerating
}

func (a *ToolAgent) interacting(ctx context.Context, tr *toolRun) State {
	t0 := time.Now()
	rep, err := tr.interaction.Respond(ctx, tr.interID, tr.Messages())
	lat := time.Since(t0)
	tr.AddToolTime(lat)
	tr.Trace(Event{Kind: EventInteraction, Latency: lat, Reward: rep.Reward, Err: err})
	if err != nil {
		if ctx.Err() != nil {
			tr.Stop(trajectory.StopAborted)
		} else {
			assistant, _ := tr.Turns()
			tr.Fail(fmt.Errorf("agentloop: interaction after turn %d of %s: %w", assistant, tr.Sample().ID, err))
		}
		return StateTerminated
	}
	// As verl's ToolAgentLoop._handle_interacting_state
	// (volcengine/verl verl/experimental/agent_loop/tool_agent_loop.py at
	// b178a3cd56f58b2d502255daba591e92833930a7): the turn's reward is kept
	// and the reply is appended as a user turn (mask 0, user_turns + 1)
	// whether or not it ends the episode, with no budget check before it;
	// verl cuts the response to response_length at the end, so what does
	// not fit is cut here (observeCut). A reply that leaves no budget ends
	// the loop with StopResponseLength, where verl generates one more turn
	// that its cut drops (and counts it in num_turns).
	tr.AddTurnReward(rep.Reward)
	ok := tr.observeCut(chat.Message{Role: chat.RoleUser, Content: rep.Text})
	if stop, _ := tr.Stopped(); stop == trajectory.StopError {
		return StateTerminated
	}
	if rep.Terminate {
		tr.Stop(trajectory.StopInteractionDone)
		return StateTerminated
	}
	if !ok {
		return StateTerminated
	}
	return StateGenerating
}

// release closes the tool session and finishes the interaction, once. It
// runs on a context detached from ctx so a cancelled trajectory still
// releases everything.
func (tr *toolRun) release(ctx context.Context) {
	if tr.session == nil && !tr.interActive {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	stop, stopErr := tr.Stopped()
	if tr.session != nil {
		err := tr.session.Close(rctx)
		if err != nil && stopErr == nil && stop != trajectory.StopAborted {
			tr.SetExtra(ExtraReleaseError, err.Error())
		}
		tr.session = nil
		tr.Trace(Event{Kind: EventSessionClose, Latency: time.Since(tr.sessionAt), Err: err})
	}
	if tr.interActive {
		tr.interActive = false
		if stop != trajectory.StopAborted && stop != trajectory.StopError {
			if score, err := tr.interaction.FinalScore(rctx, tr.interID); err == nil {
				tr.SetExtra(ExtraInteractionScore, score)
			} else {
				tr.SetExtra(ExtraInteractionScoreError, err.Error())
			}
		}
		if err := tr.interaction.Finalize(rctx, tr.interID); err != nil {
			tr.SetExtra(ExtraInteractionFinalizeError, err.Error())
		}
	}
}
