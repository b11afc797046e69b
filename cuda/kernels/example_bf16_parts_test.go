package kernels_test

import (
	"fmt"

	"github.com/agentrl/agentrl/cuda/kernels"
)

// A fused matrix made of two tensors where they lie (for example in a
// memory-mapped checkpoint): the rows of q, then those of k, used in place.
func ExampleNewBF16Parts() {
	q := make([]uint16, 2*3) // 2 rows × 3
	kernels.ToBF16(q, []float32{1, 2, 3, -1, 0.5, 0})
	k := make([]uint16, 1*3) // 1 row × 3
	kernels.ToBF16(k, []float32{0, 0, 4})
	w := kernels.NewBF16Parts(3, q, k) // 3 × 3, read-only
	fmt.Println(w.N, w.K, w.Parted(), w.Bytes())

	cpu := kernels.NewCPU(1)
	y := make([]float32, 3)
	cpu.MatMulBF16(y, []float32{1, 1, 2}, 1, w, nil)
	fmt.Println(y)

	w.Own() // an owned copy: now it may be written
	w.Data[0] = 0
	fmt.Println(w.Parted(), q[0] != 0)
	// Output:
	// 3 3 true 18
	// [9 -0.5 8]
	// false true
}
