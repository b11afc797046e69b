package main

// The JSONL plumbing shared by the line-oriented commands (parse, tokenize).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

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
