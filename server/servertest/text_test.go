package servertest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
)

var _ servertest.Codec = tokenizer.Codec(nil) // the same interface as the tokenizers'

func TestTextScripts(t *testing.T) {
	tok, err := tokenizertest.Qwen()
	require.NoError(t, err)
	call := "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call><|im_end|>"
	rule, err := servertest.TextScripts(tok, map[string][]string{"t": {call, "42<|im_end|>"}}, nil)
	require.NoError(t, err)
	imEnd, ok := tok.TokenID("<|im_end|>")
	require.True(t, ok)
	s := servertest.New(servertest.Config{Rule: rule, Vocab: tok.VocabSize()})
	ctx := context.Background()
	p := server.SamplingParams{StopTokenIDs: tok.EOSTokenIDs()}

	prompt, err := tok.EncodeChat(tokenizer.ChatContext{Messages: []chat.Message{{Role: chat.RoleUser, Content: "6*7?"}}, AddGenerationPrompt: true})
	require.NoError(t, err)
	out, err := s.Generate(ctx, req("t", prompt, p))
	require.NoError(t, err)
	require.Equal(t, tok.Encode(call), out.TokenIDs)
	require.Equal(t, imEnd, out.TokenIDs[len(out.TokenIDs)-1]) // the marker is its id, not its characters
	text, err := tok.Decode(out.TokenIDs, false)
	require.NoError(t, err)
	require.Equal(t, call, text)

	next := append(append(append([]int32{}, prompt...), out.TokenIDs...), tok.Encode("\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n")...)
	out, err = s.Generate(ctx, req("t", next, p))
	require.NoError(t, err)
	require.Equal(t, append(tok.Encode("42"), imEnd), out.TokenIDs)

	_, err = servertest.TextScripts(refuser{}, map[string][]string{"x": {"", "no"}}, nil)
	require.ErrorContains(t, err, `script for request "x" turn 1: reply "no" encodes to no tokens`)
	_, err = servertest.TextScripts(nil, nil, nil)
	require.Error(t, err)
}

func TestText(t *testing.T) {
	tok, err := tokenizertest.Qwen()
	require.NoError(t, err)
	// A model that counts the user turns it sees.
	rule := servertest.Text(tok, func(c servertest.Call, prompt string) string {
		return fmt.Sprintf("turn %d, %d user turns<|im_end|>", c.Turn, strings.Count(prompt, "<|im_start|>user"))
	})
	s := servertest.New(servertest.Config{Rule: rule})
	ctx := context.Background()
	prompt := tok.Encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
	out, err := s.Generate(ctx, req("a", prompt, server.SamplingParams{}))
	require.NoError(t, err)
	text, err := tok.Decode(out.TokenIDs, false)
	require.NoError(t, err)
	require.Equal(t, "turn 0, 1 user turns<|im_end|>", text)

	bad := servertest.New(servertest.Config{Rule: servertest.Text(refuser{}, func(servertest.Call, string) string { return "x" })})
	_, err = bad.Generate(ctx, req("b", []int32{1}, server.SamplingParams{}))
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.ErrorContains(t, err, "decoding the prompt: cannot decode")
	bad = servertest.New(servertest.Config{Rule: servertest.Text(nil, nil)})
	_, err = bad.Generate(ctx, req("b", []int32{1}, server.SamplingParams{}))
	require.ErrorContains(t, err, "no Codec")
}

// refuser encodes nothing and decodes nothing, as a tokenizer at its
// limits does.
type refuser struct{}

func (refuser) Encode(string) []int32 { return nil }
func (refuser) Decode([]int32, bool) (string, error) {
	return "", errors.New("cannot decode")
}
