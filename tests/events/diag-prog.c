/* Test program for the diagnostic server (test-diag-server.c, the .NET tests): THREADS threads
 * allocate and free three types (Diag.Small 40 B, Diag.Medium 1000 B, Diag.Large 100000 B) in
 * turn from one heap until SECONDS have passed or SIGTERM/SIGINT arrives, then print
 * "allocations=N failed=F samples=S starts=T pid=P" and exit 0 when no allocation failed.
 * With a file argument, it waits until that file exists before allocating, and prints each
 * type's allocation count (its truth) as "truth TYPE OBJECTS BYTES" at the end: a client can
 * start its session first. GO-FILE "session" waits instead until a session wants the samples
 * (rasp_heap_sampling_active). Sampling is the heap's auto mode: on while a session wants it.
 * DIAG_COUNT=N in the environment: each thread stops after N allocations; the program prints
 * "done" and waits for SIGTERM (a known volume of events, whatever the build's speed). Each
 * thread sleeps 1 ms every 1024 allocations: an application's pace, not a benchmark's.
 * DIAG_PIN=1: no allocation; the main thread reads the session epoch (which pins its events
 * to the sessions running then), prints "pinned", waits until a session starts, fires one
 * AllocationSampled of type "Pin.Before", reads the epoch again, fires one of "Pin.After",
 * prints "done" and waits for SIGTERM: the first must reach no session started after the
 * read, the second the new one. DIAG_EXEC="PROGRAM ARG...": once the heap is made, prints
 * "exec" and execs PROGRAM (a path) with those arguments and DIAG_EXEC unset. DIAG_FORK=1:
 * once the GO-FILE is there, forks a child that sleeps (and dies with the program) and prints
 * "forked PID"; the child prints "child forked" once its fork has returned. DIAG_FORK=2: that child
 * first opens 16 descriptors (one takes the number of the listening socket it closed), forks a
 * grandchild that prints "grandchild kept N of 16" (how many of them it still has open), and waits
 * for it. diag-prog THREADS SECONDS [GO-FILE | session] */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rasp/events.h"
#include "rasp/rasp.h"

static rasp_heap_t *heap;
static const rasp_type_t *types[3];
static const size_t sizes[3] = {40, 1000, 100000};
static const char *const names[3] = {"Diag.Small", "Diag.Medium", "Diag.Large"};
/* Lock-free, so the handler may set it; atomic, so the workers may read it. */
static _Atomic int stop;
static _Atomic uint64_t counts[3], failed;
static double seconds;
static size_t zs[3];
static unsigned long count_limit; /* DIAG_COUNT; 0: none */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *work(void *arg)
{
	double end = now() + seconds;
	uint64_t n[3] = {0, 0, 0}, bad = 0;

	(void)arg;
	for (unsigned i = 0; !stop; i++) {
		int k = i % 16 == 15 ? 2 : i % 4 == 3 ? 1 : 0; /* mostly small */
		void *p = rasp_alloc(heap, types[k], sizes[k], 0);

		if (!p)
			bad++;
		else
			n[k]++;
		rasp_free(heap, p);
		/* A program's pace, not a benchmark's: at most ~1 M allocations a second a thread
		 * (one in 16 is 100 KB, most of those sampled at the default mean). Unpaced, with
		 * large mappings reused from a cache, a thread fired ~800,000 samples a second,
		 * past what the tests' sessions are meant to carry without loss. */
		if (i % 1024 == 1023)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		if (i % 4096 == 0 && now() > end)
			break;
		if (count_limit && i + 1 >= count_limit)
			break;
	}
	for (int k = 0; k < 3; k++)
		atomic_fetch_add(&counts[k], n[k]);
	atomic_fetch_add(&failed, bad);
	return NULL;
}

/* Another thread's reads of the epoch (this one's own would pin it anew), until a session
 * starts. */
static void *await_session(void *arg)
{
	unsigned e0 = *(unsigned *)arg;

	while (!stop && rasp_events_session_epoch() == e0)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	return NULL;
}

static int pin_mode(void)
{
	unsigned e0 = rasp_events_session_epoch();
	pthread_t th;

	printf("pinned\n");
	fflush(stdout);
	pthread_create(&th, NULL, await_session, &e0);
	pthread_join(th, NULL);
	rasp_event_allocation_sampled(0, 0, (uintptr_t)types[0], "Pin.Before", 0x1000, 48, 0);
	rasp_events_session_epoch();
	rasp_event_allocation_sampled(0, 0, (uintptr_t)types[0], "Pin.After", 0x2000, 48, 0);
	printf("done\n");
	fflush(stdout);
	while (!stop)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	printf("allocations=0 failed=0 samples=0 starts=0 pid=%d\n", (int)getpid());
	rasp_heap_destroy(heap);
	return 0;
}

/* DIAG_FORK=2, in the forked child: the descriptors it opens after its fork are its own,
 * and a fork of its own must leave them to it. */
static void fork_again(void)
{
	int fds[16], kept = 0;
	pid_t g;

	for (int i = 0; i < 16; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	g = fork();
	if (g == 0) {
		for (int i = 0; i < 16; i++)
			kept += fds[i] >= 0 && fcntl(fds[i], F_GETFD) >= 0;
		dprintf(1, "grandchild kept %d of 16\n", kept);
		_exit(0);
	}
	if (g > 0)
		waitpid(g, NULL, 0);
}

static int exec_mode(const char *what)
{
	static char copy[4096];
	char *argv[16], *save = NULL;
	int n = 0;

	snprintf(copy, sizeof(copy), "%s", what);
	for (char *t = strtok_r(copy, " ", &save); t && n < 15; t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	argv[n] = NULL;
	unsetenv("DIAG_EXEC");
	printf("exec\n");
	fflush(stdout);
	if (n)
		execv(argv[0], argv);
	perror("diag-prog: exec");
	return 1;
}

int main(int argc, char **argv)
{
	rasp_config_t cfg;
	rasp_heap_stats_t st;
	pthread_t th[64];
	long threads;
	uint64_t total = 0;

	if (argc < 3 || (threads = strtol(argv[1], NULL, 10)) < 1 || threads > 64 ||
	    (seconds = strtod(argv[2], NULL)) <= 0) {
		fprintf(stderr, "usage: diag-prog THREADS(1-64) SECONDS [GO-FILE]\n");
		return 2;
	}
	if (getenv("DIAG_COUNT"))
		count_limit = strtoul(getenv("DIAG_COUNT"), NULL, 10);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	rasp_config_init(&cfg);
	if (rasp_config_from_env(&cfg) || rasp_heap_create(&heap, &cfg))
		return 1;
	for (int k = 0; k < 3; k++) {
		void *p;

		types[k] = rasp_type_register(heap, names[k]);
		/* ObjectSize: the block of the size's class. */
		p = rasp_alloc(heap, types[k], sizes[k], 0);
		if (!p)
			return 1;
		zs[k] = rasp_object_size(p);
		rasp_free(heap, p);
	}
	if (getenv("DIAG_PIN"))
		return pin_mode();
	if (getenv("DIAG_EXEC"))
		return exec_mode(getenv("DIAG_EXEC"));
	if (argc > 3) {
		printf("waiting for %s\n", argv[3]);
		fflush(stdout);
		while (!stop &&
		       (strcmp(argv[3], "session") == 0 ? rasp_heap_sampling_active(heap) != 1
							: access(argv[3], F_OK) != 0))
			nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	if (getenv("DIAG_FORK")) {
		pid_t child = fork();

		if (child == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			/* Past its fork handlers: the descriptors it closes are closed. */
			dprintf(1, "child forked\n");
			if (strcmp(getenv("DIAG_FORK"), "2") == 0)
				fork_again();
			for (;;)
				pause();
		}
		printf("forked %d\n", (int)child);
	}
	printf("allocating\n");
	fflush(stdout);
	for (long t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, work, NULL);
	for (long t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	if (count_limit) {
		printf("done\n");
		fflush(stdout);
		while (!stop)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	for (int k = 0; k < 3; k++) {
		total += counts[k];
		if (argc > 3)
			printf("truth %s %" PRIu64 " %" PRIu64 "\n", names[k], counts[k],
			       counts[k] * zs[k]);
	}
	rasp_heap_stats(heap, &st);
	printf("allocations=%" PRIu64 " failed=%" PRIu64 " samples=%" PRIu64 " starts=%" PRIu64
	       " pid=%d\n",
	       total, (uint64_t)failed, st.samples, st.sampling_starts, (int)getpid());
	rasp_heap_destroy(heap);
	return failed ? 1 : 0;
}
