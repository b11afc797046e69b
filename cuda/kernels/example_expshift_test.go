package kernels_test

import (
	"fmt"
	"math"

	"github.com/agentrl/agentrl/cuda/kernels"
)

// ExampleExpShift is a log-softmax: the numerators exp(z − max) and their
// sum in one pass.
func ExampleExpShift() {
	z := []float64{2, 1, 0.5, -3}
	p := make([]float64, len(z))
	sum := kernels.ExpShift(p, z, 2) // 2 = max(z)
	for i := range p {
		fmt.Printf("token %d: p %.4f, logprob %.4f\n", i, p[i]/sum, z[i]-2-math.Log(sum))
	}
	// Output:
	// token 0: p 0.6259, logprob -0.4686
	// token 1: p 0.2302, logprob -1.4686
	// token 2: p 0.1397, logprob -1.9686
	// token 3: p 0.0042, logprob -5.4686
}
