/* Allocation variants (runtime/variants.c), white-box: zeroed, aligned (every power of 2 up
 * to 1 MiB, small and large, freed and queried through their own header), realloc (contents,
 * in place within a class, moves across classes, large shrink, errors, C's NULL and 0), and
 * realloc's sampling: in place draws no trial, a move is sampled as a new object (model within
 * 4 SE); a move of a sampled object tells its free, a resize in place tells nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../support/test-heap.h"
#include "internal.h"
#include "ledger.h"

static uint64_t nsampled;
static void count(void *arg, uint32_t kind, const rasp_type_t *type, void *addr, uint64_t z,
		  uint64_t offset, uint64_t mean)
{
	(void)arg, (void)kind, (void)type, (void)addr, (void)z, (void)offset, (void)mean;
	nsampled++;
}

static rasp_heap_t *make_heap(int sampling, uint64_t mean)
{
	rasp_heap_t *h = test_heap(sampling, mean, 31);

	assert_non_null(h);
	h->sample_hook = count;
	return h;
}

static void test_zeroed(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "z");
	unsigned char *p;

	(void)state;
	/* Dirty a block, free it, get it back zeroed. */
	p = rasp_alloc(h, t, 200, 0);
	memset(p, 0xff, 200);
	rasp_free(h, p);
	p = rasp_alloc_zeroed(h, t, 25, 8, 0);
	assert_non_null(p);
	for (int i = 0; i < 200; i++)
		assert_int_equal(p[i], 0);
	rasp_free(h, p);
	errno = 0;
	assert_null(rasp_alloc_zeroed(h, t, SIZE_MAX / 2, 4, 0));
	assert_int_equal(errno, EOVERFLOW);
	rasp_heap_destroy(h);
}

struct aligned_seen {
	const void *small, *large;
	const rasp_type_t *t;
	int found;
};

static int find_aligned(void *obj, const rasp_type_t *type, size_t z, int kind, void *arg)
{
	struct aligned_seen *a = arg;

	if (obj == a->small && type == a->t && kind == RASP_KIND_SMALL && z >= 100 + 256)
		a->found |= 1;
	if (obj == a->large && type == a->t && kind == RASP_KIND_PINNED && z >= 200000 + 4096)
		a->found |= 2;
	return 0;
}

static void test_aligned(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "a");
	static const size_t sizes[] = {1, 100, 5000, 200000};

	(void)state;
	for (size_t a = 1; a <= ((size_t)1 << 20); a *= 2) {
		for (size_t s = 0; s < 4; s++) {
			char *p =
			    rasp_alloc_aligned(h, t, sizes[s], a, s == 1 ? RASP_ALLOC_PINNED : 0);

			assert_non_null(p);
			if ((uintptr_t)p % a)
				fail_msg("alignment %zu: %p", a, (void *)p);
			memset(p, 0x11, sizes[s]);
			assert_ptr_equal(rasp_object_type(p), t);
			assert_true(rasp_usable_size(p) >= sizes[s]);
			assert_int_equal(rasp_object_kind(p),
					 s == 1 ? RASP_KIND_PINNED
					 : rasp_object_size(p) >= RASP_LARGE_OBJECT_SIZE
					     ? RASP_KIND_LARGE
					     : RASP_KIND_SMALL);
			rasp_free(h, p);
		}
	}
	errno = 0;
	assert_null(rasp_alloc_aligned(h, t, 10, 24, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(rasp_alloc_aligned(h, t, 10, (size_t)1 << 21, 0));
	/* A walk reports an aligned object at its aligned start, with its type and kind (its own
	 * header's), and the block's size; a second free of one is refused. */
	struct aligned_seen seen = {rasp_alloc_aligned(h, t, 100, 256, 0),
				    rasp_alloc_aligned(h, t, 200000, 4096, RASP_ALLOC_PINNED), t,
				    0};
	assert_int_equal(rasp_heap_walk(h, find_aligned, &seen), 0);
	assert_int_equal(seen.found, 3);
	rasp_free(h, (void *)seen.small);
	rasp_free(h, (void *)seen.large);
	rasp_free(h, (void *)seen.small);
	rasp_free(h, (void *)seen.large);
	rasp_heap_stats_t st;
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, 2);
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0); /* every aligned object was freed through its header */
	assert_int_equal(st.invalid_frees, 2);
	rasp_heap_destroy(h);
}

static void test_resize(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "r");
	unsigned char *p, *q;
	size_t n = 10;

	(void)state;
	p = rasp_alloc(h, t, n, 0);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)i;
	/* Grow through small classes into the large range and back, keeping the contents. */
	while (n < 400000) {
		size_t m = n * 3 / 2 + 1;

		q = rasp_realloc(h, p, m);
		assert_non_null(q);
		for (size_t i = 0; i < n; i++)
			if (q[i] != (unsigned char)i)
				fail_msg("byte %zu lost growing %zu -> %zu", i, n, m);
		for (size_t i = n; i < m; i++)
			q[i] = (unsigned char)i;
		assert_ptr_equal(rasp_object_type(q), t);
		p = q;
		n = m;
	}
	/* A large object shrinking by less than half stays where it is. */
	q = rasp_realloc(h, p, n - 1000);
	assert_ptr_equal(q, p);
	q = rasp_realloc(h, p, 100);
	assert_ptr_not_equal(q, p);
	for (size_t i = 0; i < 100; i++)
		assert_int_equal(q[i], (unsigned char)i);
	/* Within its class: in place (100 and 104 both make a 120-byte object). */
	p = rasp_realloc(h, q, 104);
	assert_ptr_equal(p, q);
	/* Errors leave the object alone: a refused pointer is EINVAL, not ENOMEM. */
	errno = 0;
	assert_null(rasp_realloc(h, p + 8, 10));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(rasp_realloc(h, p, SIZE_MAX));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(p[3], 3);
	rasp_free(h, p);
	rasp_heap_destroy(h);
}

/* C's realloc: NULL allocates an object of the heap's default type ("untyped", or the one
 * set), 0 frees and returns NULL with errno untouched, NULL and 0 do nothing. */
static void test_realloc_is_c_realloc(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "mine");
	rasp_heap_t *other = make_heap(RASP_SAMPLING_OFF, 1);
	rasp_heap_stats_t st;
	char *p, *q;

	(void)state;
	p = rasp_realloc(h, NULL, 10);
	assert_non_null(p);
	assert_string_equal(rasp_type_name(rasp_object_type(p)), "untyped");
	assert_ptr_equal(rasp_object_type(p), rasp_heap_default_type(h));
	assert_ptr_equal(rasp_heap_default_type(h), rasp_type_register(h, "untyped"));
	errno = 0;
	assert_null(rasp_realloc(h, p, 0));
	assert_int_equal(errno, 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.live_bytes, 0); /* p was freed */
	assert_int_equal(st.invalid_frees, 0);
	assert_null(rasp_realloc(h, NULL, 0));
	assert_int_equal(errno, 0);
	assert_int_equal(rasp_heap_set_default_type(h, rasp_type_register(other, "x")), -EINVAL);
	assert_int_equal(rasp_heap_set_default_type(h, NULL), -EINVAL);
	assert_int_equal(rasp_heap_set_default_type(h, t), 0);
	q = rasp_realloc(h, NULL, 100000);
	assert_non_null(q);
	assert_ptr_equal(rasp_object_type(q), t);
	assert_null(rasp_realloc(h, q, 0));
	assert_null(rasp_realloc(NULL, NULL, 10));
	assert_int_equal(errno, EINVAL);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.live_bytes, 0);
	rasp_heap_destroy(other);
	rasp_heap_destroy(h);
}

/* In place draws no trial: 100000 resizes within a class, mean 64 bytes, no sample. Moves are
 * new objects: a growth chain's samples match sum(1 - q^b) over the blocks it allocated. */
/* A move by rasp_realloc keeps the alignment asked, no more and no less:
 * otherwise a block whose start happened to be aligned goes out as a plain object and moves to
 * an 8-aligned one (125 of 1000 64-aligned objects), and an object placed at a 4 KiB or larger
 * boundary by chance moves with that alignment, in a block up to 1 MiB larger, its trials
 * counted over all of it. 1000 64-aligned objects of 337 bytes (about 16 of them at a 4 KiB
 * boundary) grow to 5000 bytes and shrink to 100: every one 64-aligned, each in the block
 * a fresh 64-aligned object of its size takes. */
static void test_realloc_keeps_the_alignment_asked(void **state)
{
	enum { N = 1000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "a");
	void *o[N], *ref;
	size_t z100, z5000;
	int boundary = 0;

	(void)state;
	assert_non_null(ref = rasp_alloc_aligned(h, t, 100, 64, 0));
	z100 = rasp_object_size(ref);
	rasp_free(h, ref);
	assert_non_null(ref = rasp_alloc_aligned(h, t, 5000, 64, 0));
	z5000 = rasp_object_size(ref);
	rasp_free(h, ref);
	for (int i = 0; i < N; i++) {
		assert_non_null(o[i] = rasp_alloc_aligned(h, t, 337, 64, 0));
		assert_int_equal((uintptr_t)o[i] % 64, 0);
		boundary += (uintptr_t)o[i] % 4096 == 0;
	}
	printf("%d of %d at a 4 KiB boundary\n", boundary, N);
	for (int i = 0; i < N; i++) {
		assert_non_null(o[i] = rasp_realloc(h, o[i], 5000));
		assert_int_equal((uintptr_t)o[i] % 64, 0);
		assert_int_equal(rasp_object_size(o[i]), z5000);
		assert_non_null(o[i] = rasp_realloc(h, o[i], 100));
		assert_int_equal((uintptr_t)o[i] % 64, 0);
		assert_int_equal(rasp_object_size(o[i]), z100);
	}
	for (int i = 0; i < N; i++)
		rasp_free(h, o[i]);
	rasp_heap_destroy(h);
}

static void test_realloc_sampling(void **state)
{
	const uint64_t mean = 4096;
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 64);
	const rasp_type_t *t = rasp_type_register(h, "s");
	double expect = 0, var = 0;
	void *p = rasp_alloc(h, t, 100, 0);

	(void)state;
	nsampled = 0;
	for (int i = 0; i < 100000; i++)
		p = rasp_realloc(h, p, 97 + (size_t)(i % 8));
	assert_int_equal(nsampled, 0);
	rasp_free(h, p);
	rasp_heap_destroy(h);

	h = make_heap(RASP_SAMPLING_ON, mean);
	t = rasp_type_register(h, "s");
	nsampled = 0;
	for (int r = 0; r < 3000; r++) {
		size_t n = 8;

		double p0;

		p = rasp_alloc(h, t, n, 0);
		p0 = -expm1((double)rasp_object_size(p) * log1p(-1.0 / (double)mean));
		expect += p0;
		var += p0 * (1 - p0);
		while (n < 20000) {
			size_t before = rasp_object_size(p);
			void *q = rasp_realloc(h, p, n *= 2);
			double ps;

			assert_non_null(q);
			if (q == p && rasp_object_size(q) == before)
				continue;
			ps = -expm1((double)rasp_object_size(q) * log1p(-1.0 / (double)mean));
			expect += ps;
			var += ps * (1 - ps);
			p = q;
		}
		rasp_free(h, p);
	}
	printf("%llu samples over the moves, model %.1f +- %.1f\n", (unsigned long long)nsampled,
	       expect, sqrt(var));
	assert_true(fabs((double)nsampled - expect) <= 4 * sqrt(var) + 1);
	rasp_heap_destroy(h);
}

/* A sampled object that rasp_realloc moves is freed: its free is told with the Address and
 * ObjectSize its sample had, after the new block's own sample if it has one; resized in place
 * it keeps its block and its sample, and nothing is told (small within its class, large
 * shrunk by at most half, aligned within its block). At mean 1 every object is sampled. */
static void test_realloc_tells_the_moves(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 1);
	const rasp_type_t *t = rasp_type_register(h, "r");
	struct ledger l;
	char *p, *q;
	uint64_t z;

	(void)state;
	ledger_attach(&l, h);
	/* Small: in place within its class, then moved to a larger one. */
	p = rasp_alloc(h, t, 100, 0);
	assert_int_equal(l.samples, 1);
	q = rasp_realloc(h, p, 104);
	assert_ptr_equal(q, p);
	assert_int_equal(l.samples + l.frees, 1);
	z = rasp_object_size(p);
	p = rasp_realloc(h, q, 3000);
	assert_ptr_not_equal(p, q);
	assert_int_equal(l.samples, 2);
	assert_int_equal(l.frees, 1);
	assert_false(ledger_live(&l, q));
	assert_true(ledger_live(&l, p));
	assert_int_equal(ledger_find(&l, (uintptr_t)q)->size, z);
	/* Large: shrunk in place, then moved to grow. */
	q = rasp_realloc(h, p, 400000);
	assert_int_equal(l.frees, 2);
	p = rasp_realloc(h, q, 250000);
	assert_ptr_equal(p, q);
	assert_int_equal(l.frees, 2);
	assert_int_equal(rasp_object_size(p), ledger_find(&l, (uintptr_t)p)->size);
	q = rasp_realloc(h, p, 900000);
	assert_ptr_not_equal(q, p);
	assert_int_equal(l.frees, 3);
	rasp_free(h, q);
	assert_int_equal(l.frees, 4);
	/* Aligned: the sample and the free name its block, not the pointer. */
	p = rasp_alloc_aligned(h, t, 100, 256, 0);
	q = rasp_realloc(h, p, 90);
	assert_ptr_equal(q, p);
	assert_int_equal(l.frees, 4);
	q = rasp_realloc(h, p, 5000);
	assert_ptr_not_equal(q, p);
	assert_int_equal(l.frees, 5);
	rasp_free(h, q);
	assert_int_equal(l.frees, 6);
	assert_int_equal(l.samples, 6);
	assert_int_equal(l.live, 0);
	assert_int_equal(l.free_unpaired + l.free_bad_size + l.sample_over_live, 0);
	rasp_heap_destroy(h);
	ledger_fini(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zeroed),
	    cmocka_unit_test(test_aligned),
	    cmocka_unit_test(test_resize),
	    cmocka_unit_test(test_realloc_is_c_realloc),
	    cmocka_unit_test(test_realloc_sampling),
	    cmocka_unit_test(test_realloc_keeps_the_alignment_asked),
	    cmocka_unit_test(test_realloc_tells_the_moves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
