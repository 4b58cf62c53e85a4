/* runtime/exponential.c: the ziggurat's tables against libm (the layers' equal areas, the
 * thresholds), and its draws against the standard exponential: chi-square over bins 0.05
 * wide (fine enough to see any one layer's wedge or the tail go wrong), the tail's mass, the
 * mean. Fixed seeds; tolerances are 4 standard errors, chi-square at p = 0.001. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "exponential.h"

/* The chi-square quantile at p = 0.001 with d degrees of freedom (Wilson and Hilferty's
 * approximation: within 1% for d >= 10). */
static double chi2_crit(int d)
{
	double a = 2.0 / (9.0 * d), t = 1.0 - a + 3.0902 * sqrt(a);

	return d * t * t * t;
}

static void seed(uint64_t s[4], uint64_t x)
{
	for (int i = 0; i < 4; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		s[i] = x ^ (x >> 29);
	}
}

/* Every layer has the base strip's area v = e^-r (1 + r), to 10^-12 (each edge comes from the
 * last by a log within 1.3 ulp), the top one ends at 0, and the thresholds are the edges'
 * ratios over 2^53. */
static void test_layers_have_equal_areas(void **state)
{
	double r = rasp__zig_x(1), v = exp(-r) * (1.0 + r), worst = 0;

	(void)state;
	assert_true(r == 7.69711747013104972);
	assert_true(fabs(rasp__zig_x(0) * exp(-r) - v) <= 1e-15 * v);
	for (unsigned i = 1; i < RASP__ZIG_LAYERS; i++) {
		double x = rasp__zig_x(i), xn = rasp__zig_x(i + 1);
		double area = x * (exp(-xn) - exp(-x)), err = fabs(area - v) / v;

		assert_true(xn < x);
		if (err > worst)
			worst = err;
	}
	printf("layers' areas within %.2e of v\n", worst);
	assert_true(worst < 1e-12);
	assert_true(rasp__zig_x(RASP__ZIG_LAYERS) == 0.0);
	for (unsigned i = 0; i < RASP__ZIG_LAYERS; i++) {
		double ratio = rasp__zig_x(i + 1) / rasp__zig_x(i);

		assert_true(rasp__zig[i].k == (uint64_t)(ratio * 0x1.0p53));
		assert_true(rasp__zig[i].w == rasp__zig_x(i) * 0x1.0p-53);
	}
	assert_true(rasp__zig[RASP__ZIG_LAYERS - 1].k == 0); /* the top layer is all wedge */
}

#define NDRAWS	4000000
#define BIN	0.05
#define MAXBINS 400

/* Bins [j BIN, (j+1) BIN) for n standard exponential draws while they expect 20 or more;
 * the rest go in one last bin (index nbins). */
static int bins_for(long n)
{
	int nbins = 0;

	while (nbins < MAXBINS && n * exp(-(nbins + 1) * BIN) * (1 - exp(-BIN)) >= 20)
		nbins++;
	return nbins;
}

/* Chi-square of those bins' counts against the standard exponential. */
static double chi_exponential(const uint64_t *count, int nbins, long n)
{
	double chi = 0;

	for (int b = 0; b <= nbins; b++) {
		double lo = b * BIN, p = b < nbins ? exp(-lo) - exp(-(lo + BIN)) : exp(-lo);

		chi += (count[b] - n * p) * (count[b] - n * p) / (n * p);
	}
	return chi;
}

/* 4 * 10^6 draws in bins 0.05 wide, the last ones merged while they expect fewer than 20:
 * a wrong wedge test moves mass within some layer's [x(i+1), xi) (in layer 1, up to twice the
 * density near r), a wrong tail moves it past r. Also the mass past r, past 12, and the mean. */
static void test_draws_are_exponential(void **state)
{
	static uint64_t count[MAXBINS + 1];
	uint64_t s[4], past_r = 0, past_12 = 0;
	double r = rasp__zig_x(1), sum = 0, chi, p;
	int nbins = bins_for(NDRAWS), d;

	(void)state;
	seed(s, 2026);
	memset(count, 0, sizeof(count));
	for (long i = 0; i < NDRAWS; i++) {
		double e = rasp__exponential(s);
		long b = (long)(e / BIN);

		if (!(e >= 0) || !isfinite(e))
			fail_msg("draw %ld: %g", i, e);
		count[b < nbins ? b : nbins]++;
		past_r += e >= r;
		past_12 += e >= 12.0;
		sum += e;
	}
	chi = chi_exponential(count, nbins, NDRAWS);
	d = nbins; /* nbins + 1 bins */
	printf("%d bins: chi-square %.1f (p = 0.001: %.1f)\n", nbins + 1, chi, chi2_crit(d));
	if (chi > chi2_crit(d))
		fail_msg("chi-square %.1f over %d bins > %.1f", chi, nbins + 1, chi2_crit(d));
	/* Binomial counts within 4 standard errors: the tail (e^-r, about 1/2200) and past 12. */
	p = exp(-r);
	if (fabs(past_r - NDRAWS * p) > 4 * sqrt(NDRAWS * p * (1 - p)))
		fail_msg("past r: %llu, expected %.1f", (unsigned long long)past_r, NDRAWS * p);
	p = exp(-12.0);
	if (fabs(past_12 - NDRAWS * p) > 4 * sqrt(NDRAWS * p * (1 - p)) + 1)
		fail_msg("past 12: %llu, expected %.1f", (unsigned long long)past_12, NDRAWS * p);
	/* The mean 1, standard deviation 1. */
	if (fabs(sum / NDRAWS - 1.0) > 4.0 / sqrt(NDRAWS))
		fail_msg("mean %.5f", sum / NDRAWS);
}

/* The tail alone (one draw in 2200 reaches it, too few above to see its scale): layer 0
 * with the uniform past the threshold, forced, gives r plus a standard exponential. Its mean
 * within 4 standard errors and a chi-square over bins 0.05 wide. */
static void test_tail_is_shifted_exponential(void **state)
{
	enum { N = 400000 };
	static uint64_t count[MAXBINS + 1];
	uint64_t s[4], k0 = atomic_load(&rasp__zig[0].k), span = (UINT64_C(1) << 53) - k0;
	double r = rasp__zig_x(1), sum = 0, chi;
	int nbins = bins_for(N);

	(void)state;
	seed(s, 11);
	memset(count, 0, sizeof(count));
	for (long i = 0; i < N; i++) {
		uint64_t j = k0 + (uint64_t)i * 2654435761u % span; /* layer 0: low bits 0 */
		double t = rasp__exponential_slow(s, j << 11) - r;
		long b = (long)(t / BIN);

		if (!(t >= 0))
			fail_msg("tail draw %ld: %g below r", i, t + r);
		count[b < nbins ? b : nbins]++;
		sum += t;
	}
	chi = chi_exponential(count, nbins, N);
	printf("tail: mean past r %.4f, chi-square %.1f over %d bins (p = 0.001: %.1f)\n", sum / N,
	       chi, nbins + 1, chi2_crit(nbins));
	if (fabs(sum / N - 1.0) > 4.0 / sqrt(N))
		fail_msg("tail: mean past r %.5f", sum / N);
	if (chi > chi2_crit(nbins))
		fail_msg("tail: chi-square %.1f > %.1f", chi, chi2_crit(nbins));
}

/* Draws from a state are reproducible (the seeded runs rely on it). */
static void test_draws_reproducible(void **state)
{
	uint64_t a[4], b[4];

	(void)state;
	seed(a, 7);
	memcpy(b, a, sizeof(a));
	for (int i = 0; i < 100000; i++) {
		double x = rasp__exponential(a), y = rasp__exponential(b);

		assert_true(x == y);
	}
	assert_memory_equal(a, b, sizeof(a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layers_have_equal_areas),
	    cmocka_unit_test(test_draws_are_exponential),
	    cmocka_unit_test(test_tail_is_shifted_exponential),
	    cmocka_unit_test(test_draws_reproducible),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
