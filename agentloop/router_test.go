package agentloop_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/router"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

type echoArgs struct {
	Text string `json:"text"`
}

// TestRouterServerFailsMidRun runs tool-calling trajectories through a
// router over two engines, one of which starts failing midway: the router
// retries each failed call on the healthy engine and no trajectory is lost
// or corrupted.
func TestRouterServerFailsMidRun(t *testing.T) {
	tok := agentloop.LoadQwen3(t)
	imStart, ok := tok.TokenID("<|im_start|>")
	require.True(t, ok)
	call := agentloop.ModelTurn(t, tok, "<tool_call>\n{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\"}}\n</tool_call>")
	done := agentloop.ModelTurn(t, tok, "Done.")
	// The reply depends only on the conversation (how many turns it has),
	// so any engine gives the same answer to the same prompt.
	rule := func(c servertest.Call) servertest.Reply {
		turns := 0
		for _, id := range c.Req.PromptIDs {
			if id == imStart {
				turns++
			}
		}
		if turns < 6 {
			return servertest.Reply{Tokens: call}
		}
		return servertest.Reply{Tokens: done}
	}
	a := servertest.New(servertest.Config{Name: "a", Rule: rule, Latency: servertest.Uniform(0, 2e6), Seed: 1})
	b := servertest.New(servertest.Config{Name: "b", Rule: rule, Latency: servertest.Uniform(0, 2e6), Seed: 2})
	r, err := router.New(router.Config{}, router.Backend{Name: "a", Server: a}, router.Backend{Name: "b", Server: b})
	require.NoError(t, err)
	defer r.Close()

	echo, err := tool.NewFunc("echo", "Echoes text.", func(_ context.Context, a echoArgs) (string, error) { return a.Text, nil })
	require.NoError(t, err)
	set, err := tool.NewSet(echo)
	require.NoError(t, err)
	var calls atomic.Int64
	rec := &agentloop.Recorder{LLMServer: r}
	env := &agentloop.Env{Server: rec, Tokenizer: tok, Tools: set, Trace: func(e agentloop.Event) {
		if e.Kind == agentloop.EventGenerate && calls.Add(1) == 20 {
			// b now fails every call before producing a token (a 503).
			b.SetFault(servertest.ErrorFault(&server.Error{Server: "b", Op: "generate", Status: 503, Retryable: true, Err: server.ErrUnavailable}))
		}
	}}
	m, err := agentloop.NewManager(nil, env, agentloop.Options{RewardFromLoop: true, DefaultAgent: agentloop.ToolAgentName, Concurrency: 16, N: 2,
		Sampling: server.SamplingParams{Logprobs: true}})
	require.NoError(t, err)
	samples := make([]agentloop.Sample, 30)
	for i := range samples {
		samples[i] = agentloop.Sample{Index: i, Messages: []chat.Message{{Role: chat.RoleUser, Content: fmt.Sprintf("Say hi %d times.", i)}}}
	}
	out, err := m.Generate(context.Background(), samples)
	require.NoError(t, err)
	require.Len(t, out.Trajectories, 60)
	for _, res := range out.Results {
		require.NoError(t, res.Err())
		for _, tr := range res.Trajectories {
			require.Equal(t, trajectory.StopCompleted, tr.StopReason, tr.ID)
			require.Equal(t, 3+2+1, tr.NumTurns) // 3 assistant turns, 2 tool turns
			reqs, outs := rec.Calls(tr.ID)
			require.NoError(t, agentloop.CheckTrajectory(tok, tr, reqs, outs, 0), tr.ID)
		}
	}
	require.Positive(t, b.Stats().Failed, "b never failed: the test did not exercise retries")
	require.Equal(t, int64(0), a.Stats().Failed)
}
