/* The objects interval of a sum of cells (objects.c), inside report/: estimate.c merges the
 * sampled cells into a part and asks for its interval (docs/sampling.md, "Objects"). No
 * babeltrace2 types. */
#ifndef RASP_CONSUMER_OBJECTS_H
#define RASP_CONSUMER_OBJECTS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "estimate.h"

/* Probability that an object of z bytes is sampled: 1 - q^z, as -expm1(z log1p(-p)).
 * 1 - pow(1 - p, z) cancels: ~1e-10 relative at p = 2^-24 and z = 16 (more where 1 - p
 * itself rounds), against ~1e-16 here. p = 1 gives exactly 1. */
static inline double rasp__p_hit(double p, double z)
{
	return -expm1(z * log1p(-p));
}

/* A size's code in a cell's low list (RASP_EST_LOW_SCALE), and back. z >= 1, so the code is
 * at most ln 2^64 * 1024 < 45500. */
static inline uint16_t rasp__size_code(double z)
{
	return (uint16_t)floor(log(z) * RASP_EST_LOW_SCALE + 0.5);
}

static inline double rasp__code_size(uint16_t code)
{
	return exp(code / RASP_EST_LOW_SCALE);
}

/* The sampled cells of a sum, merged for the objects interval: the weighted estimate, its
 * variance, and the smallest sizes (docs/sampling.md, "Objects"). */
struct rasp__objects_part {
	double objects, var, size_min, size_max;
	double p_min;  /* the smallest p: the largest mean, for the sizes below the samples */
	double p_zmin; /* the p of a cell holding the smallest size */
	uint64_t samples;
	uint32_t nlow;
	uint16_t low[RASP_EST_LOW];
};

/* The sampled cells of cells[0..n) (those at p < 1 with samples), merged into *o. */
void rasp__objects_part_of(const struct rasp_est_cell *cells, size_t n,
			   struct rasp__objects_part *o);
/* The two-sided interval of o's objects at level 1 - alpha into *lo, *hi, and whether too few
 * samples carry it (*low_confidence). */
void rasp__objects_interval(const struct rasp__objects_part *o, double alpha, double *lo,
			    double *hi, int *low_confidence);

#endif /* RASP_CONSUMER_OBJECTS_H */
