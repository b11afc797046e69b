// Command customloop shows a custom AgentLoop registered under its own agent
// name: "self_check_agent" lets the model answer, appends a fixed user turn
// asking it to check the answer, and lets it answer again. It is built on
// agentloop.Episode, the per-turn machinery the built-in loops use, so it
// gets their budgets, resumable generation, partial turns on cancellation,
// stop reasons, metrics and tracing: sampled tokens are appended as the
// engine returned them, the user turn as a tokenizer delta.
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

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/examples/internal/qwen"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// selfCheck is the custom loop. It is safe for concurrent use: all state of
// a run lives in its Episode.
type selfCheck struct {
	env *agentloop.Env
	cfg agentloop.Config
}

func init() {
	agentloop.Register("self_check_agent", func(env *agentloop.Env, cfg agentloop.Config) (agentloop.AgentLoop, error) {
		return &selfCheck{env: env, cfg: cfg}, nil
	})
}

const checkPrompt = "Check your answer. Reply with the final answer only."

func (a *selfCheck) Run(ctx context.Context, s agentloop.Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	e := agentloop.NewEpisode(a.env, a.cfg, s, p, nil)
	if !e.Start() {
		return e.Finish()
	}
	ids, ok := e.Generate(ctx)
	if !ok {
		return e.Finish() // response length, cancelled (partial turn kept) or failed
	}
	answer, err := e.ModelText(ids)
	if err != nil {
		e.Fail(err)
		return e.Finish()
	}
	e.AddMessage(chat.Message{Role: chat.RoleAssistant, Content: answer})
	if e.Observe(chat.Message{Role: chat.RoleUser, Content: checkPrompt}) {
		e.Generate(ctx)
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

// rollout runs two samples of self_check_agent and prints them.
func rollout(ctx context.Context, tok *tokenizer.Tokenizer, stdout io.Writer) error {
	// The scripted model answers 5 at first and 4 once asked to check.
	rule, err := qwen.ScriptedModel(tok, func(c servertest.Call, _ string) string {
		if c.Turn == 0 {
			return "2+2 is 5."
		}
		return "4"
	})
	if err != nil {
		return err
	}
	engine := servertest.New(servertest.Config{Rule: rule})

	env := &agentloop.Env{Server: engine, Tokenizer: tok}
	m, err := agentloop.NewManager(nil, env, agentloop.Options{RewardFromLoop: true, DefaultAgent: "self_check_agent", N: 2,
		Sampling: server.SamplingParams{Temperature: 1, Logprobs: true}})
	if err != nil {
		return err
	}
	out, err := m.Generate(ctx, []agentloop.Sample{{Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 2+2?"}}}})
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
		fmt.Fprintf(stdout, "%s: %s, %d response tokens (%d sampled)\n%q\n", t.ID, t.StopReason, len(t.ResponseIDs), t.MaskOnes(), full)
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "customloop:", err)
		os.Exit(1)
	}
}
