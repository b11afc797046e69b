package train

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/agentrl/agentrl/cuda/model"
)

// FuzzForwardBackward feeds arbitrary token rows (ids may be negative or
// past the vocabulary, rows empty or too long) and arbitrary gradients: the
// model must either reject them with ErrInput or run both passes, never
// panic or write out of bounds.
func FuzzForwardBackward(f *testing.F) {
	cfg := &model.Config{ModelType: model.Qwen2, VocabSize: 40, HiddenSize: 16, IntermediateSize: 24,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8,
		RMSNormEps: 1e-6, RopeTheta: 10000, MaxPositionEmbeddings: 24, TieWordEmbeddings: true}
	m, err := New(cfg, model.RandomWeights(cfg, 9), Options{Threads: 2})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{3, 1, 2, 3, 2, 7, 8}, []byte{1, 2, 3})
	f.Add([]byte{0}, []byte{})
	f.Add([]byte{2, 255, 0, 1, 39}, []byte{9})
	f.Add([]byte{30, 1, 1, 1}, []byte{200, 100})
	f.Fuzz(func(t *testing.T, spec, grads []byte) {
		// spec: length byte, then that many ids (one byte each, id = b - 8
		// so some are negative and some past the vocabulary), repeated.
		var rows [][]int32
		for len(spec) > 0 && len(rows) < 6 {
			n := int(spec[0])
			spec = spec[1:]
			row := make([]int32, 0, n)
			for i := 0; i < n && len(spec) > 0; i++ {
				row = append(row, int32(spec[0])-8)
				spec = spec[1:]
			}
			rows = append(rows, row)
		}
		lp, err := m.Forward(rows)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("Forward error %v does not wrap ErrInput", err)
			}
			return
		}
		d := make([][]float32, len(lp))
		k := 0
		for r := range lp {
			d[r] = make([]float32, len(lp[r]))
			for j := range d[r] {
				if k+2 <= len(grads) {
					d[r][j] = float32(int16(binary.LittleEndian.Uint16(grads[k:]))) / 1000
					k += 2
				}
			}
		}
		if err := m.Backward(d); err != nil {
			t.Fatalf("Backward on a valid shape: %v", err)
		}
		m.ZeroGrad()
	})
}
