/* A heap of a given sampling mode and mean with a fixed seed, for the runtime's tests (their
 * results are then the same at every run). NULL if rasp_heap_create fails. */
#ifndef RASP_TEST_HEAP_H
#define RASP_TEST_HEAP_H

#include <stdint.h>

#include "rasp/rasp.h"

static inline rasp_heap_t *test_heap(int sampling, uint64_t mean, uint64_t seed)
{
	rasp_config_t cfg;
	rasp_heap_t *h = NULL;

	rasp_config_init(&cfg);
	cfg.sampling = sampling;
	cfg.sampling_mean = mean;
	cfg.has_seed = 1;
	cfg.seed = seed;
	return rasp_heap_create(&h, &cfg) == 0 ? h : NULL;
}

#endif /* RASP_TEST_HEAP_H */
