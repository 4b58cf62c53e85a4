/* Sampling statistics of runtime/sample.c and the slow path in runtime/context.c, observed
 * through the sample hook (white-box): samples per type against sum(1 - q^z), offsets
 * against the model's distribution (chi-square), per-object probability with a large p,
 * and the fields of every sample (offset range, ObjectSize, kinds). Fixed seeds; tolerances
 * are 4 standard errors, chi-square at p = 0.001. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exponential.h"

#define MAX_TYPES 8

struct obs {
	const rasp_type_t *types[MAX_TYPES];
	uint64_t count[MAX_TYPES];
	uint64_t bad; /* samples whose fields break the contract */
	uint64_t kinds[3];
	uint64_t *offsets; /* histogram of offsets, if set */
	size_t noffsets;
	const rasp_type_t *offset_type;
	void *last_addr;
	uint64_t last_offset;
};

static void hook(void *arg, uint32_t kind, const rasp_type_t *type, void *addr, uint64_t z,
		 uint64_t offset, uint64_t mean)
{
	struct obs *o = arg;

	(void)mean;
	int i;

	if (offset >= z || z != rasp_object_size(addr) || rasp_object_type(addr) != type ||
	    (uint32_t)rasp_object_kind(addr) != kind || z % 8 || kind > 2)
		o->bad++;
	if (kind <= 2)
		o->kinds[kind]++;
	for (i = 0; i < MAX_TYPES; i++)
		if (o->types[i] == type)
			o->count[i]++;
	if (o->offsets && type == o->offset_type && offset < o->noffsets)
		o->offsets[offset]++;
	o->last_addr = addr;
	o->last_offset = offset;
}

static rasp_heap_t *make_heap(uint64_t mean, size_t quantum, uint64_t seed, struct obs *o)
{
	rasp_config_t cfg;
	rasp_heap_t *h;

	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_ON;
	cfg.sampling_mean = mean;
	cfg.alloc_quantum = quantum;
	cfg.has_seed = 1;
	cfg.seed = seed;
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	h->sample_hook = hook;
	h->sample_hook_arg = o;
	return h;
}

static double p_sampled(uint64_t mean, uint64_t z)
{
	return -expm1((double)z * log1p(-1.0 / (double)mean));
}

/* Samples per type over many objects match sum(1 - q^z) within 4 standard errors, for
 * objects that fit their context, overflow it, and are large or pinned. */
static void test_sample_counts_match_model(void **state)
{
	static const size_t payload[] = {1, 40, 1000, 12000, 90000, 500};
	static const unsigned flags[] = {0, 0, 0, 0, 0, RASP_ALLOC_PINNED};
	static const long n[] = {200000, 200000, 100000, 20000, 2000, 20000};
	const uint64_t mean = 4096;
	struct obs o = {0};
	rasp_heap_t *h = make_heap(mean, 8192, 12345, &o);
	char name[32];
	size_t t;
	long i;

	(void)state;
	for (t = 0; t < 6; t++) {
		snprintf(name, sizeof(name), "T%zu", t);
		o.types[t] = rasp_type_register(h, name);
		assert_non_null(o.types[t]);
	}
	/* Interleave types so each type's objects meet every context state. */
	for (i = 0; i < 200000; i++) {
		for (t = 0; t < 6; t++) {
			void *p;

			if (i >= n[t])
				continue;
			p = rasp_alloc(h, o.types[t], payload[t], flags[t]);
			assert_non_null(p);
			rasp_free(h, p);
		}
	}
	assert_int_equal(o.bad, 0);
	for (t = 0; t < 6; t++) {
		uint64_t z = rasp__object_size_for(payload[t]);
		double ps = p_sampled(mean, z);
		double exp = (double)n[t] * ps, se = sqrt((double)n[t] * ps * (1 - ps));

		if (fabs((double)o.count[t] - exp) > 4 * se + 1e-9)
			fail_msg("type %zu (z=%llu): %llu samples, expected %.1f +- %.1f", t,
				 (unsigned long long)z, (unsigned long long)o.count[t], exp, se);
	}
	assert_true(o.kinds[RASP_KIND_LARGE] > 0);
	assert_true(o.kinds[RASP_KIND_PINNED] > 0);
	rasp_heap_destroy(h);
}

/* Offsets of sampled objects follow P(k | sampled) = q^k p / (1 - q^z) (near uniform when
 * z << mean); chi-square over `nbins` equal-width bins (16 or 24). */
static void check_offsets(uint64_t mean, size_t payload, long n, uint64_t seed, int nbins)
{
	struct obs o = {0};
	rasp_heap_t *h = make_heap(mean, 8192, seed, &o);
	uint64_t z = rasp__object_size_for(payload), k, total = 0;
	double q = 1.0 - 1.0 / (double)mean, chi = 0, norm;
	double expected[24] = {0};
	uint64_t observed[24] = {0};
	/* chi-square at p = 0.001 with 15 or 23 degrees of freedom */
	const double crit = nbins == 16 ? 37.70 : 49.73;
	long i;
	int b;

	o.types[0] = o.offset_type = rasp_type_register(h, "offsets");
	o.noffsets = z;
	o.offsets = calloc(z, sizeof(uint64_t));
	assert_non_null(o.offsets);
	for (i = 0; i < n; i++) {
		void *p = rasp_alloc(h, o.types[0], payload, 0);

		assert_non_null(p);
		rasp_free(h, p);
	}
	assert_int_equal(o.bad, 0);
	norm = -expm1((double)z * log(q));
	for (k = 0; k < z; k++) {
		b = (int)(k * (uint64_t)nbins / z);
		observed[b] += o.offsets[k];
		total += o.offsets[k];
		expected[b] += pow(q, (double)k) * (1 - q) / norm;
	}
	assert_true(total > 2000);
	for (b = 0; b < nbins; b++) {
		double e = expected[b] * (double)total;

		chi += ((double)observed[b] - e) * ((double)observed[b] - e) / e;
	}
	if (chi > crit)
		fail_msg("offsets (mean %llu, z %llu, %llu samples): chi-square %.1f > %.1f",
			 (unsigned long long)mean, (unsigned long long)z, (unsigned long long)total,
			 chi, crit);
	free(o.offsets);
	rasp_heap_destroy(h);
}

static void test_offsets_uniform_small_objects(void **state)
{
	(void)state;
	/* z = 1016 << mean: the model is uniform within 1%. */
	check_offsets(102400, 1000, 1000000, 7, 16);
}

static void test_offsets_follow_model_large_p(void **state)
{
	(void)state;
	/* z = 1016 with mean 1024: P(k) falls by 63% across the object. */
	check_offsets(1024, 1000, 300000, 8, 16);
	/* z = 20016 overflows the 8 KiB context: offsets count from the object's start. */
	check_offsets(8192, 20000, 60000, 9, 16);
	/* z = 24, mean 8: one bin per byte, so an offset off by one cannot hide. */
	check_offsets(8, 1, 100000, 10, 24);
}

/* With p large (mean of a few bytes), the fraction of objects sampled is 1 - q^z for each
 * z, within 4 standard errors; sizes alternate so each object follows a different one. */
static void test_per_object_probability_large_p(void **state)
{
	static const size_t payload[] = {1, 9, 17, 41, 113};
	const uint64_t mean = 64;
	const long n = 40000;
	struct obs o = {0};
	rasp_heap_t *h = make_heap(mean, 8192, 99, &o);
	size_t t;
	long i;

	(void)state;
	for (t = 0; t < 5; t++) {
		char name[16];

		snprintf(name, sizeof(name), "P%zu", t);
		o.types[t] = rasp_type_register(h, name);
	}
	for (i = 0; i < n; i++)
		for (t = 0; t < 5; t++)
			assert_non_null(rasp_alloc(h, o.types[t], payload[t], 0));
	assert_int_equal(o.bad, 0);
	for (t = 0; t < 5; t++) {
		uint64_t z = rasp__object_size_for(payload[t]);
		double ps = p_sampled(mean, z), se = sqrt(ps * (1 - ps) / (double)n);
		double got = (double)o.count[t] / (double)n;

		if (fabs(got - ps) > 4 * se)
			fail_msg("z=%llu: sampled fraction %.4f, model %.4f +- %.4f",
				 (unsigned long long)z, got, ps, se);
	}
	rasp_heap_destroy(h);
}

/* mean 1: every byte is a success, so every object is sampled at offset 0, whatever its
 * kind or whether it overflows its context (the smallest quantum is 256 bytes). */
static void test_every_object_sampled_at_offset_zero(void **state)
{
	struct obs o = {0};
	rasp_heap_t *h = make_heap(1, 256, 1, &o);
	const rasp_type_t *t = rasp_type_register(h, "all");
	static const size_t sizes[] = {
	    1,	   7, 8, 9, 240, 241, 1000, RASP__SMALL_MAX_PAYLOAD, RASP__SMALL_MAX_PAYLOAD + 1,
	    200000};
	uint64_t before;
	size_t i;
	void *p;

	(void)state;
	o.types[0] = t;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		before = o.count[0];
		p = rasp_alloc(h, t, sizes[i], 0);
		assert_non_null(p);
		assert_int_equal(o.count[0], before + 1);
		assert_ptr_equal(o.last_addr, p);
		assert_int_equal(o.last_offset, 0);
		assert_int_equal(rasp_object_size(p), rasp__object_size_for(sizes[i]));
		assert_int_equal(rasp_object_kind(p), sizes[i] <= RASP__SMALL_MAX_PAYLOAD
							  ? RASP_KIND_SMALL
							  : RASP_KIND_LARGE);
		p = rasp_alloc(h, t, sizes[i], RASP_ALLOC_PINNED);
		assert_non_null(p);
		assert_int_equal(rasp_object_kind(p), RASP_KIND_PINNED);
		assert_int_equal(o.last_offset, 0);
	}
	assert_int_equal(o.bad, 0);
	/* ObjectSize: header included, rounded to 8. */
	assert_int_equal(rasp__object_size_for(1), 16);
	assert_int_equal(rasp__object_size_for(8), 16);
	assert_int_equal(rasp__object_size_for(9), 24);
	rasp_heap_destroy(h);
}

/* Sampling off: no sample, and combined_limit is alloc_limit (the fast path covers the
 * whole context). The same seed gives the same samples (reproducible runs). */
/* The draw is geometric with p = 1/mean, over means from 1 byte to the largest: chi-square
 * over bins of equal model probability (about 40; at small means, one value a bin), with
 * P(G >= k) = q^k; the mass past 5 means (e^-5), within 4 standard errors; mean 1 always 0. */
static void test_draw_is_geometric(void **state)
{
	static const uint64_t means[] = {
	    2, 3, 16, 4096, 102400, 1 << 24, UINT64_C(1) << 40, RASP_MAX_SAMPLING_MEAN};
	enum { NB = 40, N = 400000 };
	struct rasp_context c;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.rng[0] = 0x9e3779b97f4a7c15u;
	c.rng[1] = 7;
	rasp__context_set_mean(&c, 1);
	for (int i = 0; i < 1000; i++)
		assert_true(rasp__geometric(&c) == 0);
	for (size_t m = 0; m < sizeof(means) / sizeof(means[0]); m++) {
		double lq = log1p(-1.0 / (double)means[m]); /* ln q */
		uint64_t edge[NB + 1], count[NB + 1] = {0}, past5 = 0, k5;
		int nb = 0;
		double chi = 0, p, crit, a;

		/* Edges: the smallest k with P(G < k) >= j / NB, distinct; the last bin open. */
		edge[nb++] = 0;
		for (int j = 1; j < NB; j++) {
			uint64_t k = (uint64_t)ceil(log1p(-(double)j / NB) / lq);

			if (k > edge[nb - 1])
				edge[nb++] = k;
		}
		k5 = (uint64_t)ceil(5.0 * -1.0 / lq);
		rasp__context_set_mean(&c, means[m]);
		for (int i = 0; i < N; i++) {
			uint64_t g = rasp__geometric(&c);
			int b = nb - 1;

			while (b > 0 && g < edge[b])
				b--;
			count[b]++;
			past5 += g >= k5;
		}
		for (int b = 0; b < nb; b++) {
			/* P(edge[b] <= G < edge[b+1]) = q^lo - q^hi */
			double e =
			    N * (exp(edge[b] * lq) - (b + 1 < nb ? exp(edge[b + 1] * lq) : 0));

			chi += (count[b] - e) * (count[b] - e) / e;
		}
		a = 2.0 / (9.0 * (nb - 1));
		crit = (nb - 1) * pow(1.0 - a + 3.0902 * sqrt(a), 3); /* p = 0.001 */
		if (chi > crit)
			fail_msg("mean %llu: chi-square %.1f over %d bins > %.1f",
				 (unsigned long long)means[m], chi, nb, crit);
		p = exp(k5 * lq);
		if (fabs(past5 - N * p) > 4 * sqrt(N * p * (1 - p)))
			fail_msg("mean %llu: %llu draws past 5 means, expected %.1f",
				 (unsigned long long)means[m], (unsigned long long)past5, N * p);
	}
}

/* The announcement order a consumer relies on: it weighs a thread's samples with the mean
 * that thread last announced, so every sample must be drawn under exactly that mean. Four
 * threads allocate while the main thread switches the heap between means 1 and 2^30 (every
 * allocation a slow path, then almost none): each thread checks, in its hooks, that each
 * sample's mean is its own last announcement. */
#define FLIP_THREADS 4
static _Thread_local uint64_t announced_here;
static atomic_long flip_samples, flip_mismatches, flip_announcements;
static atomic_int flip_stop;

static void flip_sample(void *arg, uint32_t kind, const rasp_type_t *type, void *addr, uint64_t z,
			uint64_t offset, uint64_t mean)
{
	(void)arg, (void)kind, (void)type, (void)addr, (void)z, (void)offset;
	atomic_fetch_add(&flip_samples, 1);
	if (mean != announced_here)
		atomic_fetch_add(&flip_mismatches, 1);
}

static void flip_announce(void *arg, uint64_t mean)
{
	(void)arg;
	announced_here = mean;
	atomic_fetch_add(&flip_announcements, 1);
}

static void *flip_worker(void *arg)
{
	rasp_heap_t *h = arg;
	const rasp_type_t *t = rasp_type_register(h, "Flip");
	unsigned n = 0;

	while (!atomic_load(&flip_stop))
		rasp_free(h, rasp_alloc(h, t, 24 + 8 * (n++ % 50), 0));
	return NULL;
}

static void test_samples_follow_their_threads_announcement(void **state)
{
	rasp_heap_t *h = make_heap(1, 8192, 12, NULL);
	pthread_t th[FLIP_THREADS];
	struct timespec on = {0, 200 * 1000}, off = {0, 2 * 1000 * 1000};

	(void)state;
	h->sample_hook = flip_sample;
	h->announce_hook = flip_announce;
	for (int i = 0; i < FLIP_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, flip_worker, h), 0);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(rasp_heap_set_sampling(h, RASP_SAMPLING_ON, UINT64_C(1) << 30), 0);
		nanosleep(&off, NULL);
		assert_int_equal(rasp_heap_set_sampling(h, RASP_SAMPLING_ON, 1), 0);
		nanosleep(&on, NULL);
	}
	atomic_store(&flip_stop, 1);
	for (int i = 0; i < FLIP_THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	printf("%ld samples, %ld announcements, %ld drawn under another mean than their "
	       "thread's last announcement\n",
	       atomic_load(&flip_samples), atomic_load(&flip_announcements),
	       atomic_load(&flip_mismatches));
	assert_true(atomic_load(&flip_samples) > 1000);
	assert_true(atomic_load(&flip_announcements) > 100);
	assert_int_equal(atomic_load(&flip_mismatches), 0);
	rasp_heap_destroy(h);
}

static void test_off_and_reproducible(void **state)
{
	struct obs o1 = {0}, o2 = {0};
	rasp_heap_t *h1 = make_heap(512, 8192, 42, &o1), *h2;
	rasp_context_t *c;
	int i;

	(void)state;
	o1.types[0] = rasp_type_register(h1, "r");
	for (i = 0; i < 10000; i++)
		rasp_alloc(h1, o1.types[0], 100, 0);
	rasp_heap_destroy(h1);
	h2 = make_heap(512, 8192, 42, &o2);
	o2.types[0] = rasp_type_register(h2, "r");
	for (i = 0; i < 10000; i++)
		rasp_alloc(h2, o2.types[0], 100, 0);
	assert_true(o1.count[0] > 100);
	assert_int_equal(o1.count[0], o2.count[0]);
	assert_int_equal(o1.last_offset, o2.last_offset);

	assert_int_equal(rasp_heap_set_sampling(h2, RASP_SAMPLING_OFF, 0), 0);
	/* The thread adopts "off" at its next slow path, after deciding that path's object with
	 * the trials it drew while on (that sample, if any, precedes its SamplingStopped). Force
	 * that slow path with an object larger than the context, then nothing more is sampled. */
	rasp_alloc(h2, o2.types[0], 16384, 0);
	o2.count[0] = 0;
	for (i = 0; i < 10000; i++)
		rasp_alloc(h2, o2.types[0], 100, 0);
	assert_int_equal(o2.count[0], 0);
	c = rasp_context_get(h2);
	assert_non_null(c);
	assert_false(c->sampling);
	/* combined_limit == alloc_limit in every class: no sample pending in any window. */
	for (unsigned k = 0; k < RASP__NCLASS; k++)
		assert_int_equal(c->win[k].gap, 0);
	rasp_heap_destroy(h2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sample_counts_match_model),
	    cmocka_unit_test(test_offsets_uniform_small_objects),
	    cmocka_unit_test(test_offsets_follow_model_large_p),
	    cmocka_unit_test(test_per_object_probability_large_p),
	    cmocka_unit_test(test_every_object_sampled_at_offset_zero),
	    cmocka_unit_test(test_draw_is_geometric),
	    cmocka_unit_test(test_samples_follow_their_threads_announcement),
	    cmocka_unit_test(test_off_and_reproducible),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
