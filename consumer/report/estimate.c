/* Estimation math of the consumer: the weighted (unbiased) estimates of a cell, the negative
 * binomial interval of a sum of cells' bytes and the gamma interval of its objects
 * (docs/sampling.md derives them). Owns the regularized incomplete beta and gamma and the
 * quantiles they need; no babeltrace2 types, so the plugin and the unit tests link the same
 * code. */
#include "estimate.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* log(sqrt(2 pi)) */
#define LN_SQRT_2PI 0.91893853320467274178
#define SQRT_2PI    2.50662827463100050242

/* Stirling's correction lgamma(x) - ((x - 1/2) ln x - x + ln sqrt(2 pi)). Taken apart from
 * lgamma so that the log of the beta function for huge arguments (s ~ 1e7, k ~ 1e14) is not
 * the small difference of three values near 1e15, which would leave only ~0.5 absolute
 * accuracy in the exponent. Above 10 the asymptotic series (Bernoulli numbers B2..B12) is
 * below 1e-15; below 10 lgamma is small, so subtracting loses nothing that matters. */
static double stirling_delta(double x)
{
	if (x >= 10.0) {
		double r = 1.0 / x, r2 = r * r;

		return r *
		       (1.0 / 12 + r2 * (-1.0 / 360 +
					 r2 * (1.0 / 1260 +
					       r2 * (-1.0 / 1680 +
						     r2 * (1.0 / 1188 + r2 * (-691.0 / 360360))))));
	}
	return lgamma(x) - ((x - 0.5) * log(x) - x + LN_SQRT_2PI);
}

/* log1p(t) - t without the cancellation of the two terms for small t: with y = t / (2 + t),
 * log1p(t) = 2 atanh(y) = 2 (y + y^3/3 + ...), and 2y - t = -t^2 / (2 + t). At most ~20
 * terms for |t| <= 1/2. */
static double log1pmx(double t)
{
	if (fabs(t) > 0.5)
		return log1p(t) - t;
	double y = t / (2.0 + t), y2 = y * y, pow = y * y2, sum = 0.0;

	for (int k = 3; k < 200; k += 2) {
		double term = pow / k;

		sum += term;
		if (fabs(term) <= fabs(sum) * 1e-17)
			break;
		pow *= y2;
	}
	return -t * t / (2.0 + t) + 2.0 * sum;
}

/* ln(num / den) - dlt / den, where num = den + dlt. Near 1 from log1pmx(dlt / den); far
 * from 1 from the ratio itself, since 1 + dlt / den would have lost the digits of a ratio
 * near 0 (a = 1, b = 1e14, x = 1e-28: 5e-4 relative). 1 - x is exact for x >= 1/2 and
 * relative to 1 otherwise, so num is good to an ulp either way. */
static double log_ratio_mx(double num, double den, double dlt)
{
	double t = dlt / den;

	return fabs(t) <= 0.5 ? log1pmx(t) : log(num / den) - t;
}

/* log(x^a (1-x)^b / B(a, b)), accurate for huge a and b. With n = a + b and d = n x - a:
 * a ln(x n / a) + b ln((1-x) n / b) = a log1pmx(d / a) + b log1pmx(-d / b) (the +d and -d
 * cancel exactly on paper instead of in floating point), and Stirling gives the rest. */
static double log_beta_kernel(double a, double b, double x)
{
	double n = a + b;
	double d = fma(x, n, -a); /* = a - (1 - x) n as well: one rounding, not two */
	double core = a * log_ratio_mx(x * n, a, d) + b * log_ratio_mx((1.0 - x) * n, b, -d);

	return core + 0.5 * log(a * b / n) - LN_SQRT_2PI - stirling_delta(a) - stirling_delta(b) +
	       stirling_delta(n);
}

/* The continued fraction of I_x(a, b) (x^a (1-x)^b / (a B(a, b)) times it), evaluated with
 * the modified Lentz method: no precomputed depth, stops when a step changes the value by
 * less than 1e-16 relative. Converges fast for x < (a + 1) / (a + b + 2); the caller swaps
 * otherwise. Needs O(sqrt(min(a, b))) steps near the mean: ~3000 at a = 1e7. */
static double betacf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);

	if (fabs(d) < tiny)
		d = tiny;
	d = 1.0 / d;
	double h = d;

	for (int m = 1; m <= 1000000; m++) {
		double m2 = 2.0 * m;
		/* even step: m (b - m) x / ((a + 2m - 1)(a + 2m)) */
		double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));

		d = 1.0 + num * d;
		d = fabs(d) < tiny ? 1.0 / tiny : 1.0 / d;
		c = 1.0 + num / c;
		if (fabs(c) < tiny)
			c = tiny;
		h *= d * c;
		/* odd step: -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) */
		num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
		d = 1.0 + num * d;
		d = fabs(d) < tiny ? 1.0 / tiny : 1.0 / d;
		c = 1.0 + num / c;
		if (fabs(c) < tiny)
			c = tiny;
		double delta = d * c;

		h *= delta;
		if (fabs(delta - 1.0) < 1e-16)
			break;
	}
	return h;
}

/* I_x(a, b) = x^a (1-x)^b / (a B(a, b)) * 2F1(a + b, 1; a + 1; x): all terms positive, so
 * no cancellation (n terms lose ~n ulp). The terms grow while (a + b + n) x > a + 1 + n and
 * then fall like a Gaussian of width ~sqrt(a): the caller bounds the count. */
static double beta_series(double a, double b, double x)
{
	double term = 1.0, sum = 1.0;

	for (double n = 0.0; n < 1e8; n++) {
		term *= (a + b + n) * x / (a + 1.0 + n);
		sum += term;
		if (term <= sum * 1e-17 && (a + b + n) * x < a + 1.0 + n)
			break;
	}
	return sum;
}

double rasp_betainc(double a, double b, double x)
{
	if (!(a > 0.0) || !(b > 0.0) || !(x >= 0.0 && x <= 1.0) || isinf(a) || isinf(b))
		return NAN;
	if (x == 0.0)
		return 0.0;
	if (x == 1.0)
		return 1.0;
	/* The kernel x^a (1-x)^b / B(a, b) is symmetric, so it is taken before any swap, from
	 * the exact x: from the rounded 1 - x of a tiny x (p = 1/102400) it would be off by
	 * ~1e-16 / sd(x) ~ 1e-9 relative at a = 1e5. */
	double kernel = exp(log_beta_kernel(a, b, x));

	/* Left of the mean the fraction converges fast and is well conditioned. */
	double excess = x * (a + b + 2.0) - (a + 1.0);
	if (excess <= 0.0)
		return kernel / a * betacf(a, b, x);
	/* Right of it, the textbook move evaluates the smaller tail as 1 - I_{1-x}(b, a). But
	 * with b >> a (the NB: b = k + 1 ~ s / p) that fraction has its first parameter near
	 * 1e10 and 1 - x near 1: its terms cancel, and it lost up to 1e-4 relative at b = 1e14.
	 * There the positive series wins while the tail is not negligible (up to ~10 sd past
	 * the mean: at most ~20 sqrt(a) terms, 6e4 at a = 1e7); farther out the complement is
	 * below 1e-20 and the swapped fraction's error no longer shows. */
	if (b > a && excess / (1.0 - x) < 10.0 * sqrt(a) + 50.0)
		return kernel / a * beta_series(a, b, x);
	return 1.0 - kernel / b * betacf(b, a, 1.0 - x);
}

double rasp_nb_cdf(double k, double s, double p)
{
	if (isnan(k) || !(s > 0.0) || isinf(s) || !(p > 0.0 && p <= 1.0))
		return NAN;
	if (k < 0.0)
		return 0.0;
	if (isinf(k) || p == 1.0)
		return 1.0;
	return rasp_betainc(s, floor(k) + 1.0, p);
}

/* Standard normal quantile, to ~5e-4 (Abramowitz & Stegun 26.2.23): the starting point of
 * rasp_normal_quantile and of the integer search, which is exact whatever the start. */
static double normal_quantile_rough(double prob)
{
	double pr = prob < 0.5 ? prob : 1.0 - prob;
	double t = sqrt(-2.0 * log(pr));
	double z = t - (2.515517 + t * (0.802853 + t * 0.010328)) /
			   (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308)));

	return prob < 0.5 ? -z : z;
}

/* Newton steps on Phi(z) = erfc(-z / sqrt 2) / 2 from the rough start: each step squares the
 * relative error, so four take 5e-4 below 1e-15. The tail is computed on the side where it is
 * small (no 1 - prob cancellation). */
double rasp_normal_quantile(double prob)
{
	if (!(prob > 0.0 && prob < 1.0))
		return prob == 0.0 ? -INFINITY : prob == 1.0 ? INFINITY : NAN;
	double tail = prob < 0.5 ? prob : 1.0 - prob;
	double z = -fabs(normal_quantile_rough(prob));

	for (int i = 0; i < 6; i++) {
		double cdf = 0.5 * erfc(-z * 0.70710678118654752440);
		double pdf = exp(-0.5 * z * z) / SQRT_2PI;
		double step = (cdf - tail) / pdf;

		if (!isfinite(step))
			break;
		z -= step;
		if (fabs(step) <= 1e-15 * fabs(z))
			break;
	}
	return prob < 0.5 ? z : -z;
}

/* NB quantile for any real s > 0 (the moment-matched sums of rasp_est_sum have real s):
 * brackets from the normal approximation, widening by doubling steps, then bisection on
 * integers, ~2 log2(sd) CDF evaluations. Leaves in *lo the largest value known to have
 * CDF < prob (-1: none) and in *hi the smallest known to have CDF >= prob. Below 2^53 they
 * end one apart and *hi is the exact quantile. Past 2^53 consecutive integers are no longer
 * all doubles: the search stops when no double lies between them, so the quantile is
 * bracketed to one ulp (2e-16 relative) instead of looping. Every loop is bounded: at most
 * ~1100 doublings (a double overflows first) and ~1100 halvings. -1 with NaN bounds when the
 * CDF cannot be computed. */
static int nb_quantile_bracket(double prob, double s, double p, double *lo_out, double *hi_out)
{
	double q = 1.0 - p;
	double mean = s * q / p, sd = sqrt(s * q) / p;
	double guess = floor(mean + normal_quantile_rough(prob) * sd);
	double step = fmax(1.0, floor(0.25 * sd));
	double lo, hi, c; /* invariant: CDF(lo) < prob <= CDF(hi); lo = -1 stands for "none" */

	if (!(guess >= 0.0))
		guess = 0.0;
	if (!isfinite(guess) || !isfinite(step))
		goto fail;
	c = rasp_nb_cdf(guess, s, p);
	if (isnan(c))
		goto fail;
	if (c >= prob) {
		hi = guess;
		for (;;) {
			lo = hi - step;
			if (lo < 0.0) {
				lo = -1.0;
				break;
			}
			c = rasp_nb_cdf(lo, s, p);
			if (isnan(c))
				goto fail;
			if (c < prob)
				break;
			hi = lo;
			step *= 2.0;
		}
	} else {
		lo = guess;
		for (;;) {
			hi = lo + step;
			if (!isfinite(hi))
				goto fail;
			c = rasp_nb_cdf(hi, s, p);
			if (isnan(c))
				goto fail;
			if (c >= prob)
				break;
			lo = hi;
			step *= 2.0;
		}
	}
	for (;;) {
		double mid = floor(lo + (hi - lo) / 2.0);

		if (!(mid > lo && mid < hi))
			break; /* adjacent integers, or adjacent doubles past 2^53 */
		c = rasp_nb_cdf(mid, s, p);
		if (isnan(c))
			goto fail;
		if (c >= prob)
			hi = mid;
		else
			lo = mid;
	}
	*lo_out = lo;
	*hi_out = hi;
	return 0;
fail:
	*lo_out = *hi_out = NAN;
	return -1;
}

/* The quantile: exact below 2^53. Past it, the side of the one-ulp bracket a bound needs: an
 * upper quantile takes its upper end; a lower one (`low`) the side that can only widen the
 * interval (below 2^53 the two ends are one apart and hi is the quantile either way). */
static double nb_quantile_side(double prob, double s, double p, bool low)
{
	double lo, hi;

	if (p == 1.0)
		return 0.0;
	if (nb_quantile_bracket(prob, s, p, &lo, &hi))
		return NAN;
	return !low || hi - lo == 1.0 ? hi : fmax(lo, 0.0);
}

static double nb_quantile(double prob, double s, double p)
{
	return nb_quantile_side(prob, s, p, false);
}

double rasp_nb_quantile(double prob, double s, double p)
{
	if (!(prob > 0.0 && prob < 1.0) || !(s >= 1.0) || isinf(s) || !(p > 0.0 && p <= 1.0))
		return NAN;
	return nb_quantile(prob, s, p);
}

/* ---- Incomplete gamma ---------------------------------------------------------------------- */

/* A gamma shape with the part of log(x^a e^-x / Gamma(a + 1)) that depends on it alone,
 * computed once for the many CDF evaluations of a quantile. */
struct gamma_shape {
	double a, c;
};

static struct gamma_shape gamma_shape(double a)
{
	return (struct gamma_shape){a, -0.5 * log(a) - LN_SQRT_2PI - stirling_delta(a)};
}

/* log(x^a e^-x / Gamma(a + 1)) for x > 0, from Stirling's series as log_beta_kernel does: the
 * terms near a ln a cancel on paper, not in floating point (a ~ 1e6 would leave 1e-10). */
static double log_gamma_kernel(const struct gamma_shape *s, double x)
{
	return s->a * log_ratio_mx(x, s->a, x - s->a) + s->c;
}

/* Past this shape the Wilson-Hilferty cube-root normal approximation is closer than 1e-9 and
 * the series below would need ~sqrt(a) terms. */
#define GAMMA_WH_SHAPE 1e7

static double gamma_wh_z(double a, double x)
{
	return (cbrt(x / a) - (1.0 - 1.0 / (9.0 * a))) * sqrt(9.0 * a);
}

/* P(a, x) and its log (finite where P underflows: the tail quantile below multiplies it by a
 * large factor). Below x = a + 1 the power series of P (positive terms, ~sqrt(a) of them near
 * the mean); above, the continued fraction of Q = 1 - P (modified Lentz), which converges fast
 * there. Both loops are bounded; a series still short of 1e-17 after 1e6 terms cannot occur
 * below GAMMA_WH_SHAPE. */
static double gamma_p_log(const struct gamma_shape *s, double x, double *logp)
{
	double a = s->a;

	if (x <= 0.0) {
		*logp = -INFINITY;
		return 0.0;
	}
	if (isinf(x)) {
		*logp = 0.0;
		return 1.0;
	}
	if (a > GAMMA_WH_SHAPE) {
		double p = 0.5 * erfc(-gamma_wh_z(a, x) * 0.70710678118654752440);

		*logp = log(p);
		return p;
	}
	double lk = log_gamma_kernel(s, x);

	if (x < a + 1.0) {
		double term = 1.0, sum = 1.0;

		for (int n = 1; n < 1000000; n++) {
			term *= x / (a + n);
			sum += term;
			if (term <= sum * 1e-17)
				break;
		}
		*logp = lk + log(sum);
		return exp(*logp);
	}
	const double tiny = 1e-300;
	double b = x + 1.0 - a, cc = 1.0 / tiny, d = 1.0 / b, h = d;

	for (int i = 1; i < 1000000; i++) {
		double an = -i * (i - a), delta;

		b += 2.0;
		d = an * d + b;
		if (fabs(d) < tiny)
			d = tiny;
		cc = b + an / cc;
		if (fabs(cc) < tiny)
			cc = tiny;
		d = 1.0 / d;
		delta = d * cc;
		h *= delta;
		if (fabs(delta - 1.0) < 1e-16)
			break;
	}
	/* Q = x^a e^-x / Gamma(a) times the fraction; Gamma(a) = Gamma(a + 1) / a. */
	double q = exp(lk + log(a)) * h;

	*logp = log1p(-q);
	return 1.0 - q;
}

double rasp_gamma_p(double a, double x)
{
	double lp;

	if (!(a > 0.0) || isinf(a) || !(x >= 0.0))
		return NAN;
	struct gamma_shape s = gamma_shape(a);

	return gamma_p_log(&s, x, &lp);
}

/* The density of the standard gamma at x > 0: x^(a - 1) e^-x / Gamma(a). */
static double gamma_density(const struct gamma_shape *s, double x)
{
	return exp(log_gamma_kernel(s, x) + log(s->a / x));
}

/* The x >= 0 where a nondecreasing cdf(x) reaches prob, from `start` (a close guess): Newton
 * steps on log F below the median and on log(1 - F) above it. The distributions here (gammas
 * of shape >= 1 and their sums with an exponential) are log-concave, so those functions are
 * concave and the steps approach the root from one side without overshooting it; a step that
 * leaves the bracket found so far is replaced by a doubling, a halving or a bisection. ~4
 * steps from a good guess, at most 2400 (hundreds of orders of magnitude off). NaN when cdf
 * fails or no finite x reaches prob. */
static double newton_root(double (*cdf)(const void *, double, double *), const void *ctx,
			  double prob, double start)
{
	bool left = prob < 0.5;
	double target = left ? log(prob) : log1p(-prob);
	double lo = 0.0, hi = INFINITY, x = start > 0.0 ? start : 1.0;

	for (int i = 0; i < 2400; i++) {
		double dens, f = cdf(ctx, x, &dens), next;

		if (isnan(f) || !isfinite(x))
			return NAN;
		if (f < prob)
			lo = x;
		else
			hi = x;
		if (left)
			next = x - (log(f) - target) * f / dens;
		else
			next = x + (log1p(-f) - target) * (1.0 - f) / dens;
		if (fabs(next - x) <= 1e-12 * x)
			return next; /* converged (next may sit on the bracket's end: the root) */
		if (!(next > lo && next < hi))
			next = isinf(hi) ? 2.0 * x : lo == 0.0 ? 0.5 * x : 0.5 * (lo + hi);
		if ((isfinite(hi) && hi - lo <= 1e-12 * hi) || next == 0.0)
			return next;
		x = next;
	}
	return x;
}

static double gamma_cdf_cb(const void *ctx, double x, double *dens)
{
	double lp;

	*dens = x > 0.0 ? gamma_density(ctx, x) : 0.0;
	return gamma_p_log(ctx, x, &lp);
}

/* The standard gamma's quantile; z: the normal quantile of prob, for the Wilson-Hilferty
 * start (the callers compute it once for many shapes). */
static double gamma_quantile(double prob, double z, double a)
{
	double t = 1.0 - 1.0 / (9.0 * a) + z / sqrt(9.0 * a);
	double start = a * t * t * t;

	if (a > GAMMA_WH_SHAPE)
		return start > 0.0 ? start : 0.0;
	struct gamma_shape s = gamma_shape(a);

	return newton_root(gamma_cdf_cb, &s, prob, start > 0.0 ? start : a);
}

double rasp_gamma_quantile(double prob, double a)
{
	if (!(prob > 0.0 && prob < 1.0) || !(a > 0.0) || isinf(a))
		return NAN;
	return gamma_quantile(prob, rasp_normal_quantile(prob), a);
}

/* Probability that an object of z bytes is sampled: 1 - q^z, as -expm1(z log1p(-p)).
 * 1 - pow(1 - p, z) cancels: ~1e-10 relative at p = 2^-24 and z = 16 (more where 1 - p
 * itself rounds), against ~1e-16 here. p = 1 gives exactly 1. */
static double p_hit(double p, double z)
{
	return -expm1(z * log1p(-p));
}

int rasp_est_cell_init(struct rasp_est_cell *cell, double p)
{
	if (!cell || !(p > 0.0 && p <= 1.0))
		return -EINVAL;
	*cell = (struct rasp_est_cell){.p = p};
	return 0;
}

/* A size's code in a cell's low list (RASP_EST_LOW_SCALE), and back. z >= 1, so the code is
 * at most ln 2^64 * 1024 < 45500. */
static uint16_t size_code(double z)
{
	return (uint16_t)floor(log(z) * RASP_EST_LOW_SCALE + 0.5);
}

static double code_size(uint16_t code)
{
	return exp(code / RASP_EST_LOW_SCALE);
}

/* Keeps a size among the cell's RASP_EST_LOW smallest: one compare for a size whose code
 * cannot be below them all (most samples, once the cell is full), a log and at most
 * RASP_EST_LOW moves otherwise. */
static void low_insert(struct rasp_est_cell *cell, double size)
{
	uint32_t i = cell->nlow;

	if (i == RASP_EST_LOW && !(size < cell->low_cut))
		return;
	uint16_t z = size_code(size);

	if (i == RASP_EST_LOW) {
		if (!(z < cell->low[RASP_EST_LOW - 1]))
			return;
		i--;
	} else {
		cell->nlow++;
	}
	for (; i > 0 && cell->low[i - 1] > z; i--)
		cell->low[i] = cell->low[i - 1];
	cell->low[i] = z;
	/* The smallest size coded as the largest kept: anything from there on is not below. */
	if (cell->nlow == RASP_EST_LOW)
		cell->low_cut = exp((cell->low[RASP_EST_LOW - 1] - 0.5) / RASP_EST_LOW_SCALE);
}

int rasp_est_cell_add(struct rasp_est_cell *cell, uint64_t object_size, uint64_t sampled_offset)
{
	if (!cell || !(cell->p > 0.0 && cell->p <= 1.0) || object_size == 0 ||
	    sampled_offset >= object_size)
		return -EINVAL;
	double z = (double)object_size;
	double hit = p_hit(cell->p, z);

	cell->samples++;
	cell->bytes += z / hit;
	cell->objects += 1.0 / hit;
	cell->objects_var += (1.0 - hit) / (hit * hit);
	if (cell->size_min == 0.0 || z < cell->size_min)
		cell->size_min = z;
	if (z > cell->size_max)
		cell->size_max = z;
	low_insert(cell, z);
	cell->unsampled += (double)(object_size - sampled_offset);
	cell->sampled_bytes += z;
	return 0;
}

int rasp_est_interval(double samples, double p, double unsampled, double confidence, double *low,
		      double *high)
{
	if (!low || !high || !(samples >= 0.0) || isinf(samples) || !(p > 0.0 && p <= 1.0) ||
	    !(unsampled >= 0.0) || isinf(unsampled) || !rasp_est_confidence_valid(confidence))
		return -EINVAL;
	double alpha = 1.0 - confidence;

	/* NB(0, p) is the point mass at 0: no sample, no failed trial before it. */
	*low =
	    samples > 0.0 ? nb_quantile_side(alpha / 2.0, samples, p, true) + unsampled : unsampled;
	*high = samples > 0.0 ? nb_quantile(1.0 - alpha / 2.0, samples, p) + unsampled : unsampled;
	return isfinite(*low) && isfinite(*high) ? 0 : -ERANGE;
}

/* ---- Memo of quantiles ------------------------------------------------------------------- */

/* Rows of a report mostly share a few (s, p): a thousand types seen once at .NET's mean all
 * have the same interval. A quantile costs ~30 CDF evaluations (~10 us); the memo makes each
 * distinct (prob, s, p, side) cost that once. Open addressing, at most half full; when full it
 * is cleared (a memo, not a store). */
struct rasp_est_memo {
	struct memo_entry {
		double prob, s, p, q;
		bool low, used;
	} * e;
	size_t size, n;
};

struct rasp_est_memo *rasp_est_memo_create(void)
{
	struct rasp_est_memo *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->size = 4096;
	m->e = calloc(m->size, sizeof(*m->e));
	if (!m->e) {
		free(m);
		return NULL;
	}
	return m;
}

void rasp_est_memo_destroy(struct rasp_est_memo *m)
{
	if (m)
		free(m->e);
	free(m);
}

static uint64_t bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static double memo_quantile(struct rasp_est_memo *m, double prob, double s, double p, bool low)
{
	uint64_t h = bits(prob) * UINT64_C(0x9e3779b97f4a7c15) ^
		     bits(s) * UINT64_C(0xbf58476d1ce4e5b9) ^
		     bits(p) * UINT64_C(0x94d049bb133111eb) ^ low;
	size_t mask, j;
	double q;

	if (!m)
		return nb_quantile_side(prob, s, p, low);
	mask = m->size - 1;
	h ^= h >> 29;
	for (j = h & mask; m->e[j].used; j = (j + 1) & mask)
		if (m->e[j].prob == prob && m->e[j].s == s && m->e[j].p == p && m->e[j].low == low)
			return m->e[j].q;
	q = nb_quantile_side(prob, s, p, low);
	if ((m->n + 1) * 2 > m->size) {
		memset(m->e, 0, m->size * sizeof(*m->e));
		m->n = 0;
		for (j = h & mask; m->e[j].used; j = (j + 1) & mask)
			;
	}
	m->e[j] = (struct memo_entry){prob, s, p, q, low, true};
	m->n++;
	return q;
}

/* One sampling stream: the cells sharing a p, which concatenate into one Bernoulli sequence
 * (docs/sampling.md, "Sums of cells"). */
struct stream {
	double p;
	double samples;
};

static int stream_cmp(const void *x, const void *y)
{
	double a = ((const struct stream *)x)->p, b = ((const struct stream *)y)->p;

	return (a > b) - (a < b);
}

/* Quantile of the failures of several independent streams, each NB(s_g + extra, p_g): one
 * stream is exact; several are matched by the NB with the same mean and variance (real
 * shape), the discrete form of the gamma interval of Fay & Feuer (1997) for weighted sums
 * of Poisson counts. Streams with p = 1 have no failures and drop out. `low` picks the side
 * of a bracket past 2^53 that widens the interval. */
static double streams_quantile(const struct stream *st, size_t n, double extra, double prob,
			       bool low, struct rasp_est_memo *memo)
{
	double mean = 0.0, var = 0.0, excess = 0.0, s1 = 0.0, p1 = 1.0;
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		double s = st[i].samples + extra, p = st[i].p, q = 1.0 - p;

		if (s <= 0.0 || p == 1.0)
			continue;
		mean += s * q / p;
		var += s * q / (p * p);
		excess += s * (q / p) * (q / p); /* var - mean, without subtracting */
		s1 = s;
		p1 = p;
		used++;
	}
	if (used == 0)
		return 0.0;
	if (used > 1) {
		s1 = mean * mean / excess;
		p1 = mean / var;
	}
	if (p1 == 1.0)
		return 0.0;
	return memo_quantile(memo, prob, s1, p1, low);
}

int rasp_est_confidence_valid(double confidence)
{
	return confidence > 0.0 && confidence <= RASP_EST_MAX_CONFIDENCE;
}

int rasp_est_sum(const struct rasp_est_cell *cells, size_t n, double confidence,
		 struct rasp_est_total *out)
{
	return rasp_est_sum_memo(cells, n, confidence, NULL, out);
}

/* ---- Objects ------------------------------------------------------------------------------ */

/* The sampled cells of a sum, merged for the objects interval: the weighted estimate, its
 * variance, and the smallest sizes (docs/sampling.md, "Objects"). */
struct objects_part {
	double objects, var, size_min, size_max;
	double p_min;  /* the smallest p: the largest mean, for the sizes below the samples */
	double p_zmin; /* the p of a cell holding the smallest size */
	uint64_t samples;
	uint32_t nlow;
	uint16_t low[RASP_EST_LOW];
};

/* The RASP_EST_LOW smallest of two ascending lists, into the first: O(RASP_EST_LOW). */
static void low_merge(struct objects_part *o, const uint16_t *b, uint32_t nb)
{
	uint16_t out[RASP_EST_LOW];
	uint32_t i = 0, j = 0, k = 0;

	while (k < RASP_EST_LOW && (i < o->nlow || j < nb))
		out[k++] = j >= nb || (i < o->nlow && o->low[i] <= b[j]) ? o->low[i++] : b[j++];
	memcpy(o->low, out, k * sizeof(*out));
	o->nlow = k;
}

static void objects_part_of(const struct rasp_est_cell *cells, size_t n, struct objects_part *o)
{
	*o = (struct objects_part){.p_min = 1.0, .p_zmin = 1.0};
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
static double tail_slope(const struct objects_part *o, double lq, double *tau, uint32_t *below)
{
	double a = log(RASP_EST_SIZE_FLOOR), b, sum = 0.0, lo = -8.0, hi = 12.0, beta = 0.0;
	uint32_t m = 0;

	*tau = code_size(o->low[o->nlow - 1]);
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
	struct gamma_shape k;
	double theta, g;
};

/* Its CDF: P(k, x / theta) - e^(-x / g) E[e^(B / g); B <= x], the latter a gamma CDF of scale
 * theta' = theta g / (g - theta) times (1 - theta / g)^-k (theta < g here). The density is
 * (P(k, x / theta) - CDF) / g. */
static double tail_sum_cdf(const void *ctx, double x, double *dens)
{
	const struct tail_sum *t = ctx;
	double lb, lp, fb = gamma_p_log(&t->k, x / t->theta, &lb);
	double thp = t->theta * t->g / (t->g - t->theta);

	gamma_p_log(&t->k, x / thp, &lp);
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

	if (vb / kb >= g || g < 0.05 * sqrt(vb) || k > GAMMA_WH_SHAPE)
		return var / mean * gamma_quantile(prob, z, a);
	/* From the matched gamma's Wilson-Hilferty quantile: close enough a start. */
	double t3 = 1.0 - 1.0 / (9.0 * a) + z / sqrt(9.0 * a);
	struct tail_sum t = {gamma_shape(k), vb / kb, g};

	return newton_root(tail_sum_cdf, &t, prob, var / mean * a * t3 * t3 * t3);
}

/* The objects interval of the sampled cells (docs/sampling.md, "Objects"): Fay and Feuer's
 * gamma interval for a weighted sum of Poisson counts (mean and variance of the weighted
 * estimate; the high bound with one more sample), where that one more sample is put below the
 * smallest sample seen when the sizes spread: objects per expected sample G there, under the
 * slope fitted on the smallest samples, as an exponential beside a gamma for the rest. Rows
 * mixing sampling means do not know which stream the sizes below would be in: the high bound
 * takes the largest mean (the most objects per sample), the low one the mean of the smallest
 * sample's cell. */
static void objects_interval(const struct objects_part *o, double alpha, double *lo, double *hi,
			     int *low_confidence)
{
	double k = o->objects, v = o->var, zmin = o->size_min;
	double zq = rasp_normal_quantile(1.0 - alpha / 2.0);
	double h0 = p_hit(o->p_zmin, zmin), w0 = 1.0 / h0, v0 = (1.0 - h0) / (h0 * h0);
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

		*lo = v / k * gamma_quantile(alpha / 2.0, -zq, k * k / v);
		*hi = vw / kw * gamma_quantile(1.0 - alpha / 2.0, zq, kw * kw / vw);
	} else {
		*lo = tail_sum_quantile(alpha / 2.0, -zq, k - w0, v - v0, g_low);
		*hi = tail_sum_quantile(1.0 - alpha / 2.0, zq, k - w0, v - v0, g);
	}
}

int rasp_est_sum_memo(const struct rasp_est_cell *cells, size_t n, double confidence,
		      struct rasp_est_memo *memo, struct rasp_est_total *out)
{
	if (!out || (n > 0 && !cells) || !rasp_est_confidence_valid(confidence))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!(cells[i].p > 0.0 && cells[i].p <= 1.0))
			return -EINVAL;
	*out = (struct rasp_est_total){0};
	if (n == 0)
		return 0;

	/* Group the cells by p: sort a copy (n log n; the cells are threads x processes, so a
	 * few thousand at most) and merge equal neighbours. */
	struct stream *st = malloc(n * sizeof(*st));
	if (!st)
		return -ENOMEM;
	double unsampled = 0.0, seen = 0.0, exact_objects = 0.0;

	for (size_t i = 0; i < n; i++) {
		st[i] = (struct stream){.p = cells[i].p, .samples = (double)cells[i].samples};
		out->samples += cells[i].samples;
		out->bytes += cells[i].bytes;
		out->objects += cells[i].objects;
		unsampled += cells[i].unsampled;
		seen += cells[i].sampled_bytes;
		if (cells[i].p == 1.0) /* every byte tried and sampled: counted, not estimated */
			exact_objects += cells[i].objects;
	}
	qsort(st, n, sizeof(*st), stream_cmp);
	size_t groups = 0;

	for (size_t i = 0; i < n; i++) {
		if (groups > 0 && st[groups - 1].p == st[i].p)
			st[groups - 1].samples += st[i].samples;
		else
			st[groups++] = st[i];
	}

	/* Lower bound: the failures are at least NB(S_g) per stream (memorylessness: a window
	 * that starts between samples loses nothing). Upper bound: each stream's window ends
	 * once, between samples, so its failures are at most NB(S_g + 1). */
	double alpha = 1.0 - confidence;

	out->bytes_low = streams_quantile(st, groups, 0.0, alpha / 2.0, true, memo) + unsampled;
	out->bytes_high =
	    streams_quantile(st, groups, 1.0, 1.0 - alpha / 2.0, false, memo) + unsampled;
	if (!isfinite(out->bytes_low) || !isfinite(out->bytes_high)) {
		free(st);
		return -ERANGE;
	}
	/* The failures counted before the samples include their own leading bytes, so with
	 * offsets a sampler at this p would seldom draw (a wrong mean, made-up events) the NB
	 * bound can fall below the bytes the samples themselves prove allocated. */
	if (out->bytes_low < seen)
		out->bytes_low = seen;
	if (out->bytes_high < out->bytes_low)
		out->bytes_high = out->bytes_low;
	/* An estimate outside its interval happens by chance about 1 - C of the time when the
	 * objects are much larger than the mean (the estimate is then nearly exact, the interval
	 * is not): only a strict test, odds of RASP_EST_CONTRADICTION under the model, says the
	 * samples contradict it. Computed for those rows only. */
	if (out->bytes < out->bytes_low || out->bytes > out->bytes_high) {
		double a = RASP_EST_CONTRADICTION;
		double lo = streams_quantile(st, groups, 0.0, a / 2.0, true, memo) + unsampled;
		double hi =
		    streams_quantile(st, groups, 1.0, 1.0 - a / 2.0, false, memo) + unsampled;

		out->contradicts = hi < seen || out->bytes < (lo > seen ? lo : seen) ||
				   out->bytes > (hi > seen ? hi : seen);
	}
	free(st);
	/* Objects: the gamma interval of the sampled cells' weighted estimate (objects_interval).
	 * Cells at p = 1 (a mean of 1) are counts: they are added to the estimate and to both
	 * bounds, and left out of the uncertainty (with them in, 16-byte objects counted exactly
	 * beside a few sampled 10 KB ones made thousands of small objects of the large ones'
	 * uncertainty). */
	struct objects_part part;

	objects_part_of(cells, n, &part);
	if (part.samples) {
		double lo, hi;

		objects_interval(&part, alpha, &lo, &hi, &out->low_confidence);
		if (!isfinite(lo) || !isfinite(hi))
			return -ERANGE;
		/* The interval holds its estimate (the model below the smallest sample can put
		 * both bounds above one the samples made large by chance). */
		out->objects_low = exact_objects + fmin(lo, part.objects);
		out->objects_high = exact_objects + fmax(hi, part.objects);
	} else if (out->bytes_high > out->bytes && out->bytes > 0.0) {
		/* Counted cells and sampled ones without a sample (an API caller's; the tally
		 * makes a cell at its first sample): the bytes the latter may hide, as objects
		 * the size of the counted ones (found by review: no width at all). */
		out->objects_low = out->objects;
		out->objects_high =
		    out->objects + (out->bytes_high - out->bytes) * (out->objects / out->bytes);
	} else {
		out->objects_low = out->objects_high = out->objects;
	}
	if (out->objects_low < (double)out->samples)
		out->objects_low = (double)out->samples; /* each sample is an object */
	if (out->objects_high < out->objects_low)
		out->objects_high = out->objects_low;
	return 0;
}
