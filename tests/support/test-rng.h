/* The simulations' random numbers (test-estimate-sim.c, test-live.c): xoshiro256** seeded
 * through splitmix64, uniforms in (0, 1], and the geometric budget drawn by inversion as the
 * runtime draws it. Fixed seeds give the same workloads at every run. */
#ifndef RASP_TEST_RNG_H
#define RASP_TEST_RNG_H

#include <math.h>
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

static inline uint64_t rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, out = rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rng_rotl(s[3], 45);
	return out;
}

static inline void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		r->s[i] = z ^ (z >> 31);
	}
}

/* Uniform in (0, 1]: never 0, so log() of it is finite. */
static inline double rng_unit(struct rng *r)
{
	return ((rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(rng_unit(r) * (double)n) % n;
}

/* Failed trials before the next success: geometric by inversion, as the runtime draws it. */
static inline uint64_t draw_budget(struct rng *r, double p)
{
	return (uint64_t)floor(log(rng_unit(r)) / log1p(-p));
}

#endif
