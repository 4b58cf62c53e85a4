/* The json writer: exact numbers and every note, machine-stable (docs/consumer.md lists the
 * keys; new keys are only ever added). */
#include <inttypes.h>
#include <string.h>

#include "write-diff.h"
#include "writer.h"

static void id(FILE *out, int64_t v)
{
	if (v == RASP_ID_UNKNOWN)
		fputs("null", out);
	else
		fprintf(out, "%" PRId64, v);
}

/* "process": id, "process_name": name or null (prefix written as given). */
static void process_fields(FILE *out, const struct rasp_tally *t, int64_t pid, const char *id_key,
			   const char *name_key)
{
	const struct rasp_tally_process *p = rasp_tally_find_process(t, pid);
	const char *name = p ? rasp_tally_process_name(t, p) : NULL;

	fprintf(out, "\"%s\": ", id_key);
	id(out, pid);
	fprintf(out, ", \"%s\": ", name_key);
	if (name)
		rasp_json_string(out, name);
	else
		fputs("null", out);
}

/* An estimate's bytes and objects with their intervals, as JSON members. */
static void figures(FILE *out, const struct rasp_est_total *e)
{
	fputs("\"bytes\": ", out);
	rasp_json_number(out, e->bytes, "%.0f");
	fputs(", \"bytes_low\": ", out);
	rasp_json_number(out, e->bytes_low, "%.0f");
	fputs(", \"bytes_high\": ", out);
	rasp_json_number(out, e->bytes_high, "%.0f");
	fputs(", \"objects\": ", out);
	rasp_json_number(out, e->objects, "%.1f");
	fputs(", \"objects_low\": ", out);
	rasp_json_number(out, e->objects_low, "%.1f");
	fputs(", \"objects_high\": ", out);
	rasp_json_number(out, e->objects_high, "%.1f");
}

static void est(FILE *out, const struct rasp_est_total *e)
{
	fprintf(out, "\"samples\": %" PRIu64 ", ", e->samples);
	figures(out, e);
	/* The row's samples contradict the sampling model (the text report's "!"). */
	fprintf(out, ", \"model_mismatch\": %s", e->contradicts ? "true" : "false");
	/* Too few samples for the spread of sizes to trust the objects interval (text's "?"). */
	fprintf(out, ", \"low_confidence\": %s", e->low_confidence ? "true" : "false");
}

/* The in-use figures of a row or the total, and what became of its bytes; none when the
 * input cannot say what is live. */
static void inuse(FILE *out, const struct rasp_rows *rows, const struct rasp_est_total *e,
		  double share, const struct rasp_row_life *life)
{
	/* An input that cannot say what died (an older recording, .NET): no keys at all, so
	 * no reader takes zeros for "nothing live". */
	if (!rows->live_known)
		return;
	fprintf(out, ", \"inuse_samples\": %" PRIu64 ", \"inuse_bytes\": ", e->samples);
	rasp_json_number(out, e->bytes, "%.0f");
	fputs(", \"inuse_bytes_low\": ", out);
	rasp_json_number(out, e->bytes_low, "%.0f");
	fputs(", \"inuse_bytes_high\": ", out);
	rasp_json_number(out, e->bytes_high, "%.0f");
	fputs(", \"inuse_objects\": ", out);
	rasp_json_number(out, e->objects, "%.1f");
	fputs(", \"inuse_objects_low\": ", out);
	rasp_json_number(out, e->objects_low, "%.1f");
	fputs(", \"inuse_objects_high\": ", out);
	rasp_json_number(out, e->objects_high, "%.1f");
	fprintf(out, ", \"inuse_share\": %.6f, \"freed_share\": %.6f", share, life->freed);
	/* The lifetimes' column group: shares of the estimated bytes allocated. */
	fprintf(out,
		", \"lifetimes\": {\"freed_within_1ms\": %.6f, \"freed_within_1s\": %.6f, "
		"\"never_freed\": %.6f}",
		life->within_short, life->within_long, life->never);
}

/* Per-row timelines: the first rows only (the largest), so a report of many rows stays
 * small; the total's is complete. */
#define TIMELINE_ROWS 20

static void point(FILE *out, const struct rasp_est_total *e)
{
	fputc('{', out);
	figures(out, e);
	fputc('}', out);
}

/* "inuse": the moment and what the input said of lifetimes; "timeline": what was live over
 * time, the total and the first rows, each point's time in seconds from the first event. */
static int live_keys(FILE *out, const struct rasp_report_view *v)
{
	const struct rasp_tally *t = v->tally;
	const struct rasp_rows *rows = v->rows;
	const struct rasp_live *l = t->live;
	static const char *const moments[] = {"end", "peak", "at"};
	size_t npoints = rows->live_known ? rasp_live_npoints(l) : 0;
	size_t nrows = rows->n < TIMELINE_ROWS ? rows->n : TIMELINE_ROWS;

	if (!rows->live_known)
		return 0;
	fprintf(out, ",\n  \"inuse\": {\"known\": %s, \"moment\": \"%s\", \"time_s\": ",
		rows->live_known ? "true" : "false", moments[l->moment]);
	if (t->timed && rows->moment_ns != INT64_MIN)
		fprintf(out, "%.9f", ((double)rows->moment_ns - (double)t->first_ns) / 1e9);
	else
		fputs("null", out);
	fprintf(out,
		", \"frees\": %" PRIu64 ", \"frees_paired\": %" PRIu64
		", \"frees_unmatched\": %" PRIu64 ", \"size_mismatches\": %" PRIu64
		", \"lost_frees\": %" PRIu64 ", \"heaps_destroyed\": %" PRIu64
		", \"samples_ended_by_heaps\": %" PRIu64 ", \"live_samples\": %zu}",
		l->frees, l->frees_paired, l->frees_unmatched, l->size_mismatch, l->replaced,
		l->heap_destroyed, l->heap_freed, l->n);
	fputs(",\n  \"timeline\": [", out);
	for (size_t k = 0; k < npoints; k++) {
		struct rasp_est_total e;
		int64_t ns;
		int ret = rasp_rows_timeline(rows, t, SIZE_MAX, k, &ns, &e);

		if (ret)
			return ret;
		fprintf(out, "%s{\"time_s\": %.9f, \"total\": ", k ? ",\n    " : "\n    ",
			((double)ns - (double)t->first_ns) / 1e9);
		point(out, &e);
		fputs(", \"rows\": [", out);
		for (size_t i = 0; i < nrows; i++) {
			ret = rasp_rows_timeline(rows, t, i, k, &ns, &e);
			if (ret)
				return ret;
			fputs(i ? ", " : "", out);
			point(out, &e);
		}
		fputs("]}", out);
	}
	fputs(npoints ? "\n  ]" : "]", out);
	return 0;
}

/* "stack": the frames, innermost first, each with what is known of it. */
static void stack(FILE *out, const struct rasp_report_view *v, const struct rasp_row *row)
{
	size_t depth = rasp_row_depth(v->tally, row);

	fputs("\"stack\": [", out);
	for (size_t k = 0; k < depth; k++) {
		struct rasp_sym_frame f;

		if (rasp_row_frame(v->rows, v->tally, row, k, &f))
			break;
		fputs(k ? ", {\"name\": " : "{\"name\": ", out);
		rasp_json_string(out, f.name);
		fputs(", \"function\": ", out);
		if (f.function)
			rasp_json_string(out, f.function);
		else
			fputs("null", out);
		fputs(", \"file\": ", out);
		if (f.file)
			rasp_json_string(out, f.file);
		else
			fputs("null", out);
		fprintf(out, ", \"line\": %u, \"object\": ", f.line);
		/* A .NET method is not an object file: offset is then from the method's start. */
		if (f.module && !f.module->method)
			rasp_json_string(out, f.module->path);
		else
			fputs("null", out);
		fprintf(out, ", \"offset\": %" PRIu64 "}", f.offset);
	}
	fputs("], ", out);
}

static void processes(FILE *out, const struct rasp_tally *t)
{
	bool first = true;

	/* sampling_means: the SamplingConfigured means (kept from the first version). */
	fputs(",\n  \"sampling_means\": [", out);
	for (size_t i = 0; i < t->nprocs; i++) {
		if (!(t->procs[i].mean > 0))
			continue;
		fputs(first ? "{\"process\": " : ", {\"process\": ", out);
		id(out, t->procs[i].pid);
		fputs(", \"sampling_mean\": ", out);
		rasp_json_number(out, t->procs[i].mean, "%.15g");
		fputc('}', out);
		first = false;
	}
	fputs("],\n  \"processes\": [", out);
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct rasp_tally_process *p = &t->procs[i];

		fputs(i ? ",\n    {" : "\n    {", out);
		process_fields(out, t, p->pid, "pid", "name");
		fprintf(out,
			", \"samples\": %" PRIu64 ", \"samples_assumed_mean\": %" PRIu64
			", \"sampling_mean_low\": ",
			p->samples, p->samples_assumed);
		rasp_json_number(out, p->samples ? p->mean_low : 0, "%.15g");
		fputs(", \"sampling_mean_high\": ", out);
		rasp_json_number(out, p->samples ? p->mean_high : 0, "%.15g");
		fprintf(out,
			", \"sampling_configured_events\": %" PRIu64
			", \"sampling_mean_fixed_by_format\": %s}",
			p->configured, p->declared ? "true" : "false");
	}
	fputs(t->nprocs ? "\n  ]" : "]", out);
}

static int write_json(const struct rasp_report_view *v, FILE *out)
{
	static const char *const keys[] = {"type", "kind", "thread", "process", "site", "stack"};
	const struct rasp_tally *t = v->tally;
	const struct rasp_rows *rows = v->rows;
	unsigned by = rows->group_by;
	const char *sep = "";
	char buf[32];

	fputs("{\n  \"sampling_mean\": ", out);
	rasp_json_number(out, v->opt->sampling_mean, "%.15g");
	processes(out, t);
	fprintf(out, ",\n  \"confidence\": %.15g,\n  \"group_by\": [", v->opt->confidence);
	for (int k = 0; k < 6; k++) {
		if (by & (1u << k)) {
			fprintf(out, "%s\"%s\"", sep, keys[k]);
			sep = ", ";
		}
	}
	/* How rows are named, so that rasp diff compares reports named alike: .NET names as
	 * C# writes them or as the trace gives them, and the site rule. */
	fprintf(out, "],\n  \"names\": \"%s\",\n  \"site\": \"%s\",\n  \"site_exclude\": [",
		rows->clr_names ? "csharp" : "runtime", rows->site_rule.leaf ? "leaf" : "user");
	for (size_t i = 0; i < rows->site_rule.nexclude; i++) {
		fputs(i ? ", " : "", out);
		rasp_json_string(out, rows->site_rule.exclude[i]);
	}
	fputs("],\n  \"inputs\": [", out);
	for (size_t i = 0; i < t->ninputs; i++) {
		fputs(i ? ", " : "", out);
		rasp_json_string(out, t->inputs[i]);
	}
	fputs("],\n  \"duration_ns\": ", out);
	if (t->timed)
		fprintf(out, "%" PRIu64, rasp_tally_duration_ns(t));
	else
		fputs("null", out);
	fprintf(out,
		",\n  \"discarded_events\": %" PRIu64 ",\n  \"discarded_events_unknown\": %" PRIu64
		",\n  \"discarded_packets\": %" PRIu64
		",\n  \"discarded_packets_unknown\": %" PRIu64 ",\n  \"skipped_events\": %" PRIu64
		",\n  \"other_events\": %" PRIu64
		",\n  \"estimates_too_low\": %s,\n  \"incomplete_input\": %s,\n  "
		"\"assumed_mean\": %s,\n",
		t->discarded_events, t->discarded_events_unknown, t->discarded_packets,
		t->discarded_packets_unknown, t->skipped, t->other_events,
		v->notes->lost_data ? "true" : "false", v->notes->incomplete ? "true" : "false",
		v->notes->assumed_mean ? "true" : "false");
	if (v->notes->lost_data)
		fputs("  \"warning\": \"" RASP_LOST_WARNING "\",\n", out);
	fputs("  \"notes\": [", out);
	for (size_t i = 0; i < v->notes->n; i++) {
		fprintf(out, "%s{\"code\": \"%s\", \"text\": ", i ? ",\n    " : "\n    ",
			v->notes->v[i].code);
		rasp_json_string(out, v->notes->v[i].text);
		fputc('}', out);
	}
	fputs(v->notes->n ? "\n  ],\n  \"rows\": [" : "],\n  \"rows\": [", out);
	for (size_t i = 0; i < rows->n; i++) {
		const struct rasp_row *row = &rows->v[i];

		fputs(i ? ",\n    {" : "\n    {", out);
		if (by & RASP_GROUP_TYPE) {
			fputs("\"type\": ", out);
			rasp_json_string(out, rasp_row_type(t, row));
			fputs(", ", out);
		}
		if (by & RASP_GROUP_KIND)
			fprintf(out, "\"kind\": \"%s\", ",
				rasp_kind_name(row->kind, buf, sizeof(buf)));
		if (by & RASP_GROUP_THREAD) {
			fputs("\"thread\": ", out);
			id(out, row->thread);
			fputs(", ", out);
		}
		if (by & RASP_GROUP_PROCESS) {
			process_fields(out, t, row->process, "process", "process_name");
			fputs(", ", out);
		}
		if (by & RASP_GROUP_SITE) {
			fputs("\"site\": ", out);
			rasp_json_string(out, rasp_row_site(rows, row));
			fputs(", ", out);
		}
		if (by & RASP_GROUP_STACK)
			stack(out, v, row);
		/* bytes, objects and share: allocated, whatever the rows are sorted by. */
		est(out, &row->alloc);
		fprintf(out, ", \"share\": %.6f",
			rows->alloc_total.bytes > 0 ? row->alloc.bytes / rows->alloc_total.bytes
						    : 0.0);
		inuse(out, rows, &row->inuse,
		      rows->inuse_total.bytes > 0 ? row->inuse.bytes / rows->inuse_total.bytes
						  : 0.0,
		      &row->life);
		fputc('}', out);
	}
	fputs(rows->n ? "\n  ],\n  \"total\": {" : "],\n  \"total\": {", out);
	est(out, &rows->alloc_total);
	inuse(out, rows, &rows->inuse_total, rows->inuse_total.bytes > 0 ? 1.0 : 0.0, &rows->life);
	fputc('}', out);
	{
		int ret = live_keys(out, v);

		if (ret)
			return ret;
	}
	fputs(",\n  \"allocation_ticks\": {\n    \"note\": \"GCAllocationTick_V2/V3/V4: fixed "
	      "~100 KB stride, biased, not estimates, not in rows or total\",\n    \"rows\": [",
	      out);
	for (size_t i = 0; i < rows->nticks; i++) {
		size_t k = rows->ticks[i];

		fputs(i ? ",\n      {\"type\": " : "\n      {\"type\": ", out);
		rasp_json_string(out, rasp_rows_type_name(rows, t, k));
		fprintf(out, ", \"ticks\": %" PRIu64 ", \"allocation_amount\": %" PRIu64 "}",
			t->ticks[k].ticks, t->ticks[k].amount);
	}
	fprintf(out,
		"%s],\n    \"ticks\": %" PRIu64 ",\n    \"allocation_amount\": %" PRIu64
		"\n  }\n}\n",
		rows->nticks ? "\n    " : "", rows->tick_count, rows->tick_amount);
	return 0;
}

const struct rasp_writer rasp_writer_json = {
    .name = "json", .write = write_json, .write_diff = rasp_diff_write_json, .suffix = ".json"};
