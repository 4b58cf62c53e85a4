/* Where-keys (where.h): site names interned as strings, stacks as sequences of interned frame
 * names. */
#include "where.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* Distinct strings, each with its index. */
struct strtab {
	const char **v;
	size_t n, cap;
	struct rasp_index index;
};

static uint64_t str_hash_of(const void *ctx, size_t i)
{
	return rasp_hash_string(((const struct strtab *)ctx)->v[i]);
}

static int str_eq(const void *ctx, size_t i, const void *key)
{
	return strcmp(((const struct strtab *)ctx)->v[i], key) == 0;
}

/* The index of s in the table, added when new; -ENOMEM as a negative int64. */
static int64_t str_intern(struct strtab *st, const char *s)
{
	size_t slot, i;

	if (rasp_index_reserve(&st->index, st->n, str_hash_of, st))
		return -ENOMEM;
	i = rasp_index_find(&st->index, rasp_hash_string(s), str_eq, st, s, &slot);
	if (i != SIZE_MAX)
		return (int64_t)i;
	if (rasp_array_grow((void **)&st->v, &st->cap, st->n, sizeof(*st->v)))
		return -ENOMEM;
	st->v[st->n] = s;
	rasp_index_put(&st->index, slot, st->n);
	return (int64_t)st->n++;
}

/* Distinct sequences of frame-name indexes: the stacks as a report names them. */
struct seqtab {
	uint32_t *ids; /* every sequence's ids, one after the other */
	size_t nids, capids;
	struct seq {
		size_t first;
		uint32_t n;
		uint64_t hash;
	} * v;
	size_t n, cap;
	struct rasp_index index;
};

struct seq_key {
	const uint32_t *ids;
	uint32_t n;
};

static uint64_t seq_hash(const uint32_t *ids, uint32_t n)
{
	uint64_t h = rasp_hash_mix64(n);

	for (uint32_t i = 0; i < n; i++)
		h = rasp_hash_mix64(h ^ ids[i]);
	return h;
}

static uint64_t seq_hash_of(const void *ctx, size_t i)
{
	return ((const struct seqtab *)ctx)->v[i].hash;
}

static int seq_eq(const void *ctx, size_t i, const void *key)
{
	const struct seqtab *st = ctx;
	const struct seq_key *k = key;

	/* No memcmp of nothing: the table's ids may still be NULL. */
	return st->v[i].n == k->n &&
	       (!k->n || memcmp(st->ids + st->v[i].first, k->ids, k->n * sizeof(*k->ids)) == 0);
}

static int64_t seq_intern(struct seqtab *st, const uint32_t *ids, uint32_t n)
{
	struct seq_key key = {ids, n};
	uint64_t h = seq_hash(ids, n);
	size_t slot, i;

	if (rasp_index_reserve(&st->index, st->n, seq_hash_of, st))
		return -ENOMEM;
	i = rasp_index_find(&st->index, h, seq_eq, st, &key, &slot);
	if (i != SIZE_MAX)
		return (int64_t)i;
	if (rasp_array_grow((void **)&st->v, &st->cap, st->n, sizeof(*st->v)))
		return -ENOMEM;
	while (st->nids + n > st->capids)
		if (rasp_array_grow((void **)&st->ids, &st->capids, st->capids, sizeof(*st->ids)))
			return -ENOMEM;
	if (n)
		memcpy(st->ids + st->nids, ids, n * sizeof(*ids));
	st->v[st->n] = (struct seq){st->nids, n, h};
	st->nids += n;
	rasp_index_put(&st->index, slot, st->n);
	return (int64_t)st->n++;
}

int rasp__where_build(struct rasp_tally *t, struct rasp_symbols *sym,
		      const struct rasp_site_rule *rule, unsigned group_by, struct rasp_where *w)
{
	struct strtab sites = {0}, frames = {0};
	struct seqtab seqs = {0};
	uint32_t ids[RASP_STACK_MAX_FRAMES];
	int ret = 0;

	*w = (struct rasp_where){0};
	if (group_by & RASP_GROUP_SITE)
		w->site_of = calloc(t->stacks.n + 1, sizeof(*w->site_of));
	if (group_by & RASP_GROUP_STACK)
		w->group_of = calloc(t->stacks.n + 1, sizeof(*w->group_of));
	if (((group_by & RASP_GROUP_SITE) && !w->site_of) ||
	    ((group_by & RASP_GROUP_STACK) && !w->group_of))
		ret = -ENOMEM;
	for (size_t id = 0; id <= t->stacks.n && !ret; id++) {
		const struct rasp_stack *s = rasp_stacks_get(&t->stacks, (uint32_t)id);
		const uint64_t *fr = s ? rasp_stacks_frames(&t->stacks, s) : NULL;
		int64_t k;

		if (w->site_of) {
			const char *name = "(no stack)";
			struct rasp_sym_frame f;
			size_t at;

			if (s && s->n) {
				ret = rasp_site_of(rule, sym, s->pid, fr, s->n, &f, &at);
				name = f.name;
			}
			if (ret || (k = str_intern(&sites, name)) < 0) {
				ret = ret ? ret : -ENOMEM;
				break;
			}
			w->site_of[id] = (uint32_t)k + 1;
		}
		if (w->group_of) {
			uint32_t n = s ? s->n : 0;

			for (uint32_t i = 0; i < n && !ret; i++) {
				struct rasp_sym_frame f;

				ret = rasp_symbols_resolve(sym, s->pid, fr[i], &f);
				if (!ret && (k = str_intern(&frames, f.name)) < 0)
					ret = -ENOMEM;
				if (!ret)
					ids[i] = (uint32_t)k;
			}
			if (ret || (k = seq_intern(&seqs, ids, n)) < 0) {
				ret = ret ? ret : -ENOMEM;
				break;
			}
			w->group_of[id] = (uint32_t)k + 1;
		}
	}
	rasp_index_free(&sites.index);
	rasp_index_free(&frames.index);
	rasp_index_free(&seqs.index);
	free(frames.v);
	free(seqs.ids);
	free(seqs.v);
	w->sites = sites.v;
	w->nsites = sites.n;
	w->ngroups = seqs.n;
	if (ret) {
		free(w->sites);
		rasp__where_free(w);
	}
	return ret;
}

void rasp__where_free(struct rasp_where *w)
{
	free(w->site_of);
	free(w->group_of);
	*w = (struct rasp_where){0};
}
