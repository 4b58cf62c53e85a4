/* A program allocating known amounts per type through librasp (configuration from the
 * RASP_* environment), for the end-to-end tests: prints how many AllocationSampled events
 * the runtime fired, in total and per type, so a test can compare with the trace. */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/rasp.h"

struct kind {
	const char *name;
	size_t payload;
	unsigned flags;
	long per_round;
};

static const struct kind kinds[] = {
    /* Payloads: each name's size less the 8-byte header. */
    {"Rasp.Small32", 24, 0, 64},
    {"Rasp.Medium1016", 1008, 0, 8},
    {"Rasp.Overflow20016", 20008, 0, 1},
    {"Rasp.Large100016", 100008, 0, 1},
    {"Rasp.Pinned216", 208, RASP_ALLOC_PINNED, 2},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 2000, r, i;
	const rasp_type_t *types[NKINDS];
	rasp_heap_stats_t st;
	rasp_heap_t *h;
	size_t k;
	int err;

	err = rasp_heap_create(&h, NULL);
	if (err) {
		fprintf(stderr, "rasp_heap_create: %s\n", rasp_strerror(err));
		return 2;
	}
	for (k = 0; k < NKINDS; k++) {
		types[k] = rasp_type_register(h, kinds[k].name);
		if (!types[k])
			return 2;
	}
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < NKINDS; k++) {
			for (i = 0; i < kinds[k].per_round; i++) {
				void *p = rasp_alloc(h, types[k], kinds[k].payload, kinds[k].flags);

				if (!p) {
					perror("rasp_alloc");
					return 2;
				}
				memset(p, 0, kinds[k].payload < 16 ? kinds[k].payload : 16);
				rasp_free(h, p);
			}
		}
	}
	rasp_heap_stats(h, &st);
	printf("samples=%" PRIu64 " starts=%" PRIu64 " pid=%ld\n", st.samples, st.sampling_starts,
	       (long)getpid());
	for (k = 0; k < NKINDS; k++)
		printf("type %s objects=%ld payload=%zu\n", kinds[k].name,
		       rounds * kinds[k].per_round, kinds[k].payload);
	rasp_heap_destroy(h);
	return 0;
}
