/* Test program: THREADS threads allocate small objects while the main thread switches the
 * heap's sampling mean FLIPS times between 2^30 (2 ms) and 1 (0.2 ms, every byte sampled).
 * A sample drawn under one mean and weighed with the other is off by 2^30 either way, so a
 * trace of this program shows at once whether the announcements order the samples.
 * Usage: rasp-flip-prog THREADS FLIPS; prints the pid. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rasp/rasp.h"

static rasp_heap_t *heap;
static atomic_int stop;

static void *worker(void *arg)
{
	const rasp_type_t *t = rasp_type_register(heap, "Flip.Object");
	unsigned n = (unsigned)(uintptr_t)arg;

	while (!atomic_load(&stop))
		rasp_free(heap, rasp_alloc(heap, t, 24 + 8 * (n++ % 50), 0));
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec on = {0, 200 * 1000}, off = {0, 2 * 1000 * 1000};
	int threads = argc > 1 ? atoi(argv[1]) : 4, flips = argc > 2 ? atoi(argv[2]) : 50;
	pthread_t th[64];
	rasp_config_t cfg;

	if (threads < 1 || threads > 64 || flips < 1) {
		fprintf(stderr, "usage: rasp-flip-prog THREADS(1-64) FLIPS\n");
		return 2;
	}
	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_ON;
	cfg.sampling_mean = UINT64_C(1) << 30;
	if (rasp_heap_create(&heap, &cfg))
		return 1;
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i))
			return 1;
	for (int i = 0; i < flips; i++) {
		rasp_heap_set_sampling(heap, RASP_SAMPLING_ON, UINT64_C(1) << 30);
		nanosleep(&off, NULL);
		rasp_heap_set_sampling(heap, RASP_SAMPLING_ON, 1);
		nanosleep(&on, NULL);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	rasp_heap_destroy(heap);
	printf("pid=%ld\n", (long)getpid());
	return 0;
}
