package vision

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkProcess is the processor's throughput (resize, rescale,
// normalize, patchify) on a decoded image; testdata/bench_tjs.mjs times
// transformers.js' processor on the same files for BENCHMARKS.md.
func BenchmarkProcess(b *testing.B) {
	for _, name := range []string{"rgb_448x448_smooth.png", "rgb_1920x1080_xor.png", "jpeg_1920x1080.jpg"} {
		data, err := os.ReadFile(filepath.Join("testdata", "images", name))
		if err != nil {
			b.Fatal(err)
		}
		img, err := Decode(data, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		for _, cfg := range []struct {
			name string
			c    Config
		}{{"qwen2vl", Qwen2VLConfig()}, {"qwen3vl", Qwen3VLConfig()}} {
			p, err := NewProcessor(cfg.c)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(name+"/"+cfg.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := p.Process(img); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
			})
			b.Run(name+"/"+cfg.name+"/decode", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					im, err := Decode(data, Limits{})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.Process(im); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
			})
		}
	}
}
