/* The csv writer (RFC 4180 quoting): one table, exact numbers. Columns: scope (group, total,
 * or allocation-tick-biased for a GCAllocationTick row), the grouped keys, samples, bytes,
 * bytes_low, bytes_high, objects, objects_low, objects_high, share, model_mismatch (1 when the
 * row's samples contradict the sampling model: the text report's "!"), and process_name when
 * grouped by process. The notes go to standard error: csv has no place for them. */
#include <inttypes.h>
#include <string.h>

#include "writer.h"

static void field(FILE *out, const char *s)
{
	if (s[strcspn(s, ",\"\r\n")] == '\0') {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void id(FILE *out, int64_t v)
{
	if (v != RASP_ID_UNKNOWN)
		fprintf(out, "%" PRId64, v);
}

static void row_out(FILE *out, const struct rasp_report_view *v, const char *scope,
		    const struct rasp_row *row, const struct rasp_est_total *e, double share)
{
	unsigned by = v->rows->group_by;
	char buf[32];

	fputs(scope, out);
	if (by & RASP_GROUP_TYPE) {
		fputc(',', out);
		field(out, row ? rasp_row_type(v->tally, row) : "");
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
	fprintf(out, ",%" PRIu64 ",%.0f,%.0f,%.0f,%.1f,%.1f,%.1f,%.6f,%d", e->samples, e->bytes,
		e->bytes_low, e->bytes_high, e->objects, e->objects_low, e->objects_high, share,
		e->contradicts ? 1 : 0);
	if (by & RASP_GROUP_PROCESS) {
		const struct rasp_tally_process *p =
		    row ? rasp_tally_find_process(v->tally, row->process) : NULL;
		const char *name = p ? rasp_tally_process_name(v->tally, p) : NULL;

		fputc(',', out);
		field(out, name ? name : "");
	}
	fputc('\n', out);
}

static int write_csv(const struct rasp_report_view *v, FILE *out)
{
	const struct rasp_tally *t = v->tally;
	unsigned by = v->rows->group_by;

	for (size_t i = 0; i < v->notes->n; i++)
		fprintf(stderr, "sink.rasp.report: %s: %s\n",
			strcmp(v->notes->v[i].code, "no-samples") == 0 ? "NOTE" : "WARNING",
			v->notes->v[i].text);
	fputs("scope", out);
	if (by & RASP_GROUP_TYPE)
		fputs(",type", out);
	if (by & RASP_GROUP_KIND)
		fputs(",kind", out);
	if (by & RASP_GROUP_THREAD)
		fputs(",thread", out);
	if (by & RASP_GROUP_PROCESS)
		fputs(",process", out);
	fputs(",samples,bytes,bytes_low,bytes_high,objects,objects_low,objects_high,share,"
	      "model_mismatch",
	      out);
	fputs(by & RASP_GROUP_PROCESS ? ",process_name\n" : "\n", out);
	for (size_t i = 0; i < v->rows->n; i++)
		row_out(out, v, "group", &v->rows->v[i], &v->rows->v[i].est, v->rows->v[i].share);
	row_out(out, v, "total", NULL, &v->rows->total, v->rows->total.bytes > 0 ? 1.0 : 0.0);
	/* Tick rows: samples = ticks, bytes = AllocationAmount; no interval, no objects. */
	for (size_t i = 0; i < v->rows->nticks; i++) {
		size_t k = v->rows->ticks[i];

		fputs("allocation-tick-biased,", out);
		field(out, rasp_tally_type_name(t, k));
		/* The type fills the first key column; the other keys stay empty. */
		for (unsigned b = by & (by - 1); b; b &= b - 1)
			fputc(',', out);
		fprintf(out, ",%" PRIu64 ",%" PRIu64 ",,,,,,,%s\n", t->ticks[k].ticks,
			t->ticks[k].amount, by & RASP_GROUP_PROCESS ? "," : "");
	}
	return 0;
}

const struct rasp_writer rasp_writer_csv = {"csv", write_csv};
