/* Requested sizes (runtime/alloc.c, rasp_config_t.requested_sizes, as librasp-malloc's heap
 * sets them): a sample's ObjectSize is the size asked, its offset below it, and the weighted
 * estimate of the bytes asked is unbiased where block and request differ most (1 to 5000
 * bytes, large objects, aligned objects, resizes in place), within 4 standard errors per type
 * and for the total, fixed seeds; every sampled object's free pairs with its sample at its
 * size (the sizes kept beside the heap), a resize in place of a sampled object frees its old
 * sample first; the configuration refuses what it cannot mean. White-box: the sample and
 * free hooks (ledger.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "ledger.h"

#define PAD 8 /* librasp-malloc's word: each size given holds it */

static rasp_heap_t *requested_heap(uint64_t mean, uint64_t seed)
{
	rasp_config_t cfg;
	rasp_heap_t *h = NULL;

	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_ON;
	cfg.sampling_mean = mean;
	cfg.has_seed = 1;
	cfg.seed = seed;
	cfg.requested_sizes = 1;
	cfg.request_pad = PAD;
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	return h;
}

/* One type's figures: its samples weighted (Estimator 1, docs/sampling.md), the truth. */
#define MAX_TYPES 16
struct tally {
	struct ledger ledger;
	double p;
	int n;
	const rasp_type_t *type[MAX_TYPES];
	const char *label[MAX_TYPES];
	uint64_t asked[MAX_TYPES]; /* the one size asked of the type, 0 if it mixes sizes */
	double est[MAX_TYPES], truth[MAX_TYPES], var[MAX_TYPES];
	uint64_t samples[MAX_TYPES];
	uint64_t wrong_size, bad_offset, unknown_type;
};

static double hit(double p, double z)
{
	return -expm1(z * log1p(-p));
}

static void on_sample(void *arg, uint32_t kind, const rasp_type_t *type, void *addr, uint64_t z,
		      uint64_t offset, uint64_t mean)
{
	struct tally *t = arg;
	int i;

	ledger_sample(&t->ledger, kind, type, addr, z, offset, mean);
	for (i = 0; i < t->n && t->type[i] != type; i++)
		;
	if (i == t->n) {
		t->unknown_type++;
		return;
	}
	t->samples[i]++;
	t->est[i] += (double)z / hit(t->p, (double)z);
	t->wrong_size += t->asked[i] && z != t->asked[i];
	t->bad_offset += offset >= z;
}

static void on_free(void *arg, void *addr, uint64_t z)
{
	ledger_free(&((struct tally *)arg)->ledger, addr, z);
}

static int add_type(struct tally *t, rasp_heap_t *h, const char *label, uint64_t asked)
{
	t->type[t->n] = rasp_type_register(h, label);
	assert_non_null(t->type[t->n]);
	t->label[t->n] = label;
	t->asked[t->n] = asked;
	return t->n++;
}

/* One allocation of n bytes asked, of type i, counted in the truth. */
static void counted(struct tally *t, int i, uint64_t n)
{
	double h = hit(t->p, (double)n);

	t->truth[i] += (double)n;
	if (n)
		t->var[i] += (double)n * (double)n * (1 - h) / h;
}

/* A ring of live objects, each replaced at a random slot, so that frees come in another order
 * than allocations and the kept sizes are taken out of the middle of their table. */
#define KEEP 1024
struct ring {
	void *obj[KEEP];
	uint64_t x;
};

static void ring_put(struct ring *r, rasp_heap_t *h, void *obj)
{
	size_t i;

	r->x ^= r->x << 13, r->x ^= r->x >> 7, r->x ^= r->x << 17;
	i = (size_t)(r->x % KEEP);
	rasp_free(h, r->obj[i]);
	r->obj[i] = obj;
}

static void ring_drain(struct ring *r, rasp_heap_t *h)
{
	for (size_t i = 0; i < KEEP; i++) {
		rasp_free(h, r->obj[i]);
		r->obj[i] = NULL;
	}
}

static void tally_attach(struct tally *t, rasp_heap_t *h, uint64_t mean)
{
	memset(t, 0, sizeof(*t));
	ledger_attach(&t->ledger, h);
	t->p = 1.0 / (double)mean;
	h->sample_hook_arg = t;
	h->sample_hook = on_sample;
	h->free_hook = on_free;
}

/* The sizes where the block and the request differ most: 1 byte asked is a 24-byte block
 * (the word and the header), 9 a 32-byte one, and so on; 100000 bytes an arena's large
 * object, 3000000 a mapping of its own; 700 bytes aligned to 64 a block of 780; resizes in
 * place to 60 and 150000 bytes (with no block of their own). Each type gets about 1500
 * expected samples at the mean (large ones are all sampled: their estimate is exact). */
static void test_requested_unbiased(void **state)
{
	static const uint64_t sizes[] = {1, 9, 17, 24, 100, 1000, 5000, 100000, 3000000};
	const uint64_t mean = 4096;
	static struct tally t;
	static struct ring ring = {.x = 88172645463325252u};
	rasp_heap_t *h = requested_heap(mean, 42);
	int aligned, resized, base_small, base_large;
	double est = 0, truth = 0, var = 0;

	(void)state;
	tally_attach(&t, h, mean);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		static char names[9][32];
		uint64_t n = sizes[s];
		uint64_t count = n >= 100000 ? 300 : (uint64_t)ceil(1500 / hit(t.p, (double)n));
		int i;

		snprintf(names[s], sizeof(names[s]), "asked-%llu", (unsigned long long)n);
		i = add_type(&t, h, names[s], n);
		for (uint64_t k = 0; k < count; k++) {
			void *o = rasp_alloc(h, t.type[i], n + PAD, 0);

			assert_non_null(o);
			counted(&t, i, n);
			ring_put(&ring, h, o);
		}
	}
	aligned = add_type(&t, h, "aligned-700", 700);
	for (uint64_t k = 0, count = (uint64_t)ceil(1500 / hit(t.p, 700)); k < count; k++) {
		void *o = rasp_alloc_aligned(h, t.type[aligned], 700 + PAD, 64, 0);

		assert_non_null(o);
		assert_int_equal((uintptr_t)o % 64, 0);
		counted(&t, aligned, 700);
		ring_put(&ring, h, o);
	}
	/* Resizes in place: an object of 100 (or 200000) bytes asked, then resized to 60 (or
	 * 150000): two allocations, the first freed by the second. */
	base_small = add_type(&t, h, "resize-base", 100);
	base_large = add_type(&t, h, "resize-base-large", 200000);
	resized = add_type(&t, h, "resized", 0);
	for (uint64_t k = 0, count = (uint64_t)ceil(1500 / hit(t.p, 60)); k < count; k++) {
		bool large = k % 64 == 0;
		uint64_t n = large ? 200000 : 100, m = large ? 150000 : 60;
		void *o = rasp_alloc(h, t.type[large ? base_large : base_small], n + PAD, 0);

		assert_non_null(o);
		counted(&t, large ? base_large : base_small, n);
		rasp__resized(h, o, m + PAD, t.type[resized]);
		counted(&t, resized, m);
		ring_put(&ring, h, o);
	}
	ring_drain(&ring, h);

	for (int i = 0; i < t.n; i++) {
		double se = sqrt(t.var[i]), d = t.est[i] - t.truth[i];

		printf("%-18s truth %14.0f  estimate %16.1f  se %10.1f  (%+.2f se)  samples %llu\n",
		       t.label[i], t.truth[i], t.est[i], se, se > 0 ? d / se : 0.0,
		       (unsigned long long)t.samples[i]);
		/* Large objects are all sampled: their estimate is exact to a part in 10^7. */
		assert_true(fabs(d) <= 4 * se + 1e-7 * t.truth[i]);
		est += t.est[i], truth += t.truth[i], var += t.var[i];
	}
	printf("total              truth %14.0f  estimate %16.1f  se %10.1f  (%+.2f se)\n", truth,
	       est, sqrt(var), (est - truth) / sqrt(var));
	assert_true(fabs(est - truth) <= 4 * sqrt(var) + 1e-7 * truth);
	assert_int_equal(t.wrong_size, 0);
	assert_int_equal(t.bad_offset, 0);
	assert_int_equal(t.unknown_type, 0);
	/* Every free paired with its sample, at the size it said; none left live. */
	assert_int_equal(t.ledger.free_unpaired, 0);
	assert_int_equal(t.ledger.free_bad_size, 0);
	assert_int_equal(t.ledger.sample_over_live, 0);
	assert_int_equal(t.ledger.live, 0);
	assert_int_equal(((struct rasp_heap *)h)->sizes_n, 0);
	ledger_fini(&t.ledger);
	rasp_heap_destroy(h);
}

/* At mean 1 every allocation of a byte or more is sampled, at offset 0: a resize in place of a
 * sampled object is its old sample's free (at its size) and then a new sample at the same
 * Address; to 0 bytes asked, the free alone. Through rasp_realloc in place too. */
static void test_resized_pairs(void **state)
{
	static struct tally t;
	rasp_heap_t *h = requested_heap(1, 7);
	const rasp_type_t *a, *r;
	void *o, *q;

	(void)state;
	tally_attach(&t, h, 1);
	a = t.type[add_type(&t, h, "a", 0)];
	r = t.type[add_type(&t, h, "r", 0)];
	o = rasp_alloc(h, a, 100 + PAD, 0);
	assert_int_equal(t.ledger.samples, 1);
	assert_int_equal(ledger_find(&t.ledger, (uintptr_t)o)->size, 100);
	rasp__resized(h, o, 60 + PAD, r);
	assert_int_equal(t.ledger.frees, 1);
	assert_int_equal(t.ledger.free_bad_size, 0);
	assert_int_equal(t.ledger.samples, 2);
	assert_true(ledger_live(&t.ledger, o));
	assert_int_equal(ledger_find(&t.ledger, (uintptr_t)o)->size, 60);
	assert_int_equal(t.samples[1], 1);
	/* To nothing asked: the old sample's free, no new one. */
	rasp__resized(h, o, PAD, r);
	assert_int_equal(t.ledger.frees, 2);
	assert_int_equal(t.ledger.samples, 2);
	assert_false(ledger_live(&t.ledger, o));
	rasp_free(h, o);
	assert_int_equal(t.ledger.frees, 2); /* not sampled: its free says nothing */
	/* rasp_realloc in place (the same size class) does the same. */
	o = rasp_alloc(h, a, 100 + PAD, 0);
	q = rasp_realloc(h, o, 99 + PAD);
	assert_ptr_equal(q, o);
	assert_int_equal(t.ledger.frees, 3);
	assert_int_equal(ledger_find(&t.ledger, (uintptr_t)o)->size, 99);
	rasp_free(h, o);
	/* An aligned object's sample and free carry its block's Address, resized or not. */
	o = rasp_alloc_aligned(h, a, 300 + PAD, 128, 0);
	assert_int_equal(t.ledger.live, 1);
	rasp__resized(h, o, 200 + PAD, r);
	assert_int_equal(t.ledger.live, 1);
	rasp_free(h, o);
	assert_int_equal(t.ledger.live, 0);
	assert_int_equal(t.ledger.free_unpaired, 0);
	assert_int_equal(t.ledger.free_bad_size, 0);
	assert_int_equal(t.ledger.sample_over_live, 0);
	assert_int_equal(t.bad_offset, 0);
	ledger_fini(&t.ledger);
	rasp_heap_destroy(h);
}

/* Thousands of sampled objects live at once, freed in random order: the kept sizes grow
 * their table and leave it by backward shifts, every free at its own size. */
static void test_kept_sizes_many(void **state)
{
	static struct tally t;
	static void *live[20000];
	rasp_heap_t *h = requested_heap(1, 9);
	const rasp_type_t *a;
	uint64_t x = 0x2545f4914f6cdd1du;

	(void)state;
	tally_attach(&t, h, 1);
	a = t.type[add_type(&t, h, "a", 0)];
	for (size_t i = 0; i < 20000; i++) {
		live[i] = rasp_alloc(h, a, 1 + i % 3000 + PAD, 0);
		assert_non_null(live[i]);
	}
	assert_int_equal(((struct rasp_heap *)h)->sizes_n, 20000);
	for (size_t i = 20000; i > 1; i--) { /* a shuffle, then the frees in its order */
		size_t j;
		void *v;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		j = (size_t)(x % i);
		v = live[i - 1], live[i - 1] = live[j], live[j] = v;
	}
	for (size_t i = 0; i < 20000; i++)
		rasp_free(h, live[i]);
	assert_int_equal(t.ledger.frees, 20000);
	assert_int_equal(t.ledger.free_bad_size, 0);
	assert_int_equal(t.ledger.live, 0);
	assert_int_equal(((struct rasp_heap *)h)->sizes_n, 0);
	ledger_fini(&t.ledger);
	rasp_heap_destroy(h);
}

/* A heap that counts blocks (the default) is unchanged: ObjectSize the block's, a resize in
 * place nothing. */
static void test_blocks_by_default(void **state)
{
	static struct tally t;
	rasp_heap_t *h = NULL;
	rasp_config_t cfg;
	const rasp_type_t *a;
	void *o;

	(void)state;
	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_ON;
	cfg.sampling_mean = 1;
	cfg.has_seed = 1;
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	tally_attach(&t, h, 1);
	a = t.type[add_type(&t, h, "a", 0)];
	o = rasp_alloc(h, a, 1 + PAD, 0);
	assert_int_equal(ledger_find(&t.ledger, (uintptr_t)o)->size, rasp_object_size(o));
	rasp__resized(h, o, 5, a);
	assert_int_equal(t.ledger.samples, 1);
	assert_int_equal(t.ledger.frees, 0);
	rasp_free(h, o);
	assert_int_equal(t.ledger.free_bad_size, 0);
	ledger_fini(&t.ledger);
	rasp_heap_destroy(h);
}

static void test_config_refused(void **state)
{
	rasp_config_t cfg;

	(void)state;
	rasp_config_init(&cfg);
	assert_int_equal(cfg.requested_sizes, 0);
	assert_int_equal(cfg.request_pad, 0);
	cfg.requested_sizes = 2;
	assert_int_equal(rasp_config_validate(&cfg), -EINVAL);
	cfg.requested_sizes = 0;
	cfg.request_pad = 8; /* a pad means nothing when blocks are counted */
	assert_int_equal(rasp_config_validate(&cfg), -EINVAL);
	cfg.requested_sizes = 1;
	assert_int_equal(rasp_config_validate(&cfg), 0);
	cfg.request_pad = RASP_MAX_REQUEST_PAD + 1;
	assert_int_equal(rasp_config_validate(&cfg), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_requested_unbiased), cmocka_unit_test(test_resized_pairs),
	    cmocka_unit_test(test_kept_sizes_many),    cmocka_unit_test(test_blocks_by_default),
	    cmocka_unit_test(test_config_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
