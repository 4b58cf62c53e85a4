/* The part of rasp's API the demo (examples/docstore.c) uses, over malloc/free, so the same
 * demo runs on glibc, jemalloc, tcmalloc or mimalloc for suite.sh's comparison. No sampling,
 * no events: the peers' figures are the allocator alone. Benchmark only, never linked into
 * librasp or a test. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/rasp.h"

struct rasp_type {
	const char *name;
};
struct rasp_heap {
	int unused;
};
static struct rasp_heap the_heap;
static struct rasp_type types[64];
static int ntypes;

int rasp_heap_create(rasp_heap_t **out, const rasp_config_t *cfg)
{
	(void)cfg;
	*out = &the_heap;
	return 0;
}

void rasp_heap_destroy(rasp_heap_t *heap)
{
	(void)heap;
}

const rasp_type_t *rasp_type_register(rasp_heap_t *heap, const char *name)
{
	(void)heap;
	for (int i = 0; i < ntypes; i++)
		if (strcmp(types[i].name, name) == 0)
			return &types[i];
	if (ntypes == 64) {
		errno = ENOMEM;
		return NULL;
	}
	types[ntypes].name = strdup(name);
	return &types[ntypes++];
}

rasp_context_t *rasp_context_get(rasp_heap_t *heap)
{
	return (rasp_context_t *)heap;
}

void *rasp_context_alloc(rasp_context_t *ctx, const rasp_type_t *type, size_t size, unsigned flags)
{
	(void)ctx, (void)type, (void)flags;
	return malloc(size);
}

void rasp_free(rasp_heap_t *heap, void *obj)
{
	(void)heap;
	free(obj);
}

size_t rasp_object_size(const void *obj)
{
	return malloc_usable_size((void *)obj);
}

int rasp_heap_stats(rasp_heap_t *heap, rasp_heap_stats_t *out)
{
	(void)heap;
	memset(out, 0, sizeof(*out));
	return 0;
}

const char *rasp_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}
