/* Test program for reproducible sampling (test-record-seed.c): THREADS threads each allocate
 * and free COUNT objects in an order fixed by the thread's number alone (a xorshift stream:
 * sizes from 16 B to 285 KB, some pinned, a live set replaced at random, no cross-thread free),
 * with types named after the thread (Seed.T<i>.Small, .Medium, .Large), so a trace's samples can
 * be told apart per thread. The threads attach to the heap in number order (each starts after
 * the one before has allocated), then run at once.
 *   rasp-test-seed-prog THREADS COUNT */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/rasp.h"

#define MAX_THREADS 8
#define LIVE	    512

static rasp_heap_t *heap;
static unsigned long count;
static sem_t attached;
static pthread_barrier_t go;

struct worker {
	unsigned index;
	const rasp_type_t *small, *medium, *large;
	unsigned long long bytes;
	int failed;
};

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *one(struct worker *w, uint64_t *x)
{
	uint64_t r = next(x), pick = r % 1000;
	unsigned flags = (r >> 20) % 97 == 0 ? RASP_ALLOC_PINNED : 0;
	void *p;

	if (pick < 900)
		p = rasp_alloc(heap, w->small, 16 + (r >> 32) % 496, flags);
	else if (pick < 998)
		p = rasp_alloc(heap, w->medium, 512 + (r >> 32) % 8000, flags);
	else
		p = rasp_alloc(heap, w->large, 85000 + (r >> 32) % 200000, flags);
	if (p)
		w->bytes += rasp_object_size(p);
	return p;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	void *live[LIVE] = {NULL};
	uint64_t x = 0x9e3779b97f4a7c15u ^ (w->index + 1);

	/* The first allocation attaches the thread to the heap: the next thread starts then. */
	live[0] = one(w, &x);
	sem_post(&attached);
	pthread_barrier_wait(&go);
	for (unsigned long i = 1; i < count && live[0]; i++) {
		unsigned slot = (unsigned)(next(&x) % LIVE);

		rasp_free(heap, live[slot]);
		live[slot] = one(w, &x);
		if (!live[slot]) {
			w->failed = 1;
			break;
		}
	}
	for (unsigned i = 0; i < LIVE; i++)
		rasp_free(heap, live[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker w[MAX_THREADS];
	pthread_t t[MAX_THREADS];
	char name[64];
	unsigned n;
	int rc;

	if (argc != 3 || (n = (unsigned)strtoul(argv[1], NULL, 10)) < 1 || n > MAX_THREADS ||
	    (count = strtoul(argv[2], NULL, 10)) < 1) {
		fprintf(stderr, "usage: rasp-test-seed-prog THREADS(1-%d) COUNT\n", MAX_THREADS);
		return 2;
	}
	rc = rasp_heap_create(&heap, NULL);
	if (rc) {
		fprintf(stderr, "rasp-test-seed-prog: %s\n", rasp_strerror(rc));
		return 1;
	}
	sem_init(&attached, 0, 0);
	pthread_barrier_init(&go, NULL, n + 1);
	for (unsigned i = 0; i < n; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].index = i;
		snprintf(name, sizeof(name), "Seed.T%u.Small", i);
		w[i].small = rasp_type_register(heap, name);
		snprintf(name, sizeof(name), "Seed.T%u.Medium", i);
		w[i].medium = rasp_type_register(heap, name);
		snprintf(name, sizeof(name), "Seed.T%u.Large", i);
		w[i].large = rasp_type_register(heap, name);
		if (!w[i].small || !w[i].medium || !w[i].large)
			return 1;
	}
	for (unsigned i = 0; i < n; i++) {
		if (pthread_create(&t[i], NULL, run, &w[i]) != 0)
			return 1;
		sem_wait(&attached);
	}
	pthread_barrier_wait(&go);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (unsigned i = 0; i < n; i++) {
		printf("thread %u: %llu bytes\n", i, w[i].bytes);
		if (w[i].failed)
			rc = 1;
	}
	rasp_heap_destroy(heap);
	return rc;
}
