package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentrl/agentrl/agentloop"
)

// JSONL reads one JSON object per line. Blank lines are skipped (but
// counted, so row numbers are line numbers).
type JSONL struct {
	r     *bufio.Reader
	c     io.Closer
	name  string
	opts  Options
	line  int // lines read
	n     int // samples returned
	buf   []byte
	close bool
}

// NewJSONL reads JSONL from r; name is used in errors.
func NewJSONL(r io.Reader, name string, opts Options) *JSONL {
	return newJSONL(r, name, opts)
}

func newJSONL(r io.Reader, name string, opts Options) *JSONL {
	j := &JSONL{r: bufio.NewReaderSize(r, 64<<10), name: name, opts: opts}
	if c, ok := r.(io.Closer); ok {
		j.c = c
	}
	return j
}

// Next implements Reader.
func (j *JSONL) Next(ctx context.Context) (agentloop.Sample, error) {
	for {
		if j.opts.Limit > 0 && j.n >= j.opts.Limit {
			return agentloop.Sample{}, io.EOF
		}
		if err := ctx.Err(); err != nil {
			return agentloop.Sample{}, err
		}
		line, err := j.readLine()
		if err != nil {
			return agentloop.Sample{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal(line, &row); err != nil {
			return agentloop.Sample{}, &RowError{File: j.name, Row: j.line, Err: fmt.Errorf("%w: not a JSON object: %w", ErrFormat, err)}
		}
		if row == nil {
			return agentloop.Sample{}, &RowError{File: j.name, Row: j.line, Err: fmt.Errorf("%w: not a JSON object: null", ErrFormat)}
		}
		s, hasIndex, err := SampleFromRow(row, j.opts)
		if err != nil {
			return agentloop.Sample{}, rowError(j.name, j.line, err)
		}
		if !hasIndex {
			s.Index = j.line - 1
		}
		j.n++
		return s, nil
	}
}

// readLine returns the next line without its newline, bounded by
// Options.MaxRowBytes; io.EOF at the end.
func (j *JSONL) readLine() ([]byte, error) {
	j.buf = j.buf[:0]
	max := j.opts.maxRow()
	for {
		chunk, err := j.r.ReadSlice('\n')
		j.buf = append(j.buf, chunk...)
		if len(j.buf) > max {
			j.line++
			return nil, &RowError{File: j.name, Row: j.line, Err: fmt.Errorf("%w: line longer than %d bytes", ErrFormat, max)}
		}
		switch {
		case err == nil:
			j.line++
			return bytes.TrimSuffix(j.buf, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(j.buf) == 0 {
				return nil, io.EOF
			}
			j.line++
			return j.buf, nil
		default:
			return nil, fmt.Errorf("dataset %s: %w", j.name, err)
		}
	}
}

// Close implements Reader; it closes the underlying reader when it is an
// io.Closer.
func (j *JSONL) Close() error {
	if j.c != nil && !j.close {
		j.close = true
		return j.c.Close()
	}
	return nil
}
