/* The unwinders a sampled allocation could use, timed at a chosen depth (docs/performance.md,
 * runtime/stack.c): walking frame pointers, libunwind's unw_backtrace() and glibc's
 * backtrace(). Built twice by run.sh, with and without -DWITH_LIBUNWIND: libunwind exports a
 * `backtrace` of its own, so a program linked with it may no longer be timing glibc's.
 *   unwind DEPTH [REPS]   prints, per unwinder, the frames found and the ns per walk */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef WITH_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

enum unwinder { FRAME_POINTERS, LIBUNWIND, GLIBC, N_UNWINDERS };

static const char *const names[] = {"frame pointers", "libunwind unw_backtrace", "glibc backtrace"};
static enum unwinder which;
static long reps;
static void *frames[128];
static int found;
static double ns_per_walk;

/* Follows the saved frame pointers (this program is built with them; most of Debian is not). */
static __attribute__((noinline)) int walk_frame_pointers(void **out, int max)
{
	void **fp = __builtin_frame_address(0);
	int n = 0;

	while (fp && n < max && fp[1]) {
		void **next = fp[0];

		out[n++] = fp[1];
		if (next <= fp) /* the stack grows down: anything else is not a frame */
			break;
		fp = next;
	}
	return n;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static __attribute__((noinline)) void time_walks(void)
{
	double t0 = now_ns();

	for (long i = 0; i < reps; i++) {
		if (which == FRAME_POINTERS)
			found = walk_frame_pointers(frames, 128);
#ifdef WITH_LIBUNWIND
		else if (which == LIBUNWIND)
			found = unw_backtrace(frames, 128);
#endif
		else if (which == GLIBC)
			found = backtrace(frames, 128);
		__asm__ volatile("" ::: "memory");
	}
	ns_per_walk = (now_ns() - t0) / (double)reps;
}

/* depth calls deep, then the walks (not a tail call: the frames must exist). */
static __attribute__((noinline)) int descend(int depth)
{
	int r;

	if (depth == 0) {
		time_walks();
		return 0;
	}
	r = descend(depth - 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 0;

	reps = argc > 2 ? atol(argv[2]) : 20000;
	if (depth < 1 || depth > 100 || reps < 1) {
		fprintf(stderr, "usage: unwind DEPTH(1..100) [REPS]\n");
		return 2;
	}
	backtrace(frames, 4); /* loads libgcc's unwinder before timing */
	for (which = 0; which < N_UNWINDERS; which++) {
#ifdef WITH_LIBUNWIND
		if (which == GLIBC)
			continue;
#else
		if (which == LIBUNWIND)
			continue;
#endif
		descend(depth);
		printf("%-24s %3d frames %8.0f ns per walk\n", names[which], found, ns_per_walk);
	}
	return 0;
}
