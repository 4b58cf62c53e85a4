/* Rows (rows.h): cells sorted by group, each run of cells summed into a row by rasp_est_sum
 * (unbiased per cell first, then added), all cells summed into the total; the names the rows
 * show (types as C# writes them, sites and stacks by where.h). */
#include "rows.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "type-names.h"
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

/* An in-use estimate without a live sample: its bytes interval still allows what could hide
 * below the sampling rate, so its objects interval must too, at the smallest object size
 * (estimate.c gives none: an allocated row always has a sample). */
static void no_live_sample(struct rasp_est_total *e)
{
	if (!e->samples && e->bytes_high > 0 &&
	    e->objects_high < e->bytes_high / RASP_EST_SIZE_FLOOR)
		e->objects_high = floor(e->bytes_high / RASP_EST_SIZE_FLOOR);
}

/* In-use figures of cells[first .. first + n): their samples live at the moment. */
static void live_cells(const struct rasp_tally *t, size_t first, size_t n,
		       struct rasp_est_cell *tmp)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = t->live->cells[t->cells[first + i].live].at;
}

/* Shares of estimated bytes: freed by the moment, and lifetimes. */
static void life_of(const struct rasp_tally *t, size_t first, size_t n, double inuse,
		    struct rasp_row_life *out)
{
	double alloc = 0, by_moment = 0, s = 0, l = 0, live = 0;

	for (size_t i = first; i < first + n; i++) {
		const struct rasp_live_cell *c = &t->live->cells[t->cells[i].live];

		alloc += c->alloc;
		by_moment += rasp_live_alloc_by_moment(t->live, c);
		s += c->freed_short;
		l += c->freed_long;
		live += c->now.bytes;
	}
	*out = (struct rasp_row_life){0};
	if (by_moment > 0)
		out->freed = fmin(fmax(1.0 - inuse / by_moment, 0.0), 1.0);
	if (alloc > 0) {
		out->within_short = fmin(s / alloc, 1.0);
		out->within_long = fmin(l / alloc, 1.0);
		out->never = fmin(live / alloc, 1.0);
	}
}

int rasp_rows_build(struct rasp_tally *t, double confidence, struct rasp_rows *out)
{
	struct rasp_rows_options o = {.confidence = confidence};

	return rasp_rows_build_with(t, &o, out);
}

int rasp_rows_build_of(struct rasp_tally *t, double confidence, bool inuse, struct rasp_rows *out)
{
	struct rasp_rows_options o = {.confidence = confidence, .inuse = inuse};

	return rasp_rows_build_with(t, &o, out);
}

int rasp_rows_build_with(struct rasp_tally *t, const struct rasp_rows_options *o,
			 struct rasp_rows *out)
{
	double confidence = o->confidence;
	bool inuse = o->inuse;
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
				  .clr_names = rasp__rows_clr_names(t, o->raw_names),
				  .inuse = inuse};
	if (!rasp_est_confidence_valid(confidence))
		return -EINVAL;
	ret = rasp_live_finish(t->live, t->timed, t->last_ns);
	if (ret)
		return ret;
	out->live_known = rasp_live_available(t->live) && !t->live->overflow;
	out->moment_ns = rasp_live_moment_ns(t->live);
	if ((ret = rasp__rows_type_names(t, out)) != 0)
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
		ret = rasp_est_sum_memo(tmp, n, confidence, memo, &row->alloc);
		if (ret)
			goto out;
		if (out->live_known) {
			live_cells(t, row->first, n, tmp);
			ret = rasp_est_sum_memo(tmp, n, confidence, memo, &row->inuse);
			if (ret)
				goto out;
			no_live_sample(&row->inuse);
			life_of(t, row->first, n, row->inuse.bytes, &row->life);
		}
		row->est = inuse ? row->inuse : row->alloc;
	}
	/* The total: every cell, whatever its group; rasp_est_sum merges cells of one mean into
	 * one stream, so the window adjustment counts once per mean. */
	for (size_t i = 0; i < t->ncells; i++)
		tmp[i] = t->cells[i].est;
	ret = rasp_est_sum(tmp, t->ncells, confidence, &out->alloc_total);
	if (ret)
		goto out;
	if (out->live_known) {
		live_cells(t, 0, t->ncells, tmp);
		ret = rasp_est_sum(tmp, t->ncells, confidence, &out->inuse_total);
		if (ret)
			goto out;
		no_live_sample(&out->inuse_total);
		life_of(t, 0, t->ncells, out->inuse_total.bytes, &out->life);
	}
	out->total = inuse ? out->inuse_total : out->alloc_total;
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
	for (size_t k = 0; k < n; k++) {
		if (r->inuse)
			live_cells(t, r->v[rows[k]].first, r->v[rows[k]].ncells, tmp + m);
		else
			for (size_t c = 0; c < r->v[rows[k]].ncells; c++)
				tmp[m + c] = t->cells[r->v[rows[k]].first + c].est;
		m += r->v[rows[k]].ncells;
	}
	ret = rasp_est_sum(tmp, m, r->confidence, out);
	free(tmp);
	return ret;
}

/* The entry of live cell `cell` among a point's entries (ascending by cell), NULL if none. */
static const struct rasp_live_entry *entry_of(const struct rasp_live_entry *v, size_t n,
					      uint32_t cell)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].cell < cell)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].cell == cell ? &v[lo] : NULL;
}

int rasp_rows_timeline(const struct rasp_rows *r, const struct rasp_tally *t, size_t row, size_t k,
		       int64_t *ns, struct rasp_est_total *out)
{
	if (row == SIZE_MAX) {
		/* Every row: the total. */
		size_t *rows = malloc((r->n + 1) * sizeof(*rows));
		int ret;

		if (!rows)
			return -ENOMEM;
		for (size_t i = 0; i < r->n; i++)
			rows[i] = i;
		ret = rasp_rows_timeline_set(r, t, rows, r->n, k, ns, out);
		free(rows);
		return ret;
	}
	return rasp_rows_timeline_set(r, t, &row, 1, k, ns, out);
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

int rasp_rows_timeline_set(const struct rasp_rows *r, const struct rasp_tally *t,
			   const size_t *rows, size_t nrows, size_t k, int64_t *ns,
			   struct rasp_est_total *out)
{
	const struct rasp_live_entry *v;
	size_t n, m = 0, ncells = 0;
	struct rasp_est_cell *tmp;
	int ret;

	*ns = rasp_live_point(t->live, k, &v, &n);
	for (size_t j = 0; j < nrows; j++)
		ncells += r->v[rows[j]].ncells;
	tmp = malloc((ncells + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	for (size_t j = 0; j < nrows; j++)
		for (size_t i = r->v[rows[j]].first; i < r->v[rows[j]].first + r->v[rows[j]].ncells;
		     i++) {
			const struct rasp_live_entry *e = entry_of(v, n, t->cells[i].live);
			double p = t->live->cells[t->cells[i].live].p;

			/* A cell with nothing live then is still part of the sum: what could
			 * hide below its sampling rate. */
			if (e)
				rasp_live_stats_cell(&e->s, p, &tmp[m++]);
			else if ((ret = rasp_est_cell_init(&tmp[m++], p)) != 0)
				goto out;
		}
	ret = rasp_est_sum(tmp, m, r->confidence, out);
	no_live_sample(out);
out:
	free(tmp);
	return ret;
}
