/* Test program for the runtime's EventPipe session (test-eventpipe.c starts it with .NET's
 * variables): THREADS threads each allocate ROUNDS rounds of three types (a small object, a
 * large one, a pinned one) from one heap configured from the RASP_* environment, then the heap
 * is destroyed. Prints "samples=N starts=S pid=P": the AllocationSampled events the runtime
 * fired and the times a thread turned sampling on (each a SamplingConfigured event).
 *   ep-prog THREADS ROUNDS [MODE]
 * MODE quick-exit: _exit(0) right after rasp_heap_destroy (no library destructor, so no end
 * of stream: what reaches the file is what the heap's destruction flushed).
 * MODE fork: after the threads, a child allocates too and prints "child samples=N pid=P".
 * MODE small: small objects only (fast: many events in little time).
 * MODE leak: every 8th round's objects are kept until the heap's destruction.
 * MODE keep: no object is freed and the heap is never destroyed (a program that exits
 * holding everything it allocated). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rasp/rasp.h"

static rasp_heap_t *heap;
static const rasp_type_t *types[3];
static long rounds;
static int ntypes = 3;

static int leak; /* MODE leak or keep */
static const char *mode_name = "";

static int round_of_allocations(long r)
{
	static const size_t sizes[3] = {24, 90000, 100};
	static const unsigned flags[3] = {0, 0, RASP_ALLOC_PINNED};

	for (int k = 0; k < ntypes; k++) {
		void *p = rasp_alloc(heap, types[k], sizes[k], flags[k]);

		if (!p)
			return -1;
		if (!leak || (r % 8 && strcmp(mode_name, "keep") != 0))
			rasp_free(heap, p);
	}
	return 0;
}

static void *worker(void *arg)
{
	(void)arg;
	for (long r = 0; r < rounds; r++)
		if (round_of_allocations(r) != 0)
			return (void *)1;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[1]) : 0, err;
	const char *mode = argc > 3 ? argv[3] : "";

	mode_name = mode;
	pthread_t th[64];
	rasp_config_t cfg;
	rasp_heap_stats_t st;

	rounds = argc > 2 ? atol(argv[2]) : 0;
	if (threads < 1 || threads > 64 || rounds < 1) {
		fprintf(stderr,
			"usage: ep-prog THREADS(1-64) ROUNDS [quick-exit|fork|small|leak|keep]\n");
		return 2;
	}
	rasp_config_init(&cfg);
	if ((err = rasp_config_from_env(&cfg)) != 0 || (err = rasp_heap_create(&heap, &cfg)) != 0) {
		fprintf(stderr, "ep-prog: %s\n", rasp_strerror(err));
		return 2;
	}
	if (strcmp(mode, "small") == 0)
		ntypes = 1;
	leak = strcmp(mode, "leak") == 0 || strcmp(mode, "keep") == 0;
	types[0] = rasp_type_register(heap, "Ep.Small");
	types[1] = rasp_type_register(heap, "Ep.Large");
	types[2] = rasp_type_register(heap, "Ep.Pinned");
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, NULL) != 0)
			return 2;
	for (int i = 0; i < threads; i++) {
		void *rc;

		pthread_join(th[i], &rc);
		if (rc)
			return 2;
	}
	if (strcmp(mode, "fork") == 0) {
		pid_t child;
		int status;

		fflush(stdout);
		child = fork();
		if (child < 0)
			return 2;
		if (child == 0) {
			for (long r = 0; r < rounds; r++)
				round_of_allocations(r);
			rasp_heap_stats(heap, &st);
			printf("child samples=%" PRIu64 " pid=%ld\n", st.samples, (long)getpid());
			exit(0);
		}
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 2;
	}
	rasp_heap_stats(heap, &st);
	printf("samples=%" PRIu64 " starts=%" PRIu64 " pid=%ld\n", st.samples, st.sampling_starts,
	       (long)getpid());
	fflush(stdout);
	if (strcmp(mode, "keep") == 0)
		return 0;
	rasp_heap_destroy(heap);
	if (strcmp(mode, "quick-exit") == 0)
		_exit(0);
	return 0;
}
