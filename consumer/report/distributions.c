/* The distributions of the estimation math (distributions.h, estimate.h): the regularized
 * incomplete beta and gamma functions, the negative binomial CDF and quantile, the normal and
 * gamma quantiles, and the Newton search they share, each accurate far into the tails
 * (docs/sampling.md says how far). No babeltrace2 types. */
#include "distributions.h"

#include <math.h>
#include <stdbool.h>

#include "estimate.h"

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
double rasp__nb_quantile_side(double prob, double s, double p, bool low)
{
	double lo, hi;

	if (p == 1.0)
		return 0.0;
	if (nb_quantile_bracket(prob, s, p, &lo, &hi))
		return NAN;
	return !low || hi - lo == 1.0 ? hi : fmax(lo, 0.0);
}

double rasp__nb_quantile(double prob, double s, double p)
{
	return rasp__nb_quantile_side(prob, s, p, false);
}

double rasp_nb_quantile(double prob, double s, double p)
{
	if (!(prob > 0.0 && prob < 1.0) || !(s >= 1.0) || isinf(s) || !(p > 0.0 && p <= 1.0))
		return NAN;
	return rasp__nb_quantile(prob, s, p);
}

/* ---- Incomplete gamma ---------------------------------------------------------------------- */

struct rasp__gamma_shape rasp__gamma_shape(double a)
{
	return (struct rasp__gamma_shape){a, -0.5 * log(a) - LN_SQRT_2PI - stirling_delta(a)};
}

/* log(x^a e^-x / Gamma(a + 1)) for x > 0, from Stirling's series as log_beta_kernel does: the
 * terms near a ln a cancel on paper, not in floating point (a ~ 1e6 would leave 1e-10). */
static double log_gamma_kernel(const struct rasp__gamma_shape *s, double x)
{
	return s->a * log_ratio_mx(x, s->a, x - s->a) + s->c;
}

static double gamma_wh_z(double a, double x)
{
	return (cbrt(x / a) - (1.0 - 1.0 / (9.0 * a))) * sqrt(9.0 * a);
}

/* P(a, x) and its log (finite where P underflows: the tail quantile below multiplies it by a
 * large factor). Below x = a + 1 the power series of P (positive terms, ~sqrt(a) of them near
 * the mean); above, the continued fraction of Q = 1 - P (modified Lentz), which converges fast
 * there. Both loops are bounded; a series still short of 1e-17 after 1e6 terms cannot occur
 * below RASP__GAMMA_WH_SHAPE. */
double rasp__gamma_p_log(const struct rasp__gamma_shape *s, double x, double *logp)
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
	if (a > RASP__GAMMA_WH_SHAPE) {
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
	struct rasp__gamma_shape s = rasp__gamma_shape(a);

	return rasp__gamma_p_log(&s, x, &lp);
}

/* The density of the standard gamma at x > 0: x^(a - 1) e^-x / Gamma(a). */
static double gamma_density(const struct rasp__gamma_shape *s, double x)
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
double rasp__newton_root(double (*cdf)(const void *, double, double *), const void *ctx,
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
	return rasp__gamma_p_log(ctx, x, &lp);
}

/* The standard gamma's quantile; z: the normal quantile of prob, for the Wilson-Hilferty
 * start (the callers compute it once for many shapes). */
double rasp__gamma_quantile(double prob, double z, double a)
{
	double t = 1.0 - 1.0 / (9.0 * a) + z / sqrt(9.0 * a);
	double start = a * t * t * t;

	if (a > RASP__GAMMA_WH_SHAPE)
		return start > 0.0 ? start : 0.0;
	struct rasp__gamma_shape s = rasp__gamma_shape(a);

	return rasp__newton_root(gamma_cdf_cb, &s, prob, start > 0.0 ? start : a);
}

double rasp_gamma_quantile(double prob, double a)
{
	if (!(prob > 0.0 && prob < 1.0) || !(a > 0.0) || isinf(a))
		return NAN;
	return rasp__gamma_quantile(prob, rasp_normal_quantile(prob), a);
}
