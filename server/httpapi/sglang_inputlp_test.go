package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestSGLangInputTokenLogprobs: with return_logprob, meta_info carries
// input_token_logprobs over the prompt from logprob_start_len (default -1:
// the last prompt token), the first entry's logprob null as SGLang pads it
// (scheduler_output_processor_mixin.py: "Always pad the first one with
// None"), the rest the engine's prompt logprobs.
func TestSGLangInputTokenLogprobs(t *testing.T) {
	cp := &capture{rule: servertest.Constant(7, 8)}
	s := start(t, servertest.New(servertest.Config{Rule: cp.Rule}), httpapi.Config{})
	prompt := []int32{11, 12, 13, 14, 15}
	type meta struct {
		Input  [][]any `json:"input_token_logprobs"`
		Output [][]any `json:"output_token_logprobs"`
	}
	get := func(extra string) meta {
		code, body := post(t, s.URL()+"/generate", `{"input_ids":[11,12,13,14,15],"return_logprob":true`+extra+`}`)
		require.Equal(t, 200, code, body)
		var r struct {
			MetaInfo meta `json:"meta_info"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &r))
		return r.MetaInfo
	}
	for _, tc := range []struct {
		extra string
		start int
	}{{"", 4}, {`,"logprob_start_len":-1`, 4}, {`,"logprob_start_len":0`, 0}, {`,"logprob_start_len":2`, 2}, {`,"logprob_start_len":3`, 3}} {
		m := get(tc.extra)
		require.Len(t, m.Input, len(prompt)-tc.start, tc.extra)
		for i, e := range m.Input {
			p := tc.start + i
			require.Len(t, e, 3)
			require.Equal(t, float64(prompt[p]), e[1])
			require.Nil(t, e[2])
			if i == 0 {
				require.Nil(t, e[0], "the start position's logprob is null")
				continue
			}
			require.InDelta(t, servertest.DefaultPromptLogprob(prompt[p], p), e[0], 1e-6)
		}
		require.Len(t, m.Output, 2)
		req := cp.last()
		require.Equal(t, tc.start+1 < len(prompt), req.Params.PromptLogprobs, "the engine computes only what is returned")
		if req.Params.PromptLogprobs {
			require.Equal(t, tc.start+1, req.Params.PromptLogprobsFrom)
		}
	}
	// Without return_logprob there are none and the engine computes none.
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[11,12,13],"logprob_start_len":0}`)
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, "input_token_logprobs")
	require.False(t, cp.last().Params.PromptLogprobs)

	for _, bad := range []string{`5`, `-2`, `99`} {
		code, body := post(t, s.URL()+"/generate", `{"input_ids":[11,12,13,14,15],"return_logprob":true,"logprob_start_len":`+bad+`}`)
		require.Equal(t, 400, code, body)
		require.Contains(t, body, "logprob_start_len")
	}
}

// TestSGLangInputLogprobsEngineWithout: an engine that returns no prompt
// logprobs gets a clear 501, not a response missing them.
func TestSGLangInputLogprobsEngineWithout(t *testing.T) {
	s := start(t, noPromptLogprobs{servertest.New(servertest.Config{Rule: servertest.Constant(7)})}, httpapi.Config{})
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[1,2,3],"return_logprob":true,"logprob_start_len":0}`)
	require.Equal(t, 501, code, body)
	require.Contains(t, body, "prompt logprobs")
}

// noPromptLogprobs is an engine that drops prompt logprobs, as one that
// cannot compute them does.
type noPromptLogprobs struct{ *servertest.Server }

func (e noPromptLogprobs) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	out, err := e.Server.Generate(ctx, req)
	out.PromptLogprobs = nil
	return out, err
}
