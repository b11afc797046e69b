// The kernels' parallel loops: each agl_par_* builds its arguments on the
// stack and runs the kernel over chunks with the pool (pool.c), so one cgo
// call covers a whole operation. Every chunk calls the same kernel on a
// range of whole tiles as a serial call would, so the bits are the same
// whichever thread computes it.
#include "par.h"

#include <stdatomic.h>

typedef struct {
	int level;
	const float* x;
	int64_t t, k;
	const void* wp;
	int half;
	int64_t n;
	const float* bias;
	float* y;
	int64_t panels;
} gemm_args;

// A work item is a group of 4 panels: tiles are 2 or 4 panels wide.
static void gemm_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	const gemm_args* a = v;
	int64_t phi = 4 * hi < a->panels ? 4 * hi : a->panels;
	agl_gemm(a->level, a->x, a->t, a->k, a->wp, a->half, a->n, a->bias, a->y, 4 * lo, phi);
}

void agl_par_gemm(agl_pool* p, int helpers, int64_t chunk, int level, const float* x, int64_t t, int64_t k,
                  const void* wp, int half, int64_t n, const float* bias, float* y) {
	gemm_args a = {level, x, t, k, wp, half, n, bias, y, (n + AGL_PANEL - 1) / AGL_PANEL};
	agl_pool_run(p, helpers, (a.panels + 3) / 4, chunk, gemm_chunk, &a);
}

typedef struct {
	int level;
	const uint16_t* xb;
	int64_t t, k, ldx;
	const uint16_t* w;
	int64_t n;
	const float* bias;
	float* y;
	int64_t rows;
} bf16_args;

static void bf16_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	const bf16_args* a = v;
	int64_t r1 = AGL_PAR_BF16_ROWS * hi < a->rows ? AGL_PAR_BF16_ROWS * hi : a->rows;
	agl_gemm_bf16(a->level, a->xb, a->t, a->k, a->ldx, a->w, a->n, a->bias, a->y, AGL_PAR_BF16_ROWS * lo, r1);
}

void agl_par_gemm_bf16(agl_pool* p, int helpers, int64_t chunk, int level, const uint16_t* xb, int64_t t,
                       int64_t k, int64_t ldx, const uint16_t* w, int64_t rows, int64_t n, const float* bias,
                       float* y) {
	bf16_args a = {level, xb, t, k, ldx, w, n, bias, y, rows};
	agl_pool_run(p, helpers, (rows + AGL_PAR_BF16_ROWS - 1) / AGL_PAR_BF16_ROWS, chunk, bf16_chunk, &a);
}

typedef struct {
	const float* x;
	int64_t t, k;
	uint32_t* xp;
} pack_args;

static void pack_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	const pack_args* a = v;
	agl_bf16_pack_act(a->x, a->t, a->k, lo, hi, a->xp);
}

void agl_par_bf16_pack_act(agl_pool* p, int helpers, int64_t chunk, const float* x, int64_t t, int64_t k,
                           uint32_t* xp) {
	pack_args a = {x, t, k, xp};
	agl_pool_run(p, helpers, agl_bf16_act_tiles(t), chunk, pack_chunk, &a);
}

typedef struct {
	const uint32_t* xp;
	int64_t t, k;
	const uint16_t* w;
	int64_t n;
	const float* bias;
	float* y;
	int64_t rows, groups, items;
	uint32_t* pk;
	int64_t pw;
} many_args;

// item_rows is item i's rows [*r0, *r1): the 16-row groups
// [groups·i/items, groups·(i+1)/items), the last cut at rows.
static inline void item_rows(int64_t groups, int64_t items, int64_t rows, int64_t i, int64_t* r0, int64_t* r1) {
	*r0 = 16 * (groups * i / items);
	*r1 = 16 * (groups * (i + 1) / items);
	if (*r1 > rows) *r1 = rows;
}

static void many_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	const many_args* a = v;
	for (int64_t i = lo; i < hi; i++) {
		int64_t r0, r1;
		item_rows(a->groups, a->items, a->rows, i, &r0, &r1);
		agl_gemm_bf16_many(a->xp, a->t, a->k, a->w, a->n, a->bias, a->y, r0, r1, a->pk + worker * a->pw);
	}
}

void agl_par_gemm_bf16_many(agl_pool* p, int helpers, const uint32_t* xp, int64_t t, int64_t k, const uint16_t* w,
                            int64_t rows, int64_t n, const float* bias, float* y, int64_t items, uint32_t* pk,
                            int64_t pw) {
	many_args a = {xp, t, k, w, n, bias, y, rows, (rows + 15) / 16, items, pk, pw};
	agl_pool_run(p, helpers, items, 1, many_chunk, &a);
}

typedef struct {
	int level;
	const uint16_t* xb;
	int64_t t, ldx;
	const agl_bf16z* z;
	const float* bias;
	float* y;
	int64_t rows;
	uint16_t* scratch;
} bf16z_args;

static void bf16z_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	const bf16z_args* a = v;
	int64_t r1 = AGL_PAR_BF16_ROWS * hi < a->rows ? AGL_PAR_BF16_ROWS * hi : a->rows;
	agl_gemm_bf16z(a->level, a->xb, a->t, a->ldx, a->z, a->rows, a->bias, a->y, AGL_PAR_BF16_ROWS * lo, r1,
	               a->scratch + (int64_t)worker * AGL_BF16Z_SCRATCH_ROWS * a->z->k);
}

void agl_par_gemm_bf16z(agl_pool* p, int helpers, int64_t chunk, int level, const uint16_t* xb, int64_t t,
                        int64_t ldx, const agl_bf16z* z, int64_t rows, const float* bias, float* y,
                        uint16_t* scratch) {
	bf16z_args a = {level, xb, t, ldx, z, bias, y, rows, scratch};
	agl_pool_run(p, helpers, (rows + AGL_PAR_BF16_ROWS - 1) / AGL_PAR_BF16_ROWS, chunk, bf16z_chunk, &a);
}

typedef struct {
	int level;
	const uint32_t* xp;
	int64_t t;
	const agl_bf16z* z;
	const float* bias;
	float* y;
	int64_t rows, groups, items;
	uint32_t* pk;
	int64_t pw;
	uint16_t* dec;
	int64_t rw;
} zmany_args;

// As many_chunk, on the item's rows decoded into the worker's dec.
static void zmany_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	const zmany_args* a = v;
	uint16_t* dec = a->dec + worker * a->rw;
	for (int64_t i = lo; i < hi; i++) {
		int64_t r0, r1;
		item_rows(a->groups, a->items, a->rows, i, &r0, &r1);
		agl_bf16z_decode(a->level, a->z, r0, r1, dec);
		agl_gemm_bf16_many(a->xp, a->t, a->z->k, dec, a->rows, a->bias ? a->bias + r0 : 0, a->y + r0, 0, r1 - r0,
		                   a->pk + worker * a->pw);
	}
}

void agl_par_gemm_bf16z_many(agl_pool* p, int helpers, const uint32_t* xp, int64_t t, const agl_bf16z* z,
                             int64_t rows, const float* bias, float* y, int64_t items, uint32_t* pk, int64_t pw,
                             uint16_t* dec, int64_t rw) {
	zmany_args a = {3, xp, t, z, bias, y, rows, (rows + 15) / 16, items, pk, pw, dec, rw};
	agl_pool_run(p, helpers, items, 1, zmany_chunk, &a);
}

typedef struct {
	int level;
	const uint16_t* w;
	int64_t k;
	const uint8_t* inv;
	uint64_t* hist;
	uint32_t* cnt;
	uint8_t *data, *esc;
	uint32_t* eoff;
	int64_t r0;
	const agl_bf16z* z;
	uint16_t* out;
} zcode_args;

static void zhist_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	const zcode_args* a = v;
	agl_bf16z_hist(a->w + lo * a->k, (hi - lo) * a->k, a->hist + 256 * worker);
}

void agl_par_bf16z_hist(agl_pool* p, int helpers, int64_t chunk, const uint16_t* w, int64_t rows, int64_t k,
                        uint64_t* hist) {
	zcode_args a = {.w = w, .k = k, .hist = hist};
	agl_pool_run(p, helpers, rows, chunk, zhist_chunk, &a);
}

static void zcount_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	const zcode_args* a = v;
	agl_bf16z_count(a->level, a->w + lo * a->k, hi - lo, a->k, a->inv, a->cnt + lo);
}

void agl_par_bf16z_count(agl_pool* p, int helpers, int64_t chunk, int level, const uint16_t* w, int64_t rows,
                         int64_t k, const uint8_t* inv, uint32_t* cnt) {
	zcode_args a = {.level = level, .w = w, .k = k, .inv = inv, .cnt = cnt};
	agl_pool_run(p, helpers, rows, chunk, zcount_chunk, &a);
}

static void zencode_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	const zcode_args* a = v;
	agl_bf16z_encode(a->level, a->w + lo * a->k, hi - lo, a->k, a->inv, a->data, a->esc, a->eoff, a->r0 + lo);
}

void agl_par_bf16z_encode(agl_pool* p, int helpers, int64_t chunk, int level, const uint16_t* w, int64_t rows,
                          int64_t k, const uint8_t* inv, uint8_t* data, uint8_t* esc, uint32_t* eoff, int64_t r0) {
	zcode_args a = {.level = level, .w = w, .k = k, .inv = inv, .data = data, .esc = esc, .eoff = eoff, .r0 = r0};
	agl_pool_run(p, helpers, rows, chunk, zencode_chunk, &a);
}

static void zdecode_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	const zcode_args* a = v;
	agl_bf16z_decode(a->level, a->z, a->r0 + lo, a->r0 + hi, a->out + lo * a->z->k);
}

void agl_par_bf16z_decode(agl_pool* p, int helpers, int64_t chunk, int level, const agl_bf16z* z, int64_t r0,
                          int64_t r1, uint16_t* out) {
	zcode_args a = {.level = level, .z = z, .r0 = r0, .out = out};
	agl_pool_run(p, helpers, r1 - r0, chunk, zdecode_chunk, &a);
}

typedef struct {
	int path;
	const int8_t* xq;
	const float* dx;
	const int32_t* corr;
	int64_t t, nb;
	const uint8_t* q;
	const uint16_t* d;
	int64_t n;
	const float* bias;
	float* y;
	int64_t panels, per;
} q8_args;

static void q8_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	const q8_args* a = v;
	int64_t phi = a->per * hi < a->panels ? a->per * hi : a->panels;
	agl_gemm_q8(a->path, a->xq, a->dx, a->corr, a->t, a->nb, a->q, a->d, a->n, a->bias, a->y, a->per * lo, phi);
}

void agl_par_gemm_q8(agl_pool* p, int helpers, int64_t chunk, int path, const int8_t* xq, const float* dx,
                     const int32_t* corr, int64_t t, int64_t nb, const uint8_t* q, const uint16_t* d, int64_t n,
                     const float* bias, float* y, int64_t per) {
	q8_args a = {path, xq, dx, corr, t, nb, q, d, n, bias, y, (n + AGL_PANEL - 1) / AGL_PANEL, per};
	agl_pool_run(p, helpers, (a.panels + per - 1) / per, chunk, q8_chunk, &a);
}

typedef struct {
	int level;
	const float* q;
	int64_t t, nh, nkv, hd;
	const void *kc, *vc;
	int kv_bf16;
	const int32_t *pos, *bt_off, *bt;
	int64_t bs;
	float scale;
	float* out;
	float* scratch;
	int64_t stride;
} attn_args;

static void attn_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	const attn_args* a = v;
	agl_attention(a->level, a->q, a->t, a->nh, a->nkv, a->hd, a->kc, a->vc, a->kv_bf16, a->pos, a->bt_off, a->bt, a->bs,
	              a->scale, a->out, lo, hi, a->scratch + worker * agl_attention_scratch_rows() * a->stride, a->stride);
}

void agl_par_attention(agl_pool* p, int helpers, int64_t chunk, int level, const float* q, int64_t t, int64_t nh,
                       int64_t nkv, int64_t hd, const void* kc, const void* vc, int kv_bf16, const int32_t* pos,
                       const int32_t* bt_off, const int32_t* bt, int64_t bs, float scale, float* out,
                       float* scratch, int64_t stride) {
	attn_args a = {level, q, t, nh, nkv, hd, kc, vc, kv_bf16, pos, bt_off, bt, bs, scale, out, scratch, stride};
	agl_pool_run(p, helpers, t * nh, chunk, attn_chunk, &a);
}

typedef struct {
	int level, pattern;
	const float* x;
	int64_t block;
	_Atomic uint32_t sink;
} stream_args;

static void stream_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	stream_args* a = (stream_args*)v;
	union {
		float f;
		uint32_t u;
	} s = {agl_stream(a->level, a->pattern, a->x + lo * a->block, (hi - lo) * a->block)};
	atomic_fetch_add(&a->sink, s.u);
}

uint32_t agl_par_stream(agl_pool* p, int helpers, int64_t chunk, int level, int pattern, const float* x,
                        int64_t blocks, int64_t block) {
	stream_args a = {level, pattern, x, block, 0};
	agl_pool_run(p, helpers, blocks, chunk, stream_chunk, &a);
	return atomic_load(&a.sink);
}

// The row ops: a work item is a row (a token).
typedef struct {
	int op, level;
	const float* x;
	const float* w;
	float* y;
	int64_t d;
	float eps;
	int64_t heads, hd, stride;
	const int32_t* pos;
	const float* inv_freq;
} rows_args;

enum { ROWS_RMSNORM, ROWS_ROPE, ROWS_SWIGLU };

static void rows_chunk(const void* v, int worker, int64_t lo, int64_t hi) {
	(void)worker;
	const rows_args* a = v;
	switch (a->op) {
	case ROWS_RMSNORM:
		agl_rmsnorm(a->level, a->x + lo * a->d, a->w, a->y + lo * a->d, hi - lo, a->d, a->eps);
		break;
	case ROWS_ROPE:
		agl_rope(a->y + lo * a->stride, hi - lo, a->heads, a->hd, a->stride, a->pos + lo, a->inv_freq);
		break;
	case ROWS_SWIGLU:
		agl_swiglu(a->level, a->x + lo * 2 * a->d, hi - lo, a->d, a->y + lo * a->d);
		break;
	}
}

void agl_par_rmsnorm(agl_pool* p, int helpers, int64_t chunk, int level, const float* x, const float* w, float* y,
                     int64_t rows, int64_t d, float eps) {
	rows_args a = {.op = ROWS_RMSNORM, .level = level, .x = x, .w = w, .y = y, .d = d, .eps = eps};
	agl_pool_run(p, helpers, rows, chunk, rows_chunk, &a);
}

void agl_par_rope(agl_pool* p, int helpers, int64_t chunk, float* x, int64_t rows, int64_t heads, int64_t hd,
                  int64_t stride, const int32_t* pos, const float* inv_freq) {
	rows_args a = {.op = ROWS_ROPE, .y = x, .heads = heads, .hd = hd, .stride = stride, .pos = pos, .inv_freq = inv_freq};
	agl_pool_run(p, helpers, rows, chunk, rows_chunk, &a);
}

void agl_par_swiglu(agl_pool* p, int helpers, int64_t chunk, int level, const float* gu, int64_t rows,
                    int64_t inter, float* out) {
	rows_args a = {.op = ROWS_SWIGLU, .level = level, .x = gu, .y = out, .d = inter};
	agl_pool_run(p, helpers, rows, chunk, rows_chunk, &a);
}
