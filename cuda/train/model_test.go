package train

import (
	"math"
	"path/filepath"
	"testing"

	goldenfile "github.com/agentrl/agentrl/cuda/internal/golden"
	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// engineLogprobs runs the inference engine's model (paged KV cache, packed
// GEMM kernels) over each row and returns log-softmax at the next token.
func engineLogprobs(t *testing.T, cfg *model.Config, tensors map[string][]float32, rows [][]int32) [][]float32 {
	t.Helper()
	em, err := model.New(cfg, kernels.NewCPU(0))
	require.NoError(t, err)
	shapes := cfg.TensorShapes()
	for name, v := range tensors {
		require.NoError(t, em.SetTensor(name, shapes[name], v))
	}
	var out [][]float32
	for _, row := range rows {
		const bs = 16
		nb := (len(row) + bs - 1) / bs
		kv := em.NewKVCache(nb, bs)
		blocks := make([]int32, nb)
		for i := range blocks {
			blocks[i] = int32(i)
		}
		logits, err := em.Forward(kv, []model.Seq{{Tokens: row, Blocks: blocks, AllLogits: true}})
		require.NoError(t, err)
		V := cfg.VocabSize
		lp := make([]float32, len(row)-1)
		for j := range lp {
			lp[j] = float32(goldenfile.LogSoftmax(logits[0][j*V:(j+1)*V], row[j+1]))
		}
		out = append(out, lp)
	}
	return out
}

// TestLogprobsMatchEngine: the trainer's recomputed logprobs must agree with
// what the inference engine computes for the same weights and tokens (the
// rollout/training mismatch that truncated importance sampling corrects).
func TestLogprobsMatchEngine(t *testing.T) {
	for _, g := range loadGoldens(t) {
		t.Run(g.name, func(t *testing.T) {
			w := model.RandomWeights(g.cfg, g.seed)
			m, err := New(g.cfg, w, Options{})
			require.NoError(t, err)
			got, err := m.Forward(g.rows)
			require.NoError(t, err)
			want := engineLogprobs(t, g.cfg, w, g.rows)
			var maxAbs float64
			for r := range want {
				for j := range want[r] {
					maxAbs = math.Max(maxAbs, math.Abs(float64(got[r][j])-float64(want[r][j])))
				}
			}
			t.Logf("%s: max |train − engine| logprob = %.3g", g.name, maxAbs)
			require.Less(t, maxAbs, 1e-4)
		})
	}
}

func TestLoadMatchesRandomWeights(t *testing.T) {
	g := loadGoldens(t)[0]
	dir := filepath.Join(t.TempDir(), "m")
	w := model.RandomWeights(g.cfg, g.seed)
	require.NoError(t, model.WriteDir(dir, g.cfg, w))
	m, err := Load(dir, Options{})
	require.NoError(t, err)
	for name, v := range w {
		p, ok := m.Param(name)
		require.True(t, ok, name)
		require.Equal(t, v, p.Data, name)
	}
	// A trained model written back loads in the engine unchanged.
	p, _ := m.Param("model.norm.weight")
	p.Data[0] = 3.5
	out := filepath.Join(t.TempDir(), "trained")
	require.NoError(t, model.WriteDir(out, m.Config(), m.Tensors()))
	em, err := model.Load(out, kernels.NewCPU(1))
	require.NoError(t, err)
	require.Empty(t, em.Missing())
	m2, err := Load(out, Options{})
	require.NoError(t, err)
	p2, _ := m2.Param("model.norm.weight")
	require.Equal(t, float32(3.5), p2.Data[0])
}

func TestBadInput(t *testing.T) {
	g := loadGoldens(t)[0]
	w := model.RandomWeights(g.cfg, g.seed)
	m, err := New(g.cfg, w, Options{})
	require.NoError(t, err)
	require.ErrorIs(t, m.Backward([][]float32{{1}}), ErrNoForward)
	for _, tc := range []struct {
		name string
		rows [][]int32
		msg  string
	}{
		{"no rows", nil, "no rows"},
		{"empty row", [][]int32{{1, 2}, {}}, "row 1 is empty"},
		{"negative id", [][]int32{{1, -1}}, "row 0 token 1: id -1"},
		{"id past vocab", [][]int32{{1, 2, 64}}, "row 0 token 2: id 64 outside the vocabulary of 64"},
		{"too long", [][]int32{make([]int32, 65)}, "65 tokens, more than max_position_embeddings 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Forward(tc.rows)
			require.ErrorIs(t, err, ErrInput)
			require.ErrorContains(t, err, tc.msg)
		})
	}
	_, err = m.Forward([][]int32{{1, 2, 3}, {4}})
	require.NoError(t, err)
	require.ErrorContains(t, m.Backward([][]float32{{1, 1}}), "1 gradient rows for 2 forward rows")
	require.ErrorContains(t, m.Backward([][]float32{{1}, {}}), "gradient row 0 has 1 values, want 2")
	require.ErrorContains(t, m.Backward([][]float32{{1, float32(math.NaN())}, {}}), "gradient row 0 position 1 is NaN")

	bad := map[string][]float32{}
	for k, v := range w {
		bad[k] = v
	}
	delete(bad, "model.norm.weight")
	_, err = New(g.cfg, bad, Options{})
	require.ErrorIs(t, err, model.ErrWeights)
	require.ErrorContains(t, err, `missing tensor "model.norm.weight"`)
	bad["model.norm.weight"] = []float32{1}
	_, err = New(g.cfg, bad, Options{})
	require.ErrorContains(t, err, `tensor "model.norm.weight" has 1 values`)
	bad["model.norm.weight"] = w["model.norm.weight"]
	bad["extra.weight"] = []float32{1}
	_, err = New(g.cfg, bad, Options{})
	require.ErrorContains(t, err, `unexpected tensor "extra.weight"`)
}
