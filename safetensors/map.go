package safetensors

import (
	"errors"
	"fmt"
)

// Mapping is a Set's files mapped read-only into memory, for a caller that
// uses tensor bytes in place instead of reading them (a bf16 model served
// from its checkpoint, as llama.cpp and safetensors' safe_open do).
//
// The trade-off ReadAt avoids is the caller's to manage: a mapped file
// that another process truncates raises SIGBUS on the next access to a
// page past its new end (cuda/kernels' GuardMapping turns that into zero
// pages and a damage flag), and one rewritten in place shows its new
// bytes. A checkpoint that is mapped must be replaced by writing a new
// file and renaming it over the old one, which leaves the mapped file
// intact.
type Mapping struct {
	files  []mappedFile
	byName map[string]int // tensor name → files index
}

type mappedFile struct {
	f    *File
	data []byte // the whole file
}

// Map maps every file of the set read-only (shared: the page cache's
// pages, nothing copied). The mapping stays valid after the Set is
// closed, until the Mapping's own Close. A file that has shrunk since
// OpenDir is an error naming it.
func (s *Set) Map() (*Mapping, error) {
	m := &Mapping{byName: map[string]int{}}
	for i, f := range s.files {
		data, err := f.mapFile()
		if err != nil {
			return nil, errors.Join(err, m.Close())
		}
		m.files = append(m.files, mappedFile{f: f, data: data})
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

// Close unmaps every file. Bytes from Tensor must not be used afterwards.
// It is idempotent.
func (m *Mapping) Close() error {
	var errs []error
	for i := range m.files {
		if m.files[i].data != nil {
			errs = append(errs, unmap(m.files[i].data))
			m.files[i].data = nil
		}
	}
	return errors.Join(errs...)
}

// mapFile maps the whole file, after checking it still holds every byte
// its header promised.
func (f *File) mapFile() ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd == nil {
		return nil, fmt.Errorf("safetensors: %s is closed", f.path)
	}
	st, err := f.fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	need := f.dataStart
	for _, t := range f.Tensors {
		need = max(need, f.dataStart+t.End)
	}
	if st.Size() < need {
		return nil, fmt.Errorf("%w: %s: file is %d bytes, its header needs %d (truncated after it was opened?)", ErrFormat, f.path, st.Size(), need)
	}
	data, err := mapRead(f.fd, int(need))
	if err != nil {
		return nil, fmt.Errorf("safetensors: mapping %s: %w", f.path, err)
	}
	return data, nil
}
