/* Rows (rows.h): cells sorted by group, each run of cells summed into a row by rasp_est_sum
 * (unbiased per cell first, then added), all cells summed into the total. */
#include "rows.h"

#include "stacks/allocator.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_id(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

/* The where-key of a cell: its stack (grouped by stack), its stack's site (by site), else 0.
 * qsort has no context argument in C11: the site table is a file-scope pointer. */
static const uint32_t *sort_site_of;
static unsigned sort_by;

static uint32_t where(const struct rasp_tally_cell *c)
{
	if (sort_by & RASP_GROUP_STACK)
		return c->stack;
	if (sort_by & RASP_GROUP_SITE)
		return sort_site_of[c->stack];
	return 0;
}

static int cmp_cell(const void *pa, const void *pb)
{
	const struct rasp_tally_cell *a = pa, *b = pb;

	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->process != b->process)
		return cmp_id(a->process, b->process);
	if (a->thread != b->thread)
		return cmp_id(a->thread, b->thread);
	if (where(a) != where(b))
		return where(a) < where(b) ? -1 : 1;
	return a->est.p < b->est.p ? -1 : a->est.p > b->est.p;
}

static int same_group(const struct rasp_tally_cell *a, const struct rasp_tally_cell *b)
{
	return a->type == b->type && a->kind == b->kind && a->process == b->process &&
	       a->thread == b->thread && where(a) == where(b);
}

struct site_table {
	const char **names;
	size_t n, cap;
	struct rasp_index index;
};

static uint64_t site_hash_of(const void *ctx, size_t i)
{
	return rasp_hash_string(((const struct site_table *)ctx)->names[i]);
}

static int site_eq(const void *ctx, size_t i, const void *key)
{
	return strcmp(((const struct site_table *)ctx)->names[i], key) == 0;
}

/* Each stack's site (its first frame outside the allocator, stacks/allocator.c), as an index + 1
 * into the table of distinct site names; stack 0 (no stack) gets its own site. */
static int sites_of(struct rasp_tally *t, struct rasp_rows *out, uint32_t **site_of)
{
	struct site_table st = {0};
	uint32_t *map = calloc(t->stacks.n + 1, sizeof(*map));
	int ret = 0;

	if (!map)
		return -ENOMEM;
	for (size_t id = 0; id <= t->stacks.n && !ret; id++) {
		const struct rasp_stack *s = rasp_stacks_get(&t->stacks, (uint32_t)id);
		const char *name = "(no stack)";
		struct rasp_frame f;
		size_t slot, i;

		if (s) {
			ret = rasp_stack_site(out->sym, &t->stacks, s, &f);
			name = f.name;
		}
		if (ret || (ret = rasp_index_reserve(&st.index, st.n, site_hash_of, &st)))
			break;
		i = rasp_index_find(&st.index, rasp_hash_string(name), site_eq, &st, name, &slot);
		if (i == SIZE_MAX) {
			if ((ret = rasp_array_grow((void **)&st.names, &st.cap, st.n,
						   sizeof(*st.names))) != 0)
				break;
			st.names[st.n] = name;
			rasp_index_put(&st.index, slot, st.n);
			i = st.n++;
		}
		map[id] = (uint32_t)i + 1;
	}
	rasp_index_free(&st.index);
	if (ret) {
		free(map);
		free(st.names);
		return ret;
	}
	out->sites = st.names;
	out->nsites = st.n;
	*site_of = map;
	return 0;
}

/* How many samples have a stack, and how many of those an allocating frame in no recorded
 * object (for the report's note). One lookup per cell; the resolver caches by address. */
static int count_unplaced(struct rasp_tally *t, struct rasp_rows *out)
{
	for (size_t i = 0; i < t->ncells; i++) {
		const struct rasp_stack *s = rasp_stacks_get(&t->stacks, t->cells[i].stack);
		struct rasp_frame f;
		int ret;

		if (!s || !s->n)
			continue;
		ret = rasp_symbols_resolve(out->sym, s->pid, rasp_stacks_frames(&t->stacks, s)[0],
					   &f);
		if (ret)
			return ret;
		out->stacked_samples += t->cells[i].est.samples;
		if (!f.module)
			out->unplaced_samples += t->cells[i].est.samples;
	}
	return 0;
}

/* Sorting rows needs the type names: qsort has no context argument in C11. */
static const struct rasp_tally *sort_tally;

/* Largest first; equal bytes in key order, so reports are reproducible. */
static int cmp_row(const void *pa, const void *pb)
{
	const struct rasp_row *a = pa, *b = pb;
	int c;

	if (a->est.bytes != b->est.bytes)
		return a->est.bytes > b->est.bytes ? -1 : 1;
	if (a->type != b->type && a->type && b->type &&
	    (c = strcmp(rasp_tally_type_name(sort_tally, a->type - 1),
			rasp_tally_type_name(sort_tally, b->type - 1))) != 0)
		return c;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->thread != b->thread)
		return cmp_id(a->thread, b->thread);
	return cmp_id(a->process, b->process);
}

static int cmp_tick(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	const struct rasp_tally_tick *ta = &sort_tally->ticks[a], *tb = &sort_tally->ticks[b];

	if (ta->amount != tb->amount)
		return ta->amount > tb->amount ? -1 : 1;
	return strcmp(rasp_tally_type_name(sort_tally, a), rasp_tally_type_name(sort_tally, b));
}

/* Types with GCAllocationTick events, largest amount first. */
static int tick_rows(const struct rasp_tally *t, struct rasp_rows *out)
{
	if (!t->ticks_total)
		return 0;
	out->ticks = malloc(t->ntypes * sizeof(*out->ticks));
	if (!out->ticks)
		return -ENOMEM;
	for (size_t i = 0; i < t->ntypes && i < t->capticks; i++)
		if (t->ticks[i].ticks) {
			out->ticks[out->nticks++] = i;
			out->tick_count += t->ticks[i].ticks;
			out->tick_amount += t->ticks[i].amount;
		}
	sort_tally = t;
	qsort(out->ticks, out->nticks, sizeof(*out->ticks), cmp_tick);
	sort_tally = NULL;
	return 0;
}

int rasp_rows_build(struct rasp_tally *t, double confidence, struct rasp_rows *out)
{
	struct rasp_est_cell *tmp = NULL;
	struct rasp_row *rows = NULL;
	struct rasp_est_memo *memo = NULL;
	uint32_t *site_of = NULL;
	size_t nrows = 0;
	int ret = 0;

	*out = (struct rasp_rows){.group_by = t->group_by, .confidence = confidence};
	if (!rasp_est_confidence_valid(confidence))
		return -EINVAL;
	if (t->group_by & RASP_GROUP_WHERE) {
		out->sym = rasp_symbols_create(&t->modules);
		if (!out->sym)
			return -ENOMEM;
		if ((t->group_by & RASP_GROUP_SITE) && (ret = sites_of(t, out, &site_of)) != 0)
			goto out;
	}
	if (t->ncells) {
		tmp = malloc(t->ncells * sizeof(*tmp));
		rows = malloc(t->ncells * sizeof(*rows));
		memo = rasp_est_memo_create();
		if (!tmp || !rows || !memo) {
			ret = -ENOMEM;
			goto out;
		}
		sort_site_of = site_of;
		sort_by = t->group_by;
		qsort(t->cells, t->ncells, sizeof(*t->cells), cmp_cell);
		t->cells_sorted = true;
	}
	if (out->sym && (ret = count_unplaced(t, out)) != 0)
		goto out;
	for (size_t i = 0; i < t->ncells;) {
		struct rasp_row *row = &rows[nrows++];
		size_t n = 0;

		row->type = t->cells[i].type;
		row->kind = t->cells[i].kind;
		row->process = t->cells[i].process;
		row->thread = t->cells[i].thread;
		row->stack = t->cells[i].stack;
		row->site = site_of ? site_of[t->cells[i].stack] : 0;
		row->first = i;
		do {
			tmp[n++] = t->cells[i++].est;
		} while (i < t->ncells && same_group(&t->cells[i - 1], &t->cells[i]));
		row->ncells = n;
		ret = rasp_est_sum_memo(tmp, n, confidence, memo, &row->est);
		if (ret)
			goto out;
	}
	/* The total: every cell, whatever its group; rasp_est_sum merges cells of one mean into
	 * one stream, so the window adjustment counts once per mean. */
	for (size_t i = 0; i < t->ncells; i++)
		tmp[i] = t->cells[i].est;
	ret = rasp_est_sum(tmp, t->ncells, confidence, &out->total);
	if (ret)
		goto out;
	out->contradictions = (size_t)out->total.contradicts;
	for (size_t i = 0; i < nrows; i++) {
		rows[i].share = out->total.bytes > 0 ? rows[i].est.bytes / out->total.bytes : 0.0;
		out->contradictions += (size_t)rows[i].est.contradicts;
	}
	if (nrows) {
		sort_tally = t;
		qsort(rows, nrows, sizeof(*rows), cmp_row);
		sort_tally = NULL;
	}
	ret = tick_rows(t, out);
out:
	free(tmp);
	free(site_of);
	sort_site_of = NULL;
	rasp_est_memo_destroy(memo);
	if (ret) {
		free(rows);
		rasp_rows_free(out);
		return ret;
	}
	out->v = rows;
	out->n = nrows;
	return 0;
}

void rasp_rows_free(struct rasp_rows *r)
{
	free(r->ticks);
	r->ticks = NULL;
	free(r->v);
	r->v = NULL;
	r->n = 0;
	free(r->sites);
	r->sites = NULL;
	r->nsites = 0;
	rasp_symbols_destroy(r->sym);
	r->sym = NULL;
}

int rasp_rows_sum(const struct rasp_rows *r, const struct rasp_tally *t, const size_t *rows,
		  size_t n, struct rasp_est_total *out)
{
	struct rasp_est_cell *tmp;
	size_t m = 0;
	int ret;

	for (size_t k = 0; k < n; k++)
		m += r->v[rows[k]].ncells;
	tmp = malloc((m ? m : 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	m = 0;
	for (size_t k = 0; k < n; k++)
		for (size_t c = 0; c < r->v[rows[k]].ncells; c++)
			tmp[m++] = t->cells[r->v[rows[k]].first + c].est;
	ret = rasp_est_sum(tmp, m, r->confidence, out);
	free(tmp);
	return ret;
}

size_t rasp_row_depth(const struct rasp_tally *t, const struct rasp_row *row)
{
	const struct rasp_stack *s = rasp_stacks_get(&t->stacks, row->stack);

	return s ? s->n : 0;
}

int rasp_row_frame(const struct rasp_rows *r, const struct rasp_tally *t,
		   const struct rasp_row *row, size_t k, struct rasp_frame *out)
{
	const struct rasp_stack *s = rasp_stacks_get(&t->stacks, row->stack);

	if (!s || k >= s->n || !r->sym)
		return -EINVAL;
	return rasp_symbols_resolve(r->sym, s->pid, rasp_stacks_frames(&t->stacks, s)[k], out);
}

const char *rasp_row_site(const struct rasp_rows *r, const struct rasp_row *row)
{
	return row->site && row->site <= r->nsites ? r->sites[row->site - 1] : "";
}

const char *rasp_row_type(const struct rasp_tally *t, const struct rasp_row *row)
{
	return row->type ? rasp_tally_type_name(t, row->type - 1) : "";
}

const char *rasp_kind_name(uint64_t kind, char *buf, size_t len)
{
	static const char *const names[] = {"Small", "Large", "Pinned"};

	if (kind < 3)
		return names[kind];
	snprintf(buf, len, "%" PRIu64, kind);
	return buf;
}
