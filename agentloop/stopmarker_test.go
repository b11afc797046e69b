package agentloop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/trajectory"
)

// markerTokenizer is the Qwen3 tokenizer with one more token looked up by
// name: Gemma 4's <tool_call|>, given the id of a Qwen3 token that no turn
// here writes.
type markerTokenizer struct {
	Tokenizer
	marker string
	id     int32
}

func (m markerTokenizer) TokenID(s string) (int32, bool) {
	if s == m.marker {
		return m.id, true
	}
	return 0, false
}

// Gemma 4 writes <tool_call|> after a call and keeps generating (verl's
// Gemma4 tool parser stops on it): tool_agent with format gemma4 adds the
// token to the stop tokens, and a turn that stopped on it parses as the
// call it closes.
func TestToolAgentStopsAtFormatMarker(t *testing.T) {
	q := qwen3(t)
	markerID := tokenID(t, q, "<|box_start|>") // stands for <tool_call|>
	tok := markerTokenizer{Tokenizer: q, marker: "<tool_call|>", id: markerID}
	call := append(q.Encode(`<|tool_call>call:lookup{q:<|"|>x<|"|>}`), markerID)
	script := [][]int32{call, turn(t, q, "done")}
	rec := &recorder{LLMServer: servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"s": script}, nil)})}
	loop, err := NewToolAgent(&Env{Server: rec, Tokenizer: tok}, Config{Format: "gemma4"})
	require.NoError(t, err)
	tr, err := loop.Run(context.Background(), Sample{ID: "s", Messages: []chat.Message{{Role: chat.RoleUser, Content: "Go."}}}, server.SamplingParams{Logprobs: true})
	require.NoError(t, err)
	require.Equal(t, trajectory.StopCompleted, tr.StopReason)
	require.Len(t, rec.reqs, 2)
	require.Equal(t, append(q.EOSTokenIDs(), markerID), rec.reqs[0].Params.StopTokenIDs)
	require.Equal(t, 1, tr.ToolCalls, "the turn that stopped on <tool_call|> was read as a call")

	// A tokenizer that lacks the marker cannot serve the format.
	_, err = NewToolAgent(&Env{Server: rec, Tokenizer: markerTokenizer{Tokenizer: q, marker: "nope"}}, Config{Format: "gemma4"})
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, `format "gemma4" stops generation at <tool_call|>`)
	// Other formats add no stop tokens.
	loop, err = NewToolAgent(&Env{Server: rec, Tokenizer: tok}, Config{Format: "hermes"})
	require.NoError(t, err)
	require.Empty(t, loop.(*ToolAgent).kit.stops)
}
