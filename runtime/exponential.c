/* The standard exponential draw the geometric one is made of (sample.c): a ziggurat of 256
 * layers (Marsaglia and Tsang, "The Ziggurat Method for Generating Random Variables", 2000;
 * our own code and tables). Why not the inversion -ln(V) alone: its logarithm is 60 of the 86
 * instructions such a draw costs, a third of what a sample adds to the allocation it falls in
 * (docs/performance.md); 99% of ziggurat draws take a table look-up, a compare and a multiply
 * instead.
 *
 * The density e^-x, x >= 0, is covered by 256 regions of equal area v: layer 0 is the base
 * strip [0, x0] x [0, f(r)] (x0 = v / f(r)), whose part past r stands for the tail; layer i
 * (1..255) is the rectangle [0, xi] x [f(xi), f(x(i+1))], with x1 = r > x2 > ... > x256 = 0.
 * A draw picks a layer (8 bits) and a point X = U xi across it (53 bits): X < x(i+1) lies
 * under the curve whatever the height, and is the value (the fast path, inline in
 * exponential.h). Otherwise, here: in layer 0, X >= r stands for the tail, and the value is
 * r - ln(V), the tail being an exponential shifted by r (exact: memoryless); in layer i >= 1,
 * a height Y uniform in the layer decides, X if Y < e^-X, else a new draw. Every accepted
 * point is uniform under the curve, so X is exactly exponential, up to the doubles' rounding,
 * as the inversion was. The resolution is that of the 53-bit U, xi 2^-53 <= 2^-49.8, below
 * one byte at every mean up to RASP_MAX_SAMPLING_MEAN (2^48).
 *
 * The tables are built when librasp is loaded, from r and e^-r only, with rasp__log (no libm,
 * logarithm.c says why): f(x(i+1)) = v / xi + f(xi) by the layers' equal areas, and
 * x(i+1) = -ln f(x(i+1)). Before that every threshold is 0, so a draw would come here and
 * build them (the slow path's pthread_once, after which its relaxed loads are ordered). */
#include <pthread.h>

#include "exponential.h"

#define ZIG_R  7.69711747013104972   /* x1, where the tail starts (Marsaglia and Tsang) */
#define ZIG_FR 0x1.dc31c329f0b4bp-12 /* e^-r, correctly rounded (tested against libm) */
/* Rejections in a row before the draw falls back to the inversion: each is about one in 90,
 * so never in practice; the bound keeps the loop finite whatever the generator gives. */
#define ZIG_ROUNDS 64

struct rasp__zig_layer rasp__zig[RASP__ZIG_LAYERS];
static double zig_x[RASP__ZIG_LAYERS + 1], zig_f[RASP__ZIG_LAYERS + 1];
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static void zig_build(void)
{
	double v = ZIG_FR * (1.0 + ZIG_R); /* the base strip: r f(r) plus the tail's area f(r) */
	int i;

	zig_x[0] = v / ZIG_FR;
	zig_f[0] = 0.0;
	zig_x[1] = ZIG_R;
	zig_f[1] = ZIG_FR;
	for (i = 1; i < RASP__ZIG_LAYERS - 1; i++) {
		zig_f[i + 1] = v / zig_x[i] + zig_f[i];
		zig_x[i + 1] = -rasp__log(zig_f[i + 1]);
	}
	zig_x[RASP__ZIG_LAYERS] = 0.0; /* the recurrence ends within 10^-15 of it */
	zig_f[RASP__ZIG_LAYERS] = 1.0;
	for (i = 0; i < RASP__ZIG_LAYERS; i++) {
		rasp__zig[i].w = zig_x[i] * 0x1.0p-53;
		/* X < x(i+1)  <=>  U 2^53 < 2^53 x(i+1) / xi: a threshold on the 53-bit integer.
		 * Last, with release: a draw reads it first (exponential.h). */
		atomic_store_explicit(&rasp__zig[i].k,
				      (uint64_t)(zig_x[i + 1] / zig_x[i] * 0x1.0p53),
				      memory_order_release);
	}
}

/* At load, before any thread can draw (a draw that came first would build them itself). */
__attribute__((constructor)) static void zig_at_load(void)
{
	pthread_once(&zig_once, zig_build);
}

double rasp__zig_x(unsigned i)
{
	pthread_once(&zig_once, zig_build);
	return i <= RASP__ZIG_LAYERS ? zig_x[i] : 0.0;
}

/* A uniform double in (0, 1], as the inversion's V = 1 - U (never 0, so its log is finite). */
static double uniform_open0(uint64_t s[4])
{
	return 1.0 - (double)(rasp__rng_next(s) >> 11) * 0x1.0p-53;
}

double rasp__exponential_slow(uint64_t s[4], uint64_t u)
{
	pthread_once(&zig_once, zig_build);
	for (int round = 0; round < ZIG_ROUNDS; round++) {
		unsigned i = (unsigned)(u & (RASP__ZIG_LAYERS - 1));
		uint64_t j = u >> 11;
		double x = (double)(int64_t)j * rasp__zig[i].w, y;

		if (j < atomic_load_explicit(&rasp__zig[i].k, memory_order_relaxed))
			return x; /* the fast path's test, for the first draw after the build */
		if (i == 0)
			return ZIG_R - rasp__log_normal(uniform_open0(s));
		/* The wedge: Y in [f(xi), f(x(i+1))), accepted under the curve, Y < e^-X, that is
		 * -ln Y > X (Y >= f(r) > 0, normal: the log takes it). */
		y = zig_f[i] + (1.0 - uniform_open0(s)) * (zig_f[i + 1] - zig_f[i]);
		if (-rasp__log_normal(y) > x)
			return x;
		u = rasp__rng_next(s);
	}
	return -rasp__log_normal(uniform_open0(s));
}
