package train

import (
	"math"
	"testing"

	goldenfile "github.com/agentrl/agentrl/cuda/internal/golden"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/stretchr/testify/require"
)

// golden is one variant of testdata/reference.safetensors (made by
// testdata/regen.sh with PyTorch float64 autograd).
type golden struct {
	name     string
	cfg      *model.Config
	seed     uint64
	rows     [][]int32
	weights  [][]float32 // dL/dlogp per row
	logprobs [][]float32
	loss     float64
	grads    map[string][]float32
}

func splitRows[T any](flat []T, lengths []int32, minus int) [][]T {
	var out [][]T
	off := 0
	for _, n := range lengths {
		k := int(n) - minus
		out = append(out, flat[off:off+k])
		off += k
	}
	return out
}

func loadGoldens(t testing.TB) []golden {
	t.Helper()
	f := goldenfile.Open(t, "testdata/reference.safetensors")
	var out []golden
	for _, v := range f.Variants() {
		cfg, err := model.ParseConfig(v.Config)
		require.NoError(t, err)
		name := v.Name
		lengths := f.Int32(name + ".lengths")
		g := golden{name: name, cfg: cfg, seed: v.Seed,
			rows:     splitRows(f.Int32(name+".tokens"), lengths, 0),
			weights:  splitRows(f.Float32(name+".weights"), lengths, 1),
			logprobs: splitRows(f.Float32(name+".logprobs"), lengths, 1),
			loss:     float64(f.Float32(name + ".loss")[0]),
			grads:    map[string][]float32{},
		}
		for _, pn := range cfg.TensorNames() {
			g.grads[pn] = f.Float32(name + ".grad." + pn)
		}
		out = append(out, g)
	}
	require.Len(t, out, 4)
	return out
}

// relErr is max|got−want| / max|want|.
func relErr(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i])-float64(want[i])))
		den = math.Max(den, math.Abs(float64(want[i])))
	}
	if den == 0 {
		return num
	}
	return num / den
}

func levels() []Level {
	var out []Level
	for l := Generic; l <= Detect(); l++ {
		out = append(out, l)
	}
	return out
}

// TestGradientsMatchPyTorch checks per-token logprobs, the loss and every
// parameter gradient against PyTorch float64 autograd, for each model
// variant and each instruction-set level this CPU has.
func TestGradientsMatchPyTorch(t *testing.T) {
	for _, g := range loadGoldens(t) {
		for _, lvl := range levels() {
			t.Run(g.name+"/"+lvl.String(), func(t *testing.T) {
				m, err := New(g.cfg, model.RandomWeights(g.cfg, g.seed), Options{Level: &lvl})
				require.NoError(t, err)
				lp, err := m.Forward(g.rows)
				require.NoError(t, err)
				var loss float64
				for r := range lp {
					require.Len(t, lp[r], len(g.logprobs[r]))
					require.LessOrEqual(t, relErr(lp[r], g.logprobs[r]), 1e-5, "logprobs row %d", r)
					for j := range lp[r] {
						loss += float64(g.weights[r][j]) * float64(lp[r][j])
					}
				}
				require.InEpsilon(t, g.loss, loss, 1e-5)
				require.NoError(t, m.Backward(g.weights))
				worst, worstName := 0.0, ""
				for _, p := range m.Params() {
					e := relErr(p.Grad, g.grads[p.Name])
					require.LessOrEqual(t, e, 1e-4, "gradient of %s", p.Name)
					if e > worst {
						worst, worstName = e, p.Name
					}
				}
				t.Logf("%s/%s: worst gradient relative error %.2e (%s)", g.name, lvl, worst, worstName)
			})
		}
	}
}

// TestBackwardAccumulates checks that two Backward calls add up and that
// ZeroGrad clears, since optimizers rely on both.
func TestBackwardAccumulates(t *testing.T) {
	g := loadGoldens(t)[1]
	m, err := New(g.cfg, model.RandomWeights(g.cfg, g.seed), Options{})
	require.NoError(t, err)
	_, err = m.Forward(g.rows)
	require.NoError(t, err)
	require.NoError(t, m.Backward(g.weights))
	require.NoError(t, m.Backward(g.weights))
	for _, p := range m.Params() {
		want := make([]float32, len(p.Grad))
		for i, v := range g.grads[p.Name] {
			want[i] = 2 * v
		}
		require.LessOrEqual(t, relErr(p.Grad, want), 1e-4, p.Name)
	}
	m.ZeroGrad()
	for _, p := range m.Params() {
		for _, v := range p.Grad {
			require.Zero(t, v)
		}
	}
}
