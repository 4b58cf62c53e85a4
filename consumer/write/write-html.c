/* The html writer: one self-contained page. The report goes in as JSON (a script element of
 * type application/json, its '<', '>' and '&' escaped so that no name can end the element);
 * the page's style and scripts (consumer/write/html/, embedded at build time) draw the header and
 * every note, a flame graph of estimated bytes and the per-type table. A flame graph node is a
 * stack prefix (root, frames outermost first, then the type allocated); its estimate is that
 * of the set of rows under it (rasp_rows_sum), so its interval is the set's, not a sum of
 * intervals. The page's Content-Security-Policy allows its own scripts by hash and nothing
 * else: no other script runs and nothing is fetched. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "rasp/event-meta.h"
#include "writer.h"

/* consumer/write/html/, embedded by embed.py: NUL-terminated, with the base64 SHA-256 of each. */
extern const char rasp__html_css[], rasp__html_css_sha256[];
extern const char rasp__html_guard_js[], rasp__html_guard_js_sha256[];
extern const char rasp__html_js[], rasp__html_js_sha256[];

/* ---- the report as JSON (written into memory, then into the page escaped) ---- */

/* A JSON string of printf's making; -ENOMEM. */
__attribute__((format(printf, 2, 3))) static int json_printf(FILE *js, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = rasp_vstrdupf(fmt, ap);
	va_end(ap);
	if (!s)
		return -ENOMEM;
	rasp_json_string(js, s);
	free(s);
	return 0;
}

/* The shortest text that reads back as v (15 to 17 digits), null when not finite: the page
 * formats the very doubles the text report formats, so both print the same figures. */
static void number(FILE *js, double v)
{
	char buf[40];

	if (!isfinite(v)) {
		fputs("null", js);
		return;
	}
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, js);
}

/* [samples, bytes, bytes_low, bytes_high, objects, objects_low, objects_high, contradicts,
 * low_confidence] */
static void est_fields(FILE *js, const struct rasp_est_total *e)
{
	const double v[] = {e->bytes,	e->bytes_low,	e->bytes_high,
			    e->objects, e->objects_low, e->objects_high};

	fprintf(js, "%" PRIu64, e->samples);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		fputs(", ", js);
		number(js, v[i]);
	}
	fprintf(js, ", %d, %d", e->contradicts ? 1 : 0, e->low_confidence ? 1 : 0);
}

/* ["label", "value"], the header's lines as the text report writes them. */
__attribute__((format(printf, 4, 5))) static int pair(FILE *js, bool *first, const char *label,
						      const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = rasp_vstrdupf(fmt, ap);
	va_end(ap);
	if (!s)
		return -ENOMEM;
	fputs(*first ? "\n  [" : ",\n  [", js);
	rasp_json_string(js, label);
	fputs(", ", js);
	rasp_json_string(js, s);
	fputc(']', js);
	free(s);
	*first = false;
	return 0;
}

static int process_line(FILE *js, bool *first, const struct rasp_tally *t,
			const struct rasp_tally_process *p)
{
	const char *name = rasp_tally_process_name(t, p);
	char who[48], means[96];
	const char *how = "";

	if (p->pid == RASP_ID_UNKNOWN)
		snprintf(who, sizeof(who), "unknown (no vpid context)");
	else
		snprintf(who, sizeof(who), "%" PRId64, p->pid);
	if (p->mean_low == p->mean_high)
		snprintf(means, sizeof(means), "sampling mean %.0f bytes", p->mean_low);
	else
		snprintf(means, sizeof(means), "sampling means %.0f to %.0f bytes", p->mean_low,
			 p->mean_high);
	if (p->samples_assumed)
		how = p->samples_assumed == p->samples ? " (ASSUMED)" : " (partly ASSUMED)";
	else if (p->declared && !p->configured)
		how = " (.NET's, fixed: an EventPipe file)";
	return pair(js, first, "process", "%s%s%s, %" PRIu64 " sample%s, %s%s", who,
		    name && p->pid != RASP_ID_UNKNOWN ? " " : "",
		    name && p->pid != RASP_ID_UNKNOWN ? name : "", p->samples,
		    p->samples == 1 ? "" : "s", means, how);
}

static int header(const struct rasp_report_view *v, FILE *js)
{
	static const char *const keys[] = {"type", "kind", "thread", "process", "site", "stack"};
	const struct rasp_tally *t = v->tally;
	uint64_t sampled = 0;
	double low = 0, high = 0;
	char buf[64], by[64] = "";
	bool first = true;
	int ret;

	fputs("  \"title\": ", js);
	ret = json_printf(js, "rasp report: %" PRIu64 " %s sample%s%s%s", t->samples,
			  RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
			  t->samples == 1 ? "" : "s", rasp_tally_duration_ns(t) ? " over " : "",
			  rasp_tally_duration_ns(t)
			      ? rasp_format_duration(rasp_tally_duration_ns(t), buf, sizeof(buf))
			      : "");
	fputs(",\n  \"header\": [", js);
	for (size_t i = 0; i < t->ninputs && !ret; i++)
		ret = pair(js, &first, "input", "%s", t->inputs[i]);
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct rasp_tally_process *p = &t->procs[i];

		if (!p->samples)
			continue;
		if (!sampled || p->mean_low < low)
			low = p->mean_low;
		if (!sampled || p->mean_high > high)
			high = p->mean_high;
		sampled++;
	}
	for (size_t i = 0; i < t->nprocs && !ret && sampled <= RASP_HEADER_PROCESSES; i++)
		if (t->procs[i].samples)
			ret = process_line(js, &first, t, &t->procs[i]);
	if (!ret && sampled > RASP_HEADER_PROCESSES)
		ret = pair(js, &first, "processes",
			   "%" PRIu64 " with samples, sampling mean%s %.0f%s%.0f bytes%s", sampled,
			   low == high ? "" : "s", low, low == high ? "" : " to ",
			   low == high ? low : high,
			   rasp_tally_samples_assumed(t) ? " (some ASSUMED: see the notes)" : "");
	if (!ret && rasp_tally_lost_data(t))
		ret = pair(js, &first, "lost", "%" PRIu64 "%s events, %" PRIu64 "%s packets",
			   t->discarded_events, t->discarded_events_unknown ? "+ (unknown)" : "",
			   t->discarded_packets, t->discarded_packets_unknown ? "+ (unknown)" : "");
	else if (!ret && v->notes->incomplete)
		ret = pair(js, &first, "lost",
			   "none reported by the tracer, but the input is INCOMPLETE");
	else if (!ret)
		ret = pair(js, &first, "lost", "none reported");
	if (!ret)
		ret = pair(js, &first, "intervals", "%s confidence",
			   rasp_format_percent(v->opt->confidence, buf, sizeof(buf)));
	for (size_t k = 0, used = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (v->rows->group_by & (1u << k))
			used += (size_t)snprintf(by + used, sizeof(by) - used, "%s%s",
						 used ? ", " : "", keys[k]);
	if (!ret)
		ret = pair(js, &first, "grouped by", "%s", by);
	if (!ret && (v->rows->group_by & RASP_GROUP_WHERE))
		ret = pair(js, &first, "stacks", "%" PRIu64 " of %" PRIu64 " sample%s had one",
			   t->samples_with_stack, t->samples, t->samples == 1 ? "" : "s");
	fputs("],\n", js);
	return ret;
}

static int notes(const struct rasp_report_view *v, FILE *js)
{
	char legend[256];

	fputs("  \"lost_warning\": ", js);
	/* The json report's sentence: above everything else on the page. */
	if (v->notes->lost_data)
		rasp_json_string(js, RASP_LOST_WARNING ".");
	else
		fputs("null", js);
	fputs(",\n  \"notes\": [", js);
	for (size_t i = 0; i < v->notes->n; i++) {
		const struct rasp_note *note = &v->notes->v[i];

		fprintf(js, "%s{\"code\": ", i ? ",\n    " : "\n    ");
		rasp_json_string(js, rasp_note_code(note->code));
		fprintf(js, ", \"level\": \"%s\", \"text\": ",
			strcmp(note->code, "no-samples") == 0 ? "NOTE" : "WARNING");
		rasp_json_string(js, note->text);
		fputc('}', js);
	}
	fprintf(js, "],\n  \"few\": %d,\n  \"few_legend\": ", RASP_FEW_SAMPLES);
	rasp_json_string(js, rasp_format_few_legend(v->opt->confidence, legend, sizeof(legend)));
	fputs(",\n  \"bad_legend\": ", js);
	rasp_json_string(js, RASP_LEGEND_CONTRADICTS);
	fputs(",\n  \"low_legend\": ", js);
	rasp_json_string(js, RASP_LEGEND_DOUBTFUL);
	return 0;
}

struct type_row {
	const char *name;
	struct rasp_est_total est;
};

static int cmp_type(const void *pa, const void *pb)
{
	const struct type_row *a = pa, *b = pb;

	if (a->est.bytes != b->est.bytes)
		return a->est.bytes > b->est.bytes ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The rows of each type summed (rasp_rows_sum: one interval for the type's set of rows),
 * largest first. 0, -ENOMEM or -ERANGE. */
static int type_rows(const struct rasp_report_view *v, struct type_row **out, size_t *nout)
{
	const struct rasp_rows *r = v->rows;
	size_t nt = v->tally->ntypes + 1, n = 0; /* bucket 0: rows not grouped by type */
	size_t *start = calloc(nt + 1, sizeof(*start)), *idx = malloc((r->n + 1) * sizeof(*idx));
	struct type_row *rows = malloc(nt * sizeof(*rows));
	int ret = 0;

	*out = NULL;
	*nout = 0;
	if (!start || !idx || !rows) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r->n; i++)
		start[r->v[i].type + 1]++;
	for (size_t k = 0; k < nt; k++)
		start[k + 1] += start[k];
	for (size_t i = 0; i < r->n; i++)
		idx[start[r->v[i].type]++] = i;
	memmove(start + 1, start, nt * sizeof(*start));
	start[0] = 0;
	for (size_t k = 0; k < nt && !ret; k++) {
		if (start[k + 1] == start[k])
			continue;
		rows[n].name = k ? rasp_rows_type_name(r, v->tally, k - 1) : "(any type)";
		ret = rasp_rows_sum(r, v->tally, idx + start[k], start[k + 1] - start[k],
				    &rows[n].est);
		n++;
	}
	if (!ret)
		qsort(rows, n, sizeof(*rows), cmp_type);
out:
	free(start);
	free(idx);
	if (ret) {
		free(rows);
		return ret;
	}
	*out = rows;
	*nout = n;
	return 0;
}

static int estimates(const struct rasp_report_view *v, struct rasp_flame *g, FILE *js)
{
	struct rasp_flame_node **order = NULL;
	struct type_row *types = NULL;
	size_t ntypes = 0;
	double total = v->rows->total.bytes;
	int ret = rasp_flame_order(g, &order);

	if (!ret)
		ret = type_rows(v, &types, &ntypes);
	if (ret)
		goto out;
	fprintf(js, ",\n  \"confidence\": %.15g,\n  \"confidence_text\": ", v->opt->confidence);
	{
		char buf[32];

		rasp_json_string(js, rasp_format_percent(v->opt->confidence, buf, sizeof(buf)));
	}
	fputs(",\n  \"strings\": [", js);
	for (size_t i = 0; i < g->str.n; i++) {
		fputs(i ? (i % 8 ? ", " : ",\n    ") : "\n    ", js);
		rasp_json_string(js, g->str.v[i]);
	}
	/* [parent, kind, name, detail (-1: none), samples, bytes, ..., low_confidence] */
	fputs("],\n  \"nodes\": [", js);
	for (size_t i = 0; i < g->n; i++) {
		const struct rasp_flame_node *x = order[i];

		fprintf(js, "%s[%" PRId64 ", %u, %" PRIu32 ", %" PRId64 ", ",
			i ? ",\n    " : "\n    ",
			x->parent == UINT32_MAX ? -1 : (int64_t)g->v[x->parent].out, x->kind,
			x->name_id, x->detail_id == UINT32_MAX ? -1 : (int64_t)x->detail_id);
		est_fields(js, &x->est);
		fputc(']', js);
	}
	/* [type, samples, bytes, ..., low_confidence, share] */
	fputs("],\n  \"types\": [", js);
	for (size_t i = 0; i < ntypes; i++) {
		fputs(i ? ",\n    [" : "\n    [", js);
		rasp_json_string(js, types[i].name);
		fputs(", ", js);
		est_fields(js, &types[i].est);
		fputs(", ", js);
		number(js, total > 0 ? types[i].est.bytes / total : 0.0);
		fputc(']', js);
	}
	fputs("],\n  \"total\": [", js);
	est_fields(js, &v->rows->total);
	fputc(']', js);
out:
	free(order);
	free(types);
	return ret;
}

/* GCAllocationTick events (older .NET): biased, never estimates, apart from everything else. */
static void ticks(const struct rasp_report_view *v, FILE *js)
{
	const struct rasp_rows *r = v->rows;

	fputs(",\n  \"ticks\": {\"note\": \"GCAllocationTick events (older .NET: one tick per ~100 "
	      "KB allocated, fixed stride). BIASED: each tick charges the whole stride to the type "
	      "that happened to cross it; these are not estimates and are not part of the figures "
	      "above.\", \"rows\": [",
	      js);
	for (size_t i = 0; i < r->nticks; i++) {
		size_t k = r->ticks[i];

		fputs(i ? ", [" : "[", js);
		rasp_json_string(js, rasp_rows_type_name(r, v->tally, k));
		fprintf(js, ", %" PRIu64 ", %" PRIu64 "]", v->tally->ticks[k].ticks,
			v->tally->ticks[k].amount);
	}
	fprintf(js, "], \"ticks\": %" PRIu64 ", \"allocation_amount\": %" PRIu64 "}", r->tick_count,
		r->tick_amount);
}

/* ---- the page ---- */

/* The JSON inside a script element: '<', '>' and '&' only ever occur in its strings, where
 * \u escapes mean the same, so "</script>" or "<!--" in a name cannot end the element or
 * change how the HTML parser reads it. */
static void put_json(FILE *out, const char *json, size_t len)
{
	size_t run = 0;

	for (size_t i = 0; i < len; i++) {
		const char *esc = json[i] == '<'   ? "\\u003c"
				  : json[i] == '>' ? "\\u003e"
				  : json[i] == '&' ? "\\u0026"
						   : NULL;

		if (!esc)
			continue;
		fwrite(json + run, 1, i - run, out);
		fputs(esc, out);
		run = i + 1;
	}
	fwrite(json + run, 1, len - run, out);
}

static void page(FILE *out, const char *json, size_t len)
{
	/* default-src 'none': nothing is fetched, whatever the page's text says; scripts and
	 * style run only when their bytes are the embedded ones. */
	fprintf(out,
		"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		"script-src 'sha256-%s' 'sha256-%s'; style-src 'sha256-%s'; base-uri 'none'; "
		"form-action 'none'\">\n"
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		"<meta name=\"generator\" content=\"rasp\">\n<title>rasp report</title>\n<style>",
		rasp__html_guard_js_sha256, rasp__html_js_sha256, rasp__html_css_sha256);
	fputs(rasp__html_css, out);
	fputs("</style>\n<script>", out);
	fputs(rasp__html_guard_js, out);
	fputs("</script>\n</head>\n<body>\n"
	      "<div id=\"rasp-status\">loading: this report is drawn by its script</div>\n"
	      "<div id=\"rasp-errors\"></div>\n"
	      "<noscript><p>This report is drawn by its script, which is not running here. The "
	      "same figures are in rasp's json format.</p></noscript>\n"
	      "<main id=\"rasp-report\"></main>\n"
	      "<script type=\"application/json\" id=\"rasp-data\">",
	      out);
	put_json(out, json, len);
	fputs("</script>\n<script>", out);
	fputs(rasp__html_js, out);
	fputs("</script>\n</body>\n</html>\n", out);
}

static int write_html(const struct rasp_report_view *v, FILE *out)
{
	struct rasp_flame g = {0};
	char *json = NULL;
	size_t len = 0;
	FILE *js = open_memstream(&json, &len);
	int ret;

	if (!js)
		return -ENOMEM;
	fputs("{\n  \"version\": 1,\n", js);
	ret = header(v, js);
	if (!ret)
		ret = notes(v, js);
	if (!ret)
		ret = rasp_flame_build(v, &g);
	if (!ret)
		ret = rasp_flame_estimate(v, &g);
	if (!ret)
		ret = estimates(v, &g, js);
	if (!ret) {
		ticks(v, js);
		fputs("\n}\n", js);
	}
	/* The memory stream's only failure is memory. */
	if ((ferror(js) | fclose(js)) && !ret)
		ret = -ENOMEM;
	if (!ret)
		page(out, json, len);
	free(json);
	rasp_flame_free(&g);
	return ret;
}

const struct rasp_writer rasp_writer_html = {
    .name = "html", .write = write_html, .stacks = true, .suffix = ".html"};
