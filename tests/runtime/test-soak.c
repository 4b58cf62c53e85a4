/* Soak (black-box, the release librasp): 4 threads allocate and free 10^8 objects in all
 * (10^7 under a sanitizer, which is 10-20x slower), sizes 8 B..2 KiB with a few large ones, a
 * quarter of the frees by another thread (through a shared exchange array), sampling on at a
 * mean of 64 KiB. The resident set, read from /proc/self/statm every 2^20 operations, must stay
 * under a bound fixed by the live set, not by the count of objects. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rasp/rasp.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SOAK_SANITIZED 1
#endif
#endif
#ifdef SOAK_SANITIZED
#define TOTAL 10000000L
#else
#define TOTAL 100000000L
#endif
#define THREADS 4
#define LIVE	4096 /* per thread */
#define SHARED	1024
/* 4 x 4096 live objects of at most 2 KiB, the shared array, a large object per thread:
 * under 50 MiB; the bound leaves room for the program and the test framework. */
#define RSS_BOUND_MIB 160

static rasp_heap_t *heap;
static const rasp_type_t *type;
static _Atomic(void *) shared[SHARED];
static _Atomic long max_rss_kib;

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void *soak(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
	void **live = calloc(LIVE, sizeof(void *));

	if (!live)
		abort();
	for (long i = 0; i < TOTAL / THREADS; i++) {
		size_t k, n;
		void *p;

		x = x * 6364136223846793005u + 1442695040888963407u;
		k = (x >> 33) % LIVE;
		n = (x >> 20) % 1000 == 0 ? 100000 : 8 + (x >> 40) % ((x >> 62) ? 120 : 2040);
		p = rasp_alloc(heap, type, n, 0);
		if (!p)
			abort();
		*(volatile char *)p = 1;
		if ((x >> 8) % 4 == 0) /* a quarter go through the shared array: freed elsewhere */
			p = atomic_exchange(&shared[(x >> 12) % SHARED], p);
		rasp_free(heap, live[k]);
		live[k] = p;
		if ((i & ((1 << 20) - 1)) == 0) {
			long r = rss_kib(), m = atomic_load(&max_rss_kib);

			while (r > m && !atomic_compare_exchange_weak(&max_rss_kib, &m, r))
				;
		}
	}
	for (int k = 0; k < LIVE; k++)
		rasp_free(heap, live[k]);
	free(live);
	return NULL;
}

static void test_soak_rss_bounded(void **state)
{
	rasp_config_t cfg;
	pthread_t th[THREADS];
	rasp_heap_stats_t st;

	(void)state;
	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_ON;
	cfg.sampling_mean = 65536;
	assert_int_equal(rasp_heap_create(&heap, &cfg), 0);
	type = rasp_type_register(heap, "Soak");
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, soak, (void *)(uintptr_t)(i + 1)), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	for (int i = 0; i < SHARED; i++)
		rasp_free(heap, atomic_load(&shared[i]));
	rasp_heap_stats(heap, &st);
	printf("%ld objects, 4 threads: peak RSS %ld MiB (bound %d), %llu samples, "
	       "%llu invalid frees\n",
	       TOTAL, atomic_load(&max_rss_kib) / 1024, RSS_BOUND_MIB,
	       (unsigned long long)st.samples, (unsigned long long)st.invalid_frees);
	assert_true(atomic_load(&max_rss_kib) / 1024 < RSS_BOUND_MIB);
	assert_int_equal(st.invalid_frees, 0);
	assert_true(st.samples > 0);
	assert_int_equal(rasp_heap_collect(heap), 0);
	rasp_heap_stats(heap, &st);
	assert_int_equal(st.regions, 0);
	rasp_heap_destroy(heap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_soak_rss_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
