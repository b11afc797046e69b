package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A crew is a CPU's helper goroutines, for Go work between kernel calls
// (Split); the kernels themselves run on the pool's threads (pool.c),
// because goroutines in long cgo calls make the runtime juggle OS threads.
// A forward pass is a chain of
// kernel calls of 0.05–1 ms each; starting a goroutine for every call
// means waking the idle core's OS thread every time, which costs tens of
// microseconds here, and the caller meanwhile computes the helper's
// share alone (measured: a 32-row GEMM with weights from memory scaled
// 1.4–1.65× on two threads that way, against 2× for the same C kernel on
// two persistent threads). Helpers instead stay: after a task they spin
// for spinFor watching for the next one, then park, and exit once parked
// for idleFor, so an idle engine burns no CPU and leaves no goroutines
// behind (goleak-clean in tests).
//
// Results never depend on the crew: a task's chunks are computed the same
// way whichever goroutine takes them, and the caller takes chunks too, so
// a task completes even if no helper ever shows up.
type crew struct {
	busy   sync.Mutex // one task at a time; a concurrent caller uses goroutines of its own
	mu     sync.Mutex // guards alive
	alive  int
	seq    atomic.Uint64        // bumped for every task offered
	cur    atomic.Pointer[task] // the task offered last (nil once it completed)
	parked atomic.Int32
	wake   chan struct{}
}

const (
	spinFor = 200 * time.Microsecond
	idleFor = 20 * time.Millisecond
)

// task is one parallel operation: f over [0,n) in chunks taken from next.
type task struct {
	f        func(lo, hi int)
	n, chunk int
	next     atomic.Int64
	left     atomic.Int64 // chunks not finished yet
}

// work takes chunks until none are left.
func (t *task) work() {
	for {
		lo := int(t.next.Add(int64(t.chunk))) - t.chunk
		if lo >= t.n {
			return
		}
		t.f(lo, min(lo+t.chunk, t.n))
		t.left.Add(-1)
	}
}

// wait returns once every chunk is finished. The caller spins instead of
// blocking: blocking would hand its P away, and being woken again goes
// through a helper's P, which a spinning helper holds (measured: slower
// than starting goroutines). Gosched lets a helper that shares the
// caller's P (GOMAXPROCS below the thread count) finish its chunk.
func (t *task) wait() {
	for i := 0; t.left.Load() > 0; i++ {
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
}

func newCrew(helpers int) *crew { return &crew{wake: make(chan struct{}, max(helpers, 1))} }

// run runs f over [0,n) in chunks of chunk with the caller and up to
// helpers crew goroutines, and returns when every chunk is done.
func (cw *crew) run(helpers, n, chunk int, f func(lo, hi int)) {
	t := &task{f: f, n: n, chunk: chunk}
	t.left.Store(int64((n + chunk - 1) / chunk))
	if !cw.busy.TryLock() {
		// Another goroutine's task holds the crew: bring our own helpers.
		var wg sync.WaitGroup
		for i := 0; i < helpers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.work()
			}()
		}
		t.work()
		wg.Wait()
		return
	}
	defer cw.busy.Unlock()
	cw.cur.Store(t)
	cw.seq.Add(1)
	cw.mu.Lock()
	for ; cw.alive < helpers; cw.alive++ {
		go cw.helper()
	}
	cw.mu.Unlock()
	for i := cw.parked.Load(); i > 0; i-- {
		select {
		case cw.wake <- struct{}{}:
		default:
		}
	}
	t.work()
	t.wait()
	cw.cur.CompareAndSwap(t, nil) // drop the reference to f and its buffers
}

// helper is a crew goroutine: it works on every task offered, spinning
// between tasks for spinFor, then parking until woken or idleFor passes.
func (cw *crew) helper() {
	var seen uint64
	for {
		if s := cw.seq.Load(); s != seen {
			seen = s
			if t := cw.cur.Load(); t != nil {
				t.work()
			}
			continue
		}
		if cw.spin(seen) {
			continue
		}
		cw.parked.Add(1)
		if cw.seq.Load() != seen { // offered while we decided to park
			cw.parked.Add(-1)
			continue
		}
		idle := time.NewTimer(idleFor)
		select {
		case <-cw.wake:
			idle.Stop()
			cw.parked.Add(-1)
		case <-idle.C:
			cw.parked.Add(-1)
			cw.mu.Lock()
			if cw.seq.Load() != seen { // a task came in meanwhile: stay for it
				cw.mu.Unlock()
				continue
			}
			cw.alive--
			cw.mu.Unlock()
			return
		}
	}
}

// spin watches for a task after seen for up to spinFor and reports
// whether one came. It yields now and then so that a goroutine queued on
// this P (a caller woken by the runtime, say) is not kept waiting.
func (cw *crew) spin(seen uint64) bool {
	deadline := time.Now().Add(spinFor)
	for i := 0; ; i++ {
		if cw.seq.Load() != seen {
			return true
		}
		if i%64 == 63 {
			runtime.Gosched()
			if time.Now().After(deadline) {
				return false
			}
		}
	}
}
