// Helper threads for the kernels' parallel loops.
//
// Why threads of our own instead of goroutines: a decode step is ~110
// matrix products of 20 µs–2 ms each, and with goroutines both of a
// two-core machine's Ps sit in long cgo calls at once. The Go runtime's
// sysmon then takes the Ps back from the calls, hands them to fresh OS
// threads that spin looking for work, and on return the calling threads
// have to get a P again, often by sleeping: ~10 context switches per
// product and a third and fourth thread competing for the two cores. The
// same products, kernel and chunking driven by one cgo call and a helper
// thread here read 1.2–1.8× as many bytes per second (a 1.7B-shape bf16
// step: 48 vs 41 and 72 vs 40 GB/s in two runs; 46,000 against 800
// context switches in 30 steps). With one thread in a cgo call the other
// P stays idle, and sysmon leaves a call alone while a P is idle.
//
// Helpers spin for a while after an operation (the next one follows within
// microseconds in a forward pass), then sleep on a condition variable, and
// exit once idle for longer still, so an idle engine keeps no threads.
// They block every asynchronous signal (the Go runtime's own threads
// handle those); synchronous faults (SIGBUS from a truncated mapping, see
// mapguard.c) reach the process's handlers as on any thread.
#define _GNU_SOURCE
#include "pool.h"

#include <errno.h>
#include <immintrin.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

enum {
	SPIN_NS = 200 * 1000,       // spin this long after an operation
	IDLE_NS = 20 * 1000 * 1000, // then sleep, and exit after this long idle
};

// A task is one operation. It is allocated per operation and reference
// counted (under the pool's mutex): a helper that took it may still be
// looking at its counter after the caller has seen every chunk finish.
typedef struct task {
	agl_chunk_fn f;
	const void* args;
	int64_t n, chunk;
	int helpers;
	int refs; // guarded by the pool's mu
	_Atomic int64_t next;
	_Atomic int64_t left; // chunks not finished yet
	_Atomic int ids;      // helpers that joined
} task;

struct agl_pool {
	pthread_mutex_t busy; // one operation at a time
	pthread_mutex_t mu;   // guards cur, alive, quit, refs
	pthread_cond_t wake;  // helpers sleep here
	pthread_cond_t gone;  // agl_pool_free waits here for alive == 0
	task* cur;            // the operation offered last, NULL once done
	int alive, quit, max_helpers;
	_Atomic uint64_t seq; // bumped for every operation offered
	_Atomic int sleeping;
};

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void work(task* t, int worker) {
	for (;;) {
		int64_t lo = atomic_fetch_add(&t->next, t->chunk);
		if (lo >= t->n) return;
		int64_t hi = lo + t->chunk < t->n ? lo + t->chunk : t->n;
		t->f(t->args, worker, lo, hi);
		atomic_fetch_sub(&t->left, 1);
	}
}

static void release(agl_pool* p, task* t) {
	// p->mu held
	if (--t->refs == 0) free(t);
}

// join takes the task offered last, if any, and works on it.
static void join(agl_pool* p) {
	pthread_mutex_lock(&p->mu);
	task* t = p->cur;
	if (t) t->refs++;
	pthread_mutex_unlock(&p->mu);
	if (!t) return;
	int id = atomic_fetch_add(&t->ids, 1) + 1;
	if (id <= t->helpers) work(t, id);
	pthread_mutex_lock(&p->mu);
	release(p, t);
	pthread_mutex_unlock(&p->mu);
}

static void* helper(void* arg) {
	agl_pool* p = arg;
	uint64_t seen = atomic_load(&p->seq);
	// A helper is started for an operation already in cur, whose bump of
	// seq may or may not have happened yet: one behind either way, so the
	// helper joins it at once (a second join of the same task finds its
	// share taken and does nothing).
	if (seen > 0) seen--;
	for (;;) {
		uint64_t s = atomic_load(&p->seq);
		if (s != seen) {
			seen = s;
			join(p);
			continue;
		}
		int64_t deadline = now_ns() + SPIN_NS;
		int got = 0;
		for (int i = 0; !got; i++) {
			_mm_pause();
			if (atomic_load_explicit(&p->seq, memory_order_relaxed) != seen) got = 1;
			else if ((i & 255) == 255 && now_ns() > deadline) break;
		}
		if (got) continue;
		pthread_mutex_lock(&p->mu);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += IDLE_NS;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		int timedout = 0;
		atomic_fetch_add(&p->sleeping, 1);
		while (!p->quit && atomic_load(&p->seq) == seen && !timedout)
			timedout = pthread_cond_timedwait(&p->wake, &p->mu, &until) == ETIMEDOUT;
		atomic_fetch_sub(&p->sleeping, 1);
		if (p->quit || (timedout && atomic_load(&p->seq) == seen)) {
			p->alive--;
			pthread_cond_broadcast(&p->gone);
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		pthread_mutex_unlock(&p->mu);
	}
}

agl_pool* agl_pool_new(int max_helpers) {
	agl_pool* p = calloc(1, sizeof(agl_pool));
	if (!p) return NULL;
	pthread_mutex_init(&p->busy, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&p->gone, NULL);
	p->max_helpers = max_helpers < 0 ? 0 : max_helpers;
	return p;
}

void agl_pool_free(agl_pool* p) {
	if (!p) return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->wake);
	while (p->alive > 0) pthread_cond_wait(&p->gone, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_destroy(&p->busy);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->gone);
	free(p);
}

int agl_pool_alive(agl_pool* p) {
	if (!p) return 0;
	pthread_mutex_lock(&p->mu);
	int n = p->alive;
	pthread_mutex_unlock(&p->mu);
	return n;
}

// start brings the pool up to want helpers (p->mu held). A thread that
// cannot be started only means fewer helpers: the caller computes every
// chunk no helper takes.
static void start(agl_pool* p, int want) {
	if (p->alive >= want || p->quit) return;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0) return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigset_t block;
	sigfillset(&block);
	sigdelset(&block, SIGBUS);
	sigdelset(&block, SIGSEGV);
	sigdelset(&block, SIGFPE);
	sigdelset(&block, SIGILL);
	sigdelset(&block, SIGTRAP);
	pthread_attr_setsigmask_np(&attr, &block);
	while (p->alive < want) {
		pthread_t th;
		if (pthread_create(&th, &attr, helper, p) != 0) break;
		p->alive++;
	}
	pthread_attr_destroy(&attr);
}

void agl_pool_run(agl_pool* p, int helpers, int64_t n, int64_t chunk, agl_chunk_fn f, const void* args) {
	if (n <= 0) return;
	if (chunk < 1) chunk = 1;
	if (!p || helpers <= 0 || n <= chunk || pthread_mutex_trylock(&p->busy) != 0) {
		f(args, 0, 0, n);
		return;
	}
	if (helpers > p->max_helpers) helpers = p->max_helpers;
	task* t = calloc(1, sizeof(task));
	if (!t) {
		pthread_mutex_unlock(&p->busy);
		f(args, 0, 0, n);
		return;
	}
	t->f = f;
	t->args = args;
	t->n = n;
	t->chunk = chunk;
	t->helpers = helpers;
	t->refs = 2; // the caller's and cur's
	atomic_store(&t->left, (n + chunk - 1) / chunk);
	pthread_mutex_lock(&p->mu);
	p->cur = t;
	start(p, helpers);
	pthread_mutex_unlock(&p->mu);
	atomic_fetch_add(&p->seq, 1);
	if (atomic_load(&p->sleeping) > 0) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->mu);
	}
	work(t, 0);
	while (atomic_load(&t->left) > 0) _mm_pause();
	pthread_mutex_lock(&p->mu);
	p->cur = NULL;
	t->refs--; // cur's
	release(p, t); // the caller's
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->busy);
}
