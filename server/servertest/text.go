package servertest

import (
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/server"
)

// Encoder turns text into token ids, recognizing the special and added
// tokens written in it (so "…</tool_call><|im_end|>" ends with the ids of
// those markers). *tokenizer.Tokenizer implements it; so does the small
// test tokenizer of package tokenizer/tokenizertest.
type Encoder interface {
	Encode(text string) []int32
}

// Codec is an Encoder that also decodes, for rules that read the prompt as
// text. *tokenizer.Tokenizer implements it.
type Codec interface {
	Encoder
	Decode(ids []int32, skipSpecial bool) (string, error)
}

// TextScripts is Scripts with the replies written as text: scripts[id][turn]
// is the reply to that turn of request id, encoded with enc once, here.
// Write the turn's end marker in the text (for Qwen's format, end each
// reply with <|im_end|>). A reply that does not encode (text whose
// encoding is empty: the tokenizer refused it) is an error naming it.
func TextScripts(enc Encoder, scripts map[string][]string, fallback Rule) (Rule, error) {
	if enc == nil {
		return nil, errors.New("servertest: TextScripts needs an Encoder")
	}
	ids := make(map[string][][]int32, len(scripts))
	for id, turns := range scripts {
		ids[id] = make([][]int32, len(turns))
		for i, text := range turns {
			toks, err := encodeText(enc, text)
			if err != nil {
				return nil, fmt.Errorf("servertest: script for request %q turn %d: %w", id, i, err)
			}
			ids[id][i] = toks
		}
	}
	return Scripts(ids, fallback), nil
}

// Text is a rule that answers in text: reply gets the call and its prompt
// decoded (special tokens kept, so the chat markers show) and returns the
// text of the turn, end marker included, which codec encodes. A prompt
// that does not decode, or a reply that does not encode, fails the call
// with an error wrapping server.ErrBadRequest. reply runs concurrently
// for concurrent calls.
func Text(codec Codec, reply func(c Call, prompt string) string) Rule {
	return func(c Call) Reply {
		fail := func(err error) Reply {
			f := ErrorFault(fmt.Errorf("servertest: request %q turn %d: %w: %w", c.Req.RequestID, c.Turn, err, server.ErrBadRequest))
			return Reply{Fault: &f}
		}
		if codec == nil {
			return fail(errors.New("no Codec given to Text"))
		}
		prompt, err := codec.Decode(c.Req.PromptIDs, false)
		if err != nil {
			return fail(fmt.Errorf("decoding the prompt: %w", err))
		}
		toks, err := encodeText(codec, reply(c, prompt))
		if err != nil {
			return fail(err)
		}
		return Reply{Tokens: toks}
	}
}

// encodeText encodes text, refusing an empty encoding of text that is not
// empty (how *tokenizer.Tokenizer's Encode reports a limit error).
func encodeText(enc Encoder, text string) ([]int32, error) {
	toks := enc.Encode(text)
	if len(toks) == 0 && text != "" {
		return nil, fmt.Errorf("reply %.40q encodes to no tokens", text)
	}
	if toks == nil {
		toks = []int32{}
	}
	return toks, nil
}
