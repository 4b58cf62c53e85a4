/* Rows (rows.h): cells sorted by group, each run of cells summed into a row by rasp_est_sum
 * (unbiased per cell first, then added), all cells summed into the total; the names the rows
 * show (types as C# writes them, sites and stacks by where.h). */
#include "rows.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stacks/clr-names.h"
#include "where.h"

static int cmp_id(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

/* The where-key of a cell: its stack's group (grouped by stack), its stack's site (by site),
 * else 0. qsort has no context argument in C11: the keys are a file-scope pointer. */
static const struct rasp_where *sort_where;

static uint32_t where(const struct rasp_where *wh, const struct rasp_tally_cell *c)
{
	if (wh->group_of)
		return wh->group_of[c->stack];
	if (wh->site_of)
		return wh->site_of[c->stack];
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
	if (where(sort_where, a) != where(sort_where, b))
		return where(sort_where, a) < where(sort_where, b) ? -1 : 1;
	return a->est.p < b->est.p ? -1 : a->est.p > b->est.p;
}

static int same_group(const struct rasp_where *wh, const struct rasp_tally_cell *a,
		      const struct rasp_tally_cell *b)
{
	return a->type == b->type && a->kind == b->kind && a->process == b->process &&
	       a->thread == b->thread && where(wh, a) == where(wh, b);
}

/* Whether the report names types as C# writes them: not asked for the runtime's names, and
 * the trace is .NET's: a process of an EventPipe file from .NET (the format fixes its mean and
 * it never announced one, as rasp's runtime does in its own files), or .NET's allocation ticks.
 * An LTTng trace does not say whether its AllocationSampled events came from CoreCLR or from
 * rasp, so its names stay as they are. */
static bool clr_names(const struct rasp_tally *t, bool raw)
{
	if (raw)
		return false;
	if (t->ticks_total)
		return true;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].samples && t->procs[i].declared && !t->procs[i].configured)
			return true;
	return false;
}

/* Sorting type indexes by their shown name, to find those that read the same. */
static const char **sort_names;

static int cmp_name(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	int c = strcmp(sort_names[a], sort_names[b]);

	return c ? c : (a > b) - (a < b);
}

/* name converted with ns, in fresh memory; NULL without memory. */
static char *converted(const char *name, enum rasp_clr_ns ns)
{
	size_t n = rasp_clr_type_name(name, ns, NULL, 0);
	char *s = malloc(n + 1);

	if (s)
		rasp_clr_type_name(name, ns, s, n + 1);
	return s;
}

/* Each type's shown name: C#'s without namespaces; where two types would read the same, with
 * every namespace; where even those read the same (names that differ only in what C# leaves
 * out, an assembly), the runtime's. The strings of converted names are the rows'. */
static int type_names(const struct rasp_tally *t, struct rasp_rows *out)
{
	size_t n = t->ntypes, *order;
	const char **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	out->type_names = v;
	for (size_t i = 0; i < n; i++)
		v[i] = rasp_tally_type_name(t, i);
	if (!out->clr_names || !n)
		return 0;
	order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (enum rasp_clr_ns ns = RASP_CLR_NS_NONE;; ns = RASP_CLR_NS_ALL) {
		for (size_t i = 0; i < n; i++) {
			const char *raw = rasp_tally_type_name(t, i);
			char *c;

			/* The first round converts every name, the next ones those that clashed
			 * (marked NULL). */
			if (ns == RASP_CLR_NS_NONE || !v[i]) {
				c = converted(raw, ns);
				if (!c) {
					free(order);
					return -ENOMEM;
				}
				if (ns == RASP_CLR_NS_NONE && strcmp(c, raw) == 0) {
					free(c);
					v[i] = raw;
					continue;
				}
				if (rasp_array_grow((void **)&out->owned, &out->capowned,
						    out->nowned, sizeof(*out->owned))) {
					free(c);
					free(order);
					return -ENOMEM;
				}
				out->owned[out->nowned++] = c;
				v[i] = c;
			}
		}
		for (size_t i = 0; i < n; i++)
			order[i] = i;
		sort_names = v;
		qsort(order, n, sizeof(*order), cmp_name);
		sort_names = NULL;
		{
			bool clash = false;

			for (size_t i = 0; i + 1 < n; i++)
				if (strcmp(v[order[i]], v[order[i + 1]]) == 0) {
					clash = true;
					break;
				}
			if (!clash)
				break;
			/* Every name of a run of equal ones is redone (NULL); the last round falls
			 * back to the runtime's names. */
			for (size_t i = 0; i < n;) {
				size_t j = i + 1;

				while (j < n && strcmp(v[order[i]], v[order[j]]) == 0)
					j++;
				for (size_t k = i; j - i > 1 && k < j; k++)
					v[order[k]] = ns == RASP_CLR_NS_ALL
							  ? rasp_tally_type_name(t, order[k])
							  : NULL;
				i = j;
			}
			if (ns == RASP_CLR_NS_ALL)
				break;
		}
	}
	free(order);
	return 0;
}

/* How many samples have a stack, and how many of those an allocating frame in no recorded
 * object (for the report's note). One lookup per cell; the resolver caches by address. */
static int count_unplaced(struct rasp_tally *t, struct rasp_rows *out)
{
	for (size_t i = 0; i < t->ncells; i++) {
		const struct rasp_stack *s = rasp_stacks_get(&t->stacks, t->cells[i].stack);
		struct rasp_sym_frame f;
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

/* Sorting rows needs the type and site names: qsort has no context argument in C11. */
static const struct rasp_tally *sort_tally;
static const struct rasp_rows *sort_rows;

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
	if (a->process != b->process)
		return cmp_id(a->process, b->process);
	if (a->site != b->site)
		return strcmp(sort_rows->sites[a->site - 1], sort_rows->sites[b->site - 1]);
	return (a->stack > b->stack) - (a->stack < b->stack);
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
	struct rasp_rows_options o = {.confidence = confidence};

	return rasp_rows_build_with(t, &o, out);
}

int rasp_rows_build_with(struct rasp_tally *t, const struct rasp_rows_options *o,
			 struct rasp_rows *out)
{
	double confidence = o->confidence;
	struct rasp_est_cell *tmp = NULL;
	struct rasp_row *rows = NULL;
	struct rasp_est_memo *memo = NULL;
	struct rasp_where wh = {0};
	size_t nrows = 0;
	int ret = 0;

	*out = (struct rasp_rows){.group_by = t->group_by,
				  .confidence = confidence,
				  .site_rule = o->site,
				  .raw_names = o->raw_names,
				  .clr_names = clr_names(t, o->raw_names)};
	if (!rasp_est_confidence_valid(confidence))
		return -EINVAL;
	if ((ret = type_names(t, out)) != 0)
		goto out;
	if (t->group_by & RASP_GROUP_WHERE) {
		out->sym = rasp_symbols_create(&t->modules);
		if (!out->sym) {
			ret = -ENOMEM;
			goto out;
		}
		rasp_symbols_raw_names(out->sym, o->raw_names);
		if ((ret = rasp__where_build(t, out->sym, &o->site, t->group_by, &wh)) != 0)
			goto out;
		out->sites = wh.sites;
		out->nsites = wh.nsites;
	}
	if (t->ncells) {
		tmp = malloc(t->ncells * sizeof(*tmp));
		rows = malloc(t->ncells * sizeof(*rows));
		memo = rasp_est_memo_create();
		if (!tmp || !rows || !memo) {
			ret = -ENOMEM;
			goto out;
		}
		sort_where = &wh;
		qsort(t->cells, t->ncells, sizeof(*t->cells), cmp_cell);
		sort_where = NULL;
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
		row->site = wh.site_of ? wh.site_of[t->cells[i].stack] : 0;
		row->type_name = row->type ? out->type_names[row->type - 1] : NULL;
		row->first = i;
		do {
			tmp[n++] = t->cells[i++].est;
		} while (i < t->ncells && same_group(&wh, &t->cells[i - 1], &t->cells[i]));
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
		sort_rows = out;
		qsort(rows, nrows, sizeof(*rows), cmp_row);
		sort_tally = NULL;
		sort_rows = NULL;
	}
	ret = tick_rows(t, out);
out:
	free(tmp);
	rasp__where_free(&wh);
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
	for (size_t i = 0; i < r->nowned; i++)
		free(r->owned[i]);
	free(r->owned);
	r->owned = NULL;
	r->nowned = r->capowned = 0;
	free(r->type_names);
	r->type_names = NULL;
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
		   const struct rasp_row *row, size_t k, struct rasp_sym_frame *out)
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
	if (!row->type)
		return "";
	return row->type_name ? row->type_name : rasp_tally_type_name(t, row->type - 1);
}

const char *rasp_rows_type_name(const struct rasp_rows *r, const struct rasp_tally *t, size_t i)
{
	return r->type_names && i < t->ntypes && r->type_names[i] ? r->type_names[i]
								  : rasp_tally_type_name(t, i);
}

const char *rasp_kind_name(uint64_t kind, char *buf, size_t len)
{
	static const char *const names[] = {"Small", "Large", "Pinned"};

	if (kind < 3)
		return names[kind];
	snprintf(buf, len, "%" PRIu64, kind);
	return buf;
}
