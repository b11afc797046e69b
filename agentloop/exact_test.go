package agentloop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func addTool(t testing.TB) tool.Tool {
	f, err := tool.NewFunc("add", "Adds two integers.", func(_ context.Context, a addArgs) (tool.Result, error) {
		return tool.Result{Text: itoa(a.A + a.B), Reward: 1}, nil
	})
	require.NoError(t, err)
	return f
}

func itoa(n int) string {
	b, _ := jsonMarshal(n)
	return string(b)
}

// TestToolAgentExactQwen3 checks a two-turn tool conversation token by token
// against text written by hand from Qwen3's chat template.
func TestToolAgentExactQwen3(t *testing.T) {
	tok := qwen3(t)
	set, err := tool.NewSet(addTool(t))
	require.NoError(t, err)

	msgs := []chat.Message{{Role: chat.RoleUser, Content: "What is 1+2?"}}
	turn1 := "<think>\nI should use the tool.\n</think>\n\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"
	turn2 := "<think>\nThe tool said 3.\n</think>\n\nThe answer is 3."
	m1, m2 := turn(t, tok, turn1), turn(t, tok, turn2)

	srv := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"s": {m1, m2}}, nil)})
	rec := &recorder{LLMServer: srv}
	var events []Event // one trajectory: events arrive in order from its goroutine
	env := &Env{Server: rec, Tokenizer: tok, Tools: set, Trace: func(e Event) { events = append(events, e) }}
	loop, err := NewToolAgent(env, Config{Format: "hermes", MaxAssistantTurns: 5})
	require.NoError(t, err)

	traj, err := loop.Run(context.Background(), Sample{ID: "s", GroupID: "g", Messages: msgs}, server.SamplingParams{Logprobs: true})
	require.NoError(t, err)
	require.NoError(t, traj.Validate())
	require.Equal(t, trajectory.StopCompleted, traj.StopReason)
	require.Equal(t, 2+1+1, traj.NumTurns) // 2 assistant + 1 user (tool) + 1

	// The prompt is the template's rendering with the tool schemas.
	promptText, err := tok.ApplyChatTemplate(tokenizer.ChatContext{Messages: msgs, Tools: set.Schemas(), AddGenerationPrompt: true})
	require.NoError(t, err)
	require.Equal(t, tok.Encode(promptText), traj.PromptIDs)

	// Qwen3 renders a tool result as a user turn; the "\n" after the
	// model's <|im_end|> is template glue the model did not sample.
	glue := "\n<|im_start|>user\n<tool_response>\n3\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	want := append(append(append([]int32{}, m1...), tok.Encode(glue)...), m2...)
	require.Equal(t, want, traj.ResponseIDs)

	full, err := tok.Decode(append(append([]int32{}, traj.PromptIDs...), traj.ResponseIDs...), false)
	require.NoError(t, err)
	require.Equal(t, promptText+turn1+"<|im_end|>"+glue+turn2+"<|im_end|>", full)

	// Mask 1 exactly on the sampled tokens.
	var wantMask []int8
	for range m1 {
		wantMask = append(wantMask, 1)
	}
	for range tok.Encode(glue) {
		wantMask = append(wantMask, 0)
	}
	for range m2 {
		wantMask = append(wantMask, 1)
	}
	require.Equal(t, wantMask, traj.ResponseMask)

	// prompt ++ response is what the engine saw last, plus its last output.
	reqs, outs := rec.byID("s")
	require.Len(t, reqs, 2)
	require.Equal(t, traj.PromptIDs, reqs[0].PromptIDs)
	last := append(append([]int32{}, reqs[1].PromptIDs...), outs[1].TokenIDs...)
	require.Equal(t, append(append([]int32{}, traj.PromptIDs...), traj.ResponseIDs...), last)
	require.Equal(t, "g", reqs[0].GroupID)
	require.Equal(t, tok.EOSTokenIDs(), reqs[0].Params.StopTokenIDs)

	// Logprobs are the engine's on model tokens and 0 elsewhere.
	var wantLP []float32
	wantLP = append(wantLP, outs[0].Logprobs...)
	wantLP = append(wantLP, make([]float32, len(tok.Encode(glue)))...)
	wantLP = append(wantLP, outs[1].Logprobs...)
	require.Equal(t, wantLP, traj.Logprobs)
	for i, tk := range m1 {
		require.Equal(t, servertest.DefaultLogprob(tk, i), traj.Logprobs[i])
	}

	// decode(response where mask = 1) is the model's text.
	var policy []int32
	for i, id := range traj.ResponseIDs {
		if traj.ResponseMask[i] == 1 {
			policy = append(policy, id)
		}
	}
	text, err := tok.Decode(policy, false)
	require.NoError(t, err)
	require.Equal(t, turn1+"<|im_end|>"+turn2+"<|im_end|>", text)

	// The trace tells the same story.
	var kinds []EventKind
	for _, e := range events {
		require.Equal(t, "s", e.TrajectoryID)
		kinds = append(kinds, e.Kind)
	}
	require.Equal(t, []EventKind{EventPrompt, EventSessionOpen, EventGenerate, EventParse, EventToolCreate, EventTool, EventObservation,
		EventGenerate, EventParse, EventToolRelease, EventSessionClose, EventDone}, kinds)
	require.Equal(t, len(traj.PromptIDs), events[0].Tokens, "the prompt event counts the encoded prompt")
	require.NoError(t, events[0].Err)
	require.Equal(t, len(m1), events[2].Tokens)
	require.Equal(t, server.StopEOS, events[2].EngineStop)
	require.Equal(t, 1, events[3].Calls)
	require.Equal(t, "add", events[4].Tool)
	require.NoError(t, events[4].Err)
	require.Equal(t, "add", events[5].Tool)
	require.NoError(t, events[5].Err)
	require.False(t, events[5].Truncated)
	require.Equal(t, len(tok.Encode(glue)), events[6].Tokens)
	require.Equal(t, 2, events[7].Turn)
	// The engine's prefix cache: nothing for the first turn; the second
	// turn's prompt extends the first call's prompt and output.
	require.Equal(t, len(traj.PromptIDs), events[2].PromptTokens)
	require.Zero(t, events[2].CachedTokens)
	require.Equal(t, len(traj.PromptIDs)+len(m1)+len(tok.Encode(glue)), events[7].PromptTokens)
	require.Equal(t, len(traj.PromptIDs)+len(m1), events[7].CachedTokens)
	require.Equal(t, 0, events[8].Calls)
	require.Equal(t, "add", events[9].Tool)
	require.NoError(t, events[9].Err)
	require.Positive(t, events[9].Latency, "the instance's lifetime")
	require.GreaterOrEqual(t, events[10].Latency, events[9].Latency, "the session outlives its instance")
	require.Equal(t, trajectory.StopCompleted, events[11].Stop)

	require.Equal(t, []float64{1}, traj.ToolRewards)
	require.Equal(t, 1, traj.ToolCalls)
	require.Equal(t, 0, traj.ToolErrors)
}
