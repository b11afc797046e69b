package model

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
)

// ErrWeights is wrapped by errors about missing or mis-shaped weights.
var ErrWeights = errors.New("model: bad weights")

// TensorShapes lists every weight the model needs, by its Hugging Face
// name, with its shape.
func (c *Config) TensorShapes() map[string][]int64 {
	h, hd, inter := int64(c.HiddenSize), int64(c.HeadDim), int64(c.IntermediateSize)
	qd, kvd := int64(c.NumAttentionHeads)*hd, int64(c.NumKeyValueHeads)*hd
	m := map[string][]int64{
		"model.embed_tokens.weight": {int64(c.VocabSize), h},
		"model.norm.weight":         {h},
	}
	if !c.TieWordEmbeddings {
		m["lm_head.weight"] = []int64{int64(c.VocabSize), h}
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		p := "model.layers." + strconv.Itoa(i) + "."
		m[p+"input_layernorm.weight"] = []int64{h}
		m[p+"post_attention_layernorm.weight"] = []int64{h}
		m[p+"self_attn.q_proj.weight"] = []int64{qd, h}
		m[p+"self_attn.k_proj.weight"] = []int64{kvd, h}
		m[p+"self_attn.v_proj.weight"] = []int64{kvd, h}
		m[p+"self_attn.o_proj.weight"] = []int64{h, qd}
		if c.QKVBias() {
			m[p+"self_attn.q_proj.bias"] = []int64{qd}
			m[p+"self_attn.k_proj.bias"] = []int64{kvd}
			m[p+"self_attn.v_proj.bias"] = []int64{kvd}
		}
		if c.OBias() {
			m[p+"self_attn.o_proj.bias"] = []int64{h}
		}
		if c.QKNorm() {
			m[p+"self_attn.q_norm.weight"] = []int64{hd}
			m[p+"self_attn.k_norm.weight"] = []int64{hd}
		}
		m[p+"mlp.gate_proj.weight"] = []int64{inter, h}
		m[p+"mlp.up_proj.weight"] = []int64{inter, h}
		m[p+"mlp.down_proj.weight"] = []int64{h, inter}
	}
	return m
}

// TensorNames is TensorShapes' keys, sorted.
func (c *Config) TensorNames() []string {
	m := c.TensorShapes()
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// SetTensor replaces one weight, given by its Hugging Face name, with data
// in row-major order. The shape must match the config exactly. It must not
// run concurrently with Forward (the engine serializes them).
func (m *Model) SetTensor(name string, shape []int64, data []float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.CheckTensor(name, shape, len(data)); err != nil {
		return err
	}
	if m.dev != nil {
		if err := m.dev.setTensor(name, data); err != nil {
			return err
		}
		m.loaded[name] = true
		return nil
	}
	m.ensureAlloc()
	want := m.shapes[name]
	p, _ := m.cfg.Place(name) // CheckTensor accepted the name
	if w := *m.w.At(p); w.mapped {
		// A matrix used in place from a mapped packed checkpoint is
		// copied first (the mapping is read-only), and the mapping goes
		// with the last such matrix, as for bf16 below.
		switch {
		case w.q8 != nil:
			w.q8.Q, w.q8.D = slices.Clone(w.q8.Q), slices.Clone(w.q8.D)
		case w.bz != nil:
			// Written below as a fresh matrix of its own.
		default:
			w.mat.Data, w.mat.Half = slices.Clone(w.mat.Data), slices.Clone(w.mat.Half)
		}
		w.mapped = false
		defer func() { _ = m.releaseUnused() }()
	}
	switch w := *m.w.At(p); {
	case w.mat != nil:
		m.cpu.PackRows(w.mat, p.Row, data, int(want[0]))
	case w.bf != nil:
		if w.bf.Parted() {
			// A matrix used in place from the mapped checkpoint is
			// copied first (the mapping is read-only), and the mapping
			// goes with the last such matrix.
			w.bf.Own()
			defer func() { _ = m.releaseUnused() }() // munmap of a valid mapping does not fail
		}
		kernels.ToBF16(w.bf.Data[p.Row*w.bf.K:p.Row*w.bf.K+len(data)], data)
	case w.q8 != nil:
		w.q8.QuantizeRows(p.Row, data, int(want[0]))
	case w.bz != nil:
		// The table may change with the new values: decode, write the
		// rows, compress again (a weight update of a bf16z model costs a
		// compression per tensor).
		bf := kernels.NewBF16(w.bz.N, w.bz.K)
		m.cpu.DecodeBF16Z(bf.Data, w.bz, 0, w.bz.N)
		kernels.ToBF16(bf.Data[p.Row*bf.K:p.Row*bf.K+len(data)], data)
		w.bz = m.cpu.CompressBF16(bf)
	default:
		// Row is the offset inside a fused bias vector (0 otherwise).
		copy(w.vec[p.Row:], data)
	}
	m.loaded[name] = true
	return nil
}

// Missing lists the weights not yet set, sorted.
func (m *Model) Missing() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.missing()
}

func (m *Model) missing() []string {
	var out []string
	for n := range m.shapes {
		if !m.loaded[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// WeightType is how a CPU model stores its matrices.
type WeightType string

// Weight types. Vectors (norms, biases) are fp32 in every type, and
// activations and the KV cache are fp32.
const (
	// WeightsAuto loads a checkpoint whose matrices are all BF16 as
	// WeightsBF16 and anything else as WeightsF32.
	WeightsAuto WeightType = ""
	// WeightsF32 packs every matrix as float32 for the GEMM kernel: the
	// exact path the goldens and batch-invariance tests pin down. A matrix
	// loaded from BF16 tensors only is held in half the bytes, as its
	// values' upper halves (kernels.Packed.Half), with the same products.
	WeightsF32 WeightType = "fp32"
	// WeightsBF16 keeps matrices and the embedding table as bfloat16 in
	// the checkpoint's layout (a tied head shares the embedding's rows)
	// and multiplies with vdpbf16ps where the CPU has it: half the bytes
	// per token of fp32. Other checkpoint types are rounded to bf16 at
	// load.
	WeightsBF16 WeightType = "bf16"
	// WeightsInt8 quantizes matrices and the embedding table at load, from
	// any checkpoint type, to int8 with one fp16 scale per block of 32
	// weights: llama.cpp's Q8_0 values (kernels.Q8), 34/32 bytes a weight.
	// Products quantize the activations per block of 32 too (as llama.cpp's
	// Q8_0 dot product does) and sum them exactly in int32, with AVX-512
	// VNNI (vpdpbusd) where the CPU has it. A tied head is the embedding.
	WeightsInt8 WeightType = "int8"
	// WeightsBF16Z keeps matrices and the embedding table as bf16 values
	// compressed losslessly (kernels.BF16Z): every value bit for bit in
	// 12 bits and rare escapes, so every product gives WeightsBF16's bits
	// while a batch-1 decode step reads three quarters of its bytes.
	// Compressing costs time at load (about 1.2 s at 1.7B): pack once
	// (Model.WritePacked, agentrl model pack --weights bf16z) and load the
	// packed checkpoint, which maps.
	WeightsBF16Z WeightType = "bf16z"
)

// ParseWeightType parses "bf16", "bf16z", "fp32" ("f32"), "int8"
// ("q8_0") or "" / "auto".
func ParseWeightType(s string) (WeightType, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return WeightsAuto, nil
	case "fp32", "f32", "float32":
		return WeightsF32, nil
	case "bf16", "bfloat16":
		return WeightsBF16, nil
	case "int8", "q8_0", "q8":
		return WeightsInt8, nil
	case "bf16z":
		return WeightsBF16Z, nil
	}
	return "", fmt.Errorf("model: unknown weight type %q (want bf16, bf16z, fp32, int8 or auto)", s)
}

// NewWith is New with the matrices stored as wt (WeightsAuto means fp32:
// there is no checkpoint to follow).
func NewWith(cfg *Config, cpu *kernels.CPU, wt WeightType) (*Model, error) {
	return newWith(cfg, cpu, wt, allocNow)
}

// How newWith allocates the weights.
const (
	allocNow     = iota // zero weights (New)
	allocForLoad        // not yet: the load, which writes every weight next, does (allocFor)
	allocMapped         // not at all: a mapped load makes them (loadMapped)
)

// newWith is NewWith, its weights allocated as alloc says.
func newWith(cfg *Config, cpu *kernels.CPU, wt WeightType, alloc int) (*Model, error) {
	switch wt {
	case WeightsAuto:
		wt = WeightsF32
	case WeightsF32, WeightsBF16, WeightsInt8, WeightsBF16Z:
	default:
		return nil, fmt.Errorf("model: unknown weight type %q (want bf16, bf16z, int8 or fp32)", wt)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cpu == nil {
		cpu = kernels.NewCPU(0)
	}
	m := &Model{cfg: cfg, cpu: cpu, shapes: cfg.TensorShapes(), loaded: map[string]bool{}, invFreq: cfg.InvFreq(), wt: wt}
	switch alloc {
	case allocMapped:
		m.mapWeights = true
	case allocNow:
		m.allocFor(false, nil)
	}
	return m, nil
}

// Weights reports how the model stores its matrices (fp32 on a GPU).
func (m *Model) Weights() WeightType {
	if m.dev != nil {
		return WeightsF32
	}
	return m.wt
}

// Load reads a Hugging Face model directory: config.json and
// model.safetensors (or a sharded index), with WeightsAuto.
func Load(dir string, cpu *kernels.CPU) (*Model, error) {
	return LoadWith(dir, cpu, LoadOptions{})
}

// LoadOptions say where a loaded model runs and how it stores weights.
type LoadOptions struct {
	Device  Device     // CPU (default) or CUDA
	Weights WeightType // CPU only; CUDA models are fp32

	// Copy loads every matrix into the model's own memory. Without it
	// (the default, as llama.cpp and safetensors' safe_open do) a model
	// on the CPU computes straight from a read-only mapping of the
	// checkpoint's files wherever the layout allows: bf16 weights from a
	// Hugging Face checkpoint's BF16 tensors (Weights bf16, or auto on a
	// bf16 checkpoint) and every weight type of a packed checkpoint
	// (Model.WritePacked, agentrl model pack: int8 or fp32 converted once
	// ahead of time, as llama.cpp's GGUF exports are). Loading then
	// allocates and copies nothing for those matrices and only maps their
	// pages (MADV_POPULATE_READ, like llama.cpp's MAP_POPULATE), and
	// processes serving the same files share the page cache's copy. Other
	// loads convert as always, a tensor misaligned for its element type
	// is copied, and where the kernels' SIGBUS guard is not available
	// (not Linux) every load copies.
	//
	// A mapped model fails closed when its files change: a file
	// truncated meanwhile does not crash the process (the guard maps
	// zeros past its new end), and after computing, every Forward checks
	// that no file's size, modification time or change time has moved
	// since it was mapped (safetensors.Mapping.Changed, which also names
	// chmod or renaming the file itself). Either makes that Forward and
	// every later one an ErrWeights error naming the file, until new
	// weights are loaded. So replace a mapped checkpoint by writing new
	// files and renaming them over the old (the mapping keeps the old
	// files and goes on), never in place; or load with Copy, which never
	// reads the files again. SetTensor copies the matrix it writes (the
	// mapping is read-only), and once no matrix is left in place the
	// mapping is released (a weight update from the trainer ends the
	// files' constraint); LoadWeights maps the new files and unmaps the
	// old. Close unmaps at once; a model dropped without Close is
	// unmapped by the garbage collector.
	Copy bool
}

// LoadWith reads a Hugging Face model directory. Matrices the layout
// allows are used in place from a read-only mapping of the files unless
// LoadOptions.Copy says otherwise: a bf16 model's BF16 tensors, and every
// matrix of a packed checkpoint (Model.WritePacked), which loads as the
// weight type it holds. The rest are read (pread) straight into the
// model's own memory in parallel, a tensor's rows at a time: a BF16 tensor
// of a bf16 model is copied as is; other types are read into a small
// per-thread buffer and converted from it directly into the model's layout
// (packed fp32 panels, int8 blocks), so loading never holds a tensor twice
// nor writes a widened copy of it.
func LoadWith(dir string, cpu *kernels.CPU, o LoadOptions) (*Model, error) {
	cfg, set, err := openCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	layout, packed := isPacked(set)
	if !packed {
		if err := checkCheckpoint(cfg, set, dir); err != nil {
			return nil, err
		}
	}
	var m *Model
	switch o.Device {
	case "", CPU:
		wt := o.Weights
		switch {
		case packed:
			if wt, err = parsePackedLayout(layout); err != nil {
				return nil, fmt.Errorf("%s: %w", dir, err)
			}
			if o.Weights != WeightsAuto && o.Weights != wt {
				return nil, fmt.Errorf("%w: %s holds %s weights packed for this engine, not %s (load the original checkpoint to convert)", ErrWeights, dir, wt, o.Weights)
			}
		case wt == WeightsAuto:
			wt = checkpointWeightType(cfg, set)
		}
		// Allocated by the load below, which writes every weight (or
		// fails, and m is dropped): its kinds follow the checkpoint's
		// types (an fp32 matrix of BF16 tensors in half the bytes), and a
		// bf16z model's are compressed from a bf16 one (loadCompressed).
		alloc := allocForLoad
		if !o.Copy && (wt == WeightsBF16 || wt == WeightsBF16Z || packed) && kernels.MapGuardSupported() {
			alloc = allocMapped
		}
		m, err = newWith(cfg, cpu, wt, alloc)
	case CUDA:
		if packed {
			return nil, fmt.Errorf("model: %s is packed for the CPU engine (agentrl model pack); load the original checkpoint on %s", dir, o.Device)
		}
		fallthrough
	default:
		if o.Weights == WeightsBF16 || o.Weights == WeightsInt8 || o.Weights == WeightsBF16Z {
			return nil, fmt.Errorf("model: %s weights are CPU only (device %s stores fp32)", o.Weights, o.Device)
		}
		m, err = NewOn(cfg, o.Device, cpu)
	}
	if err != nil {
		return nil, err
	}
	if err := m.loadFrom(set, dir); err != nil {
		return nil, errors.Join(err, m.Close())
	}
	return m, nil
}

// checkpointWeightType is WeightsBF16 when every matrix of the checkpoint
// is BF16.
func checkpointWeightType(cfg *Config, set *safetensors.Set) WeightType {
	for name, shape := range cfg.TensorShapes() {
		if info, ok := set.Lookup(name); ok && len(shape) == 2 && info.DType != safetensors.BF16 {
			return WeightsF32
		}
	}
	return WeightsBF16
}

// OpenCheckpoint reads the config of a Hugging Face model directory and
// opens its checkpoint, checking that every tensor the config needs is
// there with the shape it expects (a wrong one is an ErrWeights naming
// it). It checks before anything is allocated, so a config with absurd
// sizes is an error, not an out-of-memory crash. The caller closes the set.
// A packed checkpoint (Model.WritePacked) is an error: it holds the CPU
// engine's layout, not the Hugging Face tensors.
func OpenCheckpoint(dir string) (*Config, *safetensors.Set, error) {
	cfg, set, err := openCheckpoint(dir)
	if err != nil {
		return nil, nil, err
	}
	if layout, ok := isPacked(set); ok {
		set.Close()
		return nil, nil, fmt.Errorf("%w: %s is packed for the CPU engine (%s), not a Hugging Face checkpoint: use the original", ErrWeights, dir, layout)
	}
	if err := checkCheckpoint(cfg, set, dir); err != nil {
		set.Close()
		return nil, nil, err
	}
	return cfg, set, nil
}

// openCheckpoint reads the config of a model directory and opens its
// checkpoint, unchecked.
func openCheckpoint(dir string) (*Config, *safetensors.Set, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, nil, err
	}
	return cfg, set, nil
}

// checkCheckpoint checks that every tensor cfg needs is in set with the
// shape it expects.
func checkCheckpoint(cfg *Config, set *safetensors.Set, dir string) error {
	shapes := cfg.TensorShapes()
	for _, name := range cfg.TensorNames() {
		info, ok := set.Lookup(name)
		if !ok {
			return fmt.Errorf("%w: %s: tensor %q missing from the checkpoint", ErrWeights, dir, name)
		}
		if !slices.Equal(info.Shape, shapes[name]) {
			return fmt.Errorf("%w: %s: tensor %q has shape %v, config expects %v", ErrWeights, dir, name, info.Shape, shapes[name])
		}
	}
	return nil
}

// LoadWeights (re)reads every weight from the checkpoint in dir.
func (m *Model) LoadWeights(dir string) error {
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return err
	}
	defer set.Close()
	return m.loadFrom(set, dir)
}

func (m *Model) loadFrom(set *safetensors.Set, dir string) error {
	if layout, ok := isPacked(set); ok {
		if m.dev != nil {
			return fmt.Errorf("model: %s is packed for the CPU engine (agentrl model pack); load the original checkpoint on the GPU", dir)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.loadPacked(set, dir, layout)
	}
	if m.dev != nil {
		for _, name := range m.cfg.TensorNames() {
			data, info, err := set.Float32(name)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrWeights, dir, err)
			}
			if err := m.SetTensor(name, info.Shape, data); err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
		}
		return nil
	}
	// Every tensor is checked first, so a bad one changes nothing.
	for _, name := range m.cfg.TensorNames() {
		info, ok := set.Lookup(name)
		if !ok {
			return fmt.Errorf("%w: %s: tensor %q missing from the checkpoint", ErrWeights, dir, name)
		}
		if err := m.CheckTensor(name, info.Shape, int(info.NumElements())); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		switch info.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			return fmt.Errorf("%w: %s: tensor %q is %s (want F32, F16 or BF16)", ErrWeights, dir, name, info.DType)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.wt == WeightsBF16Z {
		return m.loadCompressed(set, dir)
	}
	if m.mapWeights {
		return m.loadMapped(set, dir)
	}
	m.allocOrFit(halfPlaces(m.cfg, set))
	jobs := m.loadJobs(set, m.w, nil)
	if err := runLoadJobs(m.cpu.Threads(), jobs); err != nil {
		// Some weights hold new values, some old: none counts as loaded.
		m.loaded = map[string]bool{}
		return fmt.Errorf("%w: %s: %w", ErrWeights, dir, err)
	}
	for _, name := range m.cfg.TensorNames() {
		m.loaded[name] = true
	}
	return nil
}

// halfPlaces is the places of the matrices whose tensors in set are all
// BF16: an fp32 model holds them in half the bytes (kindMatHalf).
func halfPlaces(cfg *Config, set *safetensors.Set) map[Place]bool {
	half, other := map[Place]bool{}, map[Place]bool{}
	for _, name := range cfg.TensorNames() {
		p, ok := cfg.Place(name)
		info, found := set.Lookup(name)
		if !ok || !found {
			continue
		}
		p.Row = 0
		if info.DType == safetensors.BF16 {
			half[p] = true
		} else {
			other[p] = true
		}
	}
	for p := range other {
		delete(half, p)
	}
	return half
}

// allocOrFit makes the weights ready for a load that writes every one of
// them, whose fp32 matrices at the places half holds bf16 values only:
// it allocates them if there are none (a new or sleeping model), and
// otherwise gives each fp32 matrix stored the other way fresh memory of
// the right kind (a reload: a matrix moved to float32 panels by an update
// returns to half the bytes, or the reverse).
func (m *Model) allocOrFit(half map[Place]bool) {
	if m.w == nil {
		m.allocFor(true, half)
		return
	}
	for _, s := range m.cfg.slots() {
		w := *m.w.At(s.at)
		want := m.kindAt(s.at, half)
		if (want == kindMat || want == kindMatHalf) && w.kind(m.kindOf(s.at.Slot)) != want {
			// The same cpuWeight, so a tied head keeps sharing it.
			w.mat, w.mapped = m.newWeight(want, s.rows, s.cols, true).mat, false
		}
	}
}

// loadMapped is loadFrom for a model computing from its mapped
// checkpoint: it maps set's files, makes weights whose bf16 matrices are
// the mapped tensors (loading the rest as loadFrom does, and mapping the
// mapped tensors' pages), then swaps them in and unmaps the previous
// checkpoint. On an error the previous weights stay as they were.
func (m *Model) loadMapped(set *safetensors.Set, dir string) error {
	mc, err := mapCheckpoint(set, dir)
	if err != nil {
		return err
	}
	w, inPlace := m.newMappedWeights(mc)
	return m.installMapped(w, mc, m.loadJobs(set, w, inPlace), dir)
}

// loadCompressed is loadFrom for a bf16z model and a Hugging Face
// checkpoint (the caller holds m.mu): the checkpoint is loaded as a bf16
// model (mapped, unless this model copies), every matrix is compressed
// from it on all threads, and the bf16 model is closed; then the
// compressed weights are swapped in and any previous mapping unmapped. On
// an error the previous weights stay.
//
// Mapped, the bf16 values are never in the process's memory all at once
// beside the compressed ones: their pages are not mapped ahead (the
// compression reads each matrix once, and its reads map them), and each
// matrix's pages are released once it is compressed (they stay in the
// page cache). So the peak is about the compressed weights and one bf16
// matrix: at the 1.7B shape 3.1 GB with a 0.5 GB KV cache, where the
// whole mapping resident beside them made 5.9 (BENCHMARKS.md, "cuda:
// loading and memory").
// Copied, both are in memory while compressing: pack once instead
// (WritePacked) to load without either.
func (m *Model) loadCompressed(set *safetensors.Set, dir string) error {
	alloc := allocForLoad
	if m.mapWeights {
		alloc = allocMapped
	}
	tmp, err := newWith(m.cfg, m.cpu, WeightsBF16, alloc)
	if err != nil {
		return err
	}
	defer tmp.Close()
	var inPlace map[string][]uint16
	if m.mapWeights {
		mc, err := mapCheckpoint(set, dir)
		if err != nil {
			return err
		}
		var tw *Weights[*cpuWeight]
		tw, inPlace = tmp.newMappedWeights(mc)
		jobs := slices.DeleteFunc(tmp.loadJobs(set, tw, inPlace), func(j loadJob) bool { return j.populate != nil })
		if err := tmp.installMapped(tw, mc, jobs, dir); err != nil {
			return err
		}
	} else if err := tmp.loadFrom(set, dir); err != nil {
		return err
	}
	names := map[Place][]string{}
	for _, g := range m.cfg.mapGroups() {
		names[g.at] = g.names
	}
	w, _ := NewWeights(m.cfg, func(Slot, int, int) (*cpuWeight, error) { return nil, nil })
	for _, s := range m.cfg.slots() {
		h := *tmp.w.At(s.at)
		if h.bf != nil {
			h = &cpuWeight{bz: m.cpu.CompressBF16(h.bf)}
			for _, name := range names[s.at] {
				if rows, ok := inPlace[name]; ok {
					releasePages(asBytes(rows))
				}
			}
		}
		*w.At(s.at) = h
	}
	if m.cfg.TieWordEmbeddings {
		w.LMHead = w.Embed
	}
	if tmp.mapped != nil {
		// The compression read the mapped bytes: they must have been the
		// file's, as Forward checks after computing.
		if err := tmp.mapped.damaged(); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrWeights, dir, err)
		}
	}
	m.w = w
	for _, name := range m.cfg.TensorNames() {
		m.loaded[name] = true
	}
	return m.setMapped(nil)
}

// installMapped runs the jobs that load w, weights computing from mc,
// then swaps them in for the model's and unmaps the previous checkpoint.
// On an error mc is unmapped and the model is left as it was.
func (m *Model) installMapped(w *Weights[*cpuWeight], mc *mappedCheckpoint, jobs []loadJob, dir string) error {
	err := runLoadJobs(m.cpu.Threads(), jobs)
	if err == nil {
		err = mc.damaged()
	}
	if err != nil {
		return errors.Join(fmt.Errorf("%w: %s: %w", ErrWeights, dir, err), mc.close())
	}
	m.w = w
	err = m.setMapped(mc)
	for _, name := range m.cfg.TensorNames() {
		m.loaded[name] = true
	}
	return errors.Join(err, m.releaseUnused())
}

// loadJob fills rows [r0, r1) of one tensor into its place; or copies
// the tensor's bytes from off on straight into into (a packed
// checkpoint); or maps the pages of populate, part of a tensor used in
// place from the mapped checkpoint.
type loadJob struct {
	cpu    *kernels.CPU
	set    *safetensors.Set
	name   string
	info   safetensors.Info
	dst    *cpuWeight
	row    int // the tensor's first row (or value) in dst
	r0, r1 int // rows of the tensor this job reads
	cols   int

	off      int64
	into     []byte
	populate []byte
}

// loadPiece bounds the bytes one job reads straight into the model: big
// enough that a pread is efficient, small enough that the threads share a
// large tensor evenly. A job that converts reads at most convertPiece
// bytes into its buffer, which then stays in the core's cache (L2) while
// the conversion reads it back. (Variables so that tests can cut small
// tensors into many jobs.)
var (
	loadPiece    = 4 << 20
	convertPiece = 512 << 10
)

// loadJobs cuts the load of every tensor into w into jobs; a tensor
// inPlace is used from its mapping (these rows), and its jobs map its
// pages.
func (m *Model) loadJobs(set *safetensors.Set, w *Weights[*cpuWeight], inPlace map[string][]uint16) []loadJob {
	var jobs []loadJob
	for _, name := range m.cfg.TensorNames() {
		info, _ := set.Lookup(name)
		p, _ := m.cfg.Place(name)
		dst := *w.At(p)
		rows, cols := 1, int(info.NumElements())
		if len(info.Shape) == 2 {
			rows, cols = int(info.Shape[0]), int(info.Shape[1])
		}
		esz := info.DType.Size()
		piece := convertPiece
		mapped := inPlace[name]
		if mapped != nil || direct(dst, info.DType) {
			piece = loadPiece
		}
		step := max(1, piece/max(1, cols*esz))
		if dst.mat != nil || dst.q8 != nil {
			step = (step + kernels.Panel - 1) / kernels.Panel * kernels.Panel // whole panels: no shared cache lines
		}
		for r := 0; r < rows; r += step {
			j := loadJob{cpu: m.cpu, set: set, name: name, info: info, dst: dst, row: p.Row, r0: r, r1: min(r+step, rows), cols: cols}
			if mapped != nil {
				j = loadJob{set: set, name: name, populate: asBytes(mapped[j.r0*cols : j.r1*cols])}
			}
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// direct reports whether a tensor of type dt is read into w as it is: a
// BF16 tensor into bf16 weights, an F32 one into an fp32 vector.
func direct(w *cpuWeight, dt safetensors.DType) bool {
	return (w.bf != nil && dt == safetensors.BF16) || (w.vec != nil && dt == safetensors.F32)
}

// loadBuffers are one loading goroutine's bounded buffers: raw checkpoint
// bytes and float32 scratch.
type loadBuffers struct {
	raw []byte
	f   []float32
}

func (b *loadBuffers) bytes(n int) []byte {
	if cap(b.raw) < n {
		b.raw = make([]byte, n)
	}
	return b.raw[:n]
}

func (b *loadBuffers) floats(n int) []float32 {
	if cap(b.f) < n {
		b.f = make([]float32, n)
	}
	return b.f[:n]
}

// runLoadJobs runs jobs on threads goroutines, each with its own
// buffers, and returns the first error.
func runLoadJobs(threads int, jobs []loadJob) error {
	var next atomic.Int64
	errs := make([]error, max(1, threads))
	var wg sync.WaitGroup
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf loadBuffers
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				if err := jobs[i].run(&buf); err != nil {
					errs[g] = err
					next.Store(int64(len(jobs))) // the others stop at their next job
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readInto preads a tensor's bytes straight into the model's fresh
// memory, having mapped that memory first in one call
// (MADV_POPULATE_WRITE where the OS has it) rather than by a page fault
// per 4 KiB page inside the copy: at the 0.6B shape a bf16 load took ~20%
// less time (alternating runs, every one faster). Jobs populate in
// parallel, each its own range. (Conversions write their destination from
// C; populating ahead of them measured no faster, so they do not.)
func readInto(set *safetensors.Set, name string, dst []byte, off int64) error {
	populateRange(unsafe.Pointer(unsafe.SliceData(dst)), 0, uintptr(len(dst)))
	return set.ReadAt(name, dst, off)
}

// sourceOf is the kernels' name for a checkpoint element type (loadFrom
// has accepted only these three).
func sourceOf(dt safetensors.DType) (kernels.Source, error) {
	switch dt {
	case safetensors.F32:
		return kernels.SourceF32, nil
	case safetensors.F16:
		return kernels.SourceF16, nil
	case safetensors.BF16:
		return kernels.SourceBF16, nil
	}
	return 0, fmt.Errorf("cannot convert %s to float32", dt)
}

func (j *loadJob) run(buf *loadBuffers) error {
	switch {
	case j.populate != nil:
		if err := populateRead(j.populate); err != nil {
			return fmt.Errorf("tensor %q: mapping its pages: %w (the file shrank?)", j.name, err)
		}
		return nil
	case j.into != nil:
		return readInto(j.set, j.name, j.into, j.off)
	}
	rows := j.r1 - j.r0
	n := rows * j.cols
	if n == 0 {
		return nil
	}
	esz := int64(j.info.DType.Size())
	off := int64(j.r0*j.cols) * esz
	w := j.dst
	switch {
	case w.bf != nil && j.info.DType == safetensors.BF16:
		// The checkpoint's bytes are the model's bytes: read them in place.
		return readInto(j.set, j.name, asBytes(w.bf.Data[(j.row+j.r0)*j.cols:(j.row+j.r1)*j.cols]), off)
	case w.vec != nil && j.info.DType == safetensors.F32:
		return readInto(j.set, j.name, asBytes(w.vec[j.row+j.r0*j.cols:j.row+j.r1*j.cols]), off)
	}
	src, err := sourceOf(j.info.DType)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", j.name, err)
	}
	raw := buf.bytes(n * int(esz))
	if err := j.set.ReadAt(j.name, raw, off); err != nil {
		return err
	}
	// Each conversion reads the raw rows and writes the model's layout:
	// no float32 copy of the rows is made except a row of q8 scratch.
	switch {
	case w.mat != nil:
		// Only this job's panels are written (jobs cover whole panels).
		j.cpu.PackRowsFrom(w.mat, j.row+j.r0, raw, src, rows)
	case w.bf != nil:
		v := buf.floats(n)
		kernels.Widen(v, raw, src)
		kernels.ToBF16(w.bf.Data[(j.row+j.r0)*j.cols:(j.row+j.r1)*j.cols], v)
	case w.q8 != nil:
		w.q8.QuantizeRowsFrom(j.row+j.r0, raw, src, rows, buf.floats(j.cols))
	default:
		kernels.Widen(w.vec[j.row+j.r0*j.cols:j.row+j.r1*j.cols], raw, src)
	}
	return nil
}

// CheckTensor reports whether SetTensor would accept a tensor, without
// changing anything: updates validate every tensor before applying any.
func (m *Model) CheckTensor(name string, shape []int64, n int) error {
	want, ok := m.shapes[name]
	if !ok {
		return fmt.Errorf("%w: unknown tensor %q for a %s model", ErrWeights, name, m.cfg.ModelType)
	}
	if !slices.Equal(shape, want) {
		return fmt.Errorf("%w: tensor %q has shape %v, config expects %v", ErrWeights, name, shape, want)
	}
	size := int64(1)
	for _, d := range want {
		size *= d
	}
	if int64(n) != size {
		return fmt.Errorf("%w: tensor %q: %d values for shape %v", ErrWeights, name, n, want)
	}
	return nil
}
