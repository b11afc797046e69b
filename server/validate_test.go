package server_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/server"
)

func TestCheckRequest(t *testing.T) {
	ok := []int32{1, 2, 3}
	params := func(p server.SamplingParams) server.GenerateRequest {
		return server.GenerateRequest{RequestID: "r", PromptIDs: ok, Params: p}
	}
	bad := []struct {
		name  string
		req   server.GenerateRequest
		vocab int
		want  string
	}{
		{"empty prompt", server.GenerateRequest{}, 0, "PromptIDs: empty prompt"},
		{"negative id", server.GenerateRequest{PromptIDs: []int32{1, -3}}, 0, "PromptIDs[1]: id -3 is negative"},
		{"id past the vocabulary", server.GenerateRequest{PromptIDs: []int32{1, 2, 256}}, 256, "PromptIDs[2]: id 256 outside the vocabulary of 256"},
		{"negative temperature", params(server.SamplingParams{Temperature: -1}), 0, "temperature -1"},
		{"NaN temperature", params(server.SamplingParams{Temperature: math.NaN()}), 0, "temperature"},
		{"infinite temperature", params(server.SamplingParams{Temperature: math.Inf(1)}), 0, "temperature"},
		{"top_p above 1", params(server.SamplingParams{TopP: 2}), 0, "top_p 2 outside [0,1]"},
		{"negative top_p", params(server.SamplingParams{TopP: -0.5}), 0, "top_p"},
		{"NaN top_p", params(server.SamplingParams{TopP: math.NaN()}), 0, "top_p"},
		{"min_p above 1", params(server.SamplingParams{MinP: 1.5}), 0, "min_p"},
		{"negative repetition penalty", params(server.SamplingParams{RepetitionPenalty: -1}), 0, "repetition_penalty"},
		{"negative max_new_tokens", params(server.SamplingParams{MaxNewTokens: -5}), 0, "max_new_tokens -5 is negative"},
		{"negative stop id", params(server.SamplingParams{StopTokenIDs: []int32{2, -1}}), 0, "stop_token_ids[1] -1 is negative"},
		{"stop id past the vocabulary", params(server.SamplingParams{StopTokenIDs: []int32{300}}), 256, "stop_token_ids[0]: id 300 outside the vocabulary of 256"},
		{"prompt logprobs before the prompt", params(server.SamplingParams{PromptLogprobs: true, PromptLogprobsFrom: -1}), 0, "prompt logprobs from position -1"},
		{"negative prompt_logprobs_from", params(server.SamplingParams{PromptLogprobsFrom: -1}), 0, "prompt_logprobs_from -1 is negative"},
		{"prompt logprobs past the prompt", params(server.SamplingParams{PromptLogprobs: true, PromptLogprobsFrom: 3}), 0, "from position 3: outside the prompt of 3 tokens"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			err := server.CheckRequest(c.req, c.vocab)
			if !errors.Is(err, server.ErrBadRequest) {
				t.Fatalf("CheckRequest = %v, want an error wrapping ErrBadRequest", err)
			}
			if got := err.Error(); !strings.Contains(got, c.want) {
				t.Fatalf("CheckRequest = %q, want it to contain %q", got, c.want)
			}
		})
	}

	// The zero values keep their documented meaning and are valid; so are
	// the ranges' ends, a disabled top-k and ids anywhere when the
	// vocabulary is unknown.
	good := []struct {
		name  string
		req   server.GenerateRequest
		vocab int
	}{
		{"zero params", params(server.SamplingParams{}), 4},
		{"range ends", params(server.SamplingParams{Temperature: 0, TopP: 1, MinP: 1, RepetitionPenalty: 0}), 0},
		{"top_k disabled", params(server.SamplingParams{TopK: -1}), 0},
		{"unknown vocabulary", server.GenerateRequest{PromptIDs: []int32{1 << 30}, Params: server.SamplingParams{StopTokenIDs: []int32{1 << 30}}}, 0},
		{"last id", server.GenerateRequest{PromptIDs: []int32{255}}, 256},
		{"prompt logprobs of the last position", params(server.SamplingParams{PromptLogprobs: true, PromptLogprobsFrom: 2}), 0},
	}
	for _, c := range good {
		if err := server.CheckRequest(c.req, c.vocab); err != nil {
			t.Errorf("%s: CheckRequest = %v, want nil", c.name, err)
		}
	}
}

// ExampleCheckRequest: an engine runs the shared check first, so every
// engine refuses the same requests with the same errors.
func ExampleCheckRequest() {
	req := server.GenerateRequest{RequestID: "traj-1", PromptIDs: []int32{1, 2},
		Params: server.SamplingParams{TopP: 2, MaxNewTokens: 16}}
	err := server.CheckRequest(req, 1000)
	fmt.Println(errors.Is(err, server.ErrBadRequest))
	fmt.Println(err)
	// Output:
	// true
	// bad request: top_p 2 outside [0,1] (0 means 1)
}
