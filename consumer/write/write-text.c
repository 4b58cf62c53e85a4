/* The text writer: a short header (inputs, duration, processes and their sampling means,
 * lost data, confidence), the notes, then a table in human units (bytes in KiB/MiB/GiB,
 * objects in k/M/G) with a share of the total and an interval on bytes and on objects, the
 * TOTAL line and one-line legends for wide and doubtful intervals. Exact numbers are csv's
 * and json's.
 * Widths are measured first, so no cell is ever cut. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/event-meta.h"
#include "sanitize.h"
#include "write-diff.h"
#include "writer.h"

enum {
	C_TYPE,
	C_KIND,
	C_PROCESS,
	C_THREAD,
	C_WHERE,
	C_BYTES,
	C_BYTES_CI,
	C_SHARE,
	C_OBJ,
	C_OBJ_CI,
	C_SAMPLES,
	/* In use (--inuse): the share of the bytes allocated by the moment freed by then;
	 * --lifetimes: the shares of the bytes allocated freed within 1 ms, 1 s, never. */
	C_FREED,
	C_LIFE_MS,
	C_LIFE_S,
	C_LIFE_NEVER,
	NCOLS
};

/* One formatted line; names point into the tally, numbers live in the buffers. */
struct line {
	const char *cell[NCOLS];
	char buf[NCOLS][112];
	char process[160];
	char where[1024];
};

/* Frames shown of a stack in the table (JSON and CSV have them all). */
#define TEXT_FRAMES 4

/* Display width in columns: code points of the cell's safe text. */
static size_t width_of(const char *s)
{
	return rasp_safe_width(s);
}

/* Every cell as its safe text (sanitize.h): controls, escape sequences and bidirectional
 * overrides from a trace show as \xNN, so one row stays one line and nothing in a name acts
 * on the terminal. */
static void put_cell(FILE *out, const char *s, size_t width, bool right)
{
	size_t w = width_of(s);

	if (right)
		for (size_t i = w; i < width; i++)
			fputc(' ', out);
	rasp_safe_put(out, s);
	if (!right)
		for (size_t i = w; i < width; i++)
			fputc(' ', out);
}

/* "97.5 - 109.8 MiB" when both ends share a unit, else "980 KiB - 1.20 MiB"; in front, "!"
 * when the samples contradict the model (rasp_est_total.contradicts), else "~" when the row
 * has too few samples for a narrow interval. */
static void interval(char *buf, size_t len, double lo, double hi, bool bytes, const char *mark)
{
	char a[48], b[48];
	const char *ua, *ub;

	if (bytes) {
		rasp_format_bytes(lo, a, sizeof(a));
		rasp_format_bytes(hi, b, sizeof(b));
	} else {
		rasp_format_count(lo, a, sizeof(a));
		rasp_format_count(hi, b, sizeof(b));
	}
	/* "1.03 - 4.27 PiB": a shared unit is written once. Bytes only: a byte count always has
	 * a unit ("9 B"), so a bare low bound reads as sharing the high one's; a count below
	 * 1,000 has none, and "9 - 32.5 T" would read as 9 T. */
	ua = strrchr(a, ' ');
	ub = strrchr(b, ' ');
	if (bytes && ua && ub && strcmp(ua, ub) == 0) {
		snprintf(buf, len, "%s%.*s - %s", mark, (int)(ua - a), a, b);
		return;
	}
	snprintf(buf, len, "%s%s - %s", mark, a, b);
}

static void process_text(const struct rasp_tally *t, int64_t pid, char *buf, size_t len)
{
	const struct rasp_tally_process *p = rasp_tally_find_process(t, pid);
	const char *name = p ? rasp_tally_process_name(t, p) : NULL;

	if (pid == RASP_ID_UNKNOWN)
		snprintf(buf, len, "-");
	else if (name)
		snprintf(buf, len, "%" PRId64 " %s", pid, name);
	else
		snprintf(buf, len, "%" PRId64, pid);
}

/* The site, or the innermost frames of the stack ("f < caller < ... (+n)"). */
static void where_text(const struct rasp_report_view *v, const struct rasp_row *row, char *buf,
		       size_t len)
{
	size_t depth = rasp_row_depth(v->tally, row), used = 0;

	if (v->rows->group_by & RASP_GROUP_STACK) {
		buf[0] = '\0';
		for (size_t k = 0; k < depth && k < TEXT_FRAMES && used < len; k++) {
			struct rasp_frame f;

			if (rasp_row_frame(v->rows, v->tally, row, k, &f))
				break;
			used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? " < " : "",
						 f.name);
		}
		if (depth > TEXT_FRAMES && used < len)
			snprintf(buf + used, len - used, " < ... (+%zu)", depth - TEXT_FRAMES);
		if (!depth)
			snprintf(buf, len, "(no stack)");
		return;
	}
	snprintf(buf, len, "%s", rasp_row_site(v->rows, row));
}

/* The in-use and lifetime columns (shares of estimated bytes, live.h), "-" when the input
 * cannot say what died. */
static void life_cells(struct line *l, const struct rasp_rows *rows,
		       const struct rasp_row_life *life)
{
	const double v[] = {life->freed, life->within_short, life->within_long, life->never};

	for (int c = C_FREED; c <= C_LIFE_NEVER; c++) {
		if (rows->live_known)
			snprintf(l->buf[c], sizeof(l->buf[0]), "%.1f%%", 100.0 * v[c - C_FREED]);
		else
			snprintf(l->buf[c], sizeof(l->buf[0]), "-");
	}
}

static void fill(struct line *l, const struct rasp_report_view *v, const struct rasp_row *row,
		 const struct rasp_est_total *e, double share)
{
	const char *mark = e->contradicts ? "!" : e->samples < RASP_FEW_SAMPLES ? "~" : "";
	/* "?": too few samples for the spread of sizes to trust the objects interval. */
	const char *obj_mark = e->low_confidence && !e->contradicts ? "?" : mark;

	memset(l->cell, 0, sizeof(l->cell));
	if (row) {
		l->cell[C_TYPE] = rasp_row_type(v->tally, row);
		l->cell[C_KIND] = rasp_kind_name(row->kind, l->buf[C_KIND], sizeof(l->buf[0]));
		process_text(v->tally, row->process, l->process, sizeof(l->process));
		l->cell[C_PROCESS] = l->process;
		if (row->thread == RASP_ID_UNKNOWN)
			snprintf(l->buf[C_THREAD], sizeof(l->buf[0]), "-");
		else
			snprintf(l->buf[C_THREAD], sizeof(l->buf[0]), "%" PRId64, row->thread);
		l->cell[C_THREAD] = l->buf[C_THREAD];
		if (v->rows->group_by & RASP_GROUP_WHERE) {
			where_text(v, row, l->where, sizeof(l->where));
			l->cell[C_WHERE] = l->where;
		}
	}
	rasp_format_bytes(e->bytes, l->buf[C_BYTES], sizeof(l->buf[0]));
	rasp_format_count(e->objects, l->buf[C_OBJ], sizeof(l->buf[0]));
	if (e->samples) {
		interval(l->buf[C_BYTES_CI], sizeof(l->buf[0]), e->bytes_low, e->bytes_high, true,
			 mark);
		interval(l->buf[C_OBJ_CI], sizeof(l->buf[0]), e->objects_low, e->objects_high,
			 false, obj_mark);
	} else {
		snprintf(l->buf[C_BYTES_CI], sizeof(l->buf[0]), "-");
		snprintf(l->buf[C_OBJ_CI], sizeof(l->buf[0]), "-");
	}
	snprintf(l->buf[C_SHARE], sizeof(l->buf[0]), "%.1f%%", 100.0 * share);
	snprintf(l->buf[C_SAMPLES], sizeof(l->buf[0]), "%" PRIu64, e->samples);
	life_cells(l, v->rows, row ? &row->life : &v->rows->life);
	for (int c = C_BYTES; c < NCOLS; c++)
		l->cell[c] = l->buf[c];
}

static void print_line(FILE *out, const struct line *l, const size_t *width, const bool *shown)
{
	const char *sep = "";

	for (int c = 0; c < NCOLS; c++) {
		if (!shown[c])
			continue;
		fputs(sep, out);
		sep = "  ";
		/* Keys left-aligned, numbers right-aligned; the last column has no padding. */
		put_cell(out, l->cell[c] ? l->cell[c] : "", width[c],
			 c >= C_BYTES && c != C_BYTES_CI && c != C_OBJ_CI);
	}
	fputc('\n', out);
}

/* A process's sampling mean(s), exact, and whether they were assumed. Processes with samples
 * only. */
static void print_means(FILE *out, const struct rasp_tally_process *p)
{
	if (p->mean_low == p->mean_high)
		fprintf(out, ", sampling mean %.0f bytes", p->mean_low);
	else
		fprintf(out, ", sampling means %.0f to %.0f bytes", p->mean_low, p->mean_high);
	if (p->samples_assumed)
		fputs(p->samples_assumed == p->samples ? " (ASSUMED)" : " (partly ASSUMED)", out);
	else if (p->declared && !p->configured)
		fputs(" (.NET's, fixed: an EventPipe file)", out);
}

/* "in use:" what the figures are of: the moment, and the frees the input held. */
static void inuse_header(const struct rasp_report_view *v, FILE *out)
{
	const struct rasp_tally *t = v->tally;
	const struct rasp_live *l = t->live;
	char buf[32];

	fputs("  in use:    ", out);
	if (l->moment == RASP_LIVE_PEAK && l->moment_set)
		fputs("at the peak of the estimated live bytes", out);
	else if (l->moment == RASP_LIVE_AT && l->moment_set)
		fprintf(out, "at %g s", l->at_seconds);
	else
		fputs("at the end of the recording", out);
	if (t->timed && v->rows->moment_ns != INT64_MIN && v->rows->moment_ns >= t->first_ns)
		fprintf(out, " (%s after the first event)",
			rasp_format_duration((uint64_t)v->rows->moment_ns - (uint64_t)t->first_ns,
					     buf, sizeof(buf)));
	fprintf(out, "; %" PRIu64 " frees paired with their sample, %" PRIu64 " heap%s destroyed\n",
		l->frees_paired, l->heap_destroyed, l->heap_destroyed == 1 ? "" : "s");
}

static void header(const struct rasp_report_view *v, FILE *out)
{
	const struct rasp_tally *t = v->tally;
	double low = 0, high = 0;
	uint64_t sampled_procs = 0;
	char buf[32];

	fprintf(out, "rasp report: %" PRIu64 " %s sample%s", t->samples,
		RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG, t->samples == 1 ? "" : "s");
	if (rasp_tally_duration_ns(t))
		fprintf(out, " over %s",
			rasp_format_duration(rasp_tally_duration_ns(t), buf, sizeof(buf)));
	fputc('\n', out);
	for (size_t i = 0; i < t->ninputs; i++) {
		fputs("  input:     ", out);
		rasp_safe_put(out, t->inputs[i]);
		fputc('\n', out);
	}
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct rasp_tally_process *p = &t->procs[i];

		if (!p->samples)
			continue;
		if (!sampled_procs || p->mean_low < low)
			low = p->mean_low;
		if (!sampled_procs || p->mean_high > high)
			high = p->mean_high;
		sampled_procs++;
	}
	if (sampled_procs <= RASP_HEADER_PROCESSES) {
		for (size_t i = 0; i < t->nprocs; i++) {
			const struct rasp_tally_process *p = &t->procs[i];
			char label[160];

			if (!p->samples)
				continue;
			process_text(t, p->pid, label, sizeof(label));
			fputs("  process:   ", out);
			rasp_safe_put(out, p->pid == RASP_ID_UNKNOWN ? "unknown (no vpid context)"
								     : label);
			print_means(out, p);
			fputc('\n', out);
		}
	} else {
		fprintf(out, "  processes: %" PRIu64 " with samples, sampling mean%s %.0f",
			sampled_procs, low == high ? "" : "s", low);
		if (low != high)
			fprintf(out, " to %.0f", high);
		fputs(" bytes\n", out);
	}
	if (rasp_tally_lost_data(t))
		fprintf(out, "  lost:      %" PRIu64 "%s events, %" PRIu64 "%s packets\n",
			t->discarded_events, t->discarded_events_unknown ? "+ (unknown)" : "",
			t->discarded_packets, t->discarded_packets_unknown ? "+ (unknown)" : "");
	else if (v->notes->incomplete)
		fputs("  lost:      none reported by the tracer, but the input is INCOMPLETE\n",
		      out);
	else
		fputs("  lost:      none reported\n", out);
	fprintf(out, "  intervals: %s confidence\n",
		rasp_format_percent(v->opt->confidence, buf, sizeof(buf)));
	if (v->rows->inuse)
		inuse_header(v, out);
	/* Notes quote names and paths from the input. */
	for (size_t i = 0; i < v->notes->n; i++) {
		fprintf(out, "%s: ",
			strcmp(v->notes->v[i].code, "no-samples") == 0 ? "NOTE" : "WARNING");
		rasp_safe_put(out, v->notes->v[i].text);
		fputc('\n', out);
	}
	fputc('\n', out);
}

static void ticks(const struct rasp_report_view *v, FILE *out)
{
	const struct rasp_tally *t = v->tally;
	const struct rasp_rows *r = v->rows;
	size_t tw = strlen("TYPE");

	if (!r->nticks)
		return;
	for (size_t i = 0; i < r->nticks; i++)
		if (width_of(rasp_tally_type_name(t, r->ticks[i])) > tw)
			tw = width_of(rasp_tally_type_name(t, r->ticks[i]));
	fprintf(out,
		"%sGCAllocationTick events (older .NET: one tick per ~100 KB allocated, fixed "
		"stride).\nBIASED: each tick charges the whole stride to the type that happened "
		"to cross it; these are not estimates and are not part of the table above.\n",
		r->n ? "\n" : "");
	put_cell(out, "TYPE", tw, false);
	fprintf(out, "  %8s  %18s\n", "TICKS", "ALLOCATION_AMOUNT");
	for (size_t i = 0; i < r->nticks; i++) {
		put_cell(out, rasp_tally_type_name(t, r->ticks[i]), tw, false);
		fprintf(out, "  %8" PRIu64 "  %18" PRIu64 "\n", t->ticks[r->ticks[i]].ticks,
			t->ticks[r->ticks[i]].amount);
	}
	put_cell(out, "TOTAL", tw, false);
	fprintf(out, "  %8" PRIu64 "  %18" PRIu64 "\n", r->tick_count, r->tick_amount);
}

static int write_text(const struct rasp_report_view *v, FILE *out)
{
	static const char *const heads[NCOLS] = {"TYPE",    "KIND",  "PROCESS", "THREAD",  "SITE",
						 "BYTES",   "",	     "SHARE",	"OBJECTS", "",
						 "SAMPLES", "FREED", "<1MS",	"<1S",	   "NEVER"};
	const struct rasp_rows *rows = v->rows;
	unsigned by = rows->group_by;
	size_t shown_rows = v->opt->top && v->opt->top < rows->n ? v->opt->top : rows->n;
	bool shown[NCOLS] = {by & RASP_GROUP_TYPE,
			     by & RASP_GROUP_KIND,
			     by & RASP_GROUP_PROCESS,
			     by & RASP_GROUP_THREAD,
			     by & RASP_GROUP_WHERE,
			     true,
			     true,
			     true,
			     true,
			     true,
			     true,
			     rows->inuse,
			     v->opt->lifetimes,
			     v->opt->lifetimes,
			     v->opt->lifetimes};
	size_t width[NCOLS];
	struct line head, line, tot;
	char ci[48], pct[32];
	int first = 0, few = 0, doubtful = rows->total.low_confidence;

	header(v, out);
	if (!rows->n) {
		ticks(v, out); /* a trace of older .NET: its ticks are all there is */
		return 0;
	}
	memset(&head, 0, sizeof(head));
	memcpy(head.cell, heads, sizeof(heads));
	if (by & RASP_GROUP_STACK)
		head.cell[C_WHERE] = "STACK";
	snprintf(ci, sizeof(ci), "%s INTERVAL",
		 rasp_format_percent(v->opt->confidence, pct, sizeof(pct)));
	head.cell[C_BYTES_CI] = head.cell[C_OBJ_CI] = ci;
	while (!shown[first])
		first++;
	fill(&tot, v, NULL, &rows->total, rows->total.bytes > 0 ? 1.0 : 0.0);
	tot.cell[first] = "TOTAL";
	for (int c = 0; c < NCOLS; c++)
		width[c] = width_of(head.cell[c]);
	for (size_t i = 0; i <= shown_rows; i++) {
		const struct line *l = &tot;

		if (i < shown_rows) {
			fill(&line, v, &rows->v[i], &rows->v[i].est, rows->v[i].share);
			few |= rows->v[i].est.samples && rows->v[i].est.samples < RASP_FEW_SAMPLES;
			doubtful |= rows->v[i].est.low_confidence;
			l = &line;
		}
		for (int c = 0; c < NCOLS; c++)
			if (l->cell[c] && width_of(l->cell[c]) > width[c])
				width[c] = width_of(l->cell[c]);
	}
	print_line(out, &head, width, shown);
	for (size_t i = 0; i < shown_rows; i++) {
		fill(&line, v, &rows->v[i], &rows->v[i].est, rows->v[i].share);
		print_line(out, &line, width, shown);
	}
	if (shown_rows < rows->n)
		fprintf(out, "... %zu more row%s (top=%" PRIu64 ")\n", rows->n - shown_rows,
			rows->n - shown_rows == 1 ? "" : "s", v->opt->top);
	print_line(out, &tot, width, shown);
	few |= rows->total.samples && rows->total.samples < RASP_FEW_SAMPLES;
	if (few) {
		char legend[256];

		fprintf(out, "%s\n",
			rasp_format_few_legend(v->opt->confidence, legend, sizeof(legend)));
	}
	if (doubtful)
		fputs(RASP_LEGEND_DOUBTFUL " (docs/sampling.md)\n", out);
	if (rows->contradictions)
		fputs(RASP_LEGEND_CONTRADICTS "\n", out);
	ticks(v, out);
	return 0;
}

const struct rasp_writer rasp_writer_text = {.name = "text",
					     .write = write_text,
					     .write_diff = rasp_diff_write_text,
					     .top = true,
					     .suffix = ".txt"};
