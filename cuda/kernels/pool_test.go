package kernels

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentCallers: products and row ops from several goroutines on
// one CPU (one of them holds the pool, the others compute alone on their
// own threads) give the single-threaded bits.
func TestConcurrentCallers(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const m, n, k = 33, 300, 70
	wf := randSlice(r, n*k)
	one := NewCPU(1)
	p := one.Pack(wf, n, k)
	wb := NewBF16(n, k)
	ToBF16(wb.Data, wf)
	x := randSlice(r, m*k)
	norm := randSlice(r, k)
	want := make([]float32, m*n)
	one.MatMul(want, x, m, p, nil)
	wantB := make([]float32, m*n)
	one.MatMulBF16(wantB, x, m, wb, nil)
	wantN := make([]float32, 600*k)
	xs := randSlice(r, 600*k)
	one.RMSNorm(wantN, xs, norm, 1e-6)
	c := NewCPU(2)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				got := make([]float32, m*n)
				c.MatMul(got, x, m, p, nil)
				gotB := make([]float32, m*n)
				c.MatMulBF16(gotB, x, m, wb, nil)
				gotN := make([]float32, len(xs))
				c.RMSNorm(gotN, xs, norm, 1e-6)
				if !assert.Equal(t, want, got) || !assert.Equal(t, wantB, gotB) || !assert.Equal(t, wantN, gotN) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// serialProduct draws an n×k matrix and m tokens from seed and returns
// them packed with their product on one thread.
func serialProduct(seed uint64, m, n, k int) (p *Packed, x, want []float32) {
	r := rand.New(rand.NewPCG(seed, seed))
	one := NewCPU(1)
	p = one.Pack(randSlice(r, n*k), n, k)
	x = randSlice(r, m*k)
	want = make([]float32, m*n)
	one.MatMul(want, x, m, p, nil)
	return p, x, want
}

// TestPoolThreadsExitWhenIdle: the pool starts at most threads−1 helper
// threads for a product, they exit once the CPU has been idle a while,
// and the next product starts them again with the same bits.
func TestPoolThreadsExitWhenIdle(t *testing.T) {
	const m, n = 4, 4096
	p, x, want := serialProduct(10, m, n, 64)
	assert.Zero(t, NewCPU(1).poolThreads(), "one thread: no pool")
	c := NewCPU(3)
	assert.Zero(t, c.poolThreads(), "threads start on first use")
	for round := 0; round < 2; round++ {
		require.Eventually(t, func() bool {
			got := make([]float32, m*n)
			c.MatMul(got, x, m, p, nil)
			return assert.Equal(t, want, got) && c.poolThreads() > 0
		}, 10*time.Second, time.Millisecond, "no helper thread started")
		assert.LessOrEqual(t, c.poolThreads(), 2)
		require.Eventually(t, func() bool { return c.poolThreads() == 0 }, 10*time.Second, 5*time.Millisecond,
			"the pool's threads outlive an idle CPU")
	}
}

// TestPoolFreedWithCPU: CPUs dropped right after a product (their helper
// threads still spinning) are freed by their cleanup, which waits for the
// threads to exit, without a crash or a hang; a later CPU works as before.
func TestPoolFreedWithCPU(t *testing.T) {
	const m, n = 2, 2048
	p, x, want := serialProduct(11, m, n, 32)
	for i := 0; i < 20; i++ {
		got := make([]float32, m*n)
		NewCPU(2).MatMul(got, x, m, p, nil)
		require.Equal(t, want, got)
		runtime.GC()
	}
	got := make([]float32, m*n)
	NewCPU(2).MatMul(got, x, m, p, nil)
	assert.Equal(t, want, got)
}
