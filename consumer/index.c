/* The consumer's hash index (index.h): open addressing over a caller's array. */
#include "index.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static int build(struct rasp_index *ix, size_t size, size_t n, rasp_index_hash_fn hash_of,
		 const void *ctx)
{
	uint32_t *slot = calloc(size, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t j = hash_of(ctx, i) & (size - 1);

		while (slot[j])
			j = (j + 1) & (size - 1);
		slot[j] = (uint32_t)(i + 1);
	}
	free(ix->slot);
	ix->slot = slot;
	ix->size = size;
	return 0;
}

int rasp_index_reserve(struct rasp_index *ix, size_t n, rasp_index_hash_fn hash_of, const void *ctx)
{
	size_t size;

	if ((n + 1) * 2 <= ix->size)
		return 0;
	if (n >= UINT32_MAX - 1)
		return -ENOMEM;
	size = ix->size ? ix->size * 2 : 64;
	while ((n + 1) * 2 > size)
		size *= 2;
	return build(ix, size, n, hash_of, ctx);
}

int rasp_index_rebuild(struct rasp_index *ix, size_t n, rasp_index_hash_fn hash_of, const void *ctx)
{
	size_t size = 64;

	while ((n + 1) * 2 > size)
		size *= 2;
	return build(ix, size, n, hash_of, ctx);
}

size_t rasp_index_find(const struct rasp_index *ix, uint64_t hash, rasp_index_eq_fn eq,
		       const void *ctx, const void *key, size_t *slot)
{
	size_t mask = ix->size - 1, j;

	/* At most half full, so an empty slot ends every probe sequence. */
	for (j = hash & mask; ix->slot[j]; j = (j + 1) & mask)
		if (eq(ctx, ix->slot[j] - 1, key))
			return ix->slot[j] - 1;
	*slot = j;
	return SIZE_MAX;
}

void rasp_index_free(struct rasp_index *ix)
{
	free(ix->slot);
	ix->slot = NULL;
	ix->size = 0;
}

uint64_t rasp_hash_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

uint64_t rasp_hash_string(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
	return rasp_hash_mix64(h); /* FNV's low bits are weak for short keys */
}

char *rasp_vstrdupf(const char *fmt, va_list ap)
{
	va_list again;
	char *s;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	s = n < 0 ? NULL : malloc((size_t)n + 1);
	if (s)
		vsnprintf(s, (size_t)n + 1, fmt, again);
	va_end(again);
	return s;
}

int rasp_array_grow(void **array, size_t *cap, size_t n, size_t elem)
{
	size_t newcap;
	void *p;

	if (n < *cap)
		return 0;
	newcap = *cap ? *cap * 2 : 16;
	while (newcap <= n && newcap <= UINT32_MAX)
		newcap *= 2;
	if (newcap > UINT32_MAX - 1 || newcap > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*array, newcap * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = newcap;
	return 0;
}
