package main

import (
	"bufio"
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
func runTokenize(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("tokenizer", "", "directory with tokenizer.json (and tokenizer_config.json for chat templates)")
	decode := fs.Bool("decode", false, "turn \"ids\" into \"text\" instead of encoding")
	skipSpecial := fs.Bool("skip-special", false, "with --decode: drop special tokens")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentrl tokenize --tokenizer DIR [--decode [--skip-special]] < in.jsonl > out.jsonl")
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
	in := bufio.NewReaderSize(stdin, 1<<20)
	out := bufio.NewWriterSize(stdout, 1<<20)
	failed := 0
	for lineNo := 1; ; lineNo++ {
		if err := ctx.Err(); err != nil {
			out.Flush()
			return err
		}
		line, readErr := in.ReadBytes('\n')
		if len(line) == 0 && readErr != nil {
			if readErr != io.EOF {
				out.Flush()
				return readErr
			}
			break
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			rec, err := tokenizeRecord(tok, line, *decode, *skipSpecial)
			if err != nil {
				failed++
				rec = tokErrorRecord(lineNo, err)
			}
			out.Write(rec)
		}
		out.WriteByte('\n')
		if readErr == io.EOF {
			break
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d input line(s) could not be processed", failed)
	}
	return nil
}

// tokField is one key of a JSON object, kept in input order.
type tokField struct {
	key string
	val json.RawMessage
}

func tokenizeRecord(tok *tokenizer.Tokenizer, line []byte, decode, skipSpecial bool) ([]byte, error) {
	fields, err := tokObjectFields(line)
	if err != nil {
		return nil, err
	}
	get := func(k string) (json.RawMessage, bool) {
		for _, f := range fields {
			if f.key == k {
				return f.val, true
			}
		}
		return nil, false
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
		fields = tokSetField(fields, "text", text)
	default:
		if raw, ok := get("context"); ok {
			text, err := tok.ApplyChatTemplateJSON(raw)
			if err != nil {
				fields = tokSetField(fields, "error", err.Error())
				break
			}
			fields = tokSetField(fields, "text", text)
			fields = tokSetField(fields, "ids", tokNonNil(tok.Encode(text)))
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
		fields = tokSetField(fields, "ids", tokNonNil(tok.Encode(text)))
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(tokMarshal(f.key))
		b.WriteByte(':')
		b.Write(f.val)
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

// tokObjectFields splits a JSON object into its fields, in order.
func tokObjectFields(line []byte) ([]tokField, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tk, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := tk.(json.Delim); !ok || d != '{' {
		return nil, errors.New("each line must be a JSON object")
	}
	var fields []tokField
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("invalid JSON in %q: %w", kt, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, val); err != nil {
			return nil, fmt.Errorf("invalid JSON in %q: %w", kt, err)
		}
		fields = append(fields, tokField{kt.(string), c.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	return fields, nil
}

func tokSetField(fields []tokField, key string, v any) []tokField {
	val := tokMarshal(v)
	for i := range fields {
		if fields[i].key == key {
			fields[i].val = val
			return fields
		}
	}
	return append(fields, tokField{key, val})
}

func tokMarshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings and id lists always encode
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

func tokErrorRecord(lineNo int, err error) []byte {
	return []byte(fmt.Sprintf(`{"line":%d,"error":%s}`, lineNo, tokMarshal(err.Error())))
}
