package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

// TestSampler checks the processed distribution: the logprob reported for
// every drawn token equals log p under a direct computation of
// penalty → temperature → top-k → top-p → min-p, tokens outside the kept
// set are never drawn, and frequencies follow p.
func TestSampler(t *testing.T) {
	logits := []float32{2.0, 1.5, 1.0, 0.5, -1.0, 1.5, -3}
	tests := []struct {
		name string
		p    server.SamplingParams
		seen []int32
		want []float64 // processed probabilities
	}{
		{"temperature", server.SamplingParams{Temperature: 0.7}, nil, nil},
		{"top-k", server.SamplingParams{Temperature: 1, TopK: 3}, nil, nil},
		{"top-p", server.SamplingParams{Temperature: 1, TopP: 0.6}, nil, nil},
		{"min-p", server.SamplingParams{Temperature: 1.3, MinP: 0.3}, nil, nil},
		{"penalty", server.SamplingParams{Temperature: 1, RepetitionPenalty: 1.5}, []int32{0, 4}, nil},
		{"all", server.SamplingParams{Temperature: 0.8, TopK: 5, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.2}, []int32{1, 6}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := processed(logits, tt.p, tt.seen)
			var s sampler
			r := rand.New(rand.NewPCG(1, 2))
			counts := make([]int, len(logits))
			const n = 40000
			for i := 0; i < n; i++ {
				tok, lp := s.sample(logits, &tt.p, tt.seen, nil, r)
				require.Greater(t, want[tok], 0.0, "token %d outside the kept set", tok)
				require.InDelta(t, math.Log(want[tok]), float64(lp), 1e-6)
				counts[tok]++
			}
			for i, c := range counts {
				require.InDelta(t, want[i], float64(c)/n, 0.01, "token %d", i)
			}
		})
	}
}

// processed is a direct, unoptimized statement of the documented pipeline.
func processed(logits []float32, p server.SamplingParams, seen []int32) []float64 {
	z := make([]float64, len(logits))
	for i, v := range logits {
		z[i] = float64(v)
	}
	for _, id := range seen {
		if z[id] > 0 {
			z[id] /= p.RepetitionPenalty
		} else {
			z[id] *= p.RepetitionPenalty
		}
	}
	prob := make([]float64, len(z))
	var sum float64
	for i := range z {
		prob[i] = math.Exp(z[i] / p.Temperature)
		sum += prob[i]
	}
	for i := range prob {
		prob[i] /= sum
	}
	// rank by probability, ties by id
	order := make([]int, len(prob))
	for i := range order {
		order[i] = i
	}
	for i := range order {
		for j := i + 1; j < len(order); j++ {
			a, b := order[i], order[j]
			if prob[b] > prob[a] || (prob[b] == prob[a] && b < a) {
				order[i], order[j] = b, a
			}
		}
	}
	keep := make([]bool, len(prob))
	k := len(prob)
	if p.TopK > 0 && p.TopK < k {
		k = p.TopK
	}
	var kmass float64
	for _, id := range order[:k] {
		kmass += prob[id]
	}
	var cum float64
	for _, id := range order[:k] {
		keep[id] = true
		cum += prob[id]
		if p.TopP > 0 && p.TopP < 1 && cum >= p.TopP*kmass {
			break
		}
	}
	top := prob[order[0]]
	var total float64
	for i := range prob {
		if keep[i] && prob[i] < p.MinP*top {
			keep[i] = false
		}
		if keep[i] {
			total += prob[i]
		}
	}
	out := make([]float64, len(prob))
	for i := range prob {
		if keep[i] {
			out[i] = prob[i] / total
		}
	}
	return out
}

func TestGreedyLogprob(t *testing.T) {
	var s sampler
	logits := []float32{0.5, 3, 3, -1}
	tok, lp := s.sample(logits, &server.SamplingParams{Logprobs: true}, nil, nil, rand.New(rand.NewPCG(1, 1)))
	require.Equal(t, int32(1), tok, "lowest id wins ties")
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v))
	}
	require.InDelta(t, 3-math.Log(sum), float64(lp), 1e-6)
}

// TestSamplerTopPLargeVocab: the pre-filter used before sorting a large
// vocabulary keeps exactly the top-p set.
func TestSamplerTopPLargeVocab(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2)
	}
	for _, topP := range []float64{0.5, 0.9, 0.99} {
		p := server.SamplingParams{Temperature: 1, TopP: topP}
		want := processed(logits, p, nil)
		var s sampler
		for i := 0; i < 2000; i++ {
			tok, lp := s.sample(logits, &p, nil, nil, r)
			require.Greater(t, want[tok], 0.0)
			require.InDelta(t, math.Log(want[tok]), float64(lp), 1e-6)
		}
	}
}

// The sampler's steps, each table-tested on its own. Cases marked
// "ollama" are ollama:sample/transforms_test.go's, as data.

func TestPenalize(t *testing.T) {
	tests := []struct {
		name string
		z    []float64
		seen []int32
		rp   float64
		want []float64
	}{
		// ollama: TestApplyPenalties "repeat penalty positive and negative logits"
		{"sign rule", []float64{4, -2, 1}, []int32{0, 1}, 2, []float64{2, -4, 1}},
		// ollama: TestApplyPenalties "empty recent tokens"
		{"nothing seen", []float64{1, 2, 3}, nil, 2, []float64{1, 2, 3}},
		{"zero logit is multiplied", []float64{0, 1}, []int32{0}, 2, []float64{0, 1}},
		{"penalty 1 is off", []float64{4, -2}, []int32{0, 1}, 1, []float64{4, -2}},
		{"penalty 0 is off", []float64{4, -2}, []int32{0, 1}, 0, []float64{4, -2}},
		{"below 1 favours", []float64{4, -2}, []int32{0, 1}, 0.5, []float64{8, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			penalize(tt.z, tt.seen, tt.rp)
			require.Equal(t, tt.want, tt.z)
		})
	}
}

func TestGreedyStep(t *testing.T) {
	tok, lp := greedy([]float64{0.5, 3, 3, -1}, false)
	require.Equal(t, int32(1), tok, "lowest id wins ties")
	require.Zero(t, lp)
	tok, lp = greedy([]float64{math.Inf(-1), 0}, true)
	require.Equal(t, int32(1), tok)
	require.Zero(t, lp)
}

func TestTemperatureStep(t *testing.T) {
	tests := []struct {
		name  string
		z     []float64
		temp  float64
		wantZ []float64
	}{
		// ollama: TestTemperature
		{"0.5", []float64{1, 4, -2, 0}, 0.5, []float64{2, 8, -4, 0}},
		{"1", []float64{1, 4, -2, 0}, 1, []float64{1, 4, -2, 0}},
		{"2", []float64{1, 4, -2, 0}, 2, []float64{0.5, 2, -1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := make([]float64, len(tt.z))
			temperature(p, tt.z, tt.temp)
			require.Equal(t, tt.wantZ, tt.z)
			top := slices.Max(tt.wantZ)
			for i, v := range tt.wantZ {
				require.InDelta(t, math.Exp(v-top), p[i], 1e-15)
			}
		})
	}
}

// ollamaProbs is ollama:sample/transforms_test.go:TestTopK's input.
var ollamaProbs = []float64{0.026986899, 0.043722924, 0.036774673, 0.27755088, 0.0046718004, 0.08582123, 0.20409796,
	0.00412893, 0.15720603, 0.045046154, 0.0030491839, 0.01681367}

func TestRankAndTopK(t *testing.T) {
	byProb := []int32{3, 6, 8, 5, 9, 1, 2, 0, 11, 4, 7, 10}
	byID := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	tests := []struct {
		name string
		k    int
		topP float64
		want []int32
	}{
		{"k 5", 5, 1, byProb[:5]}, // ollama: TestTopK topK(5)
		{"k 20", 20, 1, byID},     // ollama: TestTopK topK(20): all kept (no ranks needed)
		{"k -1", -1, 1, byID},     // ollama: TestTopK topK(-1)
		{"k 0", 0, 1, byID},       // ollama: TestTopK topK(0)
		{"k 1", 1, 1, byProb[:1]},
		{"top-p ranks", 0, 0.999, byProb},
		{"top-k and top-p", 3, 0.5, byProb[:3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cand, total := rank(nil, ollamaProbs, tt.k, tt.topP)
			require.Equal(t, tt.want, topK(cand, tt.k))
			if tt.topP < 1 && tt.k <= 0 {
				var sum float64
				for _, v := range ollamaProbs {
					sum += v
				}
				require.Equal(t, sum, total, "top-p alone measures against the whole mass")
			} else {
				require.Zero(t, total)
			}
		})
	}
	// Equal probabilities rank by id.
	cand, _ := rank(nil, []float64{0.5, 1, 0.5, 1}, 3, 1)
	require.Equal(t, []int32{1, 3, 0}, topK(cand, 3))
	// The top-p pre-filter drops only tokens that cannot be kept.
	p := []float64{1, 0.5, 0.001, 0.0001}
	cand, total := rank(nil, p, 0, 0.9)
	require.Equal(t, []int32{0, 1}, cand)
	require.InDelta(t, 1.5011, total, 1e-12)
}

func TestNucleus(t *testing.T) {
	// ollama: TestTopP's logits, as probabilities relative to the top.
	logits := []float64{-3, -2, -1, 0, 1, 2, 4}
	p := make([]float64, len(logits))
	for i, v := range logits {
		p[i] = math.Exp(v - 4)
	}
	ranked := []int32{6, 5, 4, 3, 2, 1, 0}
	tests := []struct {
		name  string
		topP  float64
		total float64
		want  []int32
	}{
		{"1 keeps all", 1, 0, ranked},         // ollama: TestTopP topP(1.0)
		{"0.95", 0.95, 0, ranked[:3]},         // ollama: TestTopP topP(0.95): at most 3
		{"0 keeps the top", 0, 0, ranked[:1]}, // ollama: TestTopP topP(0.0)
		{"tiny keeps the top", 1e-10, 0, ranked[:1]},
		{"0.8", 0.8, 0, ranked[:1]},
		{"0.85", 0.85, 0, ranked[:2]},
		{"against a larger mass", 0.95, 2 * 1.2134, ranked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, nucleus(slices.Clone(ranked), p, tt.topP, tt.total))
		})
	}
}

func TestMinPStep(t *testing.T) {
	// ollama: TestMinP's logits, as probabilities relative to the top.
	logits := []float64{-2, 0, -1, -3, 2, 1, 4, 3}
	p := make([]float64, len(logits))
	for i, v := range logits {
		p[i] = math.Exp(v - 4)
	}
	all := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	tests := []struct {
		name string
		minP float64
		want []int32
	}{
		{"1 keeps the top", 1, []int32{6}}, // ollama: TestMinP minP(1.0)
		{"0.2", 0.2, []int32{6, 7}},        // ollama: TestMinP minP(0.2): at most 3
		{"0 keeps all", 0, all},            // ollama: TestMinP minP(0.0)
		{"0.1", 0.1, []int32{4, 6, 7}},     // e^-2 ≈ 0.135 stays
		{"order kept", 0.3, []int32{6, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, minP(slices.Clone(all), p, tt.minP))
		})
	}
}

func TestDraw(t *testing.T) {
	p := []float64{0.5, 1, 0.25, 0.25}
	cand := []int32{1, 0, 2} // mass 1.75; token 3 is not a candidate
	tests := []struct {
		u    float64
		want int32
	}{
		{0, 1}, {0.5, 1}, {0.57, 1}, {0.58, 0}, {0.85, 0}, {0.86, 2}, {0.999999, 2},
	}
	for _, tt := range tests {
		tok, lp, _ := draw(cand, p, tt.u)
		require.Equal(t, tt.want, tok, "u=%v", tt.u)
		require.InDelta(t, math.Log(p[tt.want]/1.75), float64(lp), 1e-6)
	}
}

// TestSampleAllocs: once warm, sampling allocates nothing, whatever the
// steps in play.
func TestSampleAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, 5000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	seen := []int32{1, 5, 9}
	for _, prm := range []server.SamplingParams{
		{}, {Logprobs: true}, {Temperature: 0.7}, {Temperature: 1, TopK: 40}, {Temperature: 1, TopP: 0.9},
		{Temperature: 0.8, TopK: 50, TopP: 0.95, MinP: 0.05, RepetitionPenalty: 1.1},
	} {
		var s sampler
		s.sample(logits, &prm, seen, nil, r)
		n := testing.AllocsPerRun(20, func() { s.sample(logits, &prm, seen, nil, r) })
		require.Zero(t, n, "%+v", prm)
	}
}

// TestSamplerQwenVocab: at Qwen3's vocabulary the sampler (exp and its sums
// in kernels.ExpShift) draws the tokens a plain math.Exp computation of the
// same steps draws from the same random numbers, with logprobs within
// float32 rounding; greedy logprobs likewise.
func TestSamplerQwenVocab(t *testing.T) {
	const V = 151936
	r := rand.New(rand.NewPCG(11, 12))
	logits := make([]float32, V)
	var s sampler
	for trial := 0; trial < 6; trial++ {
		for i := range logits {
			logits[i] = float32(3 * r.NormFloat64())
		}
		// greedy
		tok, lp := s.sample(logits, &server.SamplingParams{Logprobs: true}, nil, nil, r)
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		var sum float64
		for _, v := range logits {
			sum += math.Exp(float64(v) - float64(logits[best]))
		}
		require.Equal(t, int32(best), tok)
		require.InEpsilon(t, -math.Log(sum), float64(lp), 1e-6)
		// temperature
		temp := []float64{1, 0.7, 1.3}[trial%3]
		prm := server.SamplingParams{Temperature: temp, Logprobs: true}
		z := make([]float64, V)
		mx := math.Inf(-1)
		for i, v := range logits {
			z[i] = float64(v) * (1 / temp)
			mx = math.Max(mx, z[i])
		}
		p := make([]float64, V)
		var total float64
		for i, v := range z {
			p[i] = math.Exp(v - mx)
			total += p[i]
		}
		seed := r.Uint64()
		ours, ref := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
		for range 300 {
			tok, lp := s.sample(logits, &prm, nil, nil, ours)
			u := ref.Float64() * total
			want, cum := int32(V-1), 0.0
			for i, v := range p {
				if cum += v; u < cum {
					want = int32(i)
					break
				}
			}
			require.Equal(t, want, tok, "temperature %v", temp)
			require.InDelta(t, math.Log(p[want]/total), float64(lp), 2e-6)
		}
	}
}

func TestMaxOf(t *testing.T) {
	require.Equal(t, math.Inf(-1), maxOf([]float64{}))
	require.Equal(t, math.Inf(-1), maxOf([]float64{math.Inf(-1)}))
	require.Equal(t, 3.0, maxOf([]float32{1, 3, -2, 3}))
	require.Equal(t, math.Inf(1), maxOf([]float64{1, math.Inf(1), 2}))
	for _, v := range [][]float64{{math.NaN(), 1}, {1, math.NaN()}, {math.Inf(1), math.NaN()}} {
		require.True(t, math.IsNaN(maxOf(v)), "%v", v)
	}
}

// TestDrawAll: the blocked inverse CDF picks the token a token-by-token
// one picks, zero-mass tokens never, at every u on a fine grid, for lengths
// around the block of 8 (masses are small integers: every sum is exact).
func TestDrawAll(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 19, 64} {
		p := make([]float64, n)
		var total float64
		for i := range p {
			p[i] = float64((i * 7) % 5) // 0 every fifth token
			total += p[i]
		}
		if total == 0 {
			p[0], total = 1, 1
		}
		for k := 0; k < 1000; k++ {
			u := float64(k) / 1000
			want, cum := n-1, 0.0
			for i, v := range p {
				if cum += v; u*total < cum {
					want = i
					break
				}
			}
			tok, lp := drawAll(p, total, u)
			require.Equal(t, int32(want), tok, "n=%d u=%v", n, u)
			require.Positive(t, p[tok])
			require.Equal(t, float32(math.Log(p[tok]/total)), lp)
		}
	}
	// A total a little above the masses' sum (another summation order's
	// rounding) and u near 1: past every cumulative sum, the last token
	// with mass, not a zero-mass one.
	p := []float64{1, 2, 0, 0}
	tok, lp := drawAll(p, math.Nextafter(3, 4), math.Nextafter(1, 0))
	require.Equal(t, int32(1), tok)
	require.False(t, math.IsInf(float64(lp), 0))
}
