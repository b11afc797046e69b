package server_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/server"
)

func TestSamplingParamsValidate(t *testing.T) {
	ok := []server.SamplingParams{
		{}, // every zero value is a neutral setting
		{Temperature: 1, TopP: 1, TopK: -1, MinP: 1, RepetitionPenalty: 1, MaxNewTokens: 8, StopTokenIDs: []int32{0, 7}},
		{Temperature: 0.6, TopP: 0.95, TopK: 20, Logprobs: true, PromptLogprobs: true, PromptLogprobsFrom: 3},
		{PresencePenalty: -2, FrequencyPenalty: 2, TopLogprobs: server.MaxTopLogprobs},
	}
	for i, p := range ok {
		if err := p.Validate(); err != nil {
			t.Errorf("case %d: %v", i, err)
		}
	}
	bad := []struct {
		p    server.SamplingParams
		want string // the field the error must name
	}{
		{server.SamplingParams{Temperature: -1}, "temperature"},
		{server.SamplingParams{Temperature: math.NaN()}, "temperature"},
		{server.SamplingParams{Temperature: math.Inf(1)}, "temperature"},
		{server.SamplingParams{TopP: 2}, "top_p"},
		{server.SamplingParams{TopP: -0.5}, "top_p"},
		{server.SamplingParams{TopP: math.NaN()}, "top_p"},
		{server.SamplingParams{MinP: 1.5}, "min_p"},
		{server.SamplingParams{RepetitionPenalty: -2}, "repetition_penalty"},
		{server.SamplingParams{MaxNewTokens: -5}, "max_new_tokens"},
		{server.SamplingParams{PresencePenalty: 2.5}, "presence_penalty"},
		{server.SamplingParams{PresencePenalty: math.NaN()}, "presence_penalty"},
		{server.SamplingParams{FrequencyPenalty: -3}, "frequency_penalty"},
		{server.SamplingParams{FrequencyPenalty: math.Inf(1)}, "frequency_penalty"},
		{server.SamplingParams{TopLogprobs: -1}, "top_logprobs"},
		{server.SamplingParams{TopLogprobs: server.MaxTopLogprobs + 1}, "top_logprobs"},
		{server.SamplingParams{PromptLogprobs: true, PromptLogprobsFrom: -1}, "prompt_logprobs_from"},
		{server.SamplingParams{StopTokenIDs: []int32{3, -1}}, "stop_token_ids[1]"},
	}
	for _, c := range bad {
		err := c.p.Validate()
		if err == nil {
			t.Errorf("%+v: no error", c.p)
			continue
		}
		if !errors.Is(err, server.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v: want an ErrBadRequest naming %s", c.p, err, c.want)
		}
	}
}
