/* The text report's header (write-text.c): the inputs, the duration, each process with its
 * sampling mean(s) (or a count of them past RASP_HEADER_PROCESSES), what was lost, the
 * confidence, under --inuse the moment and the frees, then the notes; wrapped to the width,
 * each continuation under its value. */
#define _GNU_SOURCE /* open_memstream */
#include "text-header.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/event-meta.h"
#include "sanitize.h"
#include "text-fit.h"
#include "writer.h"

void rasp__text_process(const struct rasp_tally *t, int64_t pid, char *buf, size_t len)
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

/* The header's lines, one a line, into out. */
static void header_lines(const struct rasp_report_view *v, FILE *out)
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
			rasp__text_process(t, p->pid, label, sizeof(label));
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
}

/* Writes each line of text (lines ending in '\n') wrapped to width: a header line's
 * continuation under its value ("  input:     " is 13 columns), a note's under its text.
 * Adds the lines written to *lines. 0 or -ENOMEM. */
static int put_lines(FILE *out, char *text, size_t width, size_t *lines)
{
	for (char *p = text; *p;) {
		char *nl = strchr(p, '\n');
		int ret;

		if (nl)
			*nl = '\0';
		ret =
		    rasp_text_put_wrapped(out, p, width, strncmp(p, "  ", 2) == 0 ? 13 : 2, lines);
		if (ret || !nl)
			return ret;
		p = nl + 1;
	}
	return 0;
}

/* The header, wrapped; its lines in *lines (the blank line after it included). */
int rasp__text_header(const struct rasp_report_view *v, FILE *out, size_t width, size_t *lines)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	int ret;

	if (!m)
		return -ENOMEM;
	header_lines(v, m);
	if (fclose(m) != 0) {
		free(text);
		return -ENOMEM;
	}
	ret = put_lines(out, text, width, lines);
	free(text);
	fputc('\n', out);
	*lines += 1;
	return ret;
}
