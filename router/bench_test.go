package router

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// nop is the cheapest possible engine, so benchmarks measure the router.
type nop struct{}

func (nop) Generate(context.Context, server.GenerateRequest) (server.TokenOutput, error) {
	return server.TokenOutput{StopReason: server.StopEOS}, nil
}

func benchRouter(tb testing.TB, n int, cfg Config) *Router {
	bs := make([]Backend, n)
	for i := range bs {
		bs[i] = Backend{Name: fmt.Sprintf("srv%02d", i), Server: nop{}}
	}
	r, err := New(cfg, bs...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

// sessionIDs are placed once so the benchmarks measure sticky hits.
func sessionIDs(tb testing.TB, r *Router, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("traj-%d", i)
		b, err := r.acquire(ids[i], "", nil)
		require.NoError(tb, err)
		r.release(b, outcomeSuccess)
	}
	return ids
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		rid  string
		gid  string
	}{
		{"least loaded", Config{}, "", ""},
		{"sticky hit", Config{}, "traj-1", ""},
		{"group hit", Config{}, "", "group-1"},
		{"deterministic sticky hit", Config{Deterministic: true}, "traj-1", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := benchRouter(t, 64, tt.cfg)
			b, err := r.acquire(tt.rid, tt.gid, nil) // places the session or group
			require.NoError(t, err)
			r.release(b, outcomeSuccess)
			allocs := testing.AllocsPerRun(1000, func() {
				b, _ := r.acquire(tt.rid, tt.gid, nil)
				r.release(b, outcomeSuccess)
			})
			require.Zero(t, allocs)
		})
	}
}

// parallelism makes RunParallel use 16 goroutines whatever GOMAXPROCS is.
func parallelism() int {
	p := runtime.GOMAXPROCS(0)
	return (16 + p - 1) / p
}

func BenchmarkAcquireRelease(b *testing.B) {
	for _, tt := range []struct {
		name     string
		cfg      Config
		sessions bool
	}{
		{"least-loaded", Config{}, false},
		{"sticky", Config{}, true},
		{"deterministic", Config{Deterministic: true}, true},
	} {
		b.Run(fmt.Sprintf("%s/servers=64/goroutines=16", tt.name), func(b *testing.B) {
			r := benchRouter(b, 64, tt.cfg)
			var ids []string
			if tt.sessions {
				ids = sessionIDs(b, r, 4096)
			}
			var seq atomic.Int64
			b.SetParallelism(parallelism())
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(seq.Add(1)) * 7919
				for pb.Next() {
					rid := ""
					if ids != nil {
						rid = ids[i%len(ids)]
						i++
					}
					be, err := r.acquire(rid, "", nil)
					if err != nil {
						b.Error(err)
						return
					}
					r.release(be, outcomeSuccess)
				}
			})
		})
	}
}

// linearScan is the simplest balancer (a mutex and a scan for the least
// loaded of n counters), as a side-by-side baseline for the heap.
type linearScan struct {
	mu       sync.Mutex
	inflight []int
}

func (l *linearScan) acquire() int {
	l.mu.Lock()
	best := 0
	for i, n := range l.inflight {
		if n < l.inflight[best] {
			best = i
		}
	}
	l.inflight[best]++
	l.mu.Unlock()
	return best
}

func (l *linearScan) release(i int) {
	l.mu.Lock()
	l.inflight[i]--
	l.mu.Unlock()
}

func BenchmarkLinearScanBaseline(b *testing.B) {
	l := &linearScan{inflight: make([]int, 64)}
	b.SetParallelism(parallelism())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.release(l.acquire())
		}
	})
}

// BenchmarkGenerate compares a call through the router with the same call
// made on the engine directly.
func BenchmarkGenerate(b *testing.B) {
	req := server.GenerateRequest{PromptIDs: []int32{1, 2, 3}}
	b.Run("direct", func(b *testing.B) {
		var srv server.LLMServer = nop{}
		b.SetParallelism(parallelism())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			rq := req
			rq.RequestID = "traj"
			for pb.Next() {
				if _, err := srv.Generate(context.Background(), rq); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("router/servers=64", func(b *testing.B) {
		r := benchRouter(b, 64, Config{})
		var seq atomic.Int64
		b.SetParallelism(parallelism())
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			rq := req
			rq.RequestID = fmt.Sprintf("traj-%d", seq.Add(1))
			for pb.Next() {
				if _, err := r.Generate(context.Background(), rq); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
