/* Rows (rows.h): cells sorted by group, each run of cells summed into a row by rasp_est_sum
 * (unbiased per cell first, then added), all cells summed into the total. */
#include "rows.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_id(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
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
	return a->est.p < b->est.p ? -1 : a->est.p > b->est.p;
}

static int same_group(const struct rasp_tally_cell *a, const struct rasp_tally_cell *b)
{
	return a->type == b->type && a->kind == b->kind && a->process == b->process &&
	       a->thread == b->thread;
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
	size_t nrows = 0;
	int ret = 0;

	*out = (struct rasp_rows){.group_by = t->group_by, .confidence = confidence};
	if (!rasp_est_confidence_valid(confidence))
		return -EINVAL;
	if (t->ncells) {
		tmp = malloc(t->ncells * sizeof(*tmp));
		rows = malloc(t->ncells * sizeof(*rows));
		memo = rasp_est_memo_create();
		if (!tmp || !rows || !memo) {
			ret = -ENOMEM;
			goto out;
		}
		qsort(t->cells, t->ncells, sizeof(*t->cells), cmp_cell);
		t->cells_sorted = true;
	}
	for (size_t i = 0; i < t->ncells;) {
		struct rasp_row *row = &rows[nrows++];
		size_t n = 0;

		row->type = t->cells[i].type;
		row->kind = t->cells[i].kind;
		row->process = t->cells[i].process;
		row->thread = t->cells[i].thread;
		do {
			tmp[n++] = t->cells[i++].est;
		} while (i < t->ncells && same_group(&t->cells[i - 1], &t->cells[i]));
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
	rasp_est_memo_destroy(memo);
	if (ret) {
		free(rows);
		free(out->ticks);
		out->ticks = NULL;
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
