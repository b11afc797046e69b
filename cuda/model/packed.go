package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
)

// A packed checkpoint holds a CPU model's weights in the engine's own
// layout (Model.WritePacked): int8 matrices as their kernels.Q8 panels and
// fp16 scales, fp32 matrices as kernels.Packed panels (F32, or BF16 for a
// matrix held in Half: its values are bf16 values), vectors as float32,
// each weight one tensor of a model.safetensors (a valid safetensors file)
// named after its slot, with the layout in the header's metadata. Loading
// one converts nothing: the bytes are used in place from the page cache
// (or, with LoadOptions.Copy, read straight into place), as llama.cpp loads a
// GGUF that was quantized once ahead of time (its Q8_0 export). The
// layout names the panel height and the int8 block size, so a file
// written by an engine with other kernels is refused, not misread.

// PackedLayoutKey is the safetensors metadata key that marks a packed
// checkpoint; its value is the layout (see packedLayout).
const PackedLayoutKey = "agentrl.packed_layout"

// packedLayout is the layout string of a weight type for these kernels.
func packedLayout(wt WeightType) string {
	return fmt.Sprintf("%s panel=%d q8_block=%d v1", wt, kernels.Panel, kernels.Q8BlockSize)
}

// parsePackedLayout returns the weight type of a layout string these
// kernels can use.
func parsePackedLayout(s string) (WeightType, error) {
	types := []WeightType{WeightsInt8, WeightsF32, WeightsBF16, WeightsBF16Z}
	var known []string
	for _, wt := range types {
		if s == packedLayout(wt) {
			return wt, nil
		}
		known = append(known, strconv.Quote(packedLayout(wt)))
	}
	return "", fmt.Errorf("%w: packed layout %q is not this engine's (it reads %s): pack the original checkpoint again",
		ErrWeights, s, strings.Join(known, ", "))
}

// slotNames name the slots in a packed checkpoint.
var slotNames = [...]string{SlotEmbed: "embed", SlotNorm: "norm", SlotLMHead: "lm_head", SlotAttnNorm: "attn_norm",
	SlotMLPNorm: "mlp_norm", SlotQKV: "qkv", SlotQKVBias: "qkv_bias", SlotO: "o", SlotOBias: "o_bias",
	SlotQNorm: "q_norm", SlotKNorm: "k_norm", SlotGateUp: "gate_up", SlotDown: "down"}

// packedTensor is one tensor of a packed checkpoint: a weight's bytes, or
// one of an int8 or bf16z weight's arrays.
type packedTensor struct {
	name  string
	dtype safetensors.DType
	n     int // elements, or anyEls
}

// anyEls is the size of a packed tensor whose size the layout does not
// fix (a bf16z matrix's escapes; BF16Z.Check checks it against the rest).
const anyEls = -1

// packedTensors lists the tensors a packed checkpoint of weight kind k,
// at place at with shape rows×cols, holds.
func packedTensors(at Place, k weightKind, rows, cols int) []packedTensor {
	name := slotNames[at.Slot]
	if at.Layer >= 0 {
		name = "layers." + strconv.Itoa(at.Layer) + "." + name
	}
	switch k {
	case kindQ8:
		w := kernels.Q8{N: rows, K: cols}
		n := w.Panels() * w.Blocks() * kernels.Panel
		return []packedTensor{{name + ".q8", safetensors.U8, n * kernels.Q8BlockSize}, {name + ".q8_scales", safetensors.F16, n}}
	case kindMat, kindMatHalf:
		w := kernels.Packed{N: rows, K: cols}
		dt := safetensors.F32
		if k == kindMatHalf {
			dt = safetensors.BF16
		}
		return []packedTensor{{name + ".panels", dt, w.Panels() * kernels.Panel * cols}}
	case kindBF16:
		return []packedTensor{{name + ".bf16", safetensors.BF16, rows * cols}}
	case kindBF16Z:
		// The escapes' count depends on the values (anyEls), and they are
		// written padded with zeros to a multiple of 8 bytes, so that the
		// tensors after them stay aligned; the offsets are uint32s stored
		// as I32 (safetensors has no U32).
		z := kernels.BF16Z{N: rows, K: cols}
		return []packedTensor{{name + ".bf16z", safetensors.U8, rows * z.KP() * 3 / 2}, {name + ".bf16z_esc", safetensors.U8, anyEls},
			{name + ".bf16z_escoff", safetensors.I32, rows + 1}, {name + ".bf16z_table", safetensors.U8, len(z.Table)}}
	}
	return []packedTensor{{name + ".f32", safetensors.F32, rows * cols}}
}

// bytes returns the memory of w's arrays in packedTensors' order.
func (w *cpuWeight) bytes() [][]byte {
	switch {
	case w.q8 != nil:
		return [][]byte{w.q8.Q, asBytes(w.q8.D)}
	case w.bz != nil:
		return [][]byte{w.bz.Data, w.bz.Esc, asBytes(w.bz.EscOff), w.bz.Table[:]}
	case w.mat != nil && w.mat.Half != nil:
		return [][]byte{asBytes(w.mat.Half)}
	case w.mat != nil:
		return [][]byte{asBytes(w.mat.Data)}
	case w.bf != nil:
		return [][]byte{asBytes(w.bf.Data)}
	}
	return [][]byte{asBytes(w.vec)}
}

// size is the bytes w's values take (a parted bf16 matrix's rows too).
func (w *cpuWeight) size() int64 {
	if w.bf != nil {
		return 2 * int64(w.bf.N) * int64(w.bf.K)
	}
	var n int64
	for _, b := range w.bytes() {
		n += int64(len(b))
	}
	return n
}

// WritePacked writes the model's weights in the engine's own layout to
// path, a safetensors file, so that LoadWith of a directory holding it
// (and the model's config.json) loads without converting anything. It
// writes a temporary file next to path and renames it into place, so a
// reader never sees a partial file and a model serving the old one from
// its mapping keeps it intact. Every weight must be set.
func (m *Model) WritePacked(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dev != nil {
		return errors.New("model: WritePacked: the model is on the GPU (pack a CPU model)")
	}
	if miss := m.missing(); len(miss) > 0 {
		return fmt.Errorf("%w: WritePacked: %d weights not set (first: %s)", ErrWeights, len(miss), miss[0])
	}
	// Each tensor's bytes are taken when the writer reaches it: a bf16
	// matrix used in place from a mapping (parted) is gathered then, one
	// at a time, and the model is left as it is.
	type source struct {
		w *cpuWeight
		i int
	}
	var ts []safetensors.Tensor
	from := map[string]source{}
	for _, s := range m.cfg.slots() {
		w := *m.w.At(s.at)
		for i, t := range packedTensors(s.at, w.kind(m.kindOf(s.at.Slot)), s.rows, s.cols) {
			if t.n == anyEls { // escapes, padded (see packedTensors)
				t.n = escPad(len(w.bytes()[i]))
			}
			ts = append(ts, safetensors.Tensor{Name: t.name, DType: t.dtype, Shape: []int64{int64(t.n)}})
			from[t.name] = source{w, i}
		}
	}
	data := func(t safetensors.Tensor) ([]byte, error) {
		src := from[t.Name]
		if bf := src.w.bf; bf != nil && bf.Parted() {
			rows := make([]uint16, 0, bf.N*bf.K)
			for r := range bf.N {
				rows = append(rows, bf.Row(r)...)
			}
			return asBytes(rows), nil
		}
		b := src.w.bytes()[src.i]
		if n := int(t.Shape[0]); n > len(b) { // escapes, padded
			b = append(b[:len(b):len(b)], make([]byte, n-len(b))...)
		}
		return b, nil
	}
	// WriteFileStream writes beside path and renames.
	meta := map[string]string{PackedLayoutKey: packedLayout(m.wt), "format": "agentrl"}
	if err := safetensors.WriteFileStream(path, ts, meta, data); err != nil {
		return fmt.Errorf("model: WritePacked: %w", err)
	}
	return nil
}

// isPacked reports the layout of a packed checkpoint.
func isPacked(set *safetensors.Set) (string, bool) {
	return set.Metadata(PackedLayoutKey)
}

// checkPacked checks that set holds every tensor of the model's layout
// with its exact type and size (a wrong one is an ErrWeights naming it),
// before anything is read or replaced.
func (m *Model) checkPacked(set *safetensors.Set, dir, layout string) error {
	wt, err := parsePackedLayout(layout)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if wt != m.wt {
		return fmt.Errorf("%w: %s holds %s weights packed for this engine; the model stores %s (load the original checkpoint to convert)", ErrWeights, dir, wt, m.wt)
	}
	half := packedHalfPlaces(m, set)
	for _, s := range m.cfg.slots() {
		for _, t := range packedTensors(s.at, m.kindAt(s.at, half), s.rows, s.cols) {
			info, ok := set.Lookup(t.name)
			switch {
			case !ok:
				return fmt.Errorf("%w: %s: packed tensor %q missing", ErrWeights, dir, t.name)
			case info.DType != t.dtype || (t.n != anyEls && info.NumElements() != int64(t.n)):
				need := fmt.Sprintf("%s×%d", t.dtype, t.n)
				if m.kindOf(s.at.Slot) == kindMat {
					need = fmt.Sprintf("F32×%d or BF16×%d (panels of bf16 values)", t.n, t.n)
				}
				return fmt.Errorf("%w: %s: packed tensor %q is %s×%d, the layout needs %s (written for another config?)",
					ErrWeights, dir, t.name, info.DType, info.NumElements(), need)
			}
		}
	}
	return nil
}

// packedHalfPlaces is the places of an fp32 model's matrices that a
// packed checkpoint holds as BF16 panels (kindMatHalf).
func packedHalfPlaces(m *Model, set *safetensors.Set) map[Place]bool {
	half := map[Place]bool{}
	for _, s := range m.cfg.slots() {
		if m.kindOf(s.at.Slot) != kindMat {
			continue
		}
		t := packedTensors(s.at, kindMatHalf, s.rows, s.cols)[0]
		if info, ok := set.Lookup(t.name); ok && info.DType == t.dtype {
			half[s.at] = true
		}
	}
	return half
}

// packedJobs cuts reading every packed tensor of w into jobs: straight
// into the weight's memory, or, for a weight used in place (inPlace),
// mapping its pages.
func (m *Model) packedJobs(set *safetensors.Set, w *Weights[*cpuWeight], inPlace map[*cpuWeight]bool) []loadJob {
	var jobs []loadJob
	for _, s := range m.cfg.slots() {
		h := *w.At(s.at)
		for i, t := range packedTensors(s.at, h.kind(m.kindOf(s.at.Slot)), s.rows, s.cols) {
			b := h.bytes()[i]
			for off := 0; off < len(b); off += loadPiece {
				piece := b[off:min(off+loadPiece, len(b))]
				j := loadJob{set: set, name: t.name, off: int64(off)}
				if inPlace[h] {
					j.populate = piece
				} else {
					j.into = piece
				}
				jobs = append(jobs, j)
			}
		}
	}
	return jobs
}

// newPackedMappedWeights makes the weights of a model computing from a
// mapped packed checkpoint: every matrix is its mapped tensors (nothing
// allocated or copied) unless one is misaligned for its element type;
// vectors, and such a matrix, get memory of their own for the load to
// fill. It reports the weights in place.
func (m *Model) newPackedMappedWeights(set *safetensors.Set, mc *mappedCheckpoint) (*Weights[*cpuWeight], map[*cpuWeight]bool) {
	inPlace := map[*cpuWeight]bool{}
	w, _ := NewWeights(m.cfg, func(s Slot, rows, cols int) (*cpuWeight, error) {
		return nil, nil // filled below, where the layer is known
	})
	half := packedHalfPlaces(m, set)
	for _, s := range m.cfg.slots() {
		k := m.kindAt(s.at, half)
		var arrays [][]byte
		for _, t := range packedTensors(s.at, k, s.rows, s.cols) {
			if b, ok := mc.aligned(t.name, t.dtype.Size()); ok {
				arrays = append(arrays, b)
			}
		}
		var h *cpuWeight
		switch {
		case k == kindQ8 && len(arrays) == 2:
			h = &cpuWeight{q8: &kernels.Q8{N: s.rows, K: s.cols, Q: arrays[0], D: fromBytes[uint16](arrays[1])}, mapped: true}
		case k == kindMat && len(arrays) == 1:
			h = &cpuWeight{mat: &kernels.Packed{N: s.rows, K: s.cols, Data: fromBytes[float32](arrays[0])}, mapped: true}
		case k == kindMatHalf && len(arrays) == 1:
			h = &cpuWeight{mat: &kernels.Packed{N: s.rows, K: s.cols, Half: fromBytes[uint16](arrays[0])}, mapped: true}
		case k == kindBF16 && len(arrays) == 1:
			h = &cpuWeight{bf: kernels.NewBF16Parts(s.cols, fromBytes[uint16](arrays[0]))}
		case k == kindBF16Z && len(arrays) == 4:
			// The table is 16 bytes, copied; the rest is used in place.
			z := &kernels.BF16Z{N: s.rows, K: s.cols, Data: arrays[0], Esc: arrays[1], EscOff: fromBytes[uint32](arrays[2])}
			copy(z.Table[:], arrays[3])
			h = &cpuWeight{bz: z, mapped: true}
		default:
			h = m.newWeight(k, s.rows, s.cols, true)
			if h.bz != nil {
				h.bz.Esc = make([]uint8, escBytes(set, s.at, s.rows, s.cols))
			}
		}
		if h.mapped || h.bf != nil && h.bf.Parted() {
			inPlace[h] = true
		}
		*w.At(s.at) = h
	}
	if m.cfg.TieWordEmbeddings {
		w.LMHead = w.Embed
	}
	return w, inPlace
}

// loadPacked is loadFrom for a packed checkpoint (the caller holds m.mu):
// it reads every tensor straight into the model's memory, or, for a model
// that maps its checkpoint, makes weights that are the mapped tensors and
// swaps them in. On an error of a mapped load the previous weights stay.
func (m *Model) loadPacked(set *safetensors.Set, dir, layout string) error {
	if err := m.checkPacked(set, dir, layout); err != nil {
		return err
	}
	if m.mapWeights {
		mc, err := mapCheckpoint(set, dir)
		if err != nil {
			return err
		}
		w, inPlace := m.newPackedMappedWeights(set, mc)
		if err := checkCompressed(w, dir); err != nil {
			return errors.Join(err, mc.close())
		}
		return m.installMapped(w, mc, m.packedJobs(set, w, inPlace), dir)
	}
	m.allocOrFit(packedHalfPlaces(m, set))
	for _, s := range m.cfg.slots() {
		if h := *m.w.At(s.at); h.bz != nil { // sized as the file's escapes, which the jobs read
			h.bz.Esc = make([]uint8, escBytes(set, s.at, s.rows, s.cols))
		}
	}
	if err := runLoadJobs(m.cpu.Threads(), m.packedJobs(set, m.w, nil)); err != nil {
		m.loaded = map[string]bool{}
		return fmt.Errorf("%w: %s: %w", ErrWeights, dir, err)
	}
	if err := checkCompressed(m.w, dir); err != nil {
		m.loaded = map[string]bool{}
		return err
	}
	for _, name := range m.cfg.TensorNames() {
		m.loaded[name] = true
	}
	return nil
}

// escBytes is the size of the escapes tensor of the bf16z matrix at place
// at in a packed checkpoint (checkPacked has found it).
func escBytes(set *safetensors.Set, at Place, rows, cols int) int {
	ts := packedTensors(at, kindBF16Z, rows, cols)
	info, _ := set.Lookup(ts[1].name)
	return int(info.NumElements())
}

// escPad is n rounded up to a multiple of 8.
func escPad(n int) int { return (n + 7) &^ 7 }

// checkCompressed checks every bf16z matrix of w read from a packed
// checkpoint (BF16Z.Check: the sizes and escape offsets the kernels rely
// on to stay inside the arrays), first dropping the escapes' padding.
func checkCompressed(w *Weights[*cpuWeight], dir string) error {
	var err error
	w.Each(func(h **cpuWeight) {
		if err == nil && *h != nil && (*h).bz != nil {
			z := (*h).bz
			if n := len(z.EscOff); n > 0 && int64(z.EscOff[n-1]) <= int64(len(z.Esc)) && len(z.Esc) == escPad(int(z.EscOff[n-1])) {
				z.Esc = z.Esc[:z.EscOff[n-1]]
			}
			if e := z.Check(); e != nil {
				err = fmt.Errorf("%w: %s: %w", ErrWeights, dir, e)
			}
		}
	})
	return err
}

// asBytes is s's memory as bytes.
func asBytes[T uint16 | uint32 | float32](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), int(unsafe.Sizeof(zero))*len(s))
}

// fromBytes views b (aligned for T, a whole number of them) as its
// elements.
func fromBytes[T uint16 | uint32 | float32](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}
