/* Interned call stacks (stacks.h). */
#include "stacks.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct probe {
	int64_t pid;
	const uint64_t *frames;
	size_t n;
};

static uint64_t hash_of(const void *ctx, size_t i)
{
	return ((const struct rasp_stacks *)ctx)->v[i].hash;
}

static int eq(const void *ctx, size_t i, const void *key)
{
	const struct rasp_stacks *s = ctx;
	const struct probe *p = key;
	const struct rasp_stack *st = &s->v[i];

	return st->pid == p->pid && st->n == p->n &&
	       !memcmp(s->frames + st->first, p->frames, p->n * sizeof(*p->frames));
}

int64_t rasp_stacks_intern(struct rasp_stacks *s, int64_t pid, const uint64_t *frames, size_t n)
{
	struct probe p = {pid, frames, n > RASP_STACK_MAX_FRAMES ? RASP_STACK_MAX_FRAMES : n};
	uint64_t h = rasp_hash_mix64((uint64_t)pid ^ p.n);
	size_t i, slot;

	if (p.n == 0)
		return 0;
	for (i = 0; i < p.n; i++)
		h = rasp_hash_mix64(h ^ frames[i]);
	if (rasp_index_reserve(&s->index, s->n, hash_of, s))
		return -ENOMEM;
	i = rasp_index_find(&s->index, h, eq, s, &p, &slot);
	if (i != SIZE_MAX)
		return (int64_t)i + 1;
	if (rasp_array_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v)))
		return -ENOMEM;
	while (s->capframes - s->nframes < p.n) {
		size_t cap = s->capframes ? 2 * s->capframes : 1024;
		uint64_t *f = realloc(s->frames, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		s->frames = f;
		s->capframes = cap;
	}
	memcpy(s->frames + s->nframes, frames, p.n * sizeof(*frames));
	s->v[s->n] = (struct rasp_stack){pid, h, s->nframes, (uint32_t)p.n};
	s->nframes += p.n;
	rasp_index_put(&s->index, slot, s->n);
	return (int64_t)++s->n;
}

const struct rasp_stack *rasp_stacks_get(const struct rasp_stacks *s, uint32_t id)
{
	return id >= 1 && id <= s->n ? &s->v[id - 1] : NULL;
}

void rasp_stacks_free(struct rasp_stacks *s)
{
	free(s->v);
	free(s->frames);
	rasp_index_free(&s->index);
	free(s->pending);
	rasp_index_free(&s->pending_index);
	memset(s, 0, sizeof(*s));
}

static uint64_t thread_hash(int64_t pid, int64_t tid)
{
	return rasp_hash_mix64(rasp_hash_mix64((uint64_t)pid) ^ (uint64_t)tid);
}

static uint64_t pending_hash_of(const void *ctx, size_t i)
{
	const struct rasp_pending_stack *p = &((const struct rasp_stacks *)ctx)->pending[i];

	return thread_hash(p->pid, p->tid);
}

static int pending_eq(const void *ctx, size_t i, const void *key)
{
	const struct rasp_pending_stack *p = &((const struct rasp_stacks *)ctx)->pending[i];
	const int64_t *k = key;

	return p->pid == k[0] && p->tid == k[1];
}

/* The thread's entry, made when new (create); NULL when absent or without memory. */
static struct rasp_pending_stack *pending_of(struct rasp_stacks *s, int64_t pid, int64_t tid,
					     bool create)
{
	int64_t key[2] = {pid, tid};
	size_t slot, i;

	if (rasp_index_reserve(&s->pending_index, s->npending, pending_hash_of, s))
		return NULL;
	i = rasp_index_find(&s->pending_index, thread_hash(pid, tid), pending_eq, s, key, &slot);
	if (i != SIZE_MAX)
		return &s->pending[i];
	if (!create ||
	    rasp_array_grow((void **)&s->pending, &s->cappending, s->npending, sizeof(*s->pending)))
		return NULL;
	s->pending[s->npending] = (struct rasp_pending_stack){.pid = pid, .tid = tid};
	rasp_index_put(&s->pending_index, slot, s->npending);
	return &s->pending[s->npending++];
}

int rasp_stacks_pend(struct rasp_stacks *s, int64_t pid, int64_t tid, const uint64_t *frames,
		     size_t n)
{
	struct rasp_pending_stack *p = pending_of(s, pid, tid, true);

	if (!p)
		return -ENOMEM;
	p->n = (uint32_t)(n < RASP_STACK_MAX_FRAMES ? n : RASP_STACK_MAX_FRAMES);
	memcpy(p->frames, frames, p->n * sizeof(*frames));
	return 0;
}

size_t rasp_stacks_take(struct rasp_stacks *s, int64_t pid, int64_t tid, const uint64_t **frames)
{
	struct rasp_pending_stack *p = s->npending ? pending_of(s, pid, tid, false) : NULL;
	size_t n;

	if (!p)
		return 0;
	n = p->n;
	p->n = 0;
	*frames = p->frames;
	return n;
}
