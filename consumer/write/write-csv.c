/* The csv writer (RFC 4180 quoting): one table, exact numbers, names as their safe text and
 * no cell a spreadsheet formula (field()). Columns: scope (group, total, or
 * allocation-tick-biased for a GCAllocationTick row), the grouped keys, samples, bytes,
 * bytes_low, bytes_high, objects, objects_low, objects_high, share, model_mismatch (1 when the
 * row's samples contradict the sampling model: the text report's "!"), and process_name when
 * grouped by process. The notes go to standard error: csv has no place for them. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sanitize.h"
#include "writer.h"

/* A decimal number as a spreadsheet reads one: [+-]digits[.digits][e[+-]digits]. */
static bool is_number(const char *s)
{
	bool digits = false;

	s += *s == '+' || *s == '-';
	for (; isdigit((unsigned char)*s); s++)
		digits = true;
	if (*s == '.')
		for (s++; isdigit((unsigned char)*s); s++)
			digits = true;
	if (digits && (*s == 'e' || *s == 'E')) {
		s++;
		s += *s == '+' || *s == '-';
		if (!isdigit((unsigned char)*s))
			return false;
		while (isdigit((unsigned char)*s))
			s++;
	}
	return digits && !*s;
}

/* A text cell (names, paths, frames; numbers are printed by the callers): its safe text
 * (sanitize.h: no control character, CR and LF included, reaches a terminal that shows the
 * file), and a cell a spreadsheet would run as a formula (starting with '=', '+', '-' or '@',
 * and not a number) led by a single quote, as OWASP's CSV injection advice says. Quoted (RFC
 * 4180) when it holds a comma or a quote, or was defused. 0 or -ENOMEM. */
static int field(FILE *out, const char *s)
{
	char small[256], *safe = small;
	size_t len = rasp_safe_text(NULL, 0, s);
	bool formula = strchr("=+-@", s[0]) && s[0] && !is_number(s);

	if (len >= sizeof(small) && !(safe = malloc(len + 1)))
		return -ENOMEM;
	rasp_safe_text(safe, len + 1, s);
	if (!formula && safe[strcspn(safe, ",\"")] == '\0') {
		fputs(safe, out);
	} else {
		fputs(formula ? "\"'" : "\"", out);
		for (const char *p = safe; *p; p++) {
			if (*p == '"')
				fputc('"', out);
			fputc(*p, out);
		}
		fputc('"', out);
	}
	if (safe != small)
		free(safe);
	return 0;
}

static void id(FILE *out, int64_t v)
{
	if (v != RASP_ID_UNKNOWN)
		fprintf(out, "%" PRId64, v);
}

/* The frames innermost first, joined by " < " (one field). 0 or -ENOMEM. */
static int stack_field(FILE *out, const struct rasp_report_view *v, const struct rasp_row *row)
{
	size_t depth = rasp_row_depth(v->tally, row), len = 0, cap = 256;
	char *s = malloc(cap);
	int rc;

	if (!s)
		return -ENOMEM;
	s[0] = '\0';
	for (size_t k = 0; k < depth; k++) {
		struct rasp_sym_frame f;
		size_t need;

		if (rasp_row_frame(v->rows, v->tally, row, k, &f))
			break;
		need = len + strlen(f.name) + 4;
		if (need > cap) {
			char *t = realloc(s, 2 * need);

			if (!t) {
				free(s);
				return -ENOMEM;
			}
			s = t;
			cap = 2 * need;
		}
		len += (size_t)sprintf(s + len, "%s%s", k ? " < " : "", f.name);
	}
	rc = field(out, depth ? s : "(no stack)");
	free(s);
	return rc;
}

/* 0 or -ENOMEM. */
static int row_out(FILE *out, const struct rasp_report_view *v, const char *scope,
		   const struct rasp_row *row, const struct rasp_est_total *e, double share)
{
	unsigned by = v->rows->group_by;
	char buf[32];
	int rc = 0;

	fputs(scope, out);
	if (by & RASP_GROUP_TYPE) {
		fputc(',', out);
		rc = field(out, row ? rasp_row_type(v->tally, row) : "");
	}
	if (by & RASP_GROUP_KIND)
		fprintf(out, ",%s", row ? rasp_kind_name(row->kind, buf, sizeof(buf)) : "");
	if (by & RASP_GROUP_THREAD) {
		fputc(',', out);
		if (row)
			id(out, row->thread);
	}
	if (by & RASP_GROUP_PROCESS) {
		fputc(',', out);
		if (row)
			id(out, row->process);
	}
	if (by & RASP_GROUP_SITE) {
		fputc(',', out);
		rc = rc ? rc : field(out, row ? rasp_row_site(v->rows, row) : "");
	}
	if (by & RASP_GROUP_STACK) {
		fputc(',', out);
		if (row && !rc)
			rc = stack_field(out, v, row);
	}
	fprintf(out, ",%" PRIu64 ",%.0f,%.0f,%.0f,%.1f,%.1f,%.1f,%.6f,%d", e->samples, e->bytes,
		e->bytes_low, e->bytes_high, e->objects, e->objects_low, e->objects_high, share,
		e->contradicts ? 1 : 0);
	if (by & RASP_GROUP_PROCESS) {
		const struct rasp_tally_process *p =
		    row ? rasp_tally_find_process(v->tally, row->process) : NULL;
		const char *name = p ? rasp_tally_process_name(v->tally, p) : NULL;

		fputc(',', out);
		rc = rc ? rc : field(out, name ? name : "");
	}
	fputc('\n', out);
	return rc;
}

static int write_csv(const struct rasp_report_view *v, FILE *out)
{
	const struct rasp_tally *t = v->tally;
	unsigned by = v->rows->group_by;
	int rc = 0;

	/* Notes quote names and paths from the input. */
	for (size_t i = 0; i < v->notes->n; i++) {
		fprintf(stderr, "sink.rasp.report: %s: ",
			strcmp(v->notes->v[i].code, "no-samples") == 0 ? "NOTE" : "WARNING");
		rasp_safe_put(stderr, v->notes->v[i].text);
		fputc('\n', stderr);
	}
	fputs("scope", out);
	if (by & RASP_GROUP_TYPE)
		fputs(",type", out);
	if (by & RASP_GROUP_KIND)
		fputs(",kind", out);
	if (by & RASP_GROUP_THREAD)
		fputs(",thread", out);
	if (by & RASP_GROUP_PROCESS)
		fputs(",process", out);
	if (by & RASP_GROUP_SITE)
		fputs(",site", out);
	if (by & RASP_GROUP_STACK)
		fputs(",stack", out);
	fputs(",samples,bytes,bytes_low,bytes_high,objects,objects_low,objects_high,share,"
	      "model_mismatch",
	      out);
	fputs(by & RASP_GROUP_PROCESS ? ",process_name\n" : "\n", out);
	for (size_t i = 0; i < v->rows->n && !rc; i++)
		rc = row_out(out, v, "group", &v->rows->v[i], &v->rows->v[i].est,
			     v->rows->v[i].share);
	if (!rc)
		rc = row_out(out, v, "total", NULL, &v->rows->total,
			     v->rows->total.bytes > 0 ? 1.0 : 0.0);
	/* Tick rows: samples = ticks, bytes = AllocationAmount; no interval, no objects. */
	for (size_t i = 0; i < v->rows->nticks && !rc; i++) {
		size_t k = v->rows->ticks[i];

		fputs("allocation-tick-biased,", out);
		rc = field(out, rasp_rows_type_name(v->rows, t, k));
		/* The type fills the first key column; the other keys stay empty. */
		for (unsigned b = by & (by - 1); b; b &= b - 1)
			fputc(',', out);
		fprintf(out, ",%" PRIu64 ",%" PRIu64 ",,,,,,,%s\n", t->ticks[k].ticks,
			t->ticks[k].amount, by & RASP_GROUP_PROCESS ? "," : "");
	}
	return rc;
}

const struct rasp_writer rasp_writer_csv = {.name = "csv", .write = write_csv, .suffix = ".csv"};
