//go:build cuda

package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/stretchr/testify/require"
)

func device(t *testing.T) *Device {
	if !Available() {
		t.Skip("no CUDA device: the CUDA kernels are compile-checked only")
	}
	d, err := Open()
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func randn(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func up(t *testing.T, d *Device, v []float32) *Buffer {
	b, err := d.Upload(v)
	require.NoError(t, err)
	t.Cleanup(func() { d.Free(b) })
	return b
}

func upi(t *testing.T, d *Device, v []int32) *Buffer {
	b, err := d.UploadInts(v)
	require.NoError(t, err)
	t.Cleanup(func() { d.Free(b) })
	return b
}

func down(t *testing.T, d *Device, b *Buffer) []float32 {
	v, err := d.Download(b)
	require.NoError(t, err)
	return v
}

func near(t *testing.T, want, got []float32, tol float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], tol*(1+math.Abs(float64(want[i]))), "index %d", i)
	}
}

// TestKernelsMatchCPU runs every CUDA kernel on random data and compares it
// with the CPU kernels.
func TestKernelsMatchCPU(t *testing.T) {
	d := device(t)
	cpu := kernels.NewCPU(1)
	r := rand.New(rand.NewPCG(1, 2))
	const T, K, N = 7, 96, 80

	x, w, bias := randn(r, T*K), randn(r, N*K), randn(r, N)
	want := make([]float32, T*N)
	cpu.MatMul(want, x, T, cpu.Pack(w, N, K), bias)
	y := up(t, d, make([]float32, T*N))
	require.NoError(t, d.MatMul(y, up(t, d, x), T, up(t, d, w), N, K, up(t, d, bias)))
	near(t, want, down(t, d, y), 1e-5)

	nw := randn(r, K)
	wantN := make([]float32, T*K)
	cpu.RMSNorm(wantN, x, nw, 1e-6)
	yn := up(t, d, make([]float32, T*K))
	require.NoError(t, d.RMSNorm(yn, up(t, d, x), up(t, d, nw), 1e-6))
	near(t, wantN, down(t, d, yn), 1e-5)

	const heads, hd = 4, 16
	pos := []int32{0, 3, 9, 100, 5, 6, 7}
	inv := make([]float32, hd/2)
	for i := range inv {
		inv[i] = float32(1 / math.Pow(10000, float64(2*i)/hd))
	}
	xr := randn(r, T*K)
	gx := up(t, d, xr)
	cpu.RoPE(xr, K, heads, hd, pos, inv)
	require.NoError(t, d.RoPE(gx, K, heads, hd, upi(t, d, pos), up(t, d, inv)))
	near(t, xr, down(t, d, gx), 1e-5)

	gu := randn(r, T*2*N)
	wantS := make([]float32, T*N)
	cpu.SwiGLU(wantS, gu, T, N)
	ys := up(t, d, make([]float32, T*N))
	require.NoError(t, d.SwiGLU(ys, up(t, d, gu), T, N))
	near(t, wantS, down(t, d, ys), 1e-5)

	a, b := randn(r, 50), randn(r, 50)
	ga := up(t, d, a)
	require.NoError(t, d.Add(ga, up(t, d, b)))
	cpu.Add(a, b)
	near(t, a, down(t, d, ga), 0)

	table := randn(r, 10*8)
	ids := []int32{3, 0, 9, 3}
	ge := up(t, d, make([]float32, 4*8))
	require.NoError(t, d.Embed(ge, up(t, d, table), upi(t, d, ids), 8))
	var wantE []float32
	for _, id := range ids {
		wantE = append(wantE, table[id*8:(id+1)*8]...)
	}
	near(t, wantE, down(t, d, ge), 0)
}

func TestAttentionMatchesCPU(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(3, 4))
	const heads, kvHeads, hd, bs, n, slots = 8, 2, 32, 4, 13, 24
	table := []int32{5, 1, 3, 0}
	kc, vc := randn(r, slots*kvHeads*hd), randn(r, slots*kvHeads*hd)
	q := randn(r, n*heads*hd)
	pos, off := make([]int32, n), make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	scale := float32(1 / math.Sqrt(hd))
	want := make([]float32, n*heads*hd)
	kernels.NewCPU(1).Attend(want, q, &kernels.Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs, Scale: scale,
		K: kc, V: vc, Pos: pos, TableOff: off, Tables: table})
	out := up(t, d, make([]float32, n*heads*hd))
	require.NoError(t, d.Attend(out, up(t, d, q), &Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs, Scale: scale,
		K: up(t, d, kc), V: up(t, d, vc), Pos: upi(t, d, pos), TableOff: upi(t, d, off), Tables: upi(t, d, table),
		Scratch: up(t, d, make([]float32, n*heads*16)), MaxContext: 16}))
	near(t, want, down(t, d, out), 1e-5)

	// StoreKV writes rows to their slots.
	k, v := randn(r, 2*kvHeads*hd), randn(r, 2*kvHeads*hd)
	gk, gv := up(t, d, make([]float32, slots*kvHeads*hd)), up(t, d, make([]float32, slots*kvHeads*hd))
	require.NoError(t, d.StoreKV(gk, gv, up(t, d, k), up(t, d, v), upi(t, d, []int32{7, 2}), kvHeads*hd))
	hk := down(t, d, gk)
	w := kvHeads * hd
	near(t, k[:w], hk[7*w:8*w], 0)
	near(t, k[w:], hk[2*w:3*w], 0)
}

// TestBufferViewsAndCopies covers the host↔device copies at offsets,
// views, and Copy2D cutting q, k and v out of a fused q|k|v matrix, against
// the same split done on the host.
func TestBufferViewsAndCopies(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(5, 6))
	const rows, qd, kvd = 5, 12, 4
	w := qd + 2*kvd
	qkv := randn(r, rows*w)
	g := up(t, d, make([]float32, rows*w+3))
	require.NoError(t, d.Write(g, 3, qkv))
	require.Error(t, d.Write(g, 4, qkv), "past the end")
	src := g.Slice(3, rows*w)
	for _, c := range []struct{ off, width int }{{0, qd}, {qd, kvd}, {qd + kvd, kvd}} {
		want := make([]float32, 0, rows*c.width)
		for i := 0; i < rows; i++ {
			want = append(want, qkv[i*w+c.off:i*w+c.off+c.width]...)
		}
		dst := up(t, d, make([]float32, rows*c.width))
		require.NoError(t, d.Copy2D(dst, c.width, src.Slice(c.off, rows*w-c.off), w, c.width, rows))
		got := make([]float32, rows*c.width)
		require.NoError(t, d.Read(got, dst))
		near(t, want, got, 0)
	}
	require.Error(t, d.Copy2D(g, 4, src.Slice(qd, 8), w, kvd, rows), "source too short for the rows")
	require.Error(t, d.Free(src), "views are not freed")

	ids := []int32{9, -3, 7}
	gi := upi(t, d, make([]int32, 4))
	require.NoError(t, d.WriteInts(gi, 1, ids))
	require.Error(t, d.WriteInts(gi, 2, ids))
	back, err := d.Download(gi.Slice(1, 3))
	require.NoError(t, err)
	for i, id := range ids {
		require.Equal(t, id, int32(math.Float32bits(back[i])))
	}
	require.Panics(t, func() { g.Slice(1, g.N) })
}
