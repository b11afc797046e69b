// Package qwen holds what the examples share to stand in for a Qwen model:
// the --tokenizer flag, and a scripted model that answers in Qwen's chat
// format.
package qwen

import (
	"errors"
	"flag"

	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// ParseFlags adds the --tokenizer flag every example requires to fs,
// parses args and loads that tokenizer.
func ParseFlags(fs *flag.FlagSet, args []string) (*tokenizer.Tokenizer, error) {
	dir := fs.String("tokenizer", "", "tokenizer directory (tokenizer.json, tokenizer_config.json)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *dir == "" {
		return nil, errors.New("--tokenizer DIR is required")
	}
	return tokenizer.Load(*dir)
}

// ScriptedModel is a servertest rule for a deterministic stand-in of a
// model: reply gets the call and its decoded prompt and returns the text of
// the assistant turn, which the rule encodes and ends with <|im_end|>. A
// prompt that does not decode becomes an engine error.
func ScriptedModel(tok *tokenizer.Tokenizer, reply func(c servertest.Call, prompt string) string) (servertest.Rule, error) {
	imEnd, ok := tok.TokenID("<|im_end|>")
	if !ok {
		return nil, errors.New("the scripted model speaks Qwen's chat format: the tokenizer has no <|im_end|>")
	}
	return func(c servertest.Call) servertest.Reply {
		text, err := tok.Decode(c.Req.PromptIDs, false)
		if err != nil {
			f := servertest.ErrorFault(err)
			return servertest.Reply{Fault: &f}
		}
		return servertest.Reply{Tokens: append(tok.Encode(reply(c, text)), imEnd)}
	}, nil
}
