package model

import (
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/cuda/kernels"
)

// ErrNoCUDA is returned when a model is asked to run on the GPU by a
// binary built without the `cuda` build tag.
var ErrNoCUDA = errors.New("model: built without the cuda tag (rebuild with -tags cuda after make -C cuda/gpu)")

// Device is where a model's weights, KV cache and forward pass live.
type Device string

// Devices.
const (
	// CPU runs on package kernels (the default).
	CPU Device = "cpu"
	// CUDA runs on the current CUDA device through package gpu; it needs a
	// binary built with the `cuda` tag.
	CUDA Device = "cuda"
)

// ParseDevice parses "cpu" or "cuda" (empty means cpu).
func ParseDevice(s string) (Device, error) {
	switch Device(s) {
	case "", CPU:
		return CPU, nil
	case CUDA:
		return CUDA, nil
	}
	return "", fmt.Errorf("model: unknown device %q (want cpu or cuda)", s)
}

// NewOn is New on a device. On CUDA the weights live only in device
// memory: SetTensor uploads each tensor, DropWeights frees them, and the
// model must be closed to release the device. cpu still sizes the host
// work around the model (the engine samples on it).
func NewOn(cfg *Config, dev Device, cpu *kernels.CPU) (*Model, error) {
	switch dev {
	case "", CPU:
		return New(cfg, cpu)
	case CUDA:
	default:
		return nil, fmt.Errorf("model: unknown device %q (want cpu or cuda)", dev)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cpu == nil {
		cpu = kernels.NewCPU(0)
	}
	g, err := newDeviceModel(cfg)
	if err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, cpu: cpu, shapes: cfg.TensorShapes(), loaded: map[string]bool{}, invFreq: cfg.InvFreq(), dev: g}, nil
}

// LoadOn is Load on a device (see NewOn).
func LoadOn(dir string, dev Device, cpu *kernels.CPU) (*Model, error) {
	if dev == "" || dev == CPU {
		return Load(dir, cpu)
	}
	cfg, set, err := OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	m, err := NewOn(cfg, dev, cpu)
	if err != nil {
		return nil, err
	}
	if err := m.loadFrom(set, dir); err != nil {
		return nil, errors.Join(err, m.Close())
	}
	return m, nil
}

// Device reports where the model runs.
func (m *Model) Device() Device {
	if m.dev != nil {
		return CUDA
	}
	return CPU
}

// Close releases the device memory of a CUDA model (its KV caches are
// closed separately), or the checkpoint mapping of a model that computes
// from it (Mapped); the model is unusable afterwards. Otherwise it is a
// no-op on the CPU, where memory is the garbage collector's.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dev == nil {
		if m.mapped == nil {
			return nil
		}
		// The matrices point into the mapping: drop them with it.
		m.w, m.loaded, m.ops = nil, map[string]bool{}, cpuOps{}
		return m.setMapped(nil)
	}
	return m.dev.close()
}

// AllocKVCache is NewKVCache, but on a device it allocates the cache's
// device memory now and reports failure (out of memory) here instead of
// at the first Forward.
func (m *Model) AllocKVCache(numBlocks, blockSize int) (*KVCache, error) {
	kv := m.NewKVCache(numBlocks, blockSize)
	if kv.dev == nil {
		return kv, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.dev.allocKV(kv.dev); err != nil {
		return nil, errors.Join(err, kv.Close())
	}
	return kv, nil
}

// Close releases a device cache's memory (the garbage collector's job on
// the CPU). The cache is unusable afterwards; call it only when no Forward
// is running on it.
func (kv *KVCache) Close() error {
	if kv.dev == nil {
		kv.K, kv.V, kv.KH, kv.VH = nil, nil, nil, nil
		return nil
	}
	return kv.dev.close()
}

// forwardDevice is Forward on the GPU (m.mu held).
func (m *Model) forwardDevice(kv *KVCache, seqs []Seq) ([][]float32, error) {
	T, err := m.checkBatch(kv, seqs)
	if err != nil || T == 0 {
		return nil, err
	}
	return m.dev.forward(kv.dev, seqs, T)
}

// checkBatch validates a Forward call (on either device) and returns the
// number of tokens.
func (m *Model) checkBatch(kv *KVCache, seqs []Seq) (int, error) {
	c := m.cfg
	if len(m.loaded) != len(m.shapes) {
		miss := m.missing()
		return 0, fmt.Errorf("%w: %d weights not set (first: %s)", ErrWeights, len(miss), miss[0])
	}
	if kv == nil || (kv.dev == nil) != (m.dev == nil) || (kv.dev == nil && kv.layers() != c.NumHiddenLayers) {
		return 0, fmt.Errorf("%w: KV cache does not match the model (make it with the model's NewKVCache, on the model's device)", ErrInput)
	}
	T := 0
	for i, s := range seqs {
		if len(s.Tokens) == 0 {
			return 0, fmt.Errorf("%w: sequence %d has no tokens", ErrInput, i)
		}
		end := s.Start + len(s.Tokens)
		if s.Start < 0 || end > c.MaxPositionEmbeddings {
			return 0, fmt.Errorf("%w: sequence %d positions [%d,%d) outside the context of %d", ErrInput, i, s.Start, end, c.MaxPositionEmbeddings)
		}
		if need := (end + kv.BlockSize - 1) / kv.BlockSize; len(s.Blocks) < need {
			return 0, fmt.Errorf("%w: sequence %d has %d blocks, needs %d for %d positions", ErrInput, i, len(s.Blocks), need, end)
		}
		for _, b := range s.Blocks {
			if b < 0 || int(b) >= kv.NumBlocks {
				return 0, fmt.Errorf("%w: sequence %d: block %d outside the cache of %d", ErrInput, i, b, kv.NumBlocks)
			}
		}
		for j, id := range s.Tokens {
			if id < 0 || int(id) >= c.VocabSize {
				return 0, fmt.Errorf("%w: sequence %d token %d: id %d outside the vocabulary of %d", ErrInput, i, j, id, c.VocabSize)
			}
		}
		T += len(s.Tokens)
	}
	return T, nil
}
