// Command customloop shows a custom tool-calling AgentLoop registered under
// its own agent name: "retry_agent" gives the model one retry when a tool
// call fails. The failed call's observation gets a hint, and a second
// failing turn in a row ends the trajectory (StopInvalidCalls).
//
// It is built on agentloop.ToolKit and ToolEpisode, the tool step ToolAgent
// itself runs on, so the loop holds only its own logic: the per-sample tool
// subset, the tool session and its release, call ids, tool.CallInfo, trace
// events, counters, tool rewards, truncation, MaxAssistantTurns and
// MaxParallelCalls come with the step, as do the Episode's budgets,
// resumable generation and stop reasons. Sampled tokens are appended as the
// engine returned them, observations as tokenizer deltas.
//
// The engine here is servertest's scripted model so that the example runs
// anywhere; pass a real server.LLMServer in its place.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/examples/internal/qwen"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// retryAgent is the custom loop. It is safe for concurrent use: the kit is
// shared, and all state of a run lives in its ToolEpisode.
type retryAgent struct{ kit *agentloop.ToolKit }

func init() {
	agentloop.Register("retry_agent", func(env *agentloop.Env, cfg agentloop.Config) (agentloop.AgentLoop, error) {
		kit, err := agentloop.NewToolKit(env, cfg)
		return &retryAgent{kit: kit}, err
	})
}

const hint = "\nHint: the call failed. Check the arguments and call again; you have one retry."

func (a *retryAgent) Run(ctx context.Context, s agentloop.Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	e := a.kit.Episode(s, p)
	if !e.Start() {
		return e.Finish()
	}
	retrying := false
	for {
		turn, ok := e.GenerateTurn(ctx)
		if !ok {
			break // budget, max turns, cancelled or failed: the episode says which
		}
		if !turn.HasCalls() {
			e.Stop(trajectory.StopCompleted)
			break
		}
		step := e.CallTools(ctx, turn)
		if step.Ended {
			break
		}
		if step.Failed() == 0 {
			retrying = false
		} else if retrying {
			e.Stop(trajectory.StopInvalidCalls)
			break
		} else {
			retrying = true
			for i := range step.Messages {
				if i >= len(step.Results) || step.Results[i].Err != nil {
					step.Messages[i].Content += hint
				}
			}
		}
		if !e.Observe(step.Messages...) {
			break
		}
	}
	return e.Finish()
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("customloop", flag.ContinueOnError)
	tok, err := qwen.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	return rollout(ctx, tok, stdout)
}

// call is a Hermes tool call of the calculator.
func call(expr string) string {
	return `<tool_call>` + "\n" + `{"name": "calculator", "arguments": {"expression": "` + expr + `"}}` + "\n" + `</tool_call>`
}

// rollout runs two samples of retry_agent and prints them. The scripted
// model mistypes its first expression and fixes it once hinted; on the
// second question every expression it tries fails.
func rollout(ctx context.Context, tok *tokenizer.Tokenizer, stdout io.Writer) error {
	rule, err := qwen.ScriptedModel(tok, func(c servertest.Call, prompt string) string {
		if strings.Contains(prompt, "1/0") {
			return call("1/0")
		}
		switch c.Turn {
		case 0:
			return call("2*3+")
		case 1:
			return call("2*3+1")
		}
		return "The answer is 7."
	})
	if err != nil {
		return err
	}
	tools, err := tool.NewSet(tool.NewCalculator())
	if err != nil {
		return err
	}
	defer tools.Close(context.WithoutCancel(ctx))
	engine := servertest.New(servertest.Config{Rule: rule})
	env := &agentloop.Env{Server: engine, Tokenizer: tok, Tools: tools}
	m, err := agentloop.NewManager(nil, env, agentloop.Options{RewardFromLoop: true, DefaultAgent: "retry_agent",
		Sampling: server.SamplingParams{Temperature: 1, Logprobs: true}})
	if err != nil {
		return err
	}
	out, err := m.Generate(ctx, []agentloop.Sample{
		{Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 2*3+1?"}}},
		{Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 1/0?"}}},
	})
	if err != nil {
		return err
	}
	for _, t := range out.Trajectories {
		if err := t.Validate(); err != nil {
			return err
		}
		full, err := tok.Decode(t.ResponseIDs, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s, %d tool calls (%d failed), %d response tokens (%d sampled)\n%s\n",
			t.ID, t.StopReason, t.ToolCalls, t.ToolErrors, len(t.ResponseIDs), t.MaskOnes(), full)
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "customloop:", err)
		os.Exit(1)
	}
}
