package model

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
)

// mappedCheckpoint is the read-only mapping a model computes from (unless
// loaded with LoadOptions.Copy): its matrices are a bf16 checkpoint's BF16
// tensors, or a packed checkpoint's arrays, in place. Each file is
// registered with the kernels' SIGBUS guard, so a file truncated while
// mapped reads as zeros past its new end instead of killing the process,
// and Forward reports the damage, or a change to a file (damaged).
type mappedCheckpoint struct {
	m      *safetensors.Mapping
	paths  []string
	guards []*kernels.MapGuard
}

// mapCheckpoint maps every file of set and guards it. Without the guard
// (an OS where it is not available) it fails: mapping unguarded would
// trade a clear error for a crash.
func mapCheckpoint(set *safetensors.Set, dir string) (*mappedCheckpoint, error) {
	m, err := set.Map()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrWeights, dir, err)
	}
	c := &mappedCheckpoint{m: m}
	paths, regions := m.Regions()
	for i, r := range regions {
		g, err := kernels.GuardMapping(r)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("model: %s: mapping %s: %w", dir, paths[i], err), c.close())
		}
		c.paths = append(c.paths, paths[i])
		c.guards = append(c.guards, g)
	}
	return c, nil
}

// Mapped reports whether the model computes from a mapping of its
// checkpoint (the default for a bf16 or a packed checkpoint): its
// matrices are the mapped tensors, except those SetTensor has since
// written.
func (m *Model) Mapped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mapped != nil
}

// WeightBytes reports the bytes the weights of a CPU model take as it
// holds them (a tied head, which is the embedding table, counted once;
// mapped weights too), and those a decode step reads: all of them but the
// embedding table, from which it gathers a row, unless the head is that
// table. ok is false for a model on the GPU or with its weights dropped.
func (m *Model) WeightBytes() (stored, decodeStep int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dev != nil || m.w == nil {
		return 0, 0, false
	}
	seen := map[*cpuWeight]bool{}
	m.w.Each(func(h **cpuWeight) {
		if w := *h; w != nil && !seen[w] {
			seen[w] = true
			stored += w.size()
		}
	})
	decodeStep = stored
	if !m.cfg.TieWordEmbeddings {
		decodeStep -= m.w.Embed.size()
	}
	return stored, decodeStep, true
}

// releaseUnused unmaps the checkpoint once no matrix computes from it
// (SetTensor has written them all, or none could be used in place), so
// that a file changed afterwards no longer fails Forward and its pages
// are no longer held. The caller holds m.mu.
func (m *Model) releaseUnused() error {
	if m.mapped == nil || m.w == nil {
		return nil
	}
	inPlace := false
	m.w.Each(func(w **cpuWeight) {
		inPlace = inPlace || (*w != nil && ((*w).mapped || (*w).bf != nil && (*w).bf.Parted()))
	})
	if inPlace {
		return nil
	}
	return m.setMapped(nil)
}

// setMapped makes mc the checkpoint mapping the model computes from
// (nil: none) and unmaps the previous one. A model dropped without Close
// has its mapping unmapped by the garbage collector, as an os.File's
// descriptor is closed: no matrix is reachable but through the model, and
// Forward keeps the model alive while the kernels read. The caller holds
// m.mu (or owns m alone).
func (m *Model) setMapped(mc *mappedCheckpoint) error {
	m.unmapOnDrop.Stop()
	old := m.mapped
	m.mapped, m.unmapOnDrop = mc, runtime.Cleanup{}
	if mc != nil {
		m.unmapOnDrop = runtime.AddCleanup(m, func(c *mappedCheckpoint) { _ = c.close() }, mc)
	}
	return old.close()
}

// bf16 returns tensor name's rows in place when they can be used as bf16
// values: a BF16 tensor at an even address.
func (c *mappedCheckpoint) bf16(name string) ([]uint16, bool) {
	if info, _, err := c.m.Tensor(name); err != nil || info.DType != safetensors.BF16 {
		return nil, false
	}
	b, ok := c.aligned(name, 2)
	return fromBytes[uint16](b), ok
}

// aligned returns tensor name's mapped bytes when they can be used in
// place as elements of size bytes: a whole number of them at an address
// that is a multiple of size (safetensors does not promise any alignment;
// a tensor at another offset is copied instead). An empty tensor (a bf16z
// matrix without escapes) has nothing to misalign.
func (c *mappedCheckpoint) aligned(name string, size int) ([]byte, bool) {
	_, b, err := c.m.Tensor(name)
	if err != nil || len(b)%size != 0 || len(b) > 0 && uintptr(unsafe.Pointer(&b[0]))%uintptr(size) != 0 {
		return nil, false
	}
	return b, true
}

// replaceMapped ends damaged's errors with what to do.
const replaceMapped = "(replace a mapped checkpoint by renaming a new file over it, never in place, or load with a copy; reload the weights)"

// damaged is an ErrWeights error naming the first file the guard found
// shorter than its mapping (pages past the new end were read as zeros),
// or that was written or otherwise changed since it was mapped, or nil.
// Forward calls it after computing, so a pass that read a file while it
// changed is discarded.
func (c *mappedCheckpoint) damaged() error {
	for i, g := range c.guards {
		if g.Damaged() {
			return fmt.Errorf("%w: %s shrank while the model computed from its mapping; the pages past its end read as zeros, so the results were discarded %s", ErrWeights, c.paths[i], replaceMapped)
		}
	}
	if err := c.m.Changed(); err != nil {
		return fmt.Errorf("%w: %w; the model computes from its mapping, which may now hold other bytes, so the results were discarded %s", ErrWeights, err, replaceMapped)
	}
	return nil
}

// close unregisters the guards and unmaps the files. The model's mapped
// matrices must be gone first.
func (c *mappedCheckpoint) close() error {
	if c == nil {
		return nil
	}
	for _, g := range c.guards {
		g.Release()
	}
	c.guards = nil
	return c.m.Close()
}

// mappedGroup is one bf16 matrix and the tensors whose rows it holds, in
// row order.
type mappedGroup struct {
	at    Place // Row 0
	names []string
}

// mapGroups lists the bf16 matrices (and the embedding table) by the
// tensors they are made of: q|k|v and gate|up are several.
func (c *Config) mapGroups() []mappedGroup {
	type entry struct {
		name string
		row  int
	}
	by := map[Place][]entry{}
	var order []Place
	for _, name := range c.TensorNames() {
		p, ok := c.Place(name)
		if !ok || !(p.Slot.Matrix() || p.Slot == SlotEmbed) {
			continue
		}
		key := Place{Layer: p.Layer, Slot: p.Slot}
		if by[key] == nil {
			order = append(order, key)
		}
		by[key] = append(by[key], entry{name, p.Row})
	}
	out := make([]mappedGroup, 0, len(order))
	for _, key := range order {
		es := by[key]
		slices.SortFunc(es, func(a, b entry) int { return a.row - b.row })
		g := mappedGroup{at: key}
		for _, e := range es {
			g.names = append(g.names, e.name)
		}
		out = append(out, g)
	}
	return out
}

// newMappedWeights allocates the weights of a bf16 model that computes
// from mc: every matrix whose tensors are all usable in place is made of
// their mapped rows (kernels.NewBF16Parts: nothing allocated or copied),
// the rest (vectors, and a matrix with a tensor that is not BF16 or is
// misaligned) get memory of their own for the load to fill. It reports
// the tensors used in place, with their mapped rows.
func (m *Model) newMappedWeights(mc *mappedCheckpoint) (*Weights[*cpuWeight], map[string][]uint16) {
	w, _ := NewWeights(m.cfg, func(s Slot, rows, cols int) (*cpuWeight, error) {
		if k := m.kindOf(s); k != kindBF16 {
			return m.newWeight(k, rows, cols, true), nil
		}
		return &cpuWeight{}, nil // filled below
	})
	if m.cfg.TieWordEmbeddings {
		w.LMHead = w.Embed
	}
	inPlace := map[string][]uint16{}
	for _, g := range m.cfg.mapGroups() {
		dst := *w.At(g.at)
		parts := make([][]uint16, 0, len(g.names))
		rows, cols := 0, 0
		for _, name := range g.names {
			shape := m.shapes[name]
			rows, cols = rows+int(shape[0]), int(shape[1])
			if p, ok := mc.bf16(name); ok {
				parts = append(parts, p)
			}
		}
		if len(parts) < len(g.names) {
			dst.bf = kernels.NewBF16(rows, cols)
			continue
		}
		dst.bf = kernels.NewBF16Parts(cols, parts...)
		for i, name := range g.names {
			inPlace[name] = parts[i]
		}
	}
	return w, inPlace
}
