// Package tokenizertest gives tests a small tokenizer in Qwen's chat
// format, built in memory, so that a test of an agent loop needs no model
// download and no hand-encoded ids.
//
// Qwen is a byte-level BPE without merges (every UTF-8 byte is one token)
// plus Qwen's added tokens (<|endoftext|>, <|im_start|>, <|im_end|>,
// <tool_call>, </tool_call>, <tool_response>, </tool_response>, after the
// 256 byte tokens) and the ChatML + Hermes tool-calling template of
// tokenizer/bpetrain: turns end with <|im_end|>, tools are called as
// <tool_call>{"name": …, "arguments": …}</tool_call> (parser format
// "hermes"). It is the tokenizer of a model trained with bpetrain before
// any merge is learnt, so it loads and behaves as any tokenizer.json does.
//
// With server/servertest's text rules a scripted model is written in text:
//
//	tok, err := tokenizertest.Qwen()
//	rule, err := servertest.TextScripts(tok, map[string][]string{
//		"0/0": {"<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call><|im_end|>", "42<|im_end|>"},
//	}, nil)
//	engine := servertest.New(servertest.Config{Rule: rule, Vocab: tok.VocabSize()})
package tokenizertest
