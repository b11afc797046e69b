// A pool of helper threads for the kernels' parallel loops (pool.c).
//
// A parallel operation is f over [0,n) in chunks that the calling thread
// and up to `helpers` pool threads take from a shared counter; each
// participant has a worker index (the caller 0, helpers 1..helpers) for
// per-thread scratch. Which thread computes a chunk never changes what is
// computed.
#ifndef AGL_POOL_H
#define AGL_POOL_H
#include <stdint.h>

typedef struct agl_pool agl_pool;
typedef void (*agl_chunk_fn)(const void* args, int worker, int64_t lo, int64_t hi);

// agl_pool_new returns a pool of at most max_helpers threads (started on
// first use, exiting after a while idle), or NULL if out of memory.
agl_pool* agl_pool_new(int max_helpers);
// agl_pool_free stops the pool's threads, waits until they have exited,
// and frees it. No operation may be running.
void agl_pool_free(agl_pool* p);
// agl_pool_run runs f over [0,n) in chunks of chunk with the caller and up
// to helpers (≤ max_helpers) pool threads, and returns when every chunk is
// done. If another operation holds the pool, or p is NULL, the caller runs
// every chunk itself (worker 0): callers on other threads never wait for
// each other.
void agl_pool_run(agl_pool* p, int helpers, int64_t n, int64_t chunk, agl_chunk_fn f, const void* args);
// agl_pool_alive is the number of helper threads running (for tests).
int agl_pool_alive(agl_pool* p);

#endif
