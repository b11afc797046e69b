package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/examples/internal/exampletest"
	"github.com/agentrl/agentrl/tokenizer"
)

// The responses as Qwen3's chat template lays them out: the model's turns
// (each ended by <|im_end|>) and the tool observations between them.
func turn(text string) string { return text + "<|im_end|>" }

func observation(text string) string {
	return "\n<|im_start|>user\n<tool_response>\n" + text + "\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
}

func TestCustomLoop(t *testing.T) {
	// Without --tokenizer the example runs on tokenizertest's tokenizer.
	var def bytes.Buffer
	require.NoError(t, run(context.Background(), nil, &def))
	require.Contains(t, def.String(), "0/0: completed, 2 tool calls (1 failed)")
	require.Contains(t, def.String(), "1/0: invalid_calls, 2 tool calls (2 failed)")
	require.ErrorContains(t, run(context.Background(), []string{"extra"}, &bytes.Buffer{}), "unexpected arguments")

	tok, err := tokenizer.Load(exampletest.Qwen3Dir(t))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, rollout(context.Background(), tok, &out))

	syntax := `Error when executing tool "calculator": expected a number or "(", found end of expression at position 5`
	zero := `Error when executing tool "calculator": division by zero at position 2`
	hinted := strings.TrimPrefix(hint, "\n")
	// Retried once with the hint, then answered.
	first := []string{turn(call("2*3+")), observation(syntax + "\n" + hinted), turn(call("2*3+1")), observation("7"), turn("The answer is 7.")}
	// A second failing turn in a row ends the trajectory, with no hint on it.
	second := []string{turn(call("1/0")), observation(zero + "\n" + hinted), turn(call("1/0"))}
	for _, c := range []struct {
		id, head string
		pieces   []string
	}{
		{"0/0", "completed, 2 tool calls (1 failed)", first},
		{"1/0", "invalid_calls, 2 tool calls (2 failed)", second},
	} {
		full, sampled := strings.Join(c.pieces, ""), 0
		for i := 0; i < len(c.pieces); i += 2 {
			sampled += len(tok.Encode(strings.TrimSuffix(c.pieces[i], "<|im_end|>"))) + 1
		}
		want := c.id + ": " + c.head + ", " + strconv.Itoa(len(tok.Encode(full))) + " response tokens (" + strconv.Itoa(sampled) + " sampled)\n" + full + "\n"
		require.Contains(t, out.String(), want)
	}
}
