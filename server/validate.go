package server

import (
	"fmt"
)

// CheckRequest reports the first thing in req that no engine can run, as
// an error wrapping ErrBadRequest that names the field: an empty prompt, a
// prompt or stop id that is negative or (when vocab > 0) not below vocab,
// prompt logprobs asked from a position outside the prompt, and sampling
// settings out of their range (a negative or non-finite Temperature or
// RepetitionPenalty, TopP or MinP outside [0, 1], a presence or frequency
// penalty outside [-2, 2], TopLogprobs outside [0, MaxTopLogprobs], a
// negative MaxNewTokens or PromptLogprobsFrom). vocab is the engine's vocabulary size, 0 when
// unknown.
//
// It is the one check the engines of this module run before anything
// else: the in-process engine (which adds its context window) and
// servertest's scripted engine, so that a test against the scripted engine
// refuses what production refuses. The zero values stay valid with their
// documented meaning (TopP 0 is 1, TopK ≤ 0 disables top-k, MaxNewTokens 0
// is the engine's limit).
func CheckRequest(req GenerateRequest, vocab int) error {
	n := len(req.PromptIDs)
	if n == 0 {
		return badField("PromptIDs: empty prompt")
	}
	for i, id := range req.PromptIDs {
		if err := checkID(fmt.Sprintf("PromptIDs[%d]", i), id, vocab); err != nil {
			return err
		}
	}
	if err := req.Vision.check(req.PromptIDs); err != nil {
		return err
	}
	p := req.Params
	if p.PromptLogprobs && (p.PromptLogprobsFrom < 0 || p.PromptLogprobsFrom >= n) {
		return badField("prompt logprobs from position %d: outside the prompt of %d tokens", p.PromptLogprobsFrom, n)
	}
	if p.RoutedExpertsFrom < 0 || p.RoutedExpertsFrom > n {
		return badField("routed experts from position %d: outside 0..%d (the prompt)", p.RoutedExpertsFrom, n)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	for i, id := range p.StopTokenIDs {
		if err := checkID(fmt.Sprintf("stop_token_ids[%d]", i), id, vocab); err != nil {
			return err
		}
	}
	return nil
}

// checkID checks one token id against the vocabulary.
func checkID(field string, id int32, vocab int) error {
	if id < 0 {
		return badField("%s: id %d is negative", field, id)
	}
	if vocab > 0 && int(id) >= vocab {
		return badField("%s: id %d outside the vocabulary of %d", field, id, vocab)
	}
	return nil
}

// badField is an ErrBadRequest whose message names the field at fault.
func badField(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}
