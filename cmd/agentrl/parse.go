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
	"os"
	"strings"

	"github.com/agentrl/agentrl/parser"
)

func init() {
	register("parse", "parse tool calls in model output (JSONL records with \"text\")", runParse)
}

// runParse reads JSONL records with a "text" field and writes each record
// back with "content", "reasoning", "calls" ([{name, arguments}], arguments
// as the exact JSON text) and "errors" ([{message}]) added. A line that is
// not a JSON object with a string "text" becomes {"line": N, "error": ...}
// and processing goes on; the command then fails at the end so scripts
// notice.
func runParse(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("parse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "", "tool-call format: "+strings.Join(parser.Formats(), ", "))
	think := fs.Bool("think-aware", false, "ignore calls inside <think>…</think> and report that text as reasoning")
	toolsPath := fs.String("tools", "", "optional JSON file with a list of OpenAI tool schemas: unknown tools become errors, qwen3_coder converts values by their types")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentrl parse --format NAME [--think-aware] [--tools tools.json] < in.jsonl > out.jsonl")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (input is read from stdin)", fs.Args())
	}
	if *format == "" {
		return fmt.Errorf("--format is required (one of %s)", strings.Join(parser.Formats(), ", "))
	}
	opts := parser.Options{ThinkAware: *think}
	if *toolsPath != "" {
		data, err := os.ReadFile(*toolsPath)
		if err != nil {
			return fmt.Errorf("--tools: %w", err)
		}
		if err := json.Unmarshal(data, &opts.Tools); err != nil {
			return fmt.Errorf("--tools %s: want a JSON list of tool schemas: %w", *toolsPath, err)
		}
	}
	p, err := parser.New(*format, opts)
	if err != nil {
		return err
	}

	bad, err := mapJSONL(ctx, stdin, stdout, false, func(lineNo int, line []byte) ([]byte, error) {
		rec, err := parseRecord(p, line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		return rec, nil
	})
	if err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d input line(s) could not be parsed (see the error records)", bad)
	}
	return nil
}

// added are the fields parse writes; input fields of the same name are
// replaced.
var added = map[string]bool{"content": true, "reasoning": true, "calls": true, "errors": true}

// parseRecord parses one JSON object line and returns it with the parse
// result appended, the input fields kept in their order and spelling.
func parseRecord(p parser.Parser, line []byte) ([]byte, error) {
	keys, vals, err := objectFields(line)
	if err != nil {
		return nil, err
	}
	text, found := "", false
	for i, k := range keys {
		if k == "text" {
			if err := json.Unmarshal(vals[i], &text); err != nil {
				return nil, fmt.Errorf(`"text" must be a string`)
			}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf(`missing "text" field`)
	}
	res := p.Parse(text, nil)

	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	field := func(k string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		writeJSON(&b, k)
		b.WriteByte(':')
	}
	for i, k := range keys {
		if added[k] {
			continue
		}
		field(k)
		b.Write(vals[i])
	}
	field("content")
	writeJSON(&b, res.Content)
	field("reasoning")
	writeJSON(&b, res.Reasoning)
	field("calls")
	b.WriteByte('[')
	for i, c := range res.Calls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		writeJSON(&b, c.Function.Name)
		b.WriteString(`,"arguments":`)
		writeJSON(&b, c.Function.Arguments)
		b.WriteByte('}')
	}
	b.WriteByte(']')
	field("errors")
	b.WriteByte('[')
	for i, e := range res.Errors {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"message":`)
		writeJSON(&b, e.Message)
		b.WriteByte('}')
	}
	b.WriteString("]}")
	return b.Bytes(), nil
}

// objectFields splits a JSON object into its keys and the exact text of
// their values (compacted), in order. A repeated key keeps its last value
// at its first position, as JSON decoders read it.
func objectFields(line []byte) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("invalid record: want a JSON object")
	}
	var keys []string
	var vals []json.RawMessage
	pos := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("invalid JSON: %w", err)
		}
		k, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("invalid JSON in field %q: %w", k, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return nil, nil, fmt.Errorf("invalid JSON in field %q: %w", k, err)
		}
		if i, dup := pos[k]; dup {
			vals[i] = c.Bytes()
			continue
		}
		pos[k] = len(keys)
		keys = append(keys, k)
		vals = append(vals, c.Bytes())
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, errors.New("invalid JSON: text after the object")
	}
	return keys, vals, nil
}

// mapJSONL is the loop of the JSONL commands: it writes, for every
// non-blank line of in, what record makes of it (the line is trimmed of
// surrounding white space), or {"line": N, "error": ...} when record fails,
// and returns how many failed so that the command can fail at the end.
// keepBlank writes an empty line for a blank one, so that output line N
// answers input line N.
func mapJSONL(ctx context.Context, in io.Reader, out io.Writer, keepBlank bool, record func(lineNo int, line []byte) ([]byte, error)) (failed int, err error) {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 1<<20)
	for lineNo := 1; ; lineNo++ {
		if err := ctx.Err(); err != nil {
			return failed, errors.Join(err, w.Flush())
		}
		line, readErr := r.ReadBytes('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return failed, errors.Join(fmt.Errorf("reading line %d: %w", lineNo, readErr), w.Flush())
		}
		if len(line) == 0 && readErr != nil {
			break
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			rec, err := record(lineNo, trimmed)
			if err != nil {
				failed++
				rec = errorRecord(lineNo, err)
			}
			w.Write(rec)
			w.WriteByte('\n')
		} else if keepBlank {
			w.WriteByte('\n')
		}
		if readErr != nil {
			break
		}
	}
	if err := w.Flush(); err != nil {
		return failed, fmt.Errorf("writing output: %w", err)
	}
	return failed, nil
}

func errorRecord(lineNo int, err error) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"line":%d,"error":`, lineNo)
	writeJSON(&b, err.Error())
	b.WriteByte('}')
	return b.Bytes()
}

// writeJSON writes v as compact JSON without HTML escaping; v is a string
// or a list of ids, which always encode.
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Truncate(b.Len() - 1)
}
