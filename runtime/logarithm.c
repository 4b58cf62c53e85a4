/* The natural logarithm for the geometric draw (sample.c), written here instead of taken from
 * libm: linking libm cost every process using rasp 230-330 KiB of resident memory (the
 * kernel maps libm's pages around each one touched, and its symbols are resolved at load),
 * more than the whole heap of a small program, for one function called once per sample.
 * Accuracy, measured against libm in long double (tests/runtime/test-logarithm.c): log within
 * 1.3 ulp of the exact value over every positive double, log1p within 1.6 (within 1 for the
 * -1/mean it is given). The draw needs no more: floor(log(V) / log(1-p)) moves only where
 * the quotient is within a few ulp of an integer, a chance of about 10^-10 a draw at the
 * default mean.
 *
 * Method (textbook, our own code): x = m 2^e with m in [sqrt(2)/2, sqrt(2)], f = m - 1 exactly,
 * s = f / (2 + f), and log(1 + f) = 2 atanh(s) = f - s (f - R(s^2)), R(z) = sum over k >= 1 of
 * 2 z^k / (2k + 1). f is exact and the correction is at most f^2/2, so its rounding costs well
 * under an ulp of the result; |s| <= 0.1716, so ten terms of R leave a truncation below
 * 2^-59. e ln 2 comes in two parts, the first with 21 trailing zero bits so that e times it is
 * exact. */
#include <stdint.h>
#include <string.h>

#include "internal.h"

#define LN2_HI 0x1.62e42fee00000p-1  /* ln 2 to 32 bits */
#define LN2_LO 0x1.a39ef35793c76p-33 /* ln 2 - LN2_HI */
#define SQRT2  0x1.6a09e667f3bcdp+0

static uint64_t bits_of(double x)
{
	uint64_t b;

	memcpy(&b, &x, sizeof(b));
	return b;
}

static double double_of(uint64_t b)
{
	double x;

	memcpy(&x, &b, sizeof(x));
	return x;
}

/* log x for x positive, finite and normal, from its bits. */
static inline double log_normal(uint64_t b, int e)
{
	double m, f, s, z, r;

	e += (int)(b >> 52) - 1023;
	m = double_of((b & UINT64_C(0x000fffffffffffff)) | UINT64_C(0x3ff0000000000000));
	if (m > SQRT2) {
		m *= 0.5;
		e++;
	}
	f = m - 1.0; /* exact: m is within a factor 2 of 1 */
	s = f / (2.0 + f);
	z = s * s;
	r = z *
	    (2.0 / 3 +
	     z * (2.0 / 5 +
		  z * (2.0 / 7 +
		       z * (2.0 / 9 +
			    z * (2.0 / 11 +
				 z * (2.0 / 13 +
				      z * (2.0 / 15 +
					   z * (2.0 / 17 + z * (2.0 / 19 + z * (2.0 / 21))))))))));
	return (double)e * LN2_HI + ((f - s * (f - r)) + (double)e * LN2_LO);
}

double rasp__log(double x)
{
	uint64_t b = bits_of(x);

	if (x != x || x < 0)
		return (x - x) / (x - x); /* NaN for NaN and negative numbers */
	if (x == 0)
		return -1.0 / 0.0;
	if (b >= UINT64_C(0x7ff0000000000000))
		return x;		      /* +inf */
	if (b < UINT64_C(0x0010000000000000)) /* subnormal: scaled into the normal range */
		return log_normal(bits_of(x * 0x1p54), -54);
	return log_normal(b, 0);
}

/* The draw's V = 1 - k 2^-53 is in [2^-53, 1], always normal: the special cases' five tests
 * (14 of the 69 instructions a draw's log took, callgrind) are left out. Same result as
 * rasp__log, bit for bit. */
double rasp__log_normal(double x)
{
	return log_normal(bits_of(x), 0);
}

double rasp__log1p(double x)
{
	double u = 1.0 + x;

	if (x != x || x < -1.0)
		return (x - x) / (x - x);
	if (x == -1.0)
		return -1.0 / 0.0;
	if (x > 0x1p53) /* 1 + x rounds to x; also +inf */
		return rasp__log(x);
	if (u == 1.0)
		return x; /* |x| below half an ulp of 1: log1p(x) = x to double precision */
	/* log(u) is log1p of u - 1, not of x: the first-order correction of the rounding of
	 * 1 + x, (u - 1 - x) / u, is exact enough (the error is its square). */
	return rasp__log(u) - ((u - 1.0) - x) / u;
}
