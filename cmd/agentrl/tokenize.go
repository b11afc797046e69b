package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/agentrl/agentrl/tokenizer"
)

func init() {
	register("tokenize", "encode text, render chat templates, decode ids (JSONL in, JSONL out)", runTokenize)
}

// runTokenize reads JSONL on stdin and writes one line per input line, in
// the shape of the golden files: a record with "text" gets "ids"; a record
// with "context" ({"messages", "tools", "add_generation_prompt", extra
// template variables}) gets the rendered "text" and its "ids", or "error"
// when the template fails (e.g. raise_exception); with --decode a record with
// "ids" gets "text". Other fields are kept in their order. A line that is
// not such a record becomes {"line": N, "error": ...}; processing goes on
// and the command fails at the end so scripts notice.
//
// When the tokenizer directory also holds preprocessor_config.json (and the
// model's config.json), a context's image parts ({"type": "image", "image":
// SRC} or {"type": "image_url", "image_url": {"url": SRC}}, SRC a data URL or
// a local file) go through the Qwen-VL image processor: "ids" are the
// expanded ids, "images" gives each image's image_grid_thw, placeholder count
// and a digest of its pixel_values (shape, mean, rms, first values), and
// "position_ids" verl's (4, L) M-RoPE position ids.
func runTokenize(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("tokenizer", "", "directory with tokenizer.json (and tokenizer_config.json for chat templates)")
	decode := fs.Bool("decode", false, "turn \"ids\" into \"text\" instead of encoding")
	skipSpecial := fs.Bool("skip-special", false, "with --decode: drop special tokens")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: agentrl tokenize --tokenizer DIR [--decode [--skip-special]] < in.jsonl > out.jsonl

Reads JSON Lines on stdin and writes one line per input line to stdout, other fields kept:
  {"text": "Hello"}                        -> adds "ids": [...]
  {"context": {"messages": [...], "tools": [...], "add_generation_prompt": true, ...}}
                                           -> adds the rendered "text" and its "ids" (or "error"
                                              when the chat template fails); other keys of
                                              "context" are template variables
  {"ids": [9707, 11]}  with --decode       -> adds "text"
With a preprocessor_config.json (and config.json) in DIR, a context's image parts
({"type":"image","image":SRC} or {"type":"image_url","image_url":{"url":SRC}}, SRC a data URL
or a local file) are processed: "ids" come expanded, plus "images" (image_grid_thw,
placeholder count, pixel_values shape/mean/rms/first values) and "position_ids" (4 rows).
A line that is not such a record becomes {"line": N, "error": "..."}; the others are still
processed and the command exits 1 at the end.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("--tokenizer DIR is required and no positional arguments are accepted")
	}
	tok, err := tokenizer.Load(*dir)
	if err != nil {
		return err
	}
	vis, err := loadTokenizeVision(*dir, tok)
	if err != nil {
		return err
	}
	failed, err := mapJSONL(ctx, stdin, stdout, true, func(_ int, line []byte) ([]byte, error) {
		return tokenizeRecord(tok, vis, line, *decode, *skipSpecial)
	})
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d input line(s) could not be processed", failed)
	}
	return nil
}

func tokenizeRecord(tok *tokenizer.Tokenizer, vis *tokenizeVision, line []byte, decode, skipSpecial bool) ([]byte, error) {
	keys, vals, err := objectFields(line)
	if err != nil {
		return nil, err
	}
	get := func(k string) (json.RawMessage, bool) {
		for i, key := range keys {
			if key == k {
				return vals[i], true
			}
		}
		return nil, false
	}
	set := func(k string, v any) {
		var b bytes.Buffer
		writeJSON(&b, v)
		for i, key := range keys {
			if key == k {
				vals[i] = b.Bytes()
				return
			}
		}
		keys, vals = append(keys, k), append(vals, b.Bytes())
	}
	switch {
	case decode:
		raw, ok := get("ids")
		if !ok {
			return nil, errors.New(`--decode needs a record with "ids"`)
		}
		var ids []int32
		if err := json.Unmarshal(raw, &ids); err != nil {
			return nil, fmt.Errorf(`"ids" must be a list of token ids: %w`, err)
		}
		text, err := tok.Decode(ids, skipSpecial)
		if err != nil {
			return nil, err
		}
		set("text", text)
	default:
		if raw, ok := get("context"); ok {
			text, err := tok.ApplyChatTemplateJSON(raw)
			if err != nil {
				set("error", err.Error())
				break
			}
			set("text", text)
			ids := tokNonNil(tok.Encode(text))
			if vis != nil {
				exp, images, pos, err := vis.expand(raw, ids)
				if err != nil {
					set("error", err.Error())
					break
				}
				set("ids", exp)
				set("images", images)
				set("position_ids", pos)
				break
			}
			set("ids", ids)
			break
		}
		raw, ok := get("text")
		if !ok {
			return nil, errors.New(`record needs "text" or "context"`)
		}
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, fmt.Errorf(`"text" must be a string: %w`, err)
		}
		set("ids", tokNonNil(tok.Encode(text)))
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, k)
		b.WriteByte(':')
		b.Write(vals[i])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func tokNonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
