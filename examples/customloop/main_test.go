package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/examples/internal/exampletest"
	"github.com/agentrl/agentrl/tokenizer"
)

func TestCustomLoop(t *testing.T) {
	// Without --tokenizer the example runs on tokenizertest's tokenizer.
	var def bytes.Buffer
	require.NoError(t, run(context.Background(), nil, &def))
	require.Contains(t, def.String(), "0/0: completed")
	require.ErrorContains(t, run(context.Background(), []string{"extra"}, &bytes.Buffer{}), "unexpected arguments")
	tok, err := tokenizer.Load(exampletest.Qwen3Dir(t))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, rollout(context.Background(), tok, &out))

	sampled := len(tok.Encode("2+2 is 5.")) + 1 + len(tok.Encode("4")) + 1
	glue := "\n<|im_start|>user\nCheck your answer. Reply with the final answer only.<|im_end|>\n<|im_start|>assistant\n"
	total := sampled + len(tok.Encode(glue))
	for _, id := range []string{"0/0", "0/1"} {
		want := fmt.Sprintf("%s: completed, %d response tokens (%d sampled)\n%q\n", id, total, sampled, "2+2 is 5.<|im_end|>"+glue+"4<|im_end|>")
		require.Contains(t, out.String(), want)
	}
}
