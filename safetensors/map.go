package safetensors

import (
	"errors"
	"fmt"
	"os"
)

// Mapping is a Set's files mapped read-only into memory, for a caller that
// uses tensor bytes in place instead of reading them (a bf16 model served
// from its checkpoint, as llama.cpp and safetensors' safe_open do).
//
// The trade-off ReadAt avoids is the caller's to manage: a mapped file
// that another process truncates raises SIGBUS on the next access to a
// page past its new end (cuda/kernels' GuardMapping turns that into zero
// pages and a damage flag), and one rewritten in place shows its new
// bytes. Changed detects both: it compares each file's size, modification
// time and change time with what they were when it was mapped, so a
// caller that checks it after using the bytes (as the engine does after
// every forward pass) can discard results computed from a file that was
// written meanwhile. A checkpoint that is mapped is replaced by writing a
// new file and renaming it over the old one, which leaves the mapped file
// intact (and Changed quiet).
type Mapping struct {
	files  []mappedFile
	byName map[string]int // tensor name → files index
}

type mappedFile struct {
	f     *File
	data  []byte   // the whole file
	watch *os.File // a descriptor of the mapped file (not its path), for Changed
	stamp fileStamp
}

// ErrChanged is wrapped by Mapping.Changed's errors: a mapped file was
// written, truncated or otherwise changed since it was mapped.
var ErrChanged = errors.New("safetensors: mapped file changed")

// Map maps every file of the set read-only (shared: the page cache's
// pages, nothing copied). The mapping stays valid after the Set is
// closed, until the Mapping's own Close. A file that has shrunk since
// OpenDir is an error naming it.
func (s *Set) Map() (*Mapping, error) {
	m := &Mapping{byName: map[string]int{}}
	for i, f := range s.files {
		mf, err := f.mapFile()
		if err != nil {
			return nil, errors.Join(err, m.Close())
		}
		m.files = append(m.files, mf)
		for _, t := range f.Tensors {
			m.byName[t.Name] = i
		}
	}
	return m, nil
}

// Tensor returns the mapped bytes of tensor name and its description.
func (m *Mapping) Tensor(name string) (Info, []byte, error) {
	i, ok := m.byName[name]
	if !ok {
		return Info{}, nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	mf := m.files[i]
	if mf.data == nil {
		return Info{}, nil, fmt.Errorf("safetensors: %s: mapping closed", mf.f.path)
	}
	info, _ := mf.f.Lookup(name)
	start := mf.f.dataStart
	return info, mf.data[start+info.Begin : start+info.End : start+info.End], nil
}

// Regions returns each mapped file's whole mapping, in the order of the
// files, with its path.
func (m *Mapping) Regions() (paths []string, regions [][]byte) {
	for _, mf := range m.files {
		paths = append(paths, mf.f.path)
		regions = append(regions, mf.data)
	}
	return paths, regions
}

// Changed is an error wrapping ErrChanged that names the first mapped
// file whose size, modification time or change time is not what it was
// when Map mapped it, or that can no longer be examined; nil when none
// changed, or after Close. It examines the mapped files themselves, not
// their paths: a file renamed over a mapped one is a new file and leaves
// the mapping (and Changed) as they were.
//
// The change time is there because a writer can set a modification time
// back (cp -p onto an existing file and rsync --inplace --times write in
// place and do) but not a change time. It also moves when only a file's
// metadata does; a change of the link count (the file unlinked, or renamed
// over, or hard-linked) is told apart and not reported, but chmod, chown or
// renaming the mapped file itself are, as Changed cannot tell them from a
// rewrite. What it cannot see: a write within the same clock tick as the
// Map that stamped the file (the kernel's timestamps are as coarse as its
// timer tick) that leaves the size as it was, and a same-size rewrite with
// the modification time set back after the link count changed. It is safe
// for concurrent use with itself, not with Close.
func (m *Mapping) Changed() error {
	for _, mf := range m.files {
		if mf.watch == nil {
			continue
		}
		now, err := stampOf(mf.watch)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrChanged, mf.f.path, err)
		}
		if what := mf.stamp.diff(now); what != "" {
			return fmt.Errorf("%w: %s: %s since it was mapped", ErrChanged, mf.f.path, what)
		}
	}
	return nil
}

// Close unmaps every file. Bytes from Tensor must not be used afterwards.
// It is idempotent.
func (m *Mapping) Close() error {
	var errs []error
	for i := range m.files {
		mf := &m.files[i]
		if mf.data != nil {
			errs = append(errs, unmap(mf.data))
			mf.data = nil
		}
		if mf.watch != nil {
			errs = append(errs, mf.watch.Close())
			mf.watch = nil
		}
	}
	return errors.Join(errs...)
}

// mapFile maps the whole file, after checking it still holds every byte
// its header promised, and stamps it for Changed.
func (f *File) mapFile() (mappedFile, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd == nil {
		return mappedFile{}, fmt.Errorf("safetensors: %s is closed", f.path)
	}
	// Stamped before the mapping, and its size is the one checked, so a
	// write after the check is a change Changed reports.
	watch, err := dupFile(f.fd)
	if err != nil {
		return mappedFile{}, fmt.Errorf("safetensors: %s: %w", f.path, err)
	}
	stamp, err := stampOf(watch)
	if err != nil {
		return mappedFile{}, errors.Join(fmt.Errorf("safetensors: %s: %w", f.path, err), watch.Close())
	}
	need := f.dataStart
	for _, t := range f.Tensors {
		need = max(need, f.dataStart+t.End)
	}
	if stamp.size < need {
		return mappedFile{}, errors.Join(fmt.Errorf("%w: %s: file is %d bytes, its header needs %d (truncated after it was opened?)", ErrFormat, f.path, stamp.size, need), watch.Close())
	}
	data, err := mapRead(f.fd, int(need))
	if err != nil {
		return mappedFile{}, errors.Join(fmt.Errorf("safetensors: mapping %s: %w", f.path, err), watch.Close())
	}
	return mappedFile{f: f, data: data, watch: watch, stamp: stamp}, nil
}

// fileStamp is what writing a file moves: its size, its modification time
// and its change time (seconds and nanoseconds), with its link count.
type fileStamp struct {
	size         int64
	mtime, ctime [2]int64
	links        uint64
}

// diff says how b differs from a, or "" when it does not. A change time
// that moved along with the link count is not a change of the contents:
// unlinking a file (renaming another over it) moves it too.
func (a fileStamp) diff(b fileStamp) string {
	switch {
	case a.size != b.size:
		return fmt.Sprintf("its size went from %d to %d bytes", a.size, b.size)
	case a.mtime != b.mtime:
		return "it was modified"
	case a.ctime != b.ctime && a.links == b.links:
		return "its contents or metadata changed"
	}
	return ""
}
