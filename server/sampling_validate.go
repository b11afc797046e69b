package server

import (
	"fmt"
	"math"
)

// Validate reports the first setting no engine accepts, wrapping
// ErrBadRequest and naming the field: a negative or non-finite Temperature,
// TopP or MinP outside [0,1], a negative or non-finite RepetitionPenalty,
// a PresencePenalty or FrequencyPenalty outside [-2,2] (vLLM's and
// OpenAI's range), TopLogprobs outside [0, MaxTopLogprobs],
// a negative MaxNewTokens, a negative stop token id or PromptLogprobsFrom.
// Zero values are the neutral settings (see SamplingParams) and pass. It
// checks the settings alone; a request's prompt-dependent limits
// (PromptLogprobsFrom within the prompt, the context window) are the
// engine's to check.
func (p SamplingParams) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, a...)...)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(p.Temperature) || p.Temperature < 0:
		return bad("temperature %v: want a finite value >= 0", p.Temperature)
	case !finite(p.TopP) || p.TopP < 0 || p.TopP > 1:
		return bad("top_p %v outside [0,1] (0 means 1)", p.TopP)
	case !finite(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return bad("min_p %v outside [0,1]", p.MinP)
	case !finite(p.RepetitionPenalty) || p.RepetitionPenalty < 0:
		return bad("repetition_penalty %v: want a finite value >= 0 (0 or 1 disables it)", p.RepetitionPenalty)
	case !finite(p.PresencePenalty) || p.PresencePenalty < -2 || p.PresencePenalty > 2:
		return bad("presence_penalty %v outside [-2,2]", p.PresencePenalty)
	case !finite(p.FrequencyPenalty) || p.FrequencyPenalty < -2 || p.FrequencyPenalty > 2:
		return bad("frequency_penalty %v outside [-2,2]", p.FrequencyPenalty)
	case p.TopLogprobs < 0 || p.TopLogprobs > MaxTopLogprobs:
		return bad("top_logprobs %d outside [0,%d]", p.TopLogprobs, MaxTopLogprobs)
	case p.MaxNewTokens < 0:
		return bad("max_new_tokens %d is negative (0 means the engine's limit)", p.MaxNewTokens)
	case p.PromptLogprobsFrom < 0:
		return bad("prompt_logprobs_from %d is negative", p.PromptLogprobsFrom)
	}
	for i, id := range p.StopTokenIDs {
		if id < 0 {
			return bad("stop_token_ids[%d] %d is negative", i, id)
		}
	}
	return nil
}
