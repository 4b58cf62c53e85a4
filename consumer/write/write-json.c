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

static void est(FILE *out, const struct rasp_est_total *e)
{
	fprintf(out, "\"samples\": %" PRIu64 ", \"bytes\": ", e->samples);
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
	/* The row's samples contradict the sampling model (the text report's "!"). */
	fprintf(out, ", \"model_mismatch\": %s", e->contradicts ? "true" : "false");
	/* Too few samples for the spread of sizes to trust the objects interval (text's "?"). */
	fprintf(out, ", \"low_confidence\": %s", e->low_confidence ? "true" : "false");
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
		est(out, &row->est);
		fprintf(out, ", \"share\": %.6f}", row->share);
	}
	fputs(rows->n ? "\n  ],\n  \"total\": {" : "],\n  \"total\": {", out);
	est(out, &rows->total);
	fputs("},\n  \"allocation_ticks\": {\n    \"note\": \"GCAllocationTick_V2/V3/V4: fixed "
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
