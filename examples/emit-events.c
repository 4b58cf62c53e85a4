/* rasp-emit: fires AllocationSampled events through librasp's event API, with no allocator
 * behind them, so the event layer can be recorded and checked on its own.
 * Usage: rasp-emit [-n COUNT] [-s SEED] [-m MEAN]
 * Linked against librasp only: librasp loads the LTTng provider itself (no LD_PRELOAD). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rasp/events.h"
#include "rasp/rasp.h"

static const char *const type_names[] = {"System.String", "System.Int32[]", "Demo.Node",
					 "System.Byte[]", NULL};

static int parse_u64(const char *opt, const char *text, uint64_t min, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text || *end || text[0] == '-' || v < min) {
		fprintf(stderr, "rasp-emit: %s '%s' is not an integer >= %" PRIu64 "\n", opt, text,
			min);
		return -1;
	}
	*out = v;
	return 0;
}

static uint64_t next(uint64_t *s)
{
	/* splitmix64: deterministic, enough for made-up sizes. */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
	uint64_t count = 1000, seed = 1, mean = RASP_DEFAULT_SAMPLING_MEAN;
	int c;

	while ((c = getopt(argc, argv, "n:s:m:h")) != -1) {
		switch (c) {
		case 'n':
			if (parse_u64("-n", optarg, 0, &count))
				return 2;
			break;
		case 's':
			if (parse_u64("-s", optarg, 0, &seed))
				return 2;
			break;
		case 'm':
			if (parse_u64("-m", optarg, 1, &mean))
				return 2;
			break;
		case 'h':
			printf("usage: rasp-emit [-n COUNT] [-s SEED] [-m MEAN]\n"
			       "Fire COUNT DotNETRuntime:AllocationSampled events (default 1000) "
			       "after one\n"
			       "Rasp_Runtime:SamplingConfigured carrying MEAN (default %d).\n",
			       RASP_DEFAULT_SAMPLING_MEAN);
			return 0;
		default:
			fprintf(stderr, "usage: rasp-emit [-n COUNT] [-s SEED] [-m MEAN]\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rasp-emit: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	rasp_event_sampling_configured(0, mean, 8192, RASP_MAP_SAMPLINGTRIGGERMAP_FORCED);
	for (uint64_t i = 0; i < count; i++) {
		uint64_t r = next(&seed);
		unsigned t = (unsigned)(r % 4);
		uint32_t kind = t == 3 ? (r >> 8) % 3 : 0;
		uint64_t size =
		    kind == 1 ? 85000 + ((r >> 16) % 100000) : 24 + 8 * ((r >> 16) % 64);

		rasp_event_allocation_sampled(kind, 0, (uintptr_t)&type_names[t], type_names[t],
					      (uintptr_t)(0x7f0000000000ULL + 64 * i), size,
					      (r >> 40) % size);
	}
	rasp_event_sampling_stopped(0);
	printf("rasp-emit: fired %" PRIu64
	       " AllocationSampled events (pid %ld); LTTng provider %s\n",
	       count, (long)getpid(),
	       rasp_events_provider_loaded() ? "loaded" : rasp_events_provider_error());
	return 0;
}
