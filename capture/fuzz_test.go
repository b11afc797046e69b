package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzDecodeRecord: a log line from disk (or a shared store another
// replica wrote) decodes to a Record whose invariants hold, or to an
// ErrRecord error; never a panic.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range []string{
		`{"kind":"rollout","time":"2026-01-01T00:00:00Z","rollout":{"id":"ro_1","key_sha256":"` + strings.Repeat("ab", 32) + `","created":"2026-01-01T00:00:00Z"}}`,
		`{"kind":"begin","time":"2026-01-01T00:00:00Z","call_id":"c0"}`,
		`{"kind":"call","time":"2026-01-01T00:00:00Z","call":{"id":"c0","dialect":"chat","request":{"messages":[]},"messages":[{"role":"user","content":"hi"}],"prompt_ids":[1,2,3],"sampled_ids":[4,5],"logprobs":[-0.5,-0.25],"stop_reason":"stop","weight_version":3,"answer":{"role":"assistant","content":"ok"},"received":"2026-01-01T00:00:00Z","dispatched":"2026-01-01T00:00:00Z","recorded":"2026-01-01T00:00:00Z"}}`,
		`{"kind":"call","call":{"id":"c1","parent":"c0","delta_ids":[9],"sampled_ids":[1],"logprobs":[0,1],"answer":{}}}`,
		`{"kind":"call","call":{"id":"c1","parent":"c0","prompt_ids":[9],"sampled_ids":[-1],"answer":{}}}`,
		`{"kind":"reward","reward":0.5}`,
		`{"kind":"finish","reason":"expired"}`,
		`{"kind":"abort","call_id":"c3","reason":"client gone"}`,
		`{"kind":"rollout","rollout":{"id":"../x","key_sha256":"00"}}`,
		`{"kind":"nope"}`, `{"kind":"begin"} {}`, `[]`, `{"kind":"call","call":{"id":"c","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"prompt_ids":[1],"answer":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeRecord(line)
		if err != nil {
			if !errors.Is(err, ErrRecord) {
				t.Fatalf("error %v does not wrap ErrRecord", err)
			}
			return
		}
		if err := r.check(); err != nil {
			t.Fatalf("decoded a record that fails its check: %v", err)
		}
		// What decodes re-encodes and decodes the same way.
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		if _, err := DecodeRecord(b); err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
	})
}

// FuzzDecodeControl: control request bodies decode or fail with
// errBadControl; never a panic, never an oversized value kept.
func FuzzDecodeControl(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"group":"g","metadata":{"a":"b"}}`, `{"reward":1}`, `{"reward":"x"}`,
		`{"reward":1}{"reward":2}`, `{"group":` + strings.Repeat("[", 100) + `}`, `{"unknown":1}`, `{"reward":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var opts CreateOptions
		if err := decodeControl(data, &opts); err != nil {
			if !errors.Is(err, errBadControl) {
				t.Fatalf("error %v does not wrap errBadControl", err)
			}
		} else if len(opts.Group) > 256 || len(opts.Metadata) > 64 {
			t.Fatalf("accepted an oversized request: %d-byte group, %d metadata", len(opts.Group), len(opts.Metadata))
		}
		var reward struct {
			Reward *float64 `json:"reward"`
		}
		if err := decodeControl(data, &reward); err != nil && !errors.Is(err, errBadControl) {
			t.Fatalf("error %v does not wrap errBadControl", err)
		}
	})
}

// FuzzReadLog: a store's files (a rollout's log, the shared log) read
// back without a panic; what reads is valid records, and a torn or
// malformed file is an error or a shorter log, never garbage.
func FuzzReadLog(f *testing.F) {
	rollout := `{"kind":"rollout","rollout":{"id":"ro_1","key_sha256":"` + strings.Repeat("ab", 32) + `"}}`
	for _, s := range []string{
		rollout + "\n",
		rollout + "\n" + `{"kind":"begin","call_id":"c0"}` + "\n" + `{"kind":"call","call":{"id":"c0","sampled_ids":[1`,
		rollout + "\n\n",
		`{"rollout":"ro_1","record":` + rollout + "}\n" + `{"rollout":"ro_1","deleted":true}` + "\n",
		`{"rollout":"ro_1","record":{"kind":"reward","reward":1}}` + "\n" + `{"rollout":"../x","record":{}}` + "\n",
		// A preallocated log after a crash: padding, a torn record in it,
		// a record's end without its start.
		`{"rollout":"ro_1","record":` + rollout + "}\n" + strings.Repeat("\x00", 100),
		`{"rollout":"ro_1","record":` + rollout + "}\n" + `{"rollout":"ro_1","rec` + strings.Repeat("\x00", 40),
		`{"rollout":"ro_1","record":` + rollout + "}\n" + strings.Repeat("\x00", 40) + `"call_id":"c0"}}` + "\n" + strings.Repeat("\x00", 9),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := readLog(bytes.NewReader(data), "ro_1")
		if err == nil {
			for _, r := range recs {
				if err := r.check(); err != nil {
					t.Fatalf("read an invalid record: %v", err)
				}
			}
		}
		path := filepath.Join(t.TempDir(), "capture.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := OpenLog(path)
		if err != nil {
			return
		}
		ids, _ := s.List(context.Background())
		defer func() {
			// Closed, the log is its whole records: it opens again to
			// the same rollouts.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			if bytes.IndexByte(b, 0) >= 0 || len(b) > 0 && b[len(b)-1] != '\n' {
				t.Fatalf("a closed log holds padding or a torn line: %q", b)
			}
			s2, err := OpenLog(path)
			if err != nil {
				t.Fatalf("a closed log does not open again: %v", err)
			}
			defer s2.Close()
			ids2, _ := s2.List(context.Background())
			if !slices.Equal(ids, ids2) {
				t.Fatalf("reopened with rollouts %v, had %v", ids2, ids)
			}
		}()
		for _, id := range ids {
			recs, err := s.Load(context.Background(), id)
			if err != nil {
				continue
			}
			for _, r := range recs {
				if err := r.check(); err != nil {
					t.Fatalf("loaded an invalid record: %v", err)
				}
			}
		}
	})
}
