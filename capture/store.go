package capture

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Store keeps rollouts' logs. Records of one rollout are appended in order
// by one writer at a time (Capture holds the rollout's lock); a Store
// must be safe for concurrent use across rollouts.
type Store interface {
	// Append adds recs to rollout id's log, creating it on its first
	// record. With sync, they are durable (they survive a crash of the
	// process or the machine) when Append returns.
	Append(ctx context.Context, id string, sync bool, recs ...Record) error
	// Load returns id's records in order; fs.ErrNotExist (wrapped) when
	// the rollout has none.
	Load(ctx context.Context, id string) ([]Record, error)
	// List returns the ids of the rollouts with a log.
	List(ctx context.Context) ([]string, error)
	// Delete removes id's log.
	Delete(ctx context.Context, id string) error
}

// DirStore is the embedded store: one append-only JSONL file per rollout
// in a directory, written with O_APPEND and fsync'd (file, and directory on
// creation) before Append returns when asked to sync. A crash can only
// tear the last line, which has no newline: Load ignores it, and the next
// Append cuts it off first, so a torn record is never mistaken for one.
type DirStore struct {
	dir string

	mu    sync.Mutex
	files map[string]*logFile
}

type logFile struct {
	mu sync.Mutex
	f  *os.File
}

const logExt = ".jsonl"

// OpenDir opens (creating it) the store in dir.
func OpenDir(dir string) (*DirStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("capture: store directory: %w", err)
	}
	return &DirStore{dir: dir, files: map[string]*logFile{}}, nil
}

func (s *DirStore) path(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("capture: invalid rollout id %q", id)
	}
	return filepath.Join(s.dir, id+logExt), nil
}

// file returns id's open log, opening it for appending and cutting off a
// torn last line first. The store's lock is not held while a file is
// opened or synced, so a new rollout does not stall the others' appends.
func (s *DirStore) file(id string) (*logFile, error) {
	p, err := s.path(id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	lf, ok := s.files[id]
	s.mu.Unlock()
	if ok {
		return lf, nil
	}
	_, statErr := os.Stat(p)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("capture: opening %s's log: %w", id, err)
	}
	if err := cutTorn(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("capture: %s's log: %w", id, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// A new file's name must be durable too.
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if lf, ok := s.files[id]; ok {
		f.Close() // opened at the same time by another append
		return lf, nil
	}
	lf = &logFile{f: f}
	s.files[id] = lf
	return lf, nil
}

// cutTorn truncates f after its last newline.
func cutTorn(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	// Scan back for the end of the last whole line.
	const chunk = 64 << 10
	end := int64(0)
	buf := make([]byte, chunk)
	for off := size; off > 0 && end == 0; {
		n := min(int64(chunk), off)
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil && err != io.EOF {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = off + int64(i) + 1
		}
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("cutting off a torn last record: %w", err)
	}
	return f.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("capture: syncing the store directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("capture: syncing the store directory: %w", err)
	}
	return nil
}

// Append implements Store. The records go out in one write, so a crash
// keeps a prefix of them.
func (s *DirStore) Append(_ context.Context, id string, sync bool, recs ...Record) error {
	var buf bytes.Buffer
	for i := range recs {
		r := &recs[i]
		b, err := marshalRecord(r)
		if err != nil {
			return fmt.Errorf("capture: encoding a %s record: %w", r.Kind, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	lf, err := s.file(id)
	if err != nil {
		return err
	}
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f == nil {
		return fmt.Errorf("capture: rollout %s's log was deleted", id)
	}
	if _, err := lf.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("capture: appending to %s's log: %w", id, err)
	}
	if sync {
		if err := lf.f.Sync(); err != nil {
			return fmt.Errorf("capture: syncing %s's log: %w", id, err)
		}
	}
	return nil
}

// Load implements Store: every whole line, decoded; a torn last line (no
// newline) is left out; a malformed whole line is an error naming it.
func (s *DirStore) Load(_ context.Context, id string) ([]Record, error) {
	p, err := s.path(id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("capture: rollout %s: %w", id, err)
	}
	defer f.Close()
	return readLog(f, id)
}

// readLog decodes a log: whole lines only, each a Record.
func readLog(r io.Reader, name string) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Record
	for n := 1; ; n++ {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return out, nil // includes a torn last line
		}
		if err != nil {
			return out, fmt.Errorf("capture: %s's log, line %d: %w", name, n, err)
		}
		rec, err := DecodeRecord(line)
		if err != nil {
			return out, fmt.Errorf("capture: %s's log, line %d: %w", name, n, err)
		}
		out = append(out, rec)
	}
}

// readLine returns the next newline-terminated line without its newline;
// io.EOF for a last line without one (torn) or none at all.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > maxRecordBytes {
			return nil, fmt.Errorf("%w: line over %d bytes", ErrRecord, maxRecordBytes)
		}
		line = append(line, part...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// List implements Store.
func (s *DirStore) List(context.Context) ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("capture: listing the store: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), logExt); ok && e.Type().IsRegular() && validID(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Delete implements Store.
func (s *DirStore) Delete(_ context.Context, id string) error {
	p, err := s.path(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	lf := s.files[id]
	delete(s.files, id)
	s.mu.Unlock()
	if lf != nil {
		lf.mu.Lock()
		lf.f.Close()
		lf.f = nil
		lf.mu.Unlock()
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("capture: deleting %s's log: %w", id, err)
	}
	return syncDir(s.dir)
}

// Close closes the open logs.
func (s *DirStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, lf := range s.files {
		lf.mu.Lock()
		if lf.f != nil {
			errs = append(errs, lf.f.Close())
			lf.f = nil
		}
		lf.mu.Unlock()
		delete(s.files, id)
	}
	return errors.Join(errs...)
}
