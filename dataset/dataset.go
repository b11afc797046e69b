package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrl/agentrl/agentloop"
)

// Options tune a Reader. The zero value reads verl's layout.
type Options struct {
	// PromptKey is the column holding the chat messages (verl's
	// data.prompt_key); "" means "prompt", and then "raw_prompt" and
	// "messages" are accepted too.
	PromptKey string
	// ImageKey is the column holding each row's images (verl's
	// data.image_key); "" means "images".
	ImageKey string
	// Limit stops after this many rows; 0 reads all.
	Limit int
	// MaxRowBytes bounds one JSONL line and the decoded size of one Parquet
	// row (string bytes plus 16 bytes per value); 0 means DefaultMaxRowBytes.
	MaxRowBytes int
}

// DefaultMaxRowBytes bounds a row unless Options.MaxRowBytes says otherwise.
const DefaultMaxRowBytes = 64 << 20

func (o Options) maxRow() int {
	if o.MaxRowBytes > 0 {
		return o.MaxRowBytes
	}
	return DefaultMaxRowBytes
}

// ErrFormat is wrapped by every error about a file's content (as opposed
// to an I/O error): a corrupt or hostile file, or a row that is not a
// sample.
var ErrFormat = errors.New("dataset: bad file")

// RowError names where a file is wrong: the file, the 1-based row (0 when
// the error is about the file as a whole) and the column path ("" when not
// about one column), e.g. "prompt[1].content".
type RowError struct {
	File   string
	Row    int
	Column string
	Err    error
}

func (e *RowError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Row > 0 {
		fmt.Fprintf(&b, ": row %d", e.Row)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %s", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *RowError) Unwrap() error { return e.Err }

// Reader streams the samples of one file, one row at a time.
type Reader interface {
	// Next returns the next sample; io.EOF after the last. Errors are
	// *RowError values.
	Next(ctx context.Context) (agentloop.Sample, error)
	// Close releases the file.
	Close() error
}

// Open opens a dataset file by its extension: .jsonl (or .json, one object
// per line) or .parquet.
func Open(path string, opts Options) (Reader, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".json":
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		return newJSONL(f, path, opts), nil
	case ".parquet":
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("dataset: %w", err)
		}
		r, err := NewParquet(f, st.Size(), path, opts)
		if err != nil {
			f.Close()
			return nil, err
		}
		r.closer = f
		return r, nil
	}
	return nil, fmt.Errorf("dataset %s: want a .jsonl or .parquet file", path)
}

// ReadAll reads every sample of the files in order (Options.Limit counts
// across them). Each file's rows are numbered from 0 when they carry no
// index; a sample's ID is left empty for the Manager to fill.
func ReadAll(ctx context.Context, opts Options, paths ...string) ([]agentloop.Sample, error) {
	var out []agentloop.Sample
	err := Each(ctx, opts, func(s agentloop.Sample) error {
		out = append(out, s)
		return nil
	}, paths...)
	return out, err
}

// Each calls fn for every sample of the files in order, streaming: memory
// stays bounded by one row (and the Parquet reader's buffers) whatever the
// file size. An error from fn stops the walk and is returned as is.
func Each(ctx context.Context, opts Options, fn func(agentloop.Sample) error, paths ...string) error {
	n := 0
	for _, p := range paths {
		o := opts
		if opts.Limit > 0 {
			o.Limit = opts.Limit - n
			if o.Limit <= 0 {
				return nil
			}
		}
		r, err := Open(p, o)
		if err != nil {
			return err
		}
		for {
			s, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return err
			}
			n++
			if err := fn(s); err != nil {
				r.Close()
				return err
			}
		}
		if err := r.Close(); err != nil {
			return fmt.Errorf("dataset %s: %w", p, err)
		}
	}
	return nil
}
