package kernels_test

import (
	"fmt"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
)

// Checkpoint rows go straight from their bytes into the kernels' layouts:
// here two bf16 rows of 32 into a packed fp32 matrix and into int8.
func ExampleCPU_PackRowsFrom() {
	const n, k = 2, 32
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(i%7-3) / 4
	}
	raw := safetensors.BF16Bytes(w) // as a BF16 tensor's data in the file

	cpu := kernels.NewCPU(1)
	p := kernels.NewPacked(n, k)
	cpu.PackRowsFrom(p, 0, raw, kernels.SourceBF16, n)
	q := kernels.NewQ8(n, k)
	q.QuantizeRowsFrom(0, raw, kernels.SourceBF16, n, make([]float32, k))

	x := make([]float32, k)
	x[1], x[2] = 1, 1 // y = W[:,1] + W[:,2]
	y, yq := make([]float32, n), make([]float32, n)
	cpu.MatMul(y, x, 1, p, nil)
	cpu.MatMulQ8(yq, x, 1, q, nil)
	fmt.Printf("fp32 %v, int8 %.3f\n", y, yq)
	// Output: fp32 [-0.75 1.25], int8 [-0.750 1.252]
}
