/* The allocator suite (docs/performance.md, "Allocator"): one program built once per allocator
 * (BENCH_RASP: rasp; otherwise malloc/free of whatever the link or LD_PRELOAD provides: glibc,
 * jemalloc, tcmalloc, mimalloc), running one workload and printing its wall time, CPU time and
 * peak RSS. suite.sh runs every workload under every allocator, several times, and prints
 * medians and ratios. Never a test.
 *   suite WORKLOAD [THREADS]
 *   mixed     allocate/free 16 B..4 KiB (mostly small), 20000 live objects, churn
 *   request   a request loop: 200 objects of 16 B..2 KiB per request, 1 in 100 kept for good
 *   prodcons  a producer allocates, a consumer (another thread) frees: cross-thread frees
 *   scale     `mixed`'s work split over THREADS threads (1 or 2) on the same heap
 *   fixed     2..6 KiB objects, 4000 live, churn
 *   cache     an LRU cache of 64..1024 B values, 50000 entries, replaced at random
 *   bulk      bursts: 100000 objects of 16..256 B allocated, then all freed (a batch job's
 *             or a parser's), 200 times (SUITE_PHASES=1: the allocations' and frees' times)
 *   large     buffers of 100 KB..1 MB (the LOH range), 16 live, written whole, replaced at
 *             random 50000 times
 *   spread    buffers of 85 KB..4 MB, spread evenly in log size, 4 live, written whole,
 *             replaced at random 20000 times (few live objects of widely varied sizes)
 *   huge      buffers of 85 KB..16 MB, 8 live, replaced 20000 times (`buffers 8 20000 85000
 *             16000000`: objects past one 4 MiB unit; eighteenth session)
 *   buffers LIVE ROUNDS LO HI
 *             `spread`'s loop with other shapes (not in suite.sh's list; docs/performance.md,
 *             "Large objects in arenas") */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(BENCH_RASP)
#include "rasp/rasp.h"
static rasp_heap_t *heap;
static const rasp_type_t *type;
static void init(void)
{
	int err = rasp_heap_create(&heap, NULL);

	if (err) {
		fprintf(stderr, "rasp_heap_create: %s\n", rasp_strerror(err));
		exit(2);
	}
	type = rasp_type_register(heap, "Bench.Object");
}
static inline void *xalloc(size_t n)
{
	return rasp_alloc(heap, type, n, 0);
}
static inline void xfree(void *p)
{
	rasp_free(heap, p);
}
/* SUITE_STATS=1: the heap's own account before the final frees (where the RSS went). */
static void report(void)
{
	rasp_heap_stats_t st;

	if (!getenv("SUITE_STATS") || rasp_heap_stats(heap, &st) != 0)
		return;
	fprintf(stderr,
		"committed=%.1fMiB live=%.1fMiB wasted=%.1fMiB pages=%llu purged=%.1fMiB "
		"refills=%llu\n",
		st.committed_bytes / 1048576.0, st.live_bytes / 1048576.0,
		st.wasted_bytes / 1048576.0, (unsigned long long)st.pages,
		st.purged_bytes / 1048576.0, (unsigned long long)st.refills);
}
#else
static void init(void)
{
}
static inline void *xalloc(size_t n)
{
	return malloc(n);
}
static inline void xfree(void *p)
{
	free(p);
}
static void report(void)
{
}
#endif

static void *must(void *p)
{
	if (!p) {
		perror("allocation");
		exit(1);
	}
	return p;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* 16..4096 bytes, small ones most often (as programs allocate). */
static size_t mixed_size(uint64_t *s)
{
	uint64_t r = rnd(s);

	switch (r % 8) {
	case 0:
		return 16 + (r >> 8) % 4081;
	case 1:
	case 2:
		return 16 + (r >> 8) % 497;
	default:
		return 16 + (r >> 8) % 113;
	}
}

static void touch(void *p, size_t n)
{
	memset(p, 0x5a, n < 64 ? n : 64);
}

#define MIXED_LIVE 20000
static long mixed_ops = 20000000;
static void *run_mixed(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg;
	void **live = must(calloc(MIXED_LIVE, sizeof(void *)));
	long n = mixed_ops;

	for (long i = 0; i < n; i++) {
		size_t k = rnd(&s) % MIXED_LIVE, z = mixed_size(&s);

		if (live[k])
			xfree(live[k]);
		live[k] = must(xalloc(z));
		touch(live[k], z);
	}
	report();
	for (long k = 0; k < MIXED_LIVE; k++)
		if (live[k])
			xfree(live[k]);
	free(live);
	return NULL;
}

static void run_request(void)
{
	uint64_t s = 7;
	enum { PER = 200, REQUESTS = 100000 };
	void *req[PER];
	void **kept = must(malloc(sizeof(void *) * (size_t)PER * REQUESTS / 100 + 16));
	long nk = 0;

	for (long r = 0; r < REQUESTS; r++) {
		for (int i = 0; i < PER; i++) {
			size_t z = 16 + rnd(&s) % 2033;

			req[i] = must(xalloc(z));
			touch(req[i], z);
		}
		for (int i = 0; i < PER; i++) {
			if ((r * PER + i) % 100 == 0)
				kept[nk++] = req[i];
			else
				xfree(req[i]);
		}
	}
	for (long i = 0; i < nk; i++)
		xfree(kept[i]);
	free(kept);
}

/* A bounded single-producer single-consumer ring. */
#define RING 4096
static void *ring[RING];
static _Atomic long head_, tail_;

static void *consumer(void *arg)
{
	long n = (long)(intptr_t)arg;

	for (long i = 0; i < n; i++) {
		void *p;

		while (atomic_load_explicit(&tail_, memory_order_acquire) == i)
			;
		p = ring[i % RING];
		atomic_store_explicit(&head_, i + 1, memory_order_release);
		xfree(p);
	}
	return NULL;
}

static void run_prodcons(void)
{
	const long n = 10000000;
	uint64_t s = 3;
	pthread_t th;

	pthread_create(&th, NULL, consumer, (void *)(intptr_t)n);
	for (long i = 0; i < n; i++) {
		size_t z = 16 + rnd(&s) % 241;
		void *p = must(xalloc(z));

		touch(p, z);
		while (i - atomic_load_explicit(&head_, memory_order_acquire) >= RING)
			;
		ring[i % RING] = p;
		atomic_store_explicit(&tail_, i + 1, memory_order_release);
	}
	report();
	pthread_join(th, NULL);
}

static void run_scale(int threads)
{
	pthread_t th[8];

	mixed_ops = 20000000 / threads; /* the same work, split */
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, run_mixed, (void *)(uintptr_t)(11 + i));
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
}

static void run_fixed(void)
{
	enum { LIVE = 4000 };
	void *live[LIVE] = {0};
	uint64_t s = 5;

	for (long i = 0; i < 5000000; i++) {
		size_t k = rnd(&s) % LIVE, z = 2048 + rnd(&s) % 4097;

		if (live[k])
			xfree(live[k]);
		live[k] = must(xalloc(z));
		touch(live[k], z);
	}
	report();
	for (int k = 0; k < LIVE; k++)
		if (live[k])
			xfree(live[k]);
}

static void run_cache(void)
{
	enum { ENTRIES = 50000 };
	void **e = must(calloc(ENTRIES, sizeof(void *)));
	uint64_t s = 9;

	for (long i = 0; i < 10000000; i++) {
		size_t k = rnd(&s) % ENTRIES, z = 64 + rnd(&s) % 961;

		if (e[k])
			xfree(e[k]);
		e[k] = must(xalloc(z));
		touch(e[k], z);
	}
	report();
	for (int k = 0; k < ENTRIES; k++)
		if (e[k])
			xfree(e[k]);
	free(e);
}

static double now(clockid_t id);

/* SUITE_PHASES=1: the allocation loops' time and the free loops' apart, on stderr (where a
 * gap to a peer lies; docs/performance.md, "The free path"). */
static void run_bulk(void)
{
	enum { BURST = 100000, BURSTS = 200 };
	void **v = must(malloc(BURST * sizeof(void *)));
	uint64_t s = 13;
	double t, ta = 0, tf = 0;

	for (int b = 0; b < BURSTS; b++) {
		t = now(CLOCK_MONOTONIC);
		for (long i = 0; i < BURST; i++) {
			size_t z = 16 + rnd(&s) % 241;

			v[i] = must(xalloc(z));
			touch(v[i], z);
		}
		ta += now(CLOCK_MONOTONIC) - t;
		if (b == BURSTS - 1)
			report();
		t = now(CLOCK_MONOTONIC);
		for (long i = 0; i < BURST; i++)
			xfree(v[i]);
		tf += now(CLOCK_MONOTONIC) - t;
	}
	if (getenv("SUITE_PHASES"))
		fprintf(stderr, "alloc_s=%.3f free_s=%.3f\n", ta, tf);
	free(v);
}

/* `live` buffers, each replaced `rounds` times at random by one of size(&s) bytes, written
 * whole (`large`, `spread`). */
static void run_buffers(int live, long rounds, uint64_t s, size_t (*size)(uint64_t *))
{
	void **v = calloc((size_t)live, sizeof(*v));

	if (!v) {
		perror("calloc");
		exit(2);
	}

	for (long i = 0; i < rounds; i++) {
		size_t k = rnd(&s) % (uint64_t)live, z = size(&s);

		if (v[k])
			xfree(v[k]);
		v[k] = must(xalloc(z));
		memset(v[k], (int)i, z);
	}
	report();
	for (int k = 0; k < live; k++)
		if (v[k])
			xfree(v[k]);
	free(v);
}

static size_t large_size(uint64_t *s)
{
	return 100000 + rnd(s) % 900001;
}

/* Near log-uniform without libm: one of 89 steps of 1/16 octave from 85000 (5 9/16 octaves,
 * to ~4 MB), linear within each octave. */
static size_t spread_size(uint64_t *s)
{
	unsigned step = (unsigned)(rnd(s) % 89);
	size_t z = (size_t)85000 << (step / 16);

	return z + z * (step % 16) / 16;
}

/* `buffers`: steps of 1/16 octave from buf_lo, buf_steps of them (up to buf_hi). */
static size_t buf_lo;
static unsigned buf_steps;

static size_t buf_step(unsigned step)
{
	size_t z = buf_lo << (step / 16);

	return z + z * (step % 16) / 16;
}

static size_t buffers_size(uint64_t *s)
{
	return buf_step((unsigned)(rnd(s) % buf_steps));
}

/* `buffers LIVE ROUNDS LO HI`: run_buffers with LIVE (1..4096) buffers of LO..HI bytes (1 KiB
 * to 1 GiB), near log-uniform as `spread`'s. 0 if the arguments are out of range. */
static int run_buffers_args(char **a)
{
	long live = atol(a[0]), rounds = atol(a[1]);
	size_t hi = (size_t)atol(a[3]);

	buf_lo = (size_t)atol(a[2]);
	if (live < 1 || live > 4096 || rounds < 1 || buf_lo < 1024 || hi < buf_lo ||
	    hi > ((size_t)1 << 30))
		return 0;
	for (buf_steps = 1; buf_step(buf_steps) <= hi; buf_steps++)
		;
	run_buffers((int)live, rounds, 29, buffers_size);
	return 1;
}

static double now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident KiB now: the process before its workload (libraries, the heap's set-up), so that
 * the peak's growth past it, the allocator's own, can be told from what is fixed. */
static long resident_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, resident = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv)
{
	const char *w = argc > 1 ? argv[1] : "";
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	double t0, c0;
	struct rusage ru;
	long base;

	init();
	base = resident_kib();
	t0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	if (strcmp(w, "mixed") == 0)
		run_mixed((void *)(uintptr_t)1);
	else if (strcmp(w, "request") == 0)
		run_request();
	else if (strcmp(w, "prodcons") == 0)
		run_prodcons();
	else if (strcmp(w, "scale") == 0 && threads >= 1 && threads <= 8)
		run_scale(threads);
	else if (strcmp(w, "fixed") == 0)
		run_fixed();
	else if (strcmp(w, "cache") == 0)
		run_cache();
	else if (strcmp(w, "bulk") == 0)
		run_bulk();
	else if (strcmp(w, "large") == 0)
		run_buffers(16, 50000, 17, large_size);
	else if (strcmp(w, "spread") == 0)
		run_buffers(4, 20000, 23, spread_size);
	else if (strcmp(w, "huge") == 0)
		run_buffers_args((char *[]){"8", "20000", "85000", "16000000"});
	else if (!(strcmp(w, "buffers") == 0 && argc == 6 && run_buffers_args(argv + 2))) {
		fprintf(stderr,
			"usage: suite mixed|request|prodcons|scale N|fixed|cache|bulk|large|"
			"spread|huge|buffers LIVE ROUNDS LO HI\n");
		return 2;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("wall=%.3f cpu=%.3f maxrss_kib=%ld base_kib=%ld\n", now(CLOCK_MONOTONIC) - t0,
	       now(CLOCK_PROCESS_CPUTIME_ID) - c0, ru.ru_maxrss, base);
	return 0;
}
