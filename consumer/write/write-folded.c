/* The folded writer: one line per distinct stack and type, as flamegraph.pl and speedscope read
 * them: "root;...;leaf;Type BYTES", the frames outermost first, the type as the last frame and
 * the estimated bytes (the unbiased estimate, rounded; never sample counts). A frame is its
 * function's name, so the call sites of one function fold into one box as stackcollapse
 * scripts do; an unresolved one keeps "object+0xoffset". Rows that give the same line (other
 * keys: kind, thread, process; call sites of one function) are one line: point estimates add.
 * A row without a stack reads "(no stack);Type BYTES". ';' separates frames and the last space
 * the count, so inside names ';', spaces and each byte of a character a terminal would act on
 * (sanitize.h: controls, C1, bidirectional overrides, bytes that are not UTF-8) become '_'
 * (UTF-8 stays UTF-8), and an empty name reads "(no name)"; these two markers of the
 * writer's own keep their space, which no reader mistakes for the last one. Lines are
 * sorted bytewise, so one trace always gives the same file. GCAllocationTick rows are biased
 * counts, not estimates: left out. The notes go to standard error, as csv's do. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sanitize.h"
#include "writer.h"

struct line {
	char *text;   /* frames and type, escaped, NUL-terminated */
	size_t row;   /* first row giving it: ties sort by row so sums add in one order */
	double bytes; /* estimate, bytes */
};

struct text {
	char *s;
	size_t len, cap;
};

/* Appends s (escaped unless it is one of the writer's own markers) after a ';' when sep. */
static int append(struct text *b, const char *s, int sep, int marker)
{
	size_t n, need;

	if (!*s) {
		s = "(no name)";
		marker = 1;
	}
	n = strlen(s);
	/* Room for the separator, the name and the NUL; a name is at most a path or a symbol. */
	if (__builtin_add_overflow(b->len, n + 2, &need))
		return -ENOMEM;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(b->s, cap);
		if (!p)
			return -ENOMEM;
		b->s = p;
		b->cap = cap;
	}
	if (sep)
		b->s[b->len++] = ';';
	for (size_t i = 0; i < n;) {
		int32_t cp;
		size_t len = rasp_utf8_next(s + i, &cp);

		/* A character a terminal acts on (sanitize.h): '_' for each of its bytes. */
		for (size_t k = 0; k < len; k++, i++)
			b->s[b->len++] = !marker && (cp == ';' || cp == ' ' || rasp_char_unsafe(cp))
					     ? '_'
					     : s[i];
	}
	b->s[b->len] = '\0';
	return 0;
}

/* The line of a row: its frames outermost first, then its type. */
static int line_of(const struct rasp_report_view *v, const struct rasp_row *row, struct text *b)
{
	size_t depth = rasp_row_depth(v->tally, row);
	int rc = 0;

	b->len = 0;
	if (!depth)
		rc = append(b, "(no stack)", 0, 1);
	for (size_t k = depth; k-- > 0 && !rc;) {
		struct rasp_sym_frame f;

		rc = rasp_row_frame(v->rows, v->tally, row, k, &f);
		if (!rc)
			rc = append(b, f.function ? f.function : f.name, k + 1 < depth, 0);
	}
	return rc ? rc : append(b, rasp_row_type(v->tally, row), 1, 0);
}

static int cmp_line(const void *pa, const void *pb)
{
	const struct line *a = pa, *b = pb;
	int c = strcmp(a->text, b->text);

	if (c)
		return c;
	return a->row < b->row ? -1 : a->row > b->row;
}

static int write_folded(const struct rasp_report_view *v, FILE *out)
{
	const struct rasp_rows *r = v->rows;
	struct line *lines = r->n ? calloc(r->n, sizeof(*lines)) : NULL;
	struct text b = {0};
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < v->notes->n; i++) {
		fprintf(stderr, "sink.rasp.report: %s: ",
			strcmp(v->notes->v[i].code, "no-samples") == 0 ? "NOTE" : "WARNING");
		rasp_safe_put(stderr, v->notes->v[i].text);
		fputc('\n', stderr);
	}
	if (r->n && !lines)
		return -ENOMEM;
	for (; n < r->n; n++) {
		rc = line_of(v, &r->v[n], &b);
		if (rc)
			goto out;
		lines[n] = (struct line){.text = strdup(b.s), .row = n, .bytes = r->v[n].est.bytes};
		if (!lines[n].text) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if (n) /* lines is NULL when there are none, which qsort must not get */
		qsort(lines, n, sizeof(*lines), cmp_line);
	for (size_t i = 0; i < n;) {
		double bytes = 0;
		size_t j = i;

		for (; j < n && strcmp(lines[j].text, lines[i].text) == 0; j++)
			bytes += lines[j].bytes;
		/* An infinite or NaN count would make the line unreadable to every reader. */
		if (!isfinite(bytes)) {
			rc = -ERANGE;
			goto out;
		}
		fprintf(out, "%s %.0f\n", lines[i].text, round(bytes));
		i = j;
	}
	if (ferror(out))
		rc = -EIO;
out:
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	free(b.s);
	return rc;
}

const struct rasp_writer rasp_writer_folded = {
    .name = "folded", .write = write_folded, .stacks = true, .suffix = ".folded"};
