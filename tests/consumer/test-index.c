/* Unit tests of consumer/index.c: the open-addressing index over a caller's array (lookups,
 * colliding hashes that probe past the end of the table, growth that keeps every element
 * findable and the table at most half full, rebuild after sorting, the element limit),
 * rasp_array_grow (first size, doubling, element n fits, overflow) and the two hashes against
 * splitmix64's and FNV-1a's published values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* The caller's array: keys, and a hash that may be forced to collide. */
struct keys {
	uint64_t *v;
	size_t n, cap;
	uint64_t (*hash)(uint64_t key);
};

static uint64_t hash_mix(uint64_t key)
{
	return rasp_hash_mix64(key);
}

/* Every key in one slot chain; 63 is the last slot of the first table (64 slots), so the
 * probe wraps to slot 0. */
static uint64_t hash_collide(uint64_t key)
{
	(void)key;
	return 63;
}

static uint64_t hash_of(const void *ctx, size_t i)
{
	const struct keys *k = ctx;

	return k->hash(k->v[i]);
}

static int key_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct keys *)ctx)->v[i] == *(const uint64_t *)key;
}

/* Adds key unless present; returns its element index. */
static size_t intern(struct rasp_index *ix, struct keys *k, uint64_t key)
{
	size_t slot, i;

	assert_int_equal(rasp_index_reserve(ix, k->n, hash_of, k), 0);
	i = rasp_index_find(ix, k->hash(key), key_eq, k, &key, &slot);
	if (i != SIZE_MAX)
		return i;
	assert_true(slot < ix->size);
	assert_int_equal(ix->slot[slot], 0);
	assert_int_equal(rasp_array_grow((void **)&k->v, &k->cap, k->n, sizeof(*k->v)), 0);
	k->v[k->n] = key;
	rasp_index_put(ix, slot, k->n);
	return k->n++;
}

static size_t lookup(const struct rasp_index *ix, const struct keys *k, uint64_t key)
{
	size_t slot = SIZE_MAX;
	size_t i = rasp_index_find(ix, k->hash(key), key_eq, k, &key, &slot);

	if (i == SIZE_MAX && !(slot < ix->size && ix->slot[slot] == 0)) {
		printf("key %" PRIu64 ": absent, but slot %zu is not a free slot of %zu\n", key,
		       slot, ix->size);
		fail();
	}
	return i;
}

/* Every element findable at its own index, and the table at most half full. */
static void check_all(const struct rasp_index *ix, const struct keys *k)
{
	size_t used = 0;

	for (size_t i = 0; i < k->n; i++) {
		size_t got = lookup(ix, k, k->v[i]);

		if (got != i) {
			printf("key %" PRIu64
			       " at element %zu found at %zu (n = %zu, size = %zu)\n",
			       k->v[i], i, got, k->n, ix->size);
			fail();
		}
	}
	for (size_t j = 0; j < ix->size; j++)
		used += ix->slot[j] != 0;
	if (used != k->n || 2 * (k->n + 1) > ix->size) {
		printf("%zu slots used for %zu elements, table of %zu\n", used, k->n, ix->size);
		fail();
	}
}

static void test_index_find_and_put(void **state)
{
	(void)state;
	struct rasp_index ix = {0};
	struct keys k = {.hash = hash_mix};

	assert_int_equal(rasp_index_reserve(&ix, 0, hash_of, &k), 0);
	assert_int_equal(ix.size, 64);
	assert_int_equal(lookup(&ix, &k, 7), SIZE_MAX);
	assert_int_equal(intern(&ix, &k, 7), 0);
	assert_int_equal(intern(&ix, &k, 9), 1);
	assert_int_equal(intern(&ix, &k, 7), 0); /* found, not added again */
	assert_int_equal(k.n, 2);
	assert_int_equal(lookup(&ix, &k, 9), 1);
	assert_int_equal(lookup(&ix, &k, 8), SIZE_MAX);
	check_all(&ix, &k);
	rasp_index_free(&ix);
	assert_null(ix.slot);
	assert_int_equal(ix.size, 0);
	rasp_index_free(&ix); /* twice is harmless */
	free(k.v);
}

/* One probe chain for every key, across the end of the table and through growths that
 * rehash the chain. */
static void test_index_collisions_wrap(void **state)
{
	(void)state;
	struct rasp_index ix = {0};
	struct keys k = {.hash = hash_collide};

	for (uint64_t key = 100; key < 120; key++)
		assert_int_equal(intern(&ix, &k, key), key - 100);
	assert_int_equal(ix.size, 64);
	/* Slots 63, 0, 1, ...: the chain wrapped. */
	assert_int_equal(ix.slot[63], 1);
	assert_int_equal(ix.slot[0], 2);
	check_all(&ix, &k);
	assert_int_equal(lookup(&ix, &k, 5), SIZE_MAX);
	for (uint64_t key = 120; key < 300; key++)
		intern(&ix, &k, key);
	assert_int_equal(k.n, 200);
	check_all(&ix, &k);
	rasp_index_free(&ix);
	free(k.v);
}

static void test_index_growth(void **state)
{
	(void)state;
	struct rasp_index ix = {0};
	struct keys k = {.hash = hash_mix};
	size_t sizes = 0, last = 0;

	for (uint64_t key = 0; key < 100000; key++) {
		intern(&ix, &k, key * 7919);
		if (ix.size != last) {
			/* A power of two, at most half full right after growing. */
			assert_int_equal(ix.size & (ix.size - 1), 0);
			last = ix.size;
			sizes++;
		}
	}
	assert_int_equal(k.n, 100000);
	assert_true(sizes > 5);
	check_all(&ix, &k);
	/* Reserving what fits already changes nothing. */
	{
		uint32_t *before = ix.slot;

		assert_int_equal(rasp_index_reserve(&ix, 10, hash_of, &k), 0);
		assert_ptr_equal(ix.slot, before);
		assert_int_equal(ix.size, last);
	}
	rasp_index_free(&ix);
	free(k.v);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The array sorted under the index: rebuilt, every key is found at its new position. */
static void test_index_rebuild_after_sort(void **state)
{
	(void)state;
	struct rasp_index ix = {0};
	struct keys k = {.hash = hash_mix};

	for (uint64_t key = 1000; key > 0; key--)
		intern(&ix, &k, key * 31);
	qsort(k.v, k.n, sizeof(*k.v), cmp_u64);
	assert_int_equal(rasp_index_rebuild(&ix, k.n, hash_of, &k), 0);
	check_all(&ix, &k);
	assert_int_equal(lookup(&ix, &k, 31), 0);
	assert_int_equal(lookup(&ix, &k, 31000), 999);
	/* Adding after a rebuild works as before. */
	assert_int_equal(intern(&ix, &k, 5), 1000);
	check_all(&ix, &k);
	/* A rebuild for no elements still gives a usable table. */
	assert_int_equal(rasp_index_rebuild(&ix, 0, hash_of, &k), 0);
	assert_int_equal(ix.size, 64);
	for (size_t j = 0; j < ix.size; j++)
		assert_int_equal(ix.slot[j], 0);
	rasp_index_free(&ix);
	free(k.v);
}

/* Slots hold element + 1 in 32 bits: past UINT32_MAX - 1 elements is -ENOMEM, checked
 * before any allocation. */
static void test_index_limit(void **state)
{
	(void)state;
	struct rasp_index ix = {0};
	struct keys k = {.hash = hash_mix};

	assert_int_equal(rasp_index_reserve(&ix, UINT32_MAX - 1, hash_of, &k), -ENOMEM);
	assert_int_equal(rasp_index_reserve(&ix, SIZE_MAX / 4, hash_of, &k), -ENOMEM);
	assert_null(ix.slot);
	assert_int_equal(ix.size, 0);
}

static void test_array_grow(void **state)
{
	(void)state;
	uint64_t *v = NULL;
	size_t cap = 0;

	assert_int_equal(rasp_array_grow((void **)&v, &cap, 0, sizeof(*v)), 0);
	assert_int_equal(cap, 16);
	assert_non_null(v);
	for (size_t i = 0; i < 16; i++)
		v[i] = i;
	/* Room already: nothing moves. */
	{
		uint64_t *before = v;

		assert_int_equal(rasp_array_grow((void **)&v, &cap, 15, sizeof(*v)), 0);
		assert_ptr_equal(v, before);
		assert_int_equal(cap, 16);
	}
	assert_int_equal(rasp_array_grow((void **)&v, &cap, 16, sizeof(*v)), 0);
	assert_int_equal(cap, 32);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(v[i], i); /* contents kept */
	/* Element n fits even when n is past twice the capacity. */
	assert_int_equal(rasp_array_grow((void **)&v, &cap, 1000, sizeof(*v)), 0);
	if (!(cap > 1000)) {
		printf("grow to fit element 1000: capacity %zu\n", cap);
		fail();
	}
	v[1000] = 1; /* under ASan: in bounds */
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(v[i], i);
	free(v);

	v = NULL;
	cap = 0;
	assert_int_equal(rasp_array_grow((void **)&v, &cap, 17, sizeof(*v)), 0);
	assert_true(cap > 17);
	v[17] = 1;
	free(v);
}

/* The limits fail before realloc, so a stand-in capacity needs no memory. */
static void test_array_grow_limits(void **state)
{
	(void)state;
	void *v = NULL;
	size_t cap = (size_t)1 << 31;

	/* Doubling would pass UINT32_MAX - 1 elements, the index's limit. */
	assert_int_equal(rasp_array_grow(&v, &cap, cap, 1), -ENOMEM);
	assert_null(v);
	assert_int_equal(cap, (size_t)1 << 31);
	/* newcap * elem would overflow size_t. */
	cap = 16;
	assert_int_equal(rasp_array_grow(&v, &cap, 16, SIZE_MAX / 16), -ENOMEM);
	assert_null(v);
	assert_int_equal(cap, 16);
}

static void test_hash_values(void **state)
{
	(void)state;

	/* splitmix64's first output from seed 0 is mix64(0x9e3779b97f4a7c15). */
	assert_true(rasp_hash_mix64(UINT64_C(0x9e3779b97f4a7c15)) == UINT64_C(0xe220a8397b1dcdaf));
	assert_true(rasp_hash_mix64(0) == 0);
	/* FNV-1a 64: "" is the offset basis, "a" is 0xaf63dc4c8601ec8c; then the finaliser. */
	assert_true(rasp_hash_string("") == rasp_hash_mix64(UINT64_C(0xcbf29ce484222325)));
	assert_true(rasp_hash_string("a") == rasp_hash_mix64(UINT64_C(0xaf63dc4c8601ec8c)));
	assert_true(rasp_hash_string("foobar") == rasp_hash_mix64(UINT64_C(0x85944171f73967e8)));
	/* Bytes, not chars: a high byte is hashed as unsigned. */
	assert_true(rasp_hash_string("\xc3\xa9") != rasp_hash_string("\xc3"));
	assert_true(rasp_hash_string("ab") != rasp_hash_string("ba"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_index_find_and_put),
	    cmocka_unit_test(test_index_collisions_wrap),
	    cmocka_unit_test(test_index_growth),
	    cmocka_unit_test(test_index_rebuild_after_sort),
	    cmocka_unit_test(test_index_limit),
	    cmocka_unit_test(test_array_grow),
	    cmocka_unit_test(test_array_grow_limits),
	    cmocka_unit_test(test_hash_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
