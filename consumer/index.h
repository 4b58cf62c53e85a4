/* The consumer's one hash table, and the small helpers its tables share: an open-addressing
 * index over an array the caller owns.
 * Slots hold element index + 1 (0 = empty), so the array can grow, and be sorted as long as
 * the index is rebuilt after. Linear probing, power-of-two size, at most half full: a lookup
 * costs one hash and about 1.5 probes. No babeltrace2 types. */
#ifndef RASP_CONSUMER_INDEX_H
#define RASP_CONSUMER_INDEX_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct rasp_index {
	uint32_t *slot;
	size_t size; /* power of two, or 0 before the first reserve */
};

/* The hash of element i of the caller's array. */
typedef uint64_t (*rasp_index_hash_fn)(const void *ctx, size_t i);
/* Whether element i equals the key being looked up. */
typedef int (*rasp_index_eq_fn)(const void *ctx, size_t i, const void *key);

/* Makes room for n + 1 elements, rebuilding from hash_of when it grows. 0 or -ENOMEM (also
 * past UINT32_MAX - 1 elements). */
int rasp_index_reserve(struct rasp_index *ix, size_t n, rasp_index_hash_fn hash_of,
		       const void *ctx);

/* Rebuilds the index for elements 0..n-1 (after the array was sorted). 0 or -ENOMEM. */
int rasp_index_rebuild(struct rasp_index *ix, size_t n, rasp_index_hash_fn hash_of,
		       const void *ctx);

/* Looks key up: returns its element index, or SIZE_MAX with *slot the free slot where it
 * belongs (valid until the next reserve). The index must have been reserved. */
size_t rasp_index_find(const struct rasp_index *ix, uint64_t hash, rasp_index_eq_fn eq,
		       const void *ctx, const void *key, size_t *slot);

/* Publishes element i at a slot rasp_index_find returned. */
static inline void rasp_index_put(struct rasp_index *ix, size_t slot, size_t i)
{
	ix->slot[slot] = (uint32_t)(i + 1);
}

void rasp_index_free(struct rasp_index *ix);

/* Hashes: a 64-bit finaliser (splitmix64's) and FNV-1a over a string's bytes. */
uint64_t rasp_hash_mix64(uint64_t z);
uint64_t rasp_hash_string(const char *s);

/* A string printed into fresh memory (the caller frees it); NULL without memory. */
char *rasp_vstrdupf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Grows a caller's array (void ** to it) so that element n fits: doubles, 16 at first. 0 or
 * -ENOMEM, also past UINT32_MAX - 1 elements (the index's limit). */
int rasp_array_grow(void **array, size_t *cap, size_t n, size_t elem);

#endif /* RASP_CONSUMER_INDEX_H */
