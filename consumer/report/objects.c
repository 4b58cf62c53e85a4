/* The objects interval of a sum of cells (objects.h): the weighted estimate's gamma interval,
 * with the objects smaller than any sample extrapolated from the slope of the smallest sizes
 * seen, as an exponential beside the gamma (docs/sampling.md, "Objects"). */
#include "objects.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "distributions.h"

/* The RASP_EST_LOW smallest of two ascending lists, into the first: O(RASP_EST_LOW). */
static void low_merge(struct rasp__objects_part *o, const uint16_t *b, uint32_t nb)
{
	uint16_t out[RASP_EST_LOW];
	uint32_t i = 0, j = 0, k = 0;

	while (k < RASP_EST_LOW && (i < o->nlow || j < nb))
		out[k++] = j >= nb || (i < o->nlow && o->low[i] <= b[j]) ? o->low[i++] : b[j++];
	memcpy(o->low, out, k * sizeof(*out));
	o->nlow = k;
}

void rasp__objects_part_of(const struct rasp_est_cell *cells, size_t n,
			   struct rasp__objects_part *o)
{
	*o = (struct rasp__objects_part){.p_min = 1.0, .p_zmin = 1.0};
	for (size_t i = 0; i < n; i++) {
		const struct rasp_est_cell *c = &cells[i];

		if (c->p == 1.0 || !c->samples)
			continue;
		o->objects += c->objects;
		o->var += c->objects_var;
		o->samples += c->samples;
		if (c->size_max > o->size_max)
			o->size_max = c->size_max;
		if (o->size_min == 0.0 || c->size_min < o->size_min) {
			o->size_min = c->size_min;
			o->p_zmin = c->p;
		}
		if (c->p < o->p_min)
			o->p_min = c->p;
		low_merge(o, c->low, c->nlow);
	}
}

/* Sizes below the smallest sample, on u = ln z: objects per unit of log-size ~ e^(beta u)
 * (a power law), so samples per unit of log-size ~ e^(beta u) (1 - q^z). Integrals over a
 * range of sizes by the midpoint rule on TAIL_POINTS geometric nodes (one expm1 a node; the
 * power taken relative to `ref`, so nothing overflows for the slopes used): ~1e-3 relative
 * for the clamped slopes over 10 e-folds of size, far below the slope's own uncertainty. */
#define TAIL_POINTS 48

struct tail_sums {
	double objs;		   /* integral of (z / ref)^beta d ln z */
	double smp, smp_u, smp_uu; /* of (z / ref)^beta (1 - q^z) d ln z, times 1, u, u^2 */
};

static void tail_sums(double lq, double zlo, double zhi, double ref, double beta,
		      struct tail_sums *t)
{
	double step = log(zhi / zlo) / TAIL_POINTS, r = exp(step), rb = exp(beta * step);
	double z = zlo * exp(0.5 * step), d = exp(beta * log(z / ref)), u = log(z);

	*t = (struct tail_sums){0};
	for (int i = 0; i < TAIL_POINTS; i++) {
		double s = d * -expm1(z * lq);

		t->objs += d;
		t->smp += s;
		t->smp_u += s * u;
		t->smp_uu += s * u * u;
		z *= r;
		d *= rb;
		u += step;
	}
	t->objs *= step;
	t->smp *= step;
	t->smp_u *= step;
	t->smp_uu *= step;
}

/* The integral of (z / ref)^c d ln z over [zlo, zhi]. */
static double power_integral(double zlo, double zhi, double ref, double c)
{
	double l = log(zhi / zlo);

	if (fabs(c * l) < 1e-8)
		return l;
	return exp(c * log(zlo / ref)) * expm1(c * l) / c;
}

/* objs and smp of tail_sums alone: in closed form where every size has h ~ z p (below
 * 0.05 / p; 1 - q^z = z p' - (z p')^2 / 2 + ..., p' = -ln q, kept to the second order: 4e-4
 * relative), by the midpoint rule otherwise. */
static void tail_counts(double lq, double zlo, double zhi, double ref, double beta, double *objs,
			double *smp)
{
	double pp = -lq;

	if (zhi * pp < 0.05) {
		*objs = power_integral(zlo, zhi, ref, beta);
		*smp = pp * ref * power_integral(zlo, zhi, ref, beta + 1.0) -
		       0.5 * pp * pp * ref * ref * power_integral(zlo, zhi, ref, beta + 2.0);
		return;
	}
	struct tail_sums t;

	tail_sums(lq, zlo, zhi, ref, beta, &t);
	*objs = t.objs;
	*smp = t.smp;
}

/* Slopes used: steeper ones add nothing a bounded slope does not (beta = -1 is a flat
 * distribution of bytes over log-size, beta = 4 nearly no objects below). */
#define SLOPE_MIN (-1.0)
#define SLOPE_MAX 4.0

/* The mean and variance of u = ln z over [a, b] under the samples' density e^(beta u) h(e^u).
 * Where every size has h ~ z p (the top below 0.05 / p: 2.5% there, a shift of the slope far
 * below its own uncertainty), the density is e^((beta + 1) u): a
 * truncated exponential, in closed form. */
static void tail_moments(double lq, double a, double b, double beta, double *mean, double *var)
{
	double g = beta + 1.0, len = b - a;

	if (-expm1(exp(b) * lq) < 0.05) {
		double x = g * len;

		if (fabs(x) < 1e-6) {
			*mean = 0.5 * (a + b);
			*var = len * len / 12.0;
		} else {
			double em = expm1(x);

			*mean = b + len / em - 1.0 / g;
			*var = 1.0 / (g * g) - len * len * (em + 1.0) / (em * em);
		}
		return;
	}
	struct tail_sums t;

	tail_sums(lq, exp(a), exp(b), exp(b), beta, &t);
	*mean = t.smp_u / t.smp;
	*var = t.smp_uu / t.smp - *mean * *mean;
}

/* The slope beta of the objects' distribution over log-size near the smallest sizes: the
 * maximum-likelihood fit of the samples below tau = the largest size kept, over
 * [RASP_EST_SIZE_FLOOR, tau) (the mean of their log-size under the density above is the
 * sample's; it rises with beta, its derivative is the variance): Newton steps kept in a
 * bisection bracket, at most 40. 0 (a flat distribution) with fewer than 2 such samples.
 * *tau and *below: the top of the fit's range and how many samples lie below it. */
static double tail_slope(const struct rasp__objects_part *o, double lq, double *tau,
			 uint32_t *below)
{
	double a = log(RASP_EST_SIZE_FLOOR), b, sum = 0.0, lo = -8.0, hi = 12.0, beta = 0.0;
	uint32_t m = 0;

	*tau = rasp__code_size(o->low[o->nlow - 1]);
	while (m < o->nlow - 1 && o->low[m] < o->low[o->nlow - 1])
		m++;
	*below = m;
	b = log(*tau);
	if (m < 2 || !(b > a))
		return 0.0;
	for (uint32_t i = 0; i < m; i++)
		sum += o->low[i] / RASP_EST_LOW_SCALE;
	sum /= m;
	for (int i = 0; i < 40 && hi - lo > 1e-6; i++) {
		double mean, var, next;

		tail_moments(lq, a, b, beta, &mean, &var);
		if (mean < sum)
			lo = beta;
		else
			hi = beta;
		next = var > 0.0 ? beta - (mean - sum) / var : NAN;
		if (!(next > lo && next < hi))
			next = 0.5 * (lo + hi);
		if (fabs(next - beta) < 1e-6)
			break;
		beta = next;
	}
	return fmin(fmax(beta, SLOPE_MIN), SLOPE_MAX);
}

/* The sum of a gamma (the estimate from the samples, less the smallest one) and G times a
 * standard exponential (the objects below the smallest sample: the expected samples below the
 * first one is Exp(1) when the distribution goes on below it). */
struct tail_sum {
	struct rasp__gamma_shape k;
	double theta, g;
};

/* Its CDF: P(k, x / theta) - e^(-x / g) E[e^(B / g); B <= x], the latter a gamma CDF of scale
 * theta' = theta g / (g - theta) times (1 - theta / g)^-k (theta < g here). The density is
 * (P(k, x / theta) - CDF) / g. */
static double tail_sum_cdf(const void *ctx, double x, double *dens)
{
	const struct tail_sum *t = ctx;
	double lb, lp, fb = rasp__gamma_p_log(&t->k, x / t->theta, &lb);
	double thp = t->theta * t->g / (t->g - t->theta);

	rasp__gamma_p_log(&t->k, x / thp, &lp);
	double e = exp(-x / t->g - t->k.a * log1p(-t->theta / t->g) + lp);
	double f = fb - e;

	*dens = e / t->g;
	return f < 0.0 ? 0.0 : f;
}

/* The quantile of (body gamma of mean kb, variance vb) + g Exp(1). Exact (the CDF above) when
 * the exponential is the heavier tail and not negligible; otherwise the gamma with the same
 * mean and variance, within ~1e-3 of it there. */
static double tail_sum_quantile(double prob, double z, double kb, double vb, double g)
{
	if (!(kb > 0.0) || !(vb > 0.0))
		return fmax(kb, 0.0) - g * log1p(-prob);
	double mean = kb + g, var = vb + g * g, k = kb * kb / vb, a = mean * mean / var;

	if (vb / kb >= g || g < 0.05 * sqrt(vb) || k > RASP__GAMMA_WH_SHAPE)
		return var / mean * rasp__gamma_quantile(prob, z, a);
	/* From the matched gamma's Wilson-Hilferty quantile: close enough a start. */
	double t3 = 1.0 - 1.0 / (9.0 * a) + z / sqrt(9.0 * a);
	struct tail_sum t = {rasp__gamma_shape(k), vb / kb, g};

	return rasp__newton_root(tail_sum_cdf, &t, prob, var / mean * a * t3 * t3 * t3);
}

/* The objects interval of the sampled cells (docs/sampling.md, "Objects"): Fay and Feuer's
 * gamma interval for a weighted sum of Poisson counts (mean and variance of the weighted
 * estimate; the high bound with one more sample), where that one more sample is put below the
 * smallest sample seen when the sizes spread: objects per expected sample G there, under the
 * slope fitted on the smallest samples, as an exponential beside a gamma for the rest. Rows
 * mixing sampling means do not know which stream the sizes below would be in: the high bound
 * takes the largest mean (the most objects per sample), the low one the mean of the smallest
 * sample's cell. */
void rasp__objects_interval(const struct rasp__objects_part *o, double alpha, double *lo,
			    double *hi, int *low_confidence)
{
	double k = o->objects, v = o->var, zmin = o->size_min;
	double zq = rasp_normal_quantile(1.0 - alpha / 2.0);
	double h0 = rasp__p_hit(o->p_zmin, zmin), w0 = 1.0 / h0, v0 = (1.0 - h0) / (h0 * h0);
	double g = 0.0, g_low = 0.0, unseen = 0.0;
	bool spread = o->size_max > zmin;

	*low_confidence = 0;
	if (!(v > 0.0)) { /* every sampled object was certain to be: a count */
		*lo = *hi = k;
		return;
	}
	if (spread && zmin > RASP_EST_SIZE_FLOOR && o->nlow > 1) {
		double lq = log1p(-o->p_min), tau;
		uint32_t below;
		double beta = tail_slope(o, lq, &tau, &below), objs, smp;

		tail_counts(lq, RASP_EST_SIZE_FLOOR, zmin, zmin, beta, &objs, &smp);
		g = g_low = objs / smp;
		if (o->p_zmin != o->p_min) {
			double objs2, smp2;

			tail_counts(log1p(-o->p_zmin), RASP_EST_SIZE_FLOOR, zmin, zmin, beta,
				    &objs2, &smp2);
			g_low = objs2 / smp2;
		}
		/* The objects below zmin at the density the samples above it show (the samples
		 * between zmin and tau per unit of that density): what the flag weighs, not
		 * more than the few expected samples below that no sample is likely to show. */
		if (tau > zmin && below > 0) {
			double objs2, smp2;

			tail_counts(lq, zmin, tau, zmin, beta, &objs2, &smp2);
			unseen = fmin(below * objs / smp2, 3.0 * g);
		}
	}
	/* Too few samples for the spread of sizes: fewer than 10 effective samples (Kish's
	 * (sum w)^2 / sum w^2, with the one below the smallest among them: a few samples of small
	 * objects carry the count), or the objects extrapolated below the smallest sample may be a
	 * quarter of the count. Chosen by the simulation of docs/sampling.md. */
	*low_confidence = spread && ((k + g) * (k + g) < 10.0 * (v + g * g) || unseen > 0.25 * k);
	if (g == 0.0 || (o->nlow > 1 && o->low[1] == o->low[0])) {
		/* One size, or the smallest one seen more than once (a size of its own, whose
		 * count is Poisson): the plain gamma interval, one more sample of that size or,
		 * when more, of the sizes below. */
		double w = fmax(w0, g), kw = k + w, vw = v + w * w;

		*lo = v / k * rasp__gamma_quantile(alpha / 2.0, -zq, k * k / v);
		*hi = vw / kw * rasp__gamma_quantile(1.0 - alpha / 2.0, zq, kw * kw / vw);
	} else {
		*lo = tail_sum_quantile(alpha / 2.0, -zq, k - w0, v - v0, g_low);
		*hi = tail_sum_quantile(1.0 - alpha / 2.0, zq, k - w0, v - v0, g);
	}
}
