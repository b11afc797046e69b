package sglang_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
)

// TestPromptLogprobs: the client asks for input_token_logprobs from one
// before the wanted position (SGLang nulls the start's own) and hands back
// the prompt logprobs from the wanted position on.
func TestPromptLogprobs(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(7, 2)})
	c, rec, _ := setup(t, eng, sglang.Config{Name: "sg0"})
	prompt := []int32{1, 2, 3, 4}
	for _, from := range []int{0, 1, 2, 3} {
		out, err := c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: prompt,
			Params: server.SamplingParams{MaxNewTokens: 2, PromptLogprobs: true, PromptLogprobsFrom: from}})
		require.NoError(t, err)
		require.Nil(t, out.Logprobs, "output logprobs were not asked for")
		require.Len(t, out.PromptLogprobs, len(prompt)-from)
		for i, lp := range out.PromptLogprobs {
			p := from + i
			if p == 0 {
				require.True(t, math.IsNaN(float64(lp)))
				continue
			}
			require.Equal(t, servertest.DefaultPromptLogprob(prompt[p], p), lp)
		}
		body := rec.Last("/generate").Body
		require.Contains(t, string(body), `"return_logprob":true`)
		require.Contains(t, string(body), `"logprob_start_len":`+string(rune('0'+max(from-1, 0))))
	}
}

// TestPromptLogprobsUpstreamShape replays SGLang's shape: the first
// entry's logprob null, entries from logprob_start_len, ids checked.
func TestPromptLogprobsUpstreamShape(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		want        []float32
		err         string
	}{
		{"ok", `[[null,5,null],[-0.5,6,null],[-1.25,7,"x"]]`, []float32{-0.5, -1.25}, ""},
		{"missing", `null`, nil, "input_token_logprobs is missing"},
		{"short", `[[null,5,null],[-0.5,6,null]]`, nil, "has 2 entries for the 3 prompt tokens from 1"},
		{"wrong token", `[[null,5,null],[-0.5,9,null],[-1.25,7,null]]`, nil, "is for token 9 but the prompt's token 2 is 6"},
		{"not a list", `{}`, nil, "input_token_logprobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"text":"","output_ids":[2],"meta_info":{"id":"r","finish_reason":{"type":"stop","matched":2},
					"prompt_tokens":4,"completion_tokens":1,"cached_tokens":0,"input_token_logprobs":` + tc.input +
					`,"output_token_logprobs":[[-0.1,2,null]]}}`))
			}))
			defer ts.Close()
			c, err := sglang.New(sglang.Config{BaseURL: ts.URL, Name: "peer"})
			require.NoError(t, err)
			out, err := c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: []int32{4, 5, 6, 7},
				Params: server.SamplingParams{PromptLogprobs: true, PromptLogprobsFrom: 2}})
			if tc.err != "" {
				require.ErrorIs(t, err, server.ErrBadResponse)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, out.PromptLogprobs)
		})
	}
}
