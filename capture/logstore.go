package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"sync"
)

// LogStore is the embedded store for many rollouts at once: every
// rollout's records in one append-only JSONL file, with group commit —
// concurrent Appends that ask for durability share one sync (the first
// to get the sync lock syncs everything written so far, and those that
// waited find their records already durable). DirStore pays one fsync per
// answer per file; LogStore one per batch.
//
// The file is preallocated, as write-ahead logs are (etcd's WAL, say):
// it grows by chunks of zeros that are made durable before any record is
// written over them, so a record's sync changes no metadata and is an
// fdatasync of its data alone, with no journal commit (the cost of an
// fsync that grows a file, and most of its tail under load). A crash
// can leave zeros, or a torn record written into them, after the last
// synced record: JSON never holds a NUL byte, so on open the log is cut
// at the first line that has one or that has no newline. Close cuts the
// padding off. Deleted rollouts are marked with a tombstone; the file
// only grows, so rotate it (a new LogStore) between runs.
type LogStore struct {
	path string

	mu sync.Mutex // the file's end and size, and the index
	f  *os.File
	// end is where the next record goes; size is the file's size, end
	// plus the zero padding, and chunk the next growth.
	end, size, chunk int64
	index            map[string][]span
	deleted          map[string]bool

	syncMu sync.Mutex
	synced int64 // bytes known durable; under syncMu
}

// span is one record's place in the file.
type span struct{ off, n int64 }

// logLine is a line of a LogStore.
type logLine struct {
	Rollout string  `json:"rollout"`
	Record  *Record `json:"record,omitempty"`
	Deleted bool    `json:"deleted,omitempty"`
}

// OpenLog opens (creating it) the log at path and indexes it.
func OpenLog(path string) (*LogStore, error) {
	// Not O_APPEND: records are written at end, inside the padding.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("capture: opening the log: %w", err)
	}
	s := &LogStore{path: path, f: f, index: map[string][]span{}, deleted: map[string]bool{}, chunk: logFirstChunk}
	if err := s.scan(); err != nil {
		f.Close()
		return nil, err
	}
	// Cut what follows the last whole record: padding, a torn record.
	st, err := f.Stat()
	if err == nil && st.Size() != s.end {
		if err = f.Truncate(s.end); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("capture: the log: cutting what follows the last whole record: %w", err)
	}
	s.size, s.synced = s.end, s.end
	return s, nil
}

// The log grows by logFirstChunk, doubling up to logMaxChunk: few
// growths, each a bounded write of zeros and one sync.
const (
	logFirstChunk = 1 << 20
	logMaxChunk   = 16 << 20
)

// zeroPage is what padding is written from.
var zeroPage [64 << 10]byte

// grow extends the file by zeros so that n more bytes fit after end, and
// makes them durable before a record is written over them: a record's
// sync then changes no metadata, and after a crash the padding reads as
// zeros, never as stale blocks. Called under mu.
func (s *LogStore) grow(n int64) error {
	size := s.size + s.chunk
	for size < s.end+n {
		size += s.chunk
	}
	for off := s.size; off < size; {
		k := min(int64(len(zeroPage)), size-off)
		if _, err := s.f.WriteAt(zeroPage[:k], off); err != nil {
			return fmt.Errorf("capture: growing the log: %w", err)
		}
		off += k
	}
	if err := datasync(s.f); err != nil {
		return fmt.Errorf("capture: growing the log: %w", err)
	}
	s.size, s.chunk = size, min(2*s.chunk, logMaxChunk)
	return nil
}

// scan indexes the whole file.
func (s *LogStore) scan() error {
	br := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, 1<<62), 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) || err == nil && bytes.IndexByte(line, 0) >= 0 {
			// The end: no newline, or padding (a NUL) in the line, so
			// it is unsynced (a sync covers every earlier write).
			s.end = off
			return nil
		}
		if err != nil {
			return fmt.Errorf("capture: the log, line %d: %w", n, err)
		}
		var l logLine
		if err := json.Unmarshal(line, &l); err != nil || !validID(l.Rollout) || (l.Record == nil) == !l.Deleted {
			return fmt.Errorf("capture: the log, line %d: %w: not a rollout's record or tombstone", n, ErrRecord)
		}
		if l.Deleted {
			delete(s.index, l.Rollout)
			s.deleted[l.Rollout] = true
		} else {
			s.index[l.Rollout] = append(s.index[l.Rollout], span{off, int64(len(line))})
		}
		off += int64(len(line)) + 1
	}
}

// Append implements Store.
func (s *LogStore) Append(_ context.Context, id string, sync bool, recs ...Record) error {
	if !validID(id) {
		return fmt.Errorf("capture: invalid rollout id %q", id)
	}
	buf := make([]byte, 0, 512)
	lens := make([]int64, len(recs))
	for i := range recs {
		// logLine{Rollout: id, Record: &recs[i]}, with the record
		// encoded by marshalRecord (the id is valid: no escaping).
		rb, err := marshalRecord(&recs[i])
		if err != nil {
			return fmt.Errorf("capture: encoding a %s record: %w", recs[i].Kind, err)
		}
		start := len(buf)
		buf = append(append(append(append(buf, `{"rollout":"`...), id...), `","record":`...), rb...)
		buf = append(buf, '}')
		lens[i] = int64(len(buf) - start)
		buf = append(buf, '\n')
	}
	end, err := s.write(id, buf, lens, false)
	if err != nil || !sync {
		return err
	}
	return s.syncTo(end)
}

// write appends buf (lines of lens bytes each, newlines apart) for id and
// indexes them; it returns the file's end after them.
func (s *LogStore) write(id string, buf []byte, lens []int64, tombstone bool) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return 0, errors.New("capture: the log is closed")
	}
	if s.deleted[id] && !tombstone {
		return 0, fmt.Errorf("capture: rollout %s was deleted", id)
	}
	if s.end+int64(len(buf)) > s.size {
		if err := s.grow(int64(len(buf))); err != nil {
			return 0, err
		}
	}
	if _, err := s.f.WriteAt(buf, s.end); err != nil {
		// A partial write is overwritten by the next record: end has
		// not moved.
		return 0, fmt.Errorf("capture: appending to the log: %w", err)
	}
	off := s.end
	for _, n := range lens {
		if !tombstone {
			s.index[id] = append(s.index[id], span{off, n})
		}
		off += n + 1
	}
	s.end = off
	return off, nil
}

// syncTo returns once the file is durable up to end, syncing it unless
// another Append's sync already covered it.
func (s *LogStore) syncTo(end int64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.synced >= end {
		return nil
	}
	s.mu.Lock()
	target, f := s.end, s.f
	s.mu.Unlock()
	if f == nil {
		return errors.New("capture: the log is closed")
	}
	if err := datasync(f); err != nil {
		return fmt.Errorf("capture: syncing the log: %w", err)
	}
	s.synced = target
	return nil
}

// Load implements Store.
func (s *LogStore) Load(_ context.Context, id string) ([]Record, error) {
	s.mu.Lock()
	spans := append([]span(nil), s.index[id]...)
	f := s.f
	s.mu.Unlock()
	if len(spans) == 0 {
		return nil, fmt.Errorf("capture: rollout %s: %w", id, fs.ErrNotExist)
	}
	out := make([]Record, 0, len(spans))
	for i, sp := range spans {
		if sp.n > maxRecordBytes {
			return nil, fmt.Errorf("capture: rollout %s, record %d: %w: over %d bytes", id, i+1, ErrRecord, maxRecordBytes)
		}
		b := make([]byte, sp.n)
		if _, err := f.ReadAt(b, sp.off); err != nil {
			return nil, fmt.Errorf("capture: rollout %s, record %d: %w", id, i+1, err)
		}
		var l struct {
			Record json.RawMessage `json:"record"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("capture: rollout %s, record %d: %w: %v", id, i+1, ErrRecord, err)
		}
		rec, err := DecodeRecord(l.Record)
		if err != nil {
			return nil, fmt.Errorf("capture: rollout %s, record %d: %w", id, i+1, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// List implements Store.
func (s *LogStore) List(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.index))
	for id := range s.index {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// Delete implements Store: a synced tombstone.
func (s *LogStore) Delete(_ context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("capture: invalid rollout id %q", id)
	}
	b, err := json.Marshal(logLine{Rollout: id, Deleted: true})
	if err != nil {
		return err
	}
	end, err := s.write(id, append(b, '\n'), []int64{int64(len(b))}, true)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.index, id)
	s.deleted[id] = true
	s.mu.Unlock()
	return s.syncTo(end)
}

// Close closes the log.
func (s *LogStore) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	// The padding goes: a closed log is its records, newline-ended.
	err := s.f.Truncate(s.end)
	if err == nil {
		err = s.f.Sync()
	}
	err = errors.Join(err, s.f.Close())
	s.f = nil
	if err != nil {
		return fmt.Errorf("capture: closing the log: %w", err)
	}
	return nil
}
