// Package qwen holds what the examples share to stand in for a Qwen model:
// the --tokenizer flag, and a scripted model that answers in Qwen's chat
// format. Both are thin: the default tokenizer is tokenizertest's and the
// scripted model is servertest's Text rule.
package qwen

import (
	"errors"
	"flag"
	"fmt"

	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
)

// ParseFlags adds the --tokenizer flag to fs, parses args and loads that
// tokenizer. Without --tokenizer the examples use tokenizertest.Qwen (a
// small byte-level tokenizer with Qwen's chat format and special tokens),
// so they run from a clone with nothing to download; pass a Qwen model's
// directory for its real tokenizer.
func ParseFlags(fs *flag.FlagSet, args []string) (*tokenizer.Tokenizer, error) {
	dir := fs.String("tokenizer", "", "tokenizer directory (tokenizer.json, tokenizer_config.json) in Qwen's chat format; default: a small built-in one")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *dir != "" {
		return tokenizer.Load(*dir)
	}
	return tokenizertest.Qwen()
}

// ScriptedModel is a servertest rule for a deterministic stand-in of a
// model (servertest.Text): reply gets the call and its decoded prompt and
// returns the text of the assistant turn, which the rule ends with
// <|im_end|> and encodes. A prompt that does not decode becomes an engine
// error.
func ScriptedModel(tok *tokenizer.Tokenizer, reply func(c servertest.Call, prompt string) string) (servertest.Rule, error) {
	if _, ok := tok.TokenID("<|im_end|>"); !ok {
		return nil, errors.New("the scripted model speaks Qwen's chat format: the tokenizer has no <|im_end|>")
	}
	return servertest.Text(tok, func(c servertest.Call, prompt string) string {
		return reply(c, prompt) + "<|im_end|>"
	}), nil
}
