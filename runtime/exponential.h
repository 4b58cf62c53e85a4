/* The geometric draw (docs/sampling.md, "The model"), from a standard exponential drawn by a
 * 256-layer ziggurat (exponential.c): its tables, the inline common case, and the draws the tables
 * do not decide. For alloc.c's windows and the tests; internal.h knows nothing of it. */
#ifndef RASP_RUNTIME_EXPONENTIAL_H
#define RASP_RUNTIME_EXPONENTIAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* A layer's threshold on the 53-bit uniform and its width over 2^53, side by side: one cache
 * line serves a draw. The threshold is stored last (release) and read first (acquire), so a
 * draw that finds it set finds the width too, whichever thread built the tables (free on
 * x86: it only keeps the compiler from reading the width first). */
#define RASP__ZIG_LAYERS 256
struct rasp__zig_layer {
	_Atomic uint64_t k;
	double w;
};
extern struct rasp__zig_layer rasp__zig[RASP__ZIG_LAYERS];
/* The draws the fast path below does not decide (about 1.1%): the tail, the wedges, and
 * every draw before the tables are built (their first call builds them). u is the draw's
 * first generator output. */
double rasp__exponential_slow(uint64_t s[4], uint64_t u);
/* The layers' edges x0..x256 (tests). */
double rasp__zig_x(unsigned i);

/* The fast path alone: true with the value in *e when the tables decide, else false with the
 * generator's output in *u for rasp__exponential_slow (a caller may then go out of line for
 * the rest, and keep no registers saved for the 1.1%). */
static inline bool rasp__exponential_fast(uint64_t s[4], uint64_t *u, double *e)
{
	uint64_t x = rasp__rng_next(s), j = x >> 11;
	struct rasp__zig_layer *l = &rasp__zig[x & (RASP__ZIG_LAYERS - 1)];
	bool in = j < atomic_load_explicit(&l->k, memory_order_acquire);

	*u = x;
	*e = (double)(int64_t)j * l->w;
	return RASP__LIKELY(in);
}

static inline double rasp__exponential(uint64_t s[4])
{
	uint64_t u;
	double e;

	if (rasp__exponential_fast(s, &u, &e))
		return e;
	return rasp__exponential_slow(s, u);
}

/* The failed trials before the next success, geometric with p = 1/mean: floor(E / -ln(1-p))
 * for E standard exponential (P(G >= k) = P(E >= -k ln(1-p)) = (1-p)^k). E <= r + 36.7, so G
 * stays below 45 means, far below 2^63. */
static inline uint64_t rasp__geometric_of(const struct rasp_context *c, double e)
{
	/* Truncation is floor here (the product is >= 0, or -0 at mean 1), without libm's. */
	return (uint64_t)(int64_t)(e * c->draw_scale);
}

static inline uint64_t rasp__geometric(struct rasp_context *c)
{
	return rasp__geometric_of(c, rasp__exponential(c->rng));
}

#endif
