// Package bpetrain trains a byte-level BPE tokenizer from a corpus and writes
// it as a Hugging Face tokenizer.json (plus a tokenizer_config.json with a
// ChatML + Hermes tool-calling chat template), so that a model the project
// trains itself is loaded by package tokenizer — and by HF's own libraries —
// exactly like a downloaded Qwen2.5/Qwen3 checkpoint.
//
// The semantics follow HF tokenizers' BpeTrainer with a ByteLevel
// pre-tokenizer: text is split by Qwen2's pre-tokenization regex, each piece
// is mapped to byte-level symbols (the 256-symbol GPT-2 alphabet, always
// fully present in the vocab), and the most frequent adjacent pair is merged
// repeatedly. Ties are broken by the smaller (left id, right id) pair, so a
// corpus always yields the same tokenizer, byte for byte.
//
//	tok, err := bpetrain.Train([]string{"What is 12 * 34?", "408"}, bpetrain.Options{VocabSize: 300})
//	err = tok.WriteDir(dir) // tokenizer.json + tokenizer_config.json
package bpetrain
