/* rasp diff's statistics: per type, the change in estimated bytes between two reports and
 * whether it is significant. Each side's interval gives a standard error on the side facing
 * the other estimate (intervals are skewed at few samples, so the half that matters is used,
 * divided by the normal quantile of the confidence); the change's z-score is
 * (new - base) / sqrt(se_base^2 + se_new^2). Comparing many types at once, the flags control
 * the false discovery rate at 1 - confidence (Benjamini-Hochberg). A type one side never
 * sampled has 0 bytes there, and as upper bound the negative binomial quantile of one sample at
 * that side's largest sampling mean: what could hide below the sampling rate.
 * n log n in types. No babeltrace2 types. */
#ifndef RASP_CONSUMER_DIFF_H
#define RASP_CONSUMER_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "estimate.h"

struct rasp_diff_item {
	const char *type;
	struct rasp_est_total est;
};

struct rasp_diff_side {
	const char *name; /* what the user gave, for messages */
	const struct rasp_diff_item *items;
	size_t n;
	double mean; /* largest sampling mean of the side */
};

struct rasp_diff_change {
	const char *type;
	struct rasp_est_total base, new_;
	bool in_base, in_new; /* sampled on that side */
	double p_value;	      /* two-sided, of the change in bytes */
	bool significant;
};

/* Matches the sides' types and tests each change. *out (caller frees) is sorted by the size
 * of the change, largest first. 0, -EINVAL (bad confidence), -ENOMEM. */
int rasp_diff_compute(const struct rasp_diff_side *base, const struct rasp_diff_side *new_,
		      double confidence, struct rasp_diff_change **out, size_t *n);

/* The two-sided p-value of a change, from the interval halves facing each other at normal
 * quantile z_c (exposed for tests). */
double rasp_diff_p_value(const struct rasp_est_total *base, const struct rasp_est_total *new_,
			 double z_c);

/* Benjamini-Hochberg at level alpha over n changes (exposed for tests). 0 or -ENOMEM. */
int rasp_diff_flag(struct rasp_diff_change *c, size_t n, double alpha);

#endif /* RASP_CONSUMER_DIFF_H */
