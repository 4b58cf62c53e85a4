/* Fires samples and a late batch of frees, with the times the test checks (test-plugin-frees.c):
 * Batch.A sampled at 0, Batch.B at 50 ms, A freed at 100 ms (nothing said then), Batch.C
 * sampled at 150 ms, then at 200 ms one SampledObjectsFreed with A's free (its Age: 100 ms)
 * and B's (Age 0). Argument "bad-age": the batch's Age for A puts it before the clock's
 * origin. Argument "idle": A freed at once, B sampled at 50 ms, C at 1.55 s, then the batch
 * with A's free alone (a thread idle for longer than rasp convert holds events). Prints its
 * pid. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "frees-tp.h"
#include "frees-rasp-tp.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* LTTng's clock: CLOCK_MONOTONIC. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};

	while (nanosleep(&ts, &ts))
		;
}

int main(int argc, char **argv)
{
	uintptr_t addresses[2] = {0x10000, 0x20000};
	uint64_t sizes[2] = {4096, 4096}, ages[2], freed_a;

	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "idle") == 0) {
		lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, "Batch.A", 0x10000, 4096);
		freed_a = now_ns();
		sleep_ms(50);
		lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, "Batch.B", 0x20000, 4096);
		sleep_ms(1500);
		lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, "Batch.C", 0x30000, 4096);
		ages[0] = now_ns() - freed_a;
		lttng_ust_tracepoint(Rasp_Runtime, SampledObjectsFreed, 1, addresses, sizes, ages);
		return 0;
	}
	lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, "Batch.A", 0x10000, 4096);
	sleep_ms(50);
	lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, "Batch.B", 0x20000, 4096);
	sleep_ms(50);
	freed_a = now_ns();
	sleep_ms(50);
	lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, "Batch.C", 0x30000, 4096);
	sleep_ms(50);
	ages[1] = 0;
	ages[0] = now_ns() - freed_a;
	if (argc > 1 && strcmp(argv[1], "bad-age") == 0)
		ages[0] = UINT64_MAX;
	lttng_ust_tracepoint(Rasp_Runtime, SampledObjectsFreed, 2, addresses, sizes, ages);
	return 0;
}
