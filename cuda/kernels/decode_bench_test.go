package kernels

import (
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkDecodeShape runs every matrix-vector product of one batch-1
// decode step at the Qwen3-0.6B shape (28 layers of q|k|v 4096×1024,
// o 1024×2048, gate|up 6144×1024, down 1024×3072, then the 151,936×1024
// head) and at the Qwen3-1.7B shape (hidden 2048, MLP 6144: q|k|v
// 4096×2048, o 2048×2048, gate|up 12288×2048, down 2048×6144, head
// 151,936×2048), in bf16, fp32 and int8, each weight read once from
// memory, and reports the bytes streamed per second as a fraction of the
// best streaming read by the same threads (a StreamProbe, 1 GB: far beyond
// the caches, so its rate does not depend on the size), measured right
// before each step: frac_of_bound is the median of those per-step ratios,
// best_frac the fastest step against the fastest probe (on a shared
// machine, the pair least disturbed by other work); cpu_GB/s and cpu_frac
// are the same per CPU second of the threads (see processCPU).
func BenchmarkDecodeShape(b *testing.B) {
	for _, size := range []struct {
		name          string
		hidden, inter int
	}{{"0.6B", 1024, 3072}, {"1.7B", 2048, 6144}} {
		var shapes []shape
		for range 28 {
			shapes = append(shapes, shape{4096, size.hidden}, shape{size.hidden, 2048},
				shape{2 * size.inter, size.hidden}, shape{size.hidden, size.inter})
		}
		shapes = append(shapes, shape{151936, size.hidden})
		for _, typ := range []string{"bf16", "fp32", "int8"} {
			b.Run(size.name+"/"+typ, func(b *testing.B) {
				benchDecodeStep(b, typ, shapes)
			})
		}
	}
}

// processCPU is the CPU time the process has used, in seconds: on a
// loaded machine, bytes per CPU second of the threads (CPU time divided by
// the thread count) counts only the time they ran, which wall time does
// not. The helper's spinning between and at the end of operations counts,
// as it should (a thread waiting for the other does no reading). It
// overstates the rate when one thread runs alone while the other is
// descheduled (that one gets the whole memory bandwidth), for the probe as
// for the kernels.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// shape is one n×k weight matrix of a decode step.
type shape struct{ n, k int }

func benchDecodeStep(b *testing.B, typ string, shapes []shape) {
	c := NewCPU(2)
	r := rand.New(rand.NewPCG(3, 3))
	var mul []func(y, x []float32)
	bytes := 0
	for _, s := range shapes {
		switch typ {
		case "bf16":
			w := NewBF16(s.n, s.k)
			for i := range w.Data {
				w.Data[i] = 0x3f80 + uint16(i%7)
			}
			mul = append(mul, func(y, x []float32) { c.MatMulBF16(y, x, 1, w, nil) })
			bytes += int(w.Bytes())
		case "fp32":
			p := NewPacked(s.n, s.k)
			for i := range p.Data {
				p.Data[i] = float32(i%7) - 3
			}
			mul = append(mul, func(y, x []float32) { c.MatMul(y, x, 1, p, nil) })
			bytes += 4 * s.n * s.k
		case "int8":
			// The values do not matter for the timing: bytes in a
			// pattern and scales of 1 instead of quantizing gigabytes.
			w := NewQ8(s.n, s.k)
			for i := range w.Q {
				w.Q[i] = uint8(i * 7)
			}
			for i := range w.D {
				w.D[i] = 0x3c00
			}
			mul = append(mul, func(y, x []float32) { c.MatMulQ8(y, x, 1, w, nil) })
			bytes += int(w.Bytes())
		}
	}
	x := randSlice(r, 8192)
	y := make([]float32, 151936)
	probe := c.NewStreamProbe(1 << 30)
	var fracs, rates, bws, cpuFracs, cpuRates []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c0 := processCPU()
		bw := probe.Measure()
		// The probe's CPU time covers its four patterns: per pattern, the
		// best rate per CPU second of the threads.
		cpuBW := float64(probe.Bytes()) * float64(c.streamPatterns()) / ((processCPU() - c0) / float64(c.Threads()))
		bws = append(bws, bw)
		b.StartTimer()
		c0 = processCPU()
		start := time.Now()
		for j, s := range shapes {
			mul[j](y[:s.n], x[:s.k])
		}
		rate := float64(bytes) / time.Since(start).Seconds()
		cpuRate := float64(bytes) / ((processCPU() - c0) / float64(c.Threads()))
		rates = append(rates, rate)
		fracs = append(fracs, rate/bw)
		cpuRates = append(cpuRates, cpuRate)
		cpuFracs = append(cpuFracs, cpuRate/cpuBW)
	}
	b.ReportMetric(median(rates)/1e9, "GB/s")
	b.ReportMetric(median(bws)/1e9, "probe_GB/s")
	b.ReportMetric(median(fracs), "frac_of_bound")
	b.ReportMetric(slices.Max(rates)/slices.Max(bws), "best_frac")
	b.ReportMetric(median(cpuRates)/1e9, "cpu_GB/s")
	b.ReportMetric(median(cpuFracs), "cpu_frac")
	b.ReportMetric(float64(bytes)/1e6, "MB/step")
}
