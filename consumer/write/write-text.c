/* The text writer: a short header (inputs, duration, processes and their sampling means,
 * lost data, confidence), the notes, then a table in human units (bytes in KiB/MiB/GiB,
 * objects in k/M/G) with a share of the total and an interval on bytes and on objects, the
 * TOTAL line and one-line legends for wide and doubtful intervals. Exact numbers are csv's
 * and json's.
 * On a terminal the report fits it: every line within its width (names shortened in the
 * middle, the objects columns left out when the names would get too little room, the header
 * and notes wrapped) and, unless --top says otherwise, as many of the largest rows as leave
 * the report's start on the screen. Elsewhere (a file, a pipe) lines are as long as their
 * cells, so scripts see every name whole. Column widths are measured first; numbers are never
 * cut. */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/event-meta.h"
#include "sanitize.h"
#include "text-fit.h"
#include "text-header.h"
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

/* Display width in columns of a cell's safe text. */
static size_t width_of(const char *s)
{
	return rasp_text_width(s);
}

/* Every cell as its safe text (sanitize.h): controls, escape sequences and bidirectional
 * overrides from a trace show as \xNN, so one row stays one line and nothing in a name acts
 * on the terminal. A name wider than its column is shortened in the middle (text-fit.h). */
static int put_cell(FILE *out, const char *s, size_t width, bool right, bool last)
{
	size_t w = width_of(s);
	int ret;

	if (right)
		for (size_t i = w; i < width; i++)
			fputc(' ', out);
	ret = rasp_text_put_fit(out, s, width > w ? w : width, &w);
	if (!right && !last)
		for (size_t i = w; i < width; i++)
			fputc(' ', out);
	return ret;
}

/* The site, or the innermost frames of the stack ("f < caller < ... (+n)"). */
static void where_text(const struct rasp_report_view *v, const struct rasp_row *row, char *buf,
		       size_t len)
{
	size_t depth = rasp_row_depth(v->tally, row), used = 0;

	if (v->rows->group_by & RASP_GROUP_STACK) {
		buf[0] = '\0';
		for (size_t k = 0; k < depth && k < TEXT_FRAMES && used < len; k++) {
			struct rasp_sym_frame f;

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
		rasp__text_process(v->tally, row->process, l->process, sizeof(l->process));
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
		rasp_format_interval(l->buf[C_BYTES_CI], sizeof(l->buf[0]), e->bytes_low,
				     e->bytes_high, true, mark);
		rasp_format_interval(l->buf[C_OBJ_CI], sizeof(l->buf[0]), e->objects_low,
				     e->objects_high, false, obj_mark);
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

static int print_line(FILE *out, const struct line *l, const size_t *width, const bool *shown)
{
	const char *sep = "";
	int ret = 0, last = 0;

	for (int c = 0; c < NCOLS; c++)
		if (shown[c])
			last = c;
	for (int c = 0; c < NCOLS && !ret; c++) {
		if (!shown[c])
			continue;
		fputs(sep, out);
		sep = "  ";
		/* Keys left-aligned, numbers right-aligned; the last column has no padding. */
		ret = put_cell(out, l->cell[c] ? l->cell[c] : "", width[c],
			       c >= C_BYTES && c != C_BYTES_CI && c != C_OBJ_CI, c == last);
	}
	fputc('\n', out);
	return ret;
}

/* How the report is laid out: the width of a line (0: no limit), the rows of the terminal
 * (0: not writing to one), the rows of the table shown. */
struct layout {
	size_t width, term_rows, shown_rows;
	bool dropped; /* the objects columns left out for the width */
};

/* The legends of the marks the shown rows carry, wrapped. */
static int legends(const struct rasp_report_view *v, FILE *out, size_t width, bool few,
		   bool doubtful, size_t *lines)
{
	char legend[256];
	int ret = 0;

	if (few)
		ret = rasp_text_put_wrapped(
		    out, rasp_format_few_legend(v->opt->confidence, legend, sizeof(legend)), width,
		    2, lines);
	if (!ret && doubtful)
		ret = rasp_text_put_wrapped(out, RASP_LEGEND_DOUBTFUL " (docs/sampling.md)", width,
					    2, lines);
	if (!ret && v->rows->contradictions)
		ret = rasp_text_put_wrapped(out, RASP_LEGEND_CONTRADICTS, width, 2, lines);
	return ret;
}

/* Which legends rows [0, n) and the total call for. */
static void marks(const struct rasp_rows *rows, size_t n, bool *few, bool *doubtful)
{
	*few = rows->total.samples && rows->total.samples < RASP_FEW_SAMPLES;
	*doubtful = rows->total.low_confidence;
	for (size_t i = 0; i < n; i++) {
		*few |= rows->v[i].est.samples && rows->v[i].est.samples < RASP_FEW_SAMPLES;
		*doubtful |= rows->v[i].est.low_confidence;
	}
}

/* The lines the legends of rows [0, n) take at width, counted by writing them aside. */
static size_t legend_lines(const struct rasp_report_view *v, size_t n, size_t width)
{
	char *text = NULL;
	size_t len = 0, lines = 0;
	FILE *m = open_memstream(&text, &len);
	bool few, doubtful;

	if (!m)
		return 3;
	marks(v->rows, n, &few, &doubtful);
	legends(v, m, width, few, doubtful, &lines);
	fclose(m);
	free(text);
	return lines;
}

static int ticks(const struct rasp_report_view *v, FILE *out, size_t width)
{
	const struct rasp_tally *t = v->tally;
	const struct rasp_rows *r = v->rows;
	/* The numbers' columns: "  %8s  %18s". */
	size_t tw = strlen("TYPE"), numbers = 2 + 8 + 2 + 18, lines = 0;
	int ret;

	if (!r->nticks)
		return 0;
	for (size_t i = 0; i < r->nticks; i++)
		if (width_of(rasp_rows_type_name(r, t, r->ticks[i])) > tw)
			tw = width_of(rasp_rows_type_name(r, t, r->ticks[i]));
	if (width && tw + numbers > width)
		tw = width > numbers + 12 ? width - numbers : 12;
	if (r->n)
		fputc('\n', out);
	ret = rasp_text_put_wrapped(out,
				    "GCAllocationTick events (older .NET: one tick per ~100 KB "
				    "allocated, fixed stride).",
				    width, 0, &lines);
	ret = ret ? ret
		  : rasp_text_put_wrapped(out,
					  "BIASED: each tick charges the whole stride to the type "
					  "that happened to cross it; these are not estimates and "
					  "are not part of the table above.",
					  width, 0, &lines);
	ret = ret ? ret : put_cell(out, "TYPE", tw, false, false);
	fprintf(out, "  %8s  %18s\n", "TICKS", "ALLOCATION_AMOUNT");
	for (size_t i = 0; i < r->nticks && !ret; i++) {
		ret = put_cell(out, rasp_rows_type_name(r, t, r->ticks[i]), tw, false, false);
		fprintf(out, "  %8" PRIu64 "  %18" PRIu64 "\n", t->ticks[r->ticks[i]].ticks,
			t->ticks[r->ticks[i]].amount);
	}
	ret = ret ? ret : put_cell(out, "TOTAL", tw, false, false);
	fprintf(out, "  %8" PRIu64 "  %18" PRIu64 "\n", r->tick_count, r->tick_amount);
	return ret;
}

/* The columns of keys a table may narrow: names, which shorten in the middle. */
static bool narrows(int c)
{
	return c == C_TYPE || c == C_PROCESS || c == C_WHERE;
}

/* Fits the table's columns in width: the names' columns get at least 2/5 of the line (16
 * columns each at least), the objects' interval and then the objects leaving room for them if
 * they must; on a line too narrow even then for 5 columns a name, the share and the samples go
 * too (the bytes and their interval always stay). What is left is shared out among the names,
 * a narrow one keeping its width. Sets l->dropped when columns were left out. */
static void fit_columns(struct layout *l, size_t *width, bool *shown)
{
	static const int drop[] = {C_OBJ_CI, C_OBJ, C_SHARE, C_SAMPLES};
	size_t names = 0, natural = 0, fixed, room, want;

	if (!l->width)
		return;
	for (int c = 0; c < NCOLS; c++)
		if (shown[c] && narrows(c)) {
			names++;
			natural += width[c];
		}
	for (size_t d = 0;; d++) {
		size_t cols = 0;

		fixed = 0;
		for (int c = 0; c < NCOLS; c++)
			if (shown[c]) {
				cols++;
				if (!narrows(c))
					fixed += width[c];
			}
		fixed += 2 * (cols - 1);
		room = l->width > fixed ? l->width - fixed : 0;
		/* The objects make way for names of 2/5 of the line, the share and the samples
		 * only for names of 5 columns. */
		want = d < 2 ? (names * 16 > l->width * 2 / 5 ? names * 16 : l->width * 2 / 5)
			     : names * 5;
		if (want > natural)
			want = natural;
		if (room >= want || d == sizeof(drop) / sizeof(drop[0]))
			break;
		shown[drop[d]] = false;
		l->dropped = true;
	}
	if (natural <= room)
		return;
	/* Shared out: each name column in turn, narrowest first, gets its natural width or an
	 * even share of what is left, whichever is less; at least 5 columns ("ab…yz"). */
	for (size_t left = names; left > 0; left--) {
		int narrowest = -1;

		for (int c = 0; c < NCOLS; c++)
			if (shown[c] && narrows(c) && width[c] != SIZE_MAX &&
			    (narrowest < 0 || width[c] < width[narrowest]))
				narrowest = c;
		if (narrowest < 0)
			break;
		{
			size_t share = room / left, w = width[narrowest];

			if (w > share)
				w = share;
			if (w < 5)
				w = 5;
			room = room > w ? room - w : 0;
			/* Marked done with SIZE_MAX until all are placed. */
			width[narrowest] = SIZE_MAX - w;
		}
	}
	for (int c = 0; c < NCOLS; c++)
		if (shown[c] && narrows(c) && width[c] > SIZE_MAX / 2)
			width[c] = SIZE_MAX - width[c];
}

/* Rows of the table that leave the report's start on the screen: the terminal's rows less
 * the header, the column heads, the TOTAL line, the legends, the line saying what is left
 * out, and the one the shell's prompt (or --live's cursor) takes; 5 at least. */
static size_t rows_that_fit(const struct rasp_report_view *v, const struct layout *l,
			    size_t header_lines)
{
	size_t n = v->rows->n, used, room;

	used = v->opt->lines_above + header_lines + 1 /* heads */ + 1 /* TOTAL */ + 1 /* prompt */;
	used += legend_lines(v, n < l->term_rows ? n : l->term_rows, l->width);
	used += 2; /* what the width left out (at most two lines at any width this handles) */
	room = l->term_rows > used ? l->term_rows - used : 0;
	if (n <= room)
		return n;
	room = room > 1 ? room - 1 : 0; /* the "more rows" line */
	return room < 5 ? (n < 5 ? n : 5) : room;
}

static int write_text(const struct rasp_report_view *v, FILE *out)
{
	static const char *const heads[NCOLS] = {"TYPE",    "KIND",  "PROCESS", "THREAD",  "SITE",
						 "BYTES",   "",	     "SHARE",	"OBJECTS", "",
						 "SAMPLES", "FREED", "<1MS",	"<1S",	   "NEVER"};
	const struct rasp_rows *rows = v->rows;
	const struct rasp_report_options *opt = v->opt;
	unsigned by = rows->group_by;
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
	size_t width[NCOLS], tcols = 0, trows = 0, header_n = 0, legend_n = 0;
	struct layout l = {0};
	bool tty = rasp_text_terminal(out, &tcols, &trows), few, doubtful;
	struct line head, line, tot;
	char ci[48], pct[32], more[96];
	int first = 0, ret;

	/* The width: --wide's none, --width's, or the terminal's. */
	l.width = opt->wide			  ? 0
		  : opt->width == RASP_PARAM_AUTO ? (tty ? tcols : 0)
						  : (size_t)opt->width;
	l.term_rows = tty ? trows : 0;
	ret = rasp__text_header(v, out, l.width, &header_n);
	if (ret)
		return ret;
	if (!rows->n)
		return ticks(v, out,
			     l.width); /* a trace of older .NET: its ticks are all there is */
	if (opt->top == RASP_PARAM_AUTO)
		l.shown_rows = l.term_rows ? rows_that_fit(v, &l, header_n) : rows->n;
	else
		l.shown_rows = opt->top && opt->top < rows->n ? (size_t)opt->top : rows->n;
	memset(&head, 0, sizeof(head));
	memcpy(head.cell, heads, sizeof(heads));
	if (by & RASP_GROUP_STACK)
		head.cell[C_WHERE] = "STACK";
	snprintf(ci, sizeof(ci), "%s INTERVAL",
		 rasp_format_percent(opt->confidence, pct, sizeof(pct)));
	head.cell[C_BYTES_CI] = head.cell[C_OBJ_CI] = ci;
	while (!shown[first])
		first++;
	fill(&tot, v, NULL, &rows->total, rows->total.bytes > 0 ? 1.0 : 0.0);
	tot.cell[first] = "TOTAL";
	for (int c = 0; c < NCOLS; c++)
		width[c] = width_of(head.cell[c]);
	for (size_t i = 0; i <= l.shown_rows; i++) {
		const struct line *ln = &tot;

		if (i < l.shown_rows) {
			fill(&line, v, &rows->v[i], &rows->v[i].est, rows->v[i].share);
			ln = &line;
		}
		for (int c = 0; c < NCOLS; c++)
			if (ln->cell[c] && width_of(ln->cell[c]) > width[c])
				width[c] = width_of(ln->cell[c]);
	}
	fit_columns(&l, width, shown);
	ret = print_line(out, &head, width, shown);
	for (size_t i = 0; i < l.shown_rows && !ret; i++) {
		fill(&line, v, &rows->v[i], &rows->v[i].est, rows->v[i].share);
		ret = print_line(out, &line, width, shown);
	}
	if (!ret && l.shown_rows < rows->n) {
		snprintf(more, sizeof(more), "\u2026 %zu more row%s (--top 0 for all)",
			 rows->n - l.shown_rows, rows->n - l.shown_rows == 1 ? "" : "s");
		ret = rasp_text_put_wrapped(out, more, l.width, 2, &legend_n);
	}
	ret = ret ? ret : print_line(out, &tot, width, shown);
	marks(rows, l.shown_rows, &few, &doubtful);
	doubtful &= shown[C_OBJ_CI]; /* "?" marks only the objects interval */
	ret = ret ? ret : legends(v, out, l.width, few, doubtful, &legend_n);
	if (!ret && l.dropped) {
		char note[160];

		snprintf(
		    note, sizeof(note), "(left out to fit the width: %s%s%s; --wide shows all)",
		    shown[C_OBJ] ? "the objects interval" : "the objects columns",
		    shown[C_SHARE] ? "" : ", the share", shown[C_SAMPLES] ? "" : ", the samples");
		ret = rasp_text_put_wrapped(out, note, l.width, 2, &legend_n);
	}
	return ret ? ret : ticks(v, out, l.width);
}

const struct rasp_writer rasp_writer_text = {.name = "text",
					     .write = write_text,
					     .write_diff = rasp_diff_write_text,
					     .top = true,
					     .suffix = ".txt"};
