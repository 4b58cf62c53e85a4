/* Estimation math for sampled allocations: no babeltrace2 types, unit-tested alone.
 *
 * Model (docs/sampling.md): every allocated byte of a thread is a Bernoulli trial with
 * success probability p; an object is sampled at its first successful byte, and its later
 * bytes get no trials. A cell holds the samples of one thread that fall in one group (a type,
 * a kind, ...): the unit every estimate starts from. Groups and totals are sums of cells
 * over threads and processes: unbias per cell first, then sum.
 *
 * Errors are 0 or a negative errno value (-EINVAL names a bad argument). */
#ifndef RASP_CONSUMER_ESTIMATE_H
#define RASP_CONSUMER_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "rasp/rasp.h" /* RASP_MIN_OBJECT_SIZE */

/* Largest confidence an interval is computed at. Past it the tail probabilities (1 - C) / 2
 * stop being meaningful next to the model's own assumptions, and near 1 - 2^-53 the upper
 * one rounds to 1 and the quantile is infinite. */
#define RASP_EST_MAX_CONFIDENCE 0.999999999

/* 1 when confidence is in (0, RASP_EST_MAX_CONFIDENCE], else 0 (NaN included). */
int rasp_est_confidence_valid(double confidence);

/* Standard normal quantile, to ~1e-15 relative; -inf at 0, +inf at 1, NaN outside [0, 1]. */
double rasp_normal_quantile(double prob);

/* The odds below which the samples are said to contradict the sampling model: one in a
 * million, so a report of many rows flags none by chance. */
#define RASP_EST_CONTRADICTION 1e-6

/* The smallest object a runtime allocates, in bytes (rasp's; .NET's smallest, 24, only makes
 * the objects interval wider): no object is assumed smaller (docs/sampling.md, "Objects"). */
#define RASP_EST_SIZE_FLOOR ((double)RASP_MIN_OBJECT_SIZE)

/* How many of its smallest sampled sizes a cell keeps. The objects interval fits the size
 * distribution's slope below them on all but the largest kept; the smallest of a merge are
 * the smallest of the cells' smallest, so cells merge exactly. */
#define RASP_EST_LOW 65

/* The sizes kept are coded as round(ln z * RASP_EST_LOW_SCALE) in 16 bits (sizes to 2^64):
 * 0.05% in size, far below what the slope fit resolves, at 2 bytes a size. */
#define RASP_EST_LOW_SCALE 1024.0

struct rasp_est_cell {
	double p;	      /* per-byte success probability of this thread's sampler, 1/mean */
	uint64_t samples;     /* s: sampled objects */
	double bytes;	      /* weighted estimate: sum z / (1 - q^z) */
	double objects;	      /* weighted estimate: sum 1 / (1 - q^z) */
	double unsampled;     /* u: sum (z - o), the sampled byte and the untried bytes after it */
	double sampled_bytes; /* sum z: bytes of the sampled objects, certainly allocated */
	/* The objects estimate's variance, estimated: the sum over the samples of (1 - h) / h^2,
	 * h = 1 - q^z (docs/sampling.md, "Objects"). */
	double objects_var;
	double size_min, size_max; /* the smallest and largest sampled size, 0 without samples */
	double low_cut; /* low full: sizes from here on are not kept (no log taken for them) */
	uint32_t nlow;	/* entries of low */
	uint16_t low[RASP_EST_LOW]; /* the smallest sampled sizes, coded, ascending */
};

/* p in (0, 1]; -EINVAL otherwise. */
int rasp_est_cell_init(struct rasp_est_cell *cell, double p);

/* Adds one sample: object size z > 0, sampled byte offset o < z; -EINVAL otherwise, and the
 * cell is left unchanged. */
int rasp_est_cell_add(struct rasp_est_cell *cell, uint64_t object_size, uint64_t sampled_offset);

struct rasp_est_total {
	uint64_t samples;
	double bytes;	     /* weighted (point) estimate */
	double objects;	     /* weighted (point) estimate */
	double bytes_low;    /* confidence interval for bytes, from the negative binomial */
	double bytes_high;   /* (failed trials + u), with the window adjustments of sampling.md */
	double objects_low;  /* gamma intervals of the weighted estimate, with the objects */
	double objects_high; /* smaller than any sample allowed for (docs/sampling.md, "Objects") */
	/* The samples contradict the model (a wrong sampling mean, or offsets no Bernoulli
	 * sampler drew): the point estimate lies outside even the interval at odds
	 * RASP_EST_CONTRADICTION, or every bound lies below the bytes the samples prove. */
	int contradicts;
	/* The objects interval cannot be trusted: the sizes spread and either fewer than 10
	 * samples show them or the objects smaller than the smallest sample, as extrapolated, may
	 * be a quarter of the estimate or more (docs/sampling.md, "Objects"). */
	int low_confidence;
};

/* Sums n cells (distinct threads, possibly with distinct p) into a total with a two-sided
 * interval at `confidence` (rasp_est_confidence_valid). n = 0 gives all zeros. -EINVAL on a
 * NULL pointer with n > 0, a confidence out of range or a cell with an invalid p; -ERANGE
 * if a bound cannot be computed (not seen for any p in (0, 1] and s below 2^53). Bounds past
 * 2^53 are bracketed to one ulp, on the side that widens the interval. The lower bounds are
 * never below what was seen: the sampled objects' bytes and their number. */
int rasp_est_sum(const struct rasp_est_cell *cells, size_t n, double confidence,
		 struct rasp_est_total *out);

/* A memo of the quantiles rasp_est_sum_memo computes: a report's rows mostly share a few
 * (samples, p), so each distinct interval is computed once. NULL on allocation failure. */
struct rasp_est_memo;
struct rasp_est_memo *rasp_est_memo_create(void);
void rasp_est_memo_destroy(struct rasp_est_memo *m);
/* rasp_est_sum through a memo (NULL: none); the same results. */
int rasp_est_sum_memo(const struct rasp_est_cell *cells, size_t n, double confidence,
		      struct rasp_est_memo *memo, struct rasp_est_total *out);

/* Negative binomial NB(s, p): failures before the s-th success. Exposed for tests. */

/* Regularized lower incomplete gamma P(a, x), a > 0, x >= 0; NaN on bad input. */
double rasp_gamma_p(double a, double x);

/* The x with P(a, x) = prob, prob in (0, 1), a > 0 (the standard gamma's quantile, to ~1e-12
 * relative; Wilson-Hilferty past a = 1e7, where it is closer than that); NaN on bad input. */
double rasp_gamma_quantile(double prob, double a);

/* Regularized incomplete beta I_x(a, b), a > 0, b > 0, 0 <= x <= 1; NaN on bad input. */
double rasp_betainc(double a, double b, double x);

/* P(K <= k) = I_p(s, k + 1) for k >= 0; 0 for k < 0; NaN on bad input. */
double rasp_nb_cdf(double k, double s, double p);

/* Smallest integer k >= 0 with P(K <= k) >= prob, prob in (0, 1), s >= 1; NaN on bad input.
 * Past 2^53, where not every integer is a double, the smallest double with CDF >= prob. */
double rasp_nb_quantile(double prob, double s, double p);

/* The failed-trials interval of one stream without window adjustments (the .NET design
 * doc's form, for a window that starts just after a sample and ends on one):
 * [F^-1((1-C)/2; s) + u, F^-1((1+C)/2; s) + u] with F the CDF of NB(s, p). s = 0 gives
 * [u, u]. -EINVAL on a NULL pointer, s or u negative or not finite, p out of (0, 1] or a
 * confidence out of range; -ERANGE as for rasp_est_sum. rasp_est_sum applies the adjustments
 * instead (upper bound with one more sample per sampling mean); this form is for tests and aligned
 * windows. */
int rasp_est_interval(double samples, double p, double unsampled, double confidence, double *low,
		      double *high);

#endif /* RASP_CONSUMER_ESTIMATE_H */
