package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/agentrl/agentrl/cuda/kernels"
)

// A bf16 matrix compressed losslessly: every value comes back bit for bit,
// the products are MatMulBF16's, and the matrix takes about 12 bits a
// weight instead of 16.
func ExampleCPU_CompressBF16() {
	cpu := kernels.NewCPU(1)
	r := rand.New(rand.NewPCG(1, 2))
	w := kernels.NewBF16(64, 1024)
	v := make([]float32, len(w.Data))
	for i := range v {
		v[i] = float32(0.02 * r.NormFloat64()) // weights as initialised
	}
	kernels.ToBF16(w.Data, v)
	z := cpu.CompressBF16(w)

	back := make([]uint16, len(w.Data))
	cpu.DecodeBF16Z(back, z, 0, z.N)
	x := v[:1024] // one token's activations
	y, yz := make([]float32, 64), make([]float32, 64)
	cpu.MatMulBF16(y, x, 1, w, nil)
	cpu.MatMulBF16Z(yz, x, 1, z, nil)

	fmt.Println("lossless:", slices.Equal(back, w.Data))
	fmt.Println("same products:", slices.Equal(y, yz))
	fmt.Printf("bits a weight: %.1f\n", 8*float64(z.Bytes())/float64(z.N*z.K))
	// Output:
	// lossless: true
	// same products: true
	// bits a weight: 12.0
}
