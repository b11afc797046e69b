package agentloop

import (
	"context"
	"fmt"
	"time"

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
// Its tool step is public: ToolKit and ToolEpisode, on which custom tool
// loops are built the same way.
//
// Unlike verl, malformed calls and tool failures become observations the
// model sees; MaxConsecutiveInvalidToolCalls ends loops that keep failing;
// calls beyond MaxParallelCalls are answered with an observation saying they
// were not run; tool instances live for the whole trajectory and are always
// released; every termination has a stop reason.
type ToolAgent struct {
	kit *ToolKit
}

// NewToolAgent is the Factory of tool_agent.
func NewToolAgent(env *Env, cfg Config) (AgentLoop, error) {
	kit, err := NewToolKit(env, cfg)
	if err != nil {
		return nil, err
	}
	return &ToolAgent{kit: kit}, nil
}

// toolRun is the ToolAgent's part of a trajectory's state.
type toolRun struct {
	*ToolEpisode
	interaction Interaction
	interID     string
	interActive bool
	last        parser.Result // the last model turn, parsed
}

// Run implements AgentLoop.
func (a *ToolAgent) Run(ctx context.Context, s Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	tr := &toolRun{ToolEpisode: a.kit.Episode(s, p)}
	state := StatePending
	// Release on every path, also a panic in a hook or tool that escaped
	// tool's own recovery.
	defer tr.release(ctx)
	for state != StateTerminated {
		switch state {
		case StatePending:
			if !a.pending(ctx, tr, s) {
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

func (a *ToolAgent) pending(ctx context.Context, tr *toolRun, s Sample) bool {
	if !tr.Start() {
		return false
	}
	// As in verl, interactions start only when some are configured
	// (interaction_config_path): verl's own datasets write
	// interaction_kwargs into every row whether or not they are used.
	if len(s.InteractionKwargs) > 0 && len(a.kit.env.Interactions) > 0 {
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
	interactions := a.kit.env.Interactions
	name, _ := s.InteractionKwargs["name"].(string)
	if name == "" && len(interactions) == 1 {
		for _, in := range interactions {
			return in, nil
		}
	}
	in, ok := interactions[name]
	if !ok {
		names := make([]string, 0, len(interactions))
		for n := range interactions {
			names = append(names, n)
		}
		return nil, fmt.Errorf("%w: sample %d: interaction %q is not configured (configured: %v)", ErrConfig, s.Index, name, names)
	}
	return in, nil
}

func (a *ToolAgent) generating(ctx context.Context, tr *toolRun) State {
	res, ok := tr.GenerateTurn(ctx)
	if !ok {
		return StateTerminated
	}
	tr.last = res
	switch {
	case res.HasCalls():
		return StateProcessingTools
	case tr.interActive:
		return StateInteracting
	}
	tr.Stop(trajectory.StopCompleted)
	return StateTerminated
}

func (a *ToolAgent) processTools(ctx context.Context, tr *toolRun) State {
	if !tr.Step(ctx, tr.last) {
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
	if tr.ToolEpisode == nil {
		return
	}
	tr.Close(ctx)
	if !tr.interActive {
		return
	}
	tr.interActive = false
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	stop, _ := tr.Stopped()
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
