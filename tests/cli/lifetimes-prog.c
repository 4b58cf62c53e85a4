/* Test program of known lifetimes (test-report-inuse.c): on one heap, four threads leak,
 * churn, keep a bounded cache, hand objects to another thread that frees them, grow buffers
 * by realloc (moving them) and allocate large objects; then they build a phase of objects
 * (the peak), hold it, and free it. The program counts each type's exact live bytes and
 * objects and writes them, at the peak and at the end, to TRUTH (JSON). It exits without
 * destroying the heap: what is live at the end is what it leaked.
 *   rasp-test-lifetimes-prog TRUTH */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rasp/rasp.h"

#define THREADS 4

enum { LEAK, CHURN, CACHE, CROSS, REALLOC, LARGE, PHASE, NTYPES };

static const char *const names[NTYPES] = {"Life.Leak",	  "Life.Churn", "Life.Cache", "Life.Cross",
					  "Life.Realloc", "Life.Large", "Life.Phase"};

static rasp_heap_t *heap;
static const rasp_type_t *types[NTYPES];
static int64_t live_bytes[NTYPES], live_objects[NTYPES];
static int failed;

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *get(int type, size_t size)
{
	void *p = rasp_alloc(heap, types[type], size, 0);

	if (!p) {
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	__atomic_add_fetch(&live_bytes[type], (int64_t)rasp_object_size(p), __ATOMIC_RELAXED);
	__atomic_add_fetch(&live_objects[type], 1, __ATOMIC_RELAXED);
	return p;
}

static void put(int type, void *p)
{
	if (!p)
		return;
	__atomic_sub_fetch(&live_bytes[type], (int64_t)rasp_object_size(p), __ATOMIC_RELAXED);
	__atomic_sub_fetch(&live_objects[type], 1, __ATOMIC_RELAXED);
	rasp_free(heap, p);
}

/* Objects one thread allocates for another to free. */
#define CROSS_N 20000
static void *handed[THREADS][CROSS_N];

#define CACHE_N	  2000
#define PHASE_N	  12000
#define REALLOC_N 400
static void *phase[THREADS][PHASE_N];

struct worker {
	int index;
	uint64_t x;
};

static void *first_part(void *arg)
{
	struct worker *w = arg;
	void *cache[CACHE_N] = {NULL};

	/* Leaks: never freed. */
	for (int i = 0; i < 20000; i++)
		get(LEAK, 64 + next(&w->x) % 961);
	/* Churn: freed at once. */
	for (int i = 0; i < 200000; i++)
		put(CHURN, get(CHURN, 32 + next(&w->x) % 225));
	/* A bounded cache: random replacement; it is still full at the end. */
	for (int i = 0; i < 40000; i++) {
		unsigned slot = (unsigned)(next(&w->x) % CACHE_N);

		put(CACHE, cache[slot]);
		cache[slot] = get(CACHE, 256 + next(&w->x) % 3841);
	}
	/* For the next thread to free (half of them). */
	for (int i = 0; i < CROSS_N; i++)
		handed[w->index][i] = get(CROSS, 128 + next(&w->x) % 1921);
	/* Buffers grown by realloc, moved at each size class; a quarter kept. */
	for (int i = 0; i < REALLOC_N; i++) {
		size_t size = 16;
		void *p = get(REALLOC, size);

		while (p && size < 65536) {
			size_t old = rasp_object_size(p);
			void *q;

			size *= 2;
			q = rasp_realloc(heap, p, size);
			if (!q) {
				__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
				break;
			}
			__atomic_add_fetch(&live_bytes[REALLOC],
					   (int64_t)rasp_object_size(q) - (int64_t)old,
					   __ATOMIC_RELAXED);
			p = q;
		}
		if (i % 4)
			put(REALLOC, p);
	}
	/* Large objects: a quarter kept. */
	for (int i = 0; i < 200; i++) {
		void *p = get(LARGE, 100000 + next(&w->x) % 900000);

		if (i % 4)
			put(LARGE, p);
	}
	(void)cache; /* the cache stays: it is live at the end */
	return NULL;
}

static void *cross_free(void *arg)
{
	struct worker *w = arg;
	int from = (w->index + 1) % THREADS;

	for (int i = 0; i < CROSS_N; i += 2)
		put(CROSS, handed[from][i]);
	return NULL;
}

static void *build(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < PHASE_N; i++)
		phase[w->index][i] = get(PHASE, 512 + next(&w->x) % 3585);
	return NULL;
}

static void *unbuild(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < PHASE_N; i++)
		put(PHASE, phase[w->index][i]);
	return NULL;
}

static void run(void *(*fn)(void *), struct worker *w)
{
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, fn, &w[i]))
			failed = 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

static void snapshot(FILE *f, const char *name)
{
	fprintf(f, "%s\"%s\": {", strcmp(name, "peak") == 0 ? "" : ", ", name);
	for (int g = 0; g < NTYPES; g++)
		fprintf(f, "%s\"%s\": [%lld, %lld]", g ? ", " : "", names[g],
			(long long)live_bytes[g], (long long)live_objects[g]);
	fputc('}', f);
}

int main(int argc, char **argv)
{
	struct worker w[THREADS];
	struct timespec hold = {0, 50000000};
	FILE *f;
	int ret;

	if (argc != 2) {
		fputs("usage: rasp-test-lifetimes-prog TRUTH\n", stderr);
		return 2;
	}
	ret = rasp_heap_create(&heap, NULL);
	if (ret) {
		fprintf(stderr, "rasp_heap_create: %s\n", rasp_strerror(ret));
		return 1;
	}
	for (int g = 0; g < NTYPES; g++)
		types[g] = rasp_type_register(heap, names[g]);
	for (int i = 0; i < THREADS; i++)
		w[i] = (struct worker){.index = i, .x = 0x9e3779b97f4a7c15u ^ (uint64_t)(i + 1)};
	run(first_part, w);
	run(cross_free, w);
	run(build, w);
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fputc('{', f);
	snapshot(f, "peak"); /* the phase built: the most ever live */
	nanosleep(&hold, NULL);
	run(unbuild, w);
	snapshot(f, "end");
	fputs("}\n", f);
	if (fclose(f) || failed) {
		fputs("rasp-test-lifetimes-prog: an allocation failed\n", stderr);
		return 1;
	}
	return 0; /* the heap is not destroyed: its live objects are the program's leaks */
}
