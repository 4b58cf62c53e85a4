/* The distributions the estimates are quantiles of, inside report/ (distributions.c; the
 * public functions, rasp_betainc to rasp_gamma_quantile, are declared in estimate.h): what
 * estimate.c's sums and objects interval call besides. No babeltrace2 types. */
#ifndef RASP_CONSUMER_DISTRIBUTIONS_H
#define RASP_CONSUMER_DISTRIBUTIONS_H

#include <stdbool.h>

/* A gamma shape with the part of log(x^a e^-x / Gamma(a + 1)) that depends on it alone,
 * computed once for the many CDF evaluations of a quantile. */
struct rasp__gamma_shape {
	double a, c;
};

/* Past this shape the Wilson-Hilferty cube-root normal approximation is closer than 1e-9 and
 * the series below would need ~sqrt(a) terms. */
#define RASP__GAMMA_WH_SHAPE 1e7

struct rasp__gamma_shape rasp__gamma_shape(double a);
/* P(a, x) of the standard gamma of shape s, and its log in *logp. */
double rasp__gamma_p_log(const struct rasp__gamma_shape *s, double x, double *logp);
/* The standard gamma's quantile; z: the normal quantile of prob. */
double rasp__gamma_quantile(double prob, double z, double a);
/* The negative binomial quantile for any real s > 0, and the side of its one-ulp bracket a
 * lower bound (`low`) takes past 2^53. */
double rasp__nb_quantile(double prob, double s, double p);
double rasp__nb_quantile_side(double prob, double s, double p, bool low);
/* The x >= 0 where a nondecreasing cdf(x) (its density in *dens) reaches prob, from start. */
double rasp__newton_root(double (*cdf)(const void *, double, double *), const void *ctx,
			 double prob, double start);

#endif /* RASP_CONSUMER_DISTRIBUTIONS_H */
