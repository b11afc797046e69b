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

// ToolKit is the tool-calling machinery of a loop, made once in the loop's
// Factory and shared by all its runs: the config with the tool defaults
// applied and the parser for Env.Tools. ToolAgent is built on it, and so is
// any custom tool loop:
//
//	kit, err := agentloop.NewToolKit(env, cfg) // in the Factory
//	…
//	e := kit.Episode(s, p) // in Run
//	if e.Start() {
//		for {
//			turn, ok := e.GenerateTurn(ctx)
//			if !ok {
//				break
//			}
//			if !turn.HasCalls() {
//				e.Stop(trajectory.StopCompleted)
//				break
//			}
//			if !e.Step(ctx, turn) { // or CallTools, inspect, Observe
//				break
//			}
//		}
//	}
//	return e.Finish()
type ToolKit struct {
	env    *Env
	cfg    Config
	parser parser.Parser    // for samples that use all of env.Tools
	stops  map[int32]string // the format's stop markers (parser.StopMarkers) by token id
}

// NewToolKit checks env and cfg and applies the tool defaults (verl's):
// Format "hermes", MaxParallelCalls 1, MaxToolResponseLength 256,
// ToolResponseTruncateSide "middle".
func NewToolKit(env *Env, cfg Config) (*ToolKit, error) {
	if env == nil {
		return nil, errors.New("agentloop: NewToolKit: env is nil")
	}
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
	if cfg.ToolResponseTruncateSide == "" {
		cfg.ToolResponseTruncateSide = "middle"
	}
	k := &ToolKit{env: env, cfg: cfg}
	p, err := k.newParser(env.Tools)
	if err != nil {
		return nil, err
	}
	k.parser = p
	if k.stops, err = stopMarkerIDs(env.Tokenizer, cfg.Format); err != nil {
		return nil, err
	}
	return k, nil
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

// Config is the kit's config, with the defaults applied.
func (k *ToolKit) Config() Config { return k.cfg }

func (k *ToolKit) newParser(tools *tool.Set) (parser.Parser, error) {
	var schemas []chat.ToolSchema
	if tools != nil {
		schemas = tools.Schemas()
	}
	p, err := parser.New(k.cfg.Format, parser.Options{ThinkAware: k.cfg.ThinkAware, Tools: schemas})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return p, nil
}

// Episode begins the tool episode of sample s with sampling params p. It
// narrows the tools to Sample.Tools; a selection that fails ends the
// episode at Start with the error.
func (k *ToolKit) Episode(s Sample, p server.SamplingParams) *ToolEpisode {
	e := &ToolEpisode{kit: k, parser: k.parser, tools: k.env.Tools}
	if len(s.Tools) > 0 && e.tools == nil {
		e.selErr = fmt.Errorf("%w: sample %d selects tools %v but no tools are configured", ErrConfig, s.Index, s.Tools)
	}
	if s.Tools != nil && e.tools != nil {
		sub, err := e.tools.Subset(s.Tools)
		if err != nil {
			e.selErr = fmt.Errorf("agentloop: tool selection of sample %d: %w", s.Index, err)
		} else {
			e.tools = sub
			if e.parser, err = k.newParser(sub); err != nil {
				e.selErr = err
			}
		}
	}
	var schemas []chat.ToolSchema
	if e.tools != nil && e.selErr == nil {
		schemas = e.tools.Schemas()
	}
	if len(k.stops) > 0 {
		// The format's stop markers join the stop tokens (the EOS tokens
		// when none are set): Gemma 4 keeps generating after a call, so
		// verl stops at <tool_call|>.
		if len(p.StopTokenIDs) == 0 {
			p.StopTokenIDs = k.env.Tokenizer.EOSTokenIDs()
		}
		p.StopTokenIDs = slices.Clone(p.StopTokenIDs)
		ids := make([]int32, 0, len(k.stops))
		for id := range k.stops {
			ids = append(ids, id)
		}
		slices.Sort(ids) // the same request every run
		for _, id := range ids {
			if !slices.Contains(p.StopTokenIDs, id) {
				p.StopTokenIDs = append(p.StopTokenIDs, id)
			}
		}
	}
	e.Episode = NewEpisode(k.env, k.cfg, s, p, schemas)
	return e
}

// ToolEpisode is an Episode with the sample's tools: it generates turns and
// parses their calls (GenerateTurn), runs the calls and appends their
// observations (CallTools, Step), with the call ids, tool.CallInfo, trace
// events, counters, tool rewards, MaxAssistantTurns, MaxParallelCalls and
// MaxConsecutiveInvalidToolCalls of ToolAgent. It owns a tool session
// (the tool instances of the trajectory), which Finish or Close releases.
// A ToolEpisode is used by one goroutine.
type ToolEpisode struct {
	*Episode
	kit        *ToolKit
	parser     parser.Parser
	tools      *tool.Set
	selErr     error
	session    *tool.Session
	sessionAt  time.Time // when the session opened, for EventSessionClose
	invalidRun int       // consecutive turns whose calls were all invalid
}

// Start renders and encodes the prompt, as Episode.Start, and opens the
// tool session. It returns false when the loop must end.
func (e *ToolEpisode) Start() bool {
	if e.selErr != nil {
		e.Fail(e.selErr)
		return false
	}
	if !e.Episode.Start() {
		return false
	}
	if e.tools != nil {
		var opts tool.SessionOptions
		if e.kit.env.Trace != nil {
			opts.Observe = instanceObserver(e.kit.env.Trace, e.Sample().ID)
		}
		e.session = e.tools.SessionWith(e.Sample().ToolsKwargs, opts)
		e.sessionAt = time.Now()
		e.Trace(Event{Kind: EventSessionOpen})
	}
	return true
}

// Tools are the tools of this sample (Env.Tools narrowed by Sample.Tools);
// nil when there are none.
func (e *ToolEpisode) Tools() *tool.Set { return e.tools }

// GenerateTurn generates one model turn, ends the episode at
// MaxAssistantTurns or MaxUserTurns (StopMaxTurns), parses the turn's calls
// (filling missing ids as call_<turn>_<i> and type "function") and records
// the assistant message. ok is false when the loop must end; the turn is
// then empty. A turn without calls is the loop's to judge (ToolAgent ends
// with StopCompleted or hands over to its interaction).
func (e *ToolEpisode) GenerateTurn(ctx context.Context) (turn parser.Result, ok bool) {
	ids, ok := e.Generate(ctx)
	if !ok {
		return parser.Result{}, false
	}
	cfg := e.kit.cfg
	assistant, user := e.Turns()
	if cfg.MaxAssistantTurns > 0 && assistant >= cfg.MaxAssistantTurns ||
		cfg.MaxUserTurns > 0 && user >= cfg.MaxUserTurns {
		e.Stop(trajectory.StopMaxTurns)
		return parser.Result{}, false
	}
	text, err := e.ModelText(ids)
	if err != nil {
		e.Fail(fmt.Errorf("agentloop: decoding turn %d of %s: %w", assistant, e.Sample().ID, err))
		return parser.Result{}, false
	}
	if n := len(ids); n > 0 && e.kit.stops[ids[n-1]] != "" {
		text += e.kit.stops[ids[n-1]] // ModelText drops the stop token; this one closes the call
	}
	res := e.parser.Parse(text, ids)
	for i := range res.Calls {
		if res.Calls[i].ID == "" {
			res.Calls[i].ID = "call_" + strconv.Itoa(assistant) + "_" + strconv.Itoa(i)
		}
		if res.Calls[i].Type == "" {
			res.Calls[i].Type = "function"
		}
	}
	e.Trace(Event{Kind: EventParse, Calls: len(res.Calls), ParseErrors: len(res.Errors)})
	e.AddMessage(chat.Message{
		Role:             chat.RoleAssistant,
		Content:          res.Content,
		ReasoningContent: res.Reasoning,
		ToolCalls:        res.Calls,
	})
	return res, true
}

// ToolTurn is what CallTools did with one turn's calls.
type ToolTurn struct {
	// Results are the calls that ran, the first MaxParallelCalls of the
	// turn's calls, in order.
	Results []tool.CallResult
	// Messages are the observations, not yet appended: one per call (run
	// or refused) and one per parse error, in that order. A loop may edit
	// or extend them before Observe.
	Messages []chat.Message
	// Invalid is true when the turn had calls and every one was the
	// model's fault: unparsable, unknown tool or bad arguments.
	Invalid bool
	// Ended is true when the episode ended: the context was cancelled
	// while the calls ran (StopAborted) or MaxConsecutiveInvalidToolCalls
	// was reached (StopInvalidCalls).
	Ended bool
}

// Failed is the number of calls of the turn that failed, refused and
// unparsable ones included.
func (t ToolTurn) Failed() int {
	n := len(t.Messages) - len(t.Results)
	for _, r := range t.Results {
		if r.Err != nil {
			n++
		}
	}
	return n
}

// invalid reports whether a failed call is the model's fault (as opposed to
// the tool's): such turns count towards MaxConsecutiveInvalidToolCalls.
func invalid(err error) bool {
	return errors.Is(err, tool.ErrUnknownTool) || errors.Is(err, tool.ErrInvalidArguments)
}

// callContext attaches the trajectory's tool.CallInfo for call c (verl's
// agent_data): the conversation so far and the sample. The loop does not
// touch the conversation while calls run.
func (e *ToolEpisode) callContext(ctx context.Context, c chat.ToolCall) context.Context {
	s := e.Sample()
	return tool.WithCallInfo(ctx, &tool.CallInfo{
		TrajectoryID: s.ID, GroupID: s.GroupID, Index: s.Index,
		Messages: e.Messages(), Call: c,
		DataSource: s.DataSource, GroundTruth: s.GroundTruth, Extra: s.Extra,
	})
}

// CallTools runs the first MaxParallelCalls of turn's calls at once, each
// with its tool.CallInfo; answers the calls beyond that limit and the parse
// errors with observations saying so; truncates each result to
// MaxToolResponseLength; traces, counts and records the tool rewards; and
// enforces MaxConsecutiveInvalidToolCalls. It does not append the
// observations: Observe(t.Messages...) does, unless t.Ended.
func (e *ToolEpisode) CallTools(ctx context.Context, turn parser.Result) ToolTurn {
	cfg := e.kit.cfg
	calls := turn.Calls
	run := calls[:min(len(calls), cfg.MaxParallelCalls)]
	results := make([]tool.CallResult, len(run))
	t0 := time.Now()
	switch {
	case e.session == nil:
		for i, c := range run {
			results[i] = tool.CallResult{Name: c.Function.Name, Text: "Error: no tools are available.", Err: tool.ErrUnknownTool}
		}
	case len(run) == 1:
		results[0] = e.session.Call(e.callContext(ctx, run[0]), run[0])
	default:
		var g errgroup.Group
		for i, c := range run {
			cctx := e.callContext(ctx, c)
			g.Go(func() error {
				results[i] = e.session.Call(cctx, c)
				return nil
			})
		}
		_ = g.Wait() // calls report failures in their results
	}
	e.AddToolTime(time.Since(t0))
	out := ToolTurn{Results: results}
	if ctx.Err() != nil {
		e.Stop(trajectory.StopAborted)
		out.Ended = true
		return out
	}

	side := cfg.truncateSide()
	added := make([]chat.Message, 0, len(calls)+len(turn.Errors))
	good, bad := 0, len(turn.Errors)
	for i, res := range results {
		text := tool.Truncate(res.Text, cfg.MaxToolResponseLength, side)
		e.Trace(Event{Kind: EventTool, Tool: res.Name, Latency: res.Duration, Err: res.Err,
			Truncated: text != res.Text, Metrics: res.Metrics})
		e.CountToolCall(res.Err != nil)
		if res.Err != nil && invalid(res.Err) {
			bad++
		} else {
			good++ // a tool failure is not the model's: the call itself was valid
		}
		// Every call that was run has a tool reward, 0 when it failed, as
		// verl's _call_tool returns 0.0 for a call that raised.
		e.AddToolReward(res.Reward)
		m := chat.Message{
			Role:       chat.RoleTool,
			Content:    text,
			ToolCallID: run[i].ID,
			Name:       run[i].Function.Name,
		}
		if len(res.Images) > 0 {
			// verl's ToolAgentLoop: the images, then the text.
			m.Content = ""
			for _, im := range res.Images {
				m.Parts = append(m.Parts, chat.ImagePart(im))
			}
			if text != "" {
				m.Parts = append(m.Parts, chat.ContentPart{Type: "text", Text: text})
			}
		}
		added = append(added, m)
	}
	for _, c := range calls[len(run):] {
		e.CountToolCall(true)
		added = append(added, chat.Message{
			Role: chat.RoleTool,
			Content: fmt.Sprintf("Error: the call to %q was not run: at most %d tool calls are run per turn.",
				c.Function.Name, cfg.MaxParallelCalls),
			ToolCallID: c.ID,
			Name:       c.Function.Name,
		})
	}
	for _, pe := range turn.Errors {
		e.CountToolCall(true)
		added = append(added, chat.Message{Role: chat.RoleTool, Content: "Error: " + pe.Message})
	}
	out.Messages = added
	out.Invalid = good == 0 && bad > 0
	if out.Invalid {
		e.invalidRun++
	} else {
		e.invalidRun = 0
	}
	if cfg.MaxConsecutiveInvalidToolCalls > 0 && e.invalidRun >= cfg.MaxConsecutiveInvalidToolCalls {
		e.Stop(trajectory.StopInvalidCalls)
		out.Ended = true
	}
	return out
}

// Step is ToolAgent's tool step: CallTools, then Observe the observations.
// It returns false when the loop must end.
func (e *ToolEpisode) Step(ctx context.Context, turn parser.Result) bool {
	t := e.CallTools(ctx, turn)
	if t.Ended {
		return false
	}
	return e.Observe(t.Messages...)
}

// Close releases the tool session (the trajectory's tool instances), once;
// Finish calls it. It runs on a context detached from ctx, so a cancelled
// trajectory still releases everything. A release error is recorded under
// ExtraReleaseError unless the episode already failed or was aborted.
func (e *ToolEpisode) Close(ctx context.Context) {
	if e.session == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := e.session.Close(rctx)
	e.session = nil
	stop, stopErr := e.Stopped()
	if err != nil && stopErr == nil && stop != trajectory.StopAborted {
		e.SetExtra(ExtraReleaseError, err.Error())
	}
	e.Trace(Event{Kind: EventSessionClose, Latency: time.Since(e.sessionAt), Err: err})
}

// Finish releases the tool session and builds the trajectory (see
// Episode.Finish).
func (e *ToolEpisode) Finish() (*trajectory.Trajectory, error) {
	e.Close(context.Background())
	return e.Episode.Finish()
}
