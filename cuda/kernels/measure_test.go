package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMeasure(t *testing.T) {
	c := NewCPU(0)
	require.Greater(t, c.MeasureBandwidth(1<<20, 3), 0.0)
	require.Greater(t, c.MeasureGEMM(16, 64, 64, 3), 0.0)
	require.Greater(t, c.MeasureGEMMBF16(16, 64, 64, 3), 0.0)
	require.Greater(t, c.MeasureGEMMQ8(16, 64, 64, 3), 0.0)
	require.Greater(t, c.MeasureFMAPeak(1), 0.0)
	p := c.NewStreamProbe(1<<20 + 5)
	require.Equal(t, 1<<20, p.Bytes(), "whole 16 KB blocks")
	require.Greater(t, p.Measure(), 0.0)
	require.Equal(t, 4*probeBlock, c.NewStreamProbe(3).Bytes(), "at least one block")
}

func BenchmarkPeak(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := NewCPU(0)
		b.ReportMetric(c.MeasureBandwidth(1<<30, 5)/1e9, "GB/s")
		b.ReportMetric(c.MeasureGEMM(512, 3072, 768, 5)/1e9, "GFLOP/s")
		b.ReportMetric(c.MeasureFMAPeak(5)/1e9, "FMA_GFLOP/s")
		c1 := NewCPU(1)
		b.ReportMetric(c1.MeasureBandwidth(1<<30, 5)/1e9, "GB/s_1thr")
		b.ReportMetric(c1.MeasureGEMM(512, 3072, 768, 5)/1e9, "GFLOP/s_1thr")
	}
}

// BenchmarkStreamProbe alternates the probe's read patterns on one 1 GB
// buffer and 2 threads and reports each one's median rate and the median
// of Measure's best of them.
func BenchmarkStreamProbe(b *testing.B) {
	c := NewCPU(2)
	p := c.NewStreamProbe(1 << 30)
	n := c.streamPatterns()
	rates := make([][]float64, n+1)
	for i := 0; i < b.N; i++ {
		best := 0.0
		for j := range n {
			r := p.measurePattern(j)
			rates[j] = append(rates[j], r)
			best = max(best, r)
		}
		rates[n] = append(rates[n], best)
	}
	names := []string{"plain", "prefetch", "2streams", "4streams"}
	for j := range n {
		b.ReportMetric(median(rates[j])/1e9, names[j]+"_GB/s")
	}
	b.ReportMetric(median(rates[n])/1e9, "best_GB/s")
}
