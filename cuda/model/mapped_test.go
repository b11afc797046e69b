//go:build linux

package model

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
	"github.com/stretchr/testify/require"
)

// mapConfig is tinyConfig with a table of many pages, so truncating a
// checkpoint drops pages the model reads.
func mapConfig(tie bool) *Config {
	cfg := tinyConfig()
	cfg.NumHiddenLayers = 2
	cfg.VocabSize = 3000
	cfg.HiddenSize = 64
	cfg.IntermediateSize = 96
	cfg.TieWordEmbeddings = tie
	return cfg
}

// inPlaceWeights counts the model's matrices used in place from a mapping
// (a parted bf16 matrix, or a packed one's mapped bytes) and those with
// memory of their own.
func inPlaceWeights(m *Model) (inPlace, owned int) {
	seen := map[*cpuWeight]bool{} // a tied head is the table
	m.w.Each(func(h **cpuWeight) {
		w := *h
		if w == nil || w.vec != nil || seen[w] {
			return
		}
		seen[w] = true
		if w.mapped || w.bf != nil && w.bf.Parted() {
			inPlace++
		} else {
			owned++
		}
	})
	return inPlace, owned
}

// fileTensors reads every tensor of the safetensors file at path, to be
// written again with changes.
func fileTensors(t *testing.T, path string) []safetensors.Tensor {
	t.Helper()
	f, err := safetensors.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var ts []safetensors.Tensor
	for _, info := range f.Tensors {
		_, b, err := f.Bytes(info.Name)
		require.NoError(t, err)
		ts = append(ts, safetensors.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: b})
	}
	return ts
}

// TestLoadMapped: a bf16 checkpoint, one file or sharded, tied or not,
// served from its mapping gives bit for bit the logits of the copied
// load, with every matrix in place (nothing copied); reloading, dropping
// and SetTensor keep working, and Close unmaps.
func TestLoadMapped(t *testing.T) {
	cpu := kernels.NewCPU(2)
	for _, tie := range []bool{false, true} {
		for _, shard := range []int64{0, 40_000} {
			cfg := mapConfig(tie)
			dir := t.TempDir()
			require.NoError(t, WriteRandomDir(dir, cfg, 11, WriteOptions{DType: safetensors.BF16, ShardBytes: shard}))
			copied, err := LoadWith(dir, cpu, LoadOptions{Copy: true})
			require.NoError(t, err)
			require.False(t, copied.Mapped())
			want := lastLogits(t, copied)

			m, err := LoadWith(dir, cpu, LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, WeightsBF16, m.Weights())
			require.NotNil(t, m.mapped)
			in, owned := inPlaceWeights(m)
			require.Zero(t, owned, "tied %v, shards %d", tie, shard)
			require.Equal(t, 4*cfg.NumHiddenLayers+map[bool]int{false: 2, true: 1}[tie], in)
			require.Equal(t, want, lastLogits(t, m), "tied %v, shards %d", tie, shard)

			// A reload maps the files again and unmaps the old mapping.
			old := m.mapped
			require.NoError(t, m.LoadWeights(dir))
			require.NotSame(t, old, m.mapped)
			require.Nil(t, old.guards)
			require.Equal(t, want, lastLogits(t, m))

			// SetTensor copies the matrix it writes (the mapping is
			// read-only) and leaves the file alone.
			shapes := cfg.TensorShapes()
			name := "model.layers.1.mlp.up_proj.weight"
			v := make([]float32, shapes[name][0]*shapes[name][1])
			for i := range v {
				v[i] = float32(i%7) / 8
			}
			require.NoError(t, m.SetTensor(name, shapes[name], v))
			require.NoError(t, copied.SetTensor(name, shapes[name], v))
			require.Equal(t, lastLogits(t, copied), lastLogits(t, m))
			in2, owned2 := inPlaceWeights(m)
			require.Equal(t, [2]int{in - 1, 1}, [2]int{in2, owned2})
			fresh, err := LoadWith(dir, cpu, LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, want, lastLogits(t, fresh), "the checkpoint changed")
			require.NoError(t, fresh.Close())

			// Sleep and wake: dropped weights are mapped again.
			m.DropWeights()
			require.Nil(t, m.mapped)
			require.NoError(t, m.LoadWeights(dir))
			require.Equal(t, want, lastLogits(t, m))

			require.NoError(t, m.Close())
			require.Nil(t, m.mapped)
			_, err = m.Forward(m.NewKVCache(8, 4), []Seq{{Tokens: []int32{1}, Blocks: seqBlocks(1, 0)}})
			require.ErrorIs(t, err, ErrWeights)
			require.NoError(t, m.Close())
		}
	}
}

// TestLoadMappedOtherTypes: mapping applies to bf16 weights only; fp32
// and int8 loads of a bf16 checkpoint, and bf16 from an F32 one, convert
// as always.
func TestLoadMappedOtherTypes(t *testing.T) {
	cfg := mapConfig(true)
	bf, f32 := t.TempDir(), t.TempDir()
	require.NoError(t, WriteRandomDir(bf, cfg, 3, WriteOptions{DType: safetensors.BF16}))
	require.NoError(t, WriteRandomDir(f32, cfg, 3, WriteOptions{}))
	for _, tc := range []struct {
		dir string
		wt  WeightType
	}{{bf, WeightsF32}, {bf, WeightsInt8}, {f32, WeightsAuto}} {
		want, err := LoadWith(tc.dir, nil, LoadOptions{Weights: tc.wt, Copy: true})
		require.NoError(t, err)
		m, err := LoadWith(tc.dir, nil, LoadOptions{Weights: tc.wt})
		require.NoError(t, err)
		require.Nil(t, m.mapped)
		require.Equal(t, lastLogits(t, want), lastLogits(t, m))
	}
	// bf16 weights from an F32 checkpoint: every matrix is converted, none in place.
	m, err := LoadWith(f32, nil, LoadOptions{Weights: WeightsBF16})
	require.NoError(t, err)
	want, err := LoadWith(f32, nil, LoadOptions{Weights: WeightsBF16, Copy: true})
	require.NoError(t, err)
	in, owned := inPlaceWeights(m)
	require.Equal(t, [2]int{0, 4*cfg.NumHiddenLayers + 1}, [2]int{in, owned})
	require.False(t, m.Mapped(), "nothing in place: the mapping is released")
	require.Equal(t, lastLogits(t, want), lastLogits(t, m))
	require.NoError(t, m.Close())
}

// TestLoadMappedMisaligned: safetensors promises no alignment; a BF16
// tensor at an odd offset is copied, the others stay in place, and the
// logits are the same.
func TestLoadMappedMisaligned(t *testing.T) {
	cfg := mapConfig(false)
	dir, odd := t.TempDir(), t.TempDir()
	require.NoError(t, WriteRandomDir(dir, cfg, 5, WriteOptions{DType: safetensors.BF16}))
	// One byte sorted first ("a.pad" < "lm_head") moves every tensor to an
	// odd offset; a second one sorted before layer 1's tensors moves
	// those back to even offsets.
	ts := append(fileTensors(t, filepath.Join(dir, safetensors.SingleFile)),
		safetensors.Tensor{Name: "a.pad", DType: safetensors.U8, Shape: []int64{1}, Data: []byte{7}},
		safetensors.Tensor{Name: "model.layers.1.a.pad", DType: safetensors.U8, Shape: []int64{1}, Data: []byte{7}})
	require.NoError(t, safetensors.WriteFile(filepath.Join(odd, safetensors.SingleFile), ts, nil))
	cfgBytes, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(odd, "config.json"), cfgBytes, 0o644))

	want, err := LoadWith(dir, nil, LoadOptions{Copy: true})
	require.NoError(t, err)
	m, err := LoadWith(odd, nil, LoadOptions{})
	require.NoError(t, err)
	in, owned := inPlaceWeights(m)
	// Tensors sort as lm_head, model.embed_tokens, model.layers.0.*,
	// model.layers.1.a.pad, model.layers.1.*, …: layer 1's matrices are
	// back at even offsets, everything before them is odd.
	require.Equal(t, [2]int{4, 6}, [2]int{in, owned})
	require.Equal(t, lastLogits(t, want), lastLogits(t, m))
	require.NoError(t, m.Close())
}

// TestLoadMappedTruncated: a mapped checkpoint truncated while the model
// runs does not kill the process (SIGBUS in the kernels): the guard reads
// zeros past the new end and Forward fails closed with an error naming
// the file, every time after, until the weights are reloaded from an
// intact file (renamed over the old one, as the docs ask).
func TestLoadMappedTruncated(t *testing.T) {
	cfg := mapConfig(true)
	dir := t.TempDir()
	require.NoError(t, WriteRandomDir(dir, cfg, 9, WriteOptions{DType: safetensors.BF16, ShardBytes: 200_000}))
	want, err := LoadWith(dir, nil, LoadOptions{Copy: true})
	require.NoError(t, err)
	m, err := LoadWith(dir, nil, LoadOptions{})
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, lastLogits(t, want), lastLogits(t, m))

	shards, err := filepath.Glob(filepath.Join(dir, "model-*.safetensors"))
	require.NoError(t, err)
	require.Greater(t, len(shards), 1)
	victim := shards[len(shards)-1]
	intact, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(victim, 4096))

	kv := m.NewKVCache(8, 4)
	for range 2 {
		_, err = m.Forward(kv, []Seq{{Tokens: []int32{3, 1, 4}, Blocks: seqBlocks(1, 0)}})
		require.ErrorIs(t, err, ErrWeights)
		require.ErrorContains(t, err, victim)
		require.ErrorContains(t, err, "shrank while the model computed from its mapping")
	}
	// A reload of the still-short file is an error, and changes nothing.
	require.ErrorIs(t, m.LoadWeights(dir), safetensors.ErrFormat)
	_, err = m.Forward(kv, []Seq{{Tokens: []int32{3}, Blocks: seqBlocks(1, 0)}})
	require.ErrorIs(t, err, ErrWeights)

	tmp := victim + ".new"
	require.NoError(t, os.WriteFile(tmp, intact, 0o644))
	require.NoError(t, os.Rename(tmp, victim))
	require.NoError(t, m.LoadWeights(dir))
	require.Equal(t, lastLogits(t, want), lastLogits(t, m))
}

// TestLoadMappedReleasedAfterUpdate: once SetTensor has written every
// matrix (a weight update from the trainer), nothing computes from the
// mapping, so it is released: the checkpoint may then change without
// failing Forward.
func TestLoadMappedReleasedAfterUpdate(t *testing.T) {
	cfg := mapConfig(true)
	dir := t.TempDir()
	require.NoError(t, WriteRandomDir(dir, cfg, 4, WriteOptions{DType: safetensors.BF16}))
	m, err := LoadWith(dir, nil, LoadOptions{})
	require.NoError(t, err)
	defer m.Close()
	want, err := NewWith(cfg, nil, WeightsBF16)
	require.NoError(t, err)
	shapes := cfg.TensorShapes()
	ws := RandomWeights(cfg, 8)
	for i, name := range cfg.TensorNames() {
		v := ws[name]
		require.NoError(t, want.SetTensor(name, shapes[name], v))
		require.NoError(t, m.SetTensor(name, shapes[name], v))
		if i == 0 {
			require.True(t, m.Mapped(), "other matrices still compute from the mapping")
		}
	}
	require.False(t, m.Mapped())
	require.NoError(t, os.Truncate(filepath.Join(dir, safetensors.SingleFile), 0))
	require.Equal(t, lastLogits(t, want), lastLogits(t, m))
}

// TestLoadMappedChangedInPlace: a mapped checkpoint rewritten in place
// with other weights of the same size (what saving a checkpoint over the
// served path does: safetensors' save_file truncates and writes) fails
// Forward closed, naming the file, instead of computing from the new
// bytes or a mix; a new file renamed over it leaves the model computing
// from the old one until LoadWeights maps the new.
func TestLoadMappedChangedInPlace(t *testing.T) {
	cfg := mapConfig(true)
	dir, next := t.TempDir(), t.TempDir()
	require.NoError(t, WriteRandomDir(dir, cfg, 9, WriteOptions{DType: safetensors.BF16}))
	require.NoError(t, WriteRandomDir(next, cfg, 10, WriteOptions{DType: safetensors.BF16}))
	path := filepath.Join(dir, safetensors.SingleFile)
	first, err := os.ReadFile(path)
	require.NoError(t, err)
	second, err := os.ReadFile(filepath.Join(next, safetensors.SingleFile))
	require.NoError(t, err)
	require.Len(t, second, len(first))
	logitsOf := func(dir string) []float32 {
		m, err := LoadWith(dir, nil, LoadOptions{Copy: true})
		require.NoError(t, err)
		return lastLogits(t, m)
	}
	want, wantNext := logitsOf(dir), logitsOf(next)
	require.NotEqual(t, want, wantNext)
	// The file is stamped an hour back before each mapping, so that the
	// rewrite below moves its modification time however coarse the file
	// system's clock is.
	past := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(path, past, past))

	m, err := LoadWith(dir, nil, LoadOptions{})
	require.NoError(t, err)
	defer m.Close()
	require.True(t, m.Mapped())
	require.Equal(t, want, lastLogits(t, m))

	// Renamed over: the mapping keeps the old file.
	require.NoError(t, os.WriteFile(path+".new", second, 0o644))
	require.NoError(t, os.Rename(path+".new", path))
	require.Equal(t, want, lastLogits(t, m))
	require.NoError(t, os.Chtimes(path, past, past))
	require.NoError(t, m.LoadWeights(dir))
	require.Equal(t, wantNext, lastLogits(t, m))

	// Rewritten in place: every Forward fails until the weights are
	// loaded again.
	require.NoError(t, os.WriteFile(path, first, 0o644))
	kv := m.NewKVCache(8, 4)
	for range 2 {
		_, err = m.Forward(kv, []Seq{{Tokens: []int32{3, 1, 4}, Blocks: seqBlocks(1, 0)}})
		require.ErrorIs(t, err, ErrWeights)
		require.ErrorIs(t, err, safetensors.ErrChanged)
		require.ErrorContains(t, err, path)
		require.ErrorContains(t, err, "it was modified since it was mapped")
	}
	require.NoError(t, m.LoadWeights(dir))
	require.Equal(t, want, lastLogits(t, m))
}

// TestLoadMappedDroppedUnmaps: a mapped model dropped without Close has
// its mapping unmapped by the garbage collector.
func TestLoadMappedDroppedUnmaps(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteRandomDir(dir, mapConfig(false), 2, WriteOptions{DType: safetensors.BF16}))
	path := filepath.Join(dir, safetensors.SingleFile)
	mapsFile := func() bool {
		b, err := os.ReadFile("/proc/self/maps")
		require.NoError(t, err)
		return bytes.Contains(b, []byte(path))
	}
	func() { // the model is unreachable once this returns
		m, err := LoadWith(dir, nil, LoadOptions{})
		require.NoError(t, err)
		lastLogits(t, m)
		require.True(t, mapsFile())
	}()
	for i := 0; i < 500 && mapsFile(); i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.False(t, mapsFile(), "the dropped model's checkpoint is still mapped")
}
