/* Runtime benchmarks: one program, built once per allocator (BENCH_RASP, BENCH_MALLOC for
 * glibc or jemalloc, which replaces malloc when linked, BENCH_MIMALLOC), running the same
 * allocation sequences. Prints figures; run on demand (bench/runtime/run.sh), never a test.
 *   bench-alloc-X fastpath N   N small allocations (32-byte payload), then (apart, in
 *                              run_frees) their frees in the order they were allocated
 *   bench-alloc-X mixed N      N allocate/free pairs, mixed sizes, 4096 live objects
 *   bench-alloc-X small N      the same with 16..128-byte objects only
 *   bench-alloc-X fixed N [Z]  the same with objects of Z bytes (2048)
 * rasp reads RASP_SAMPLING / RASP_SAMPLING_MEAN from the environment. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(BENCH_RASP)
#include "rasp/inline.h"
static rasp_heap_t *heap;
static const rasp_type_t *type;
#ifdef BENCH_RASP_INLINE /* rasp/inline.h's path where the size is a constant (fastpath) */
#define NAME "rasp-inline"
#else
#define NAME "rasp"
#endif
static void init(void)
{
	int err = rasp_heap_create(&heap, NULL);

	if (err) {
		fprintf(stderr, "rasp_heap_create: %s\n", rasp_strerror(err));
		exit(2);
	}
	type = rasp_type_register(heap, "Bench.Object");
}
static inline void *bench_alloc(size_t n)
{
#ifdef BENCH_RASP_INLINE
	return rasp_alloc_inline(heap, type, n);
#else
	return rasp_alloc(heap, type, n, 0);
#endif
}
static inline void bench_free(void *p)
{
	rasp_free(heap, p);
}
#elif defined(BENCH_MIMALLOC)
#include <mimalloc.h>
#define NAME "mimalloc"
static void init(void)
{
}
static inline void *bench_alloc(size_t n)
{
	return mi_malloc(n);
}
static inline void bench_free(void *p)
{
	mi_free(p);
}
#else
#ifndef NAME
#define NAME "malloc"
#endif
static void init(void)
{
}
static inline void *bench_alloc(size_t n)
{
	return malloc(n);
}
static inline void bench_free(void *p)
{
	free(p);
}
#endif

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The measured loop; noinline so callgrind can attribute its instructions (inclusive). */
__attribute__((noinline)) static uintptr_t run_fastpath(void **keep, long n)
{
	uintptr_t sum = 0;
	long i;

	for (i = 0; i < n; i++) {
		void *p = bench_alloc(32);

		keep[i] = p;
		sum += (uintptr_t)p;
	}
	return sum;
}

/* The frees of fastpath's objects, in their allocation order (a batch job's end: most go past
 * a free cache's bound); noinline, as run_fastpath. */
__attribute__((noinline)) static void run_frees(void **keep, long n)
{
	for (long i = 0; i < n; i++)
		bench_free(keep[i]);
}

static int small_only;	  /* "small" workload: 16..128 bytes only */
static size_t fixed_size; /* "fixed" workload: every object this size */

/* A cheap deterministic size mix: 70% 8..64 bytes, 25% 64..512, 5% 512..8192. */
static size_t mixed_size(uint64_t *x)
{
	uint64_t r;

	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	r = *x;
	if (fixed_size)
		return fixed_size;
	if (small_only)
		return 16 + (size_t)((r >> 8) % 113);
	switch (r % 20) {
	case 0:
		return 512 + (size_t)((r >> 8) % 7680);
	case 1:
	case 2:
	case 3:
	case 4:
	case 5:
		return 64 + (size_t)((r >> 8) % 448);
	default:
		return 8 + (size_t)((r >> 8) % 56);
	}
}

#define SLOTS 4096
__attribute__((noinline)) static uintptr_t run_mixed(long n)
{
	static void *slot[SLOTS];
	uint64_t x = 88172645463325252u;
	uintptr_t sum = 0;
	long i;

	for (i = 0; i < n; i++) {
		size_t s = mixed_size(&x), k = (size_t)(x >> 40) % SLOTS;
		char *p = bench_alloc(s);

		p[0] = (char)i; /* touch, as a program would */
		sum += (uintptr_t)p;
		if (slot[k])
			bench_free(slot[k]);
		slot[k] = p;
	}
	for (i = 0; i < SLOTS; i++) {
		bench_free(slot[i]);
		slot[i] = NULL;
	}
	return sum;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "mixed";
	long n = argc > 2 ? atol(argv[2]) : 10000000;
	double t0, t1;
	uintptr_t sum;

	init();
	if (strcmp(what, "fastpath") == 0) {
		void **keep = malloc(sizeof(void *) * (size_t)n);

		if (!keep)
			return 2;
		t0 = now();
		sum = run_fastpath(keep, n);
		t1 = now();
		run_frees(keep, n);
		free(keep);
	} else if (strcmp(what, "mixed") == 0 || strcmp(what, "small") == 0 ||
		   strcmp(what, "fixed") == 0) {
		small_only = what[0] == 's';
		if (what[0] == 'f')
			fixed_size = argc > 3 ? (size_t)atol(argv[3]) : 2048;
		t0 = now();
		sum = run_mixed(n);
		t1 = now();
	} else {
		fprintf(stderr, "usage: %s fastpath|mixed|small|fixed [N [SIZE]]\n", argv[0]);
		return 2;
	}
	printf("%s %s n=%ld ns/op=%.2f (checksum %lx)\n", NAME, what, n,
	       (t1 - t0) * 1e9 / (double)n, (unsigned long)(sum & 0xff));
#if defined(BENCH_RASP)
	{
		rasp_heap_stats_t st;

		rasp_heap_stats(heap, &st);
		printf("rasp samples=%llu refills=%llu\n", (unsigned long long)st.samples,
		       (unsigned long long)st.refills);
	}
#endif
	return 0;
}
