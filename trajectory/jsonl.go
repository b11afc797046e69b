package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// MaxJSONLLine bounds one JSONL line (one trajectory). A longer line is an
// error rather than an unbounded allocation.
const MaxJSONLLine = 256 << 20

var trajectoryType = reflect.TypeFor[Trajectory]()

// ErrLineTooLong is returned by the JSONL reader for a line over MaxJSONLLine.
var ErrLineTooLong = errors.New("JSONL line too long")

// JSONLWriter writes one trajectory per line.
type JSONLWriter struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewJSONLWriter returns a writer; call Flush when done. With a nil w
// every write fails (ErrNilIO) instead of panicking.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	if w == nil {
		w = nilIO{}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &JSONLWriter{w: bw, enc: enc}
}

// Write validates t and writes it as one line.
func (jw *JSONLWriter) Write(t *Trajectory) error {
	if t == nil {
		return fmt.Errorf("trajectory: JSONL write: %w: nil trajectory", ErrInvalid)
	}
	if err := t.Validate(); err != nil {
		return fmt.Errorf("trajectory: JSONL write: %w", err)
	}
	if err := jw.enc.Encode(t); err != nil { // Encode ends the line with '\n'
		return fmt.Errorf("trajectory: JSONL write: %w", err)
	}
	return nil
}

// Flush writes buffered data to the underlying writer.
func (jw *JSONLWriter) Flush() error { return jw.w.Flush() }

// WriteJSONL writes all trajectories and flushes.
func WriteJSONL(w io.Writer, trajs []*Trajectory) error {
	if w == nil {
		return ErrNilIO
	}
	jw := NewJSONLWriter(w)
	for i, t := range trajs {
		if err := jw.Write(t); err != nil {
			return &RowError{i, err}
		}
	}
	return jw.Flush()
}

// JSONLReader reads trajectories written by JSONLWriter. Blank lines are
// skipped. Every trajectory is validated; keys must be field names exactly
// (case-sensitive) and appear once, and unknown keys are rejected, so that
// nothing in the file is silently dropped or read differently.
type JSONLReader struct {
	r    *bufio.Reader
	line int
}

// NewJSONLReader returns a reader over r.
func NewJSONLReader(r io.Reader) *JSONLReader {
	if r == nil {
		r = nilIO{}
	}
	return &JSONLReader{r: bufio.NewReaderSize(r, 1<<16)}
}

// LineError says which line of a JSONL stream is bad.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Next returns the next trajectory, or io.EOF at the end of the stream.
func (jr *JSONLReader) Next() (*Trajectory, error) {
	for {
		line, err := jr.readLine()
		if err != nil {
			return nil, err
		}
		jr.line++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var t Trajectory
		if err := dec.Decode(&t); err != nil {
			return nil, &LineError{jr.line, fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
		if len(bytes.TrimSpace(line[dec.InputOffset():])) != 0 {
			return nil, &LineError{jr.line, fmt.Errorf("%w: trailing data after the trajectory object", ErrInvalid)}
		}
		if err := checkKeys(line, trajectoryType, ""); err != nil {
			return nil, &LineError{jr.line, err}
		}
		if len(t.Logprobs) == 0 {
			// An empty list says nothing more than none, and the writer
			// omits it: read both as nil so a round trip is exact.
			t.Logprobs = nil
		}
		if err := t.Validate(); err != nil {
			return nil, &LineError{jr.line, err}
		}
		return &t, nil
	}
}

func (jr *JSONLReader) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := jr.r.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxJSONLLine {
			return nil, &LineError{jr.line + 1, ErrLineTooLong}
		}
		switch {
		case err == nil:
			if buf == nil {
				return chunk, nil
			}
			return append(buf, chunk...), nil
		case errors.Is(err, bufio.ErrBufferFull):
			buf = append(buf, chunk...)
		case errors.Is(err, io.EOF):
			buf = append(buf, chunk...)
			if len(buf) == 0 {
				return nil, io.EOF
			}
			return buf, nil
		default:
			return nil, err
		}
	}
}

// ErrNilIO is returned by the readers and writers of this package given a
// nil io.Reader or io.Writer.
var ErrNilIO = errors.New("trajectory: nil io.Reader or io.Writer")

// nilIO stands in for a nil reader or writer: every call fails.
type nilIO struct{}

func (nilIO) Read([]byte) (int, error)  { return 0, ErrNilIO }
func (nilIO) Write([]byte) (int, error) { return 0, ErrNilIO }

// ReadJSONL reads every trajectory of r.
func ReadJSONL(r io.Reader) ([]*Trajectory, error) {
	jr := NewJSONLReader(r)
	var out []*Trajectory
	for {
		t, err := jr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, t)
	}
}
