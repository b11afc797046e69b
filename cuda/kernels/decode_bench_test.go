package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkDecodeShape runs every matrix-vector product of one batch-1
// decode step at the Qwen3-0.6B shape (28 layers of q|k|v 4096×1024,
// o 1024×2048, gate|up 6144×1024, down 1024×3072, then the 151,936×1024
// head), each weight read once from memory, and reports the bytes streamed
// per second as a fraction of a streaming read of the same bytes by the
// same threads (a StreamProbe), measured right before each step:
// frac_of_bound is the median of those per-step ratios, best_frac the
// fastest step against the fastest probe (on a shared machine, the pair
// least disturbed by other work).
func BenchmarkDecodeShape(b *testing.B) {
	type shape struct{ n, k int }
	var shapes []shape
	for range 28 {
		shapes = append(shapes, shape{4096, 1024}, shape{1024, 2048}, shape{6144, 1024}, shape{1024, 3072})
	}
	shapes = append(shapes, shape{151936, 1024})
	r := rand.New(rand.NewPCG(3, 3))
	for _, typ := range []string{"bf16", "fp32"} {
		b.Run(typ, func(b *testing.B) {
			c := NewCPU(2)
			var bfs []*BF16
			var fps []*Packed
			bytes := 0
			for _, s := range shapes {
				if typ == "bf16" {
					w := NewBF16(s.n, s.k)
					for i := range w.Data {
						w.Data[i] = 0x3f80 + uint16(i%7)
					}
					bfs = append(bfs, w)
					bytes += 2 * s.n * s.k
				} else {
					p := NewPacked(s.n, s.k)
					for i := range p.Data {
						p.Data[i] = float32(i%7) - 3
					}
					fps = append(fps, p)
					bytes += 4 * s.n * s.k
				}
			}
			x := randSlice(r, 3072)
			y := make([]float32, 151936)
			probe := c.NewStreamProbe(bytes)
			var fracs, rates, bws []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				bw := probe.Measure()
				bws = append(bws, bw)
				b.StartTimer()
				start := time.Now()
				for j, s := range shapes {
					if typ == "bf16" {
						c.MatMulBF16(y[:s.n], x[:s.k], 1, bfs[j], nil)
					} else {
						c.MatMul(y[:s.n], x[:s.k], 1, fps[j], nil)
					}
				}
				rate := float64(bytes) / time.Since(start).Seconds()
				rates = append(rates, rate)
				fracs = append(fracs, rate/bw)
			}
			b.ReportMetric(median(rates)/1e9, "GB/s")
			b.ReportMetric(median(fracs), "frac_of_bound")
			b.ReportMetric(slices.Max(rates)/slices.Max(bws), "best_frac")
			b.ReportMetric(float64(bytes)/1e6, "MB/step")
		})
	}
}
