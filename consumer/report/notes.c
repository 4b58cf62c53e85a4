/* Notes (notes.h): the sentences that qualify a report's figures. */
#include "notes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/event-meta.h"
#include "rasp/rasp.h" /* RASP_DEFAULT_SAMPLING_MEAN: .NET's */

/* Per-process notes beyond this are summarised: a trace of 10^5 processes gets one line. */
#define MAX_PROCESS_NOTES 5

__attribute__((format(printf, 3, 4))) static int add(struct rasp_notes *n, const char *code,
						     const char *fmt, ...)
{
	struct rasp_note *v;
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = rasp_vstrdupf(fmt, ap);
	va_end(ap);
	v = s ? realloc(n->v, (n->n + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(s);
		return -ENOMEM;
	}
	n->v = v;
	n->v[n->n++] = (struct rasp_note){code, s};
	return 0;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static int lost_note(const struct rasp_tally *t, struct rasp_notes *n)
{
	char events[64], packets[80] = "";

	if (t->discarded_events_unknown)
		snprintf(events, sizeof(events), "an unknown number of events");
	else
		snprintf(events, sizeof(events), "%" PRIu64 " event%s", t->discarded_events,
			 plural(t->discarded_events));
	if (t->discarded_packets_unknown)
		snprintf(packets, sizeof(packets), " and an unknown number of packets");
	else if (t->discarded_packets)
		snprintf(packets, sizeof(packets), " and %" PRIu64 " packet%s",
			 t->discarded_packets, plural(t->discarded_packets));
	return add(n, "lost-data",
		   "the tracer discarded %s%s: lost AllocationSampled events carried bytes no "
		   "estimate can recover, so every figure is too low by an unknown amount "
		   "(record with larger buffers).",
		   events, packets);
}

static void process_label(const struct rasp_tally *t, const struct rasp_tally_process *p, char *buf,
			  size_t len)
{
	const char *name = rasp_tally_process_name(t, p);

	if (p->pid == RASP_ID_UNKNOWN)
		snprintf(buf, len, "an unknown process (no vpid context)");
	else if (name)
		snprintf(buf, len, "process %" PRId64 " (%s)", p->pid, name);
	else
		snprintf(buf, len, "process %" PRId64, p->pid);
}

static int assumed_notes(const struct rasp_tally *t, const char *mean_flag, struct rasp_notes *n)
{
	uint64_t procs = 0, samples = 0;
	int ret = 0;

	for (size_t i = 0; i < t->nprocs; i++) {
		const struct rasp_tally_process *p = &t->procs[i];
		char label[160];

		if (!p->samples_assumed)
			continue;
		procs++;
		samples += p->samples_assumed;
		if (procs > MAX_PROCESS_NOTES)
			continue;
		process_label(t, p, label, sizeof(label));
		ret = add(
		    n, "assumed-mean",
		    "%s: sampling mean %.0f bytes ASSUMED for %" PRIu64 " of its %" PRIu64
		    " sample%s, which no %s event preceded; right for .NET (fixed at %d), wrong "
		    "for a program that sampled at another mean (set %s).",
		    label, t->default_mean, p->samples_assumed, p->samples, plural(p->samples),
		    RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG, RASP_DEFAULT_SAMPLING_MEAN,
		    mean_flag);
		if (ret)
			return ret;
	}
	if (procs > MAX_PROCESS_NOTES)
		ret = add(n, "assumed-mean",
			  "in all, %" PRIu64 " processes had %" PRIu64
			  " samples weighed with the assumed mean %.0f bytes.",
			  procs, samples, t->default_mean);
	return ret;
}

/* What the tally read: EventPipe files declare their process's mean (rasp_tally_declare_mean,
 * one process a file); anything else (a CTF trace, an lttng-live session) does not. An input
 * that gave no event at all counts as CTF unless every input is accounted for by a file. */
static void input_kinds(const struct rasp_tally *t, bool *eventpipe, bool *ctf)
{
	size_t declared = 0, other = 0;

	for (size_t i = 0; i < t->nprocs; i++)
		t->procs[i].declared ? declared++ : other++;
	*eventpipe = declared > 0;
	*ctf = other > 0 || declared == 0 || t->ninputs > declared;
}

static bool only_eventpipe(const struct rasp_tally *t)
{
	bool eventpipe, ctf;

	input_kinds(t, &eventpipe, &ctf);
	return eventpipe && !ctf;
}

/* How to record AllocationSampled, for the kinds of input read. */
#define EVENTPIPE_HINT                                                                             \
	"record with dotnet-trace collect --providers "                                            \
	"Microsoft-Windows-DotNETRuntime:0x80000000000:4 (the AllocationSampling keyword, .NET "   \
	"10 and later; rasp record -p PID asks for it), or start the program with "                \
	"DOTNET_EnableEventPipe=1 and "                                                            \
	"DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4"
#define LTTNG_HINT                                                                                 \
	"was the event enabled (lttng enable-event -u %s), and does the program allocate "         \
	"through librasp, or run .NET with DOTNET_EnableEventLog=1 and the sampling keyword?"

/* The no-samples note of an input that holds events, none of them samples. */
static int no_samples_note(const struct rasp_tally *t, struct rasp_notes *n)
{
	uint64_t events = t->other_events + t->ticks_total + t->configured;
	bool eventpipe, ctf;

	input_kinds(t, &eventpipe, &ctf);
	if (!eventpipe)
		return add(n, "no-samples",
			   "no %s events among the %" PRIu64 " events read: " LTTNG_HINT,
			   RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG, events,
			   RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG);
	if (!ctf)
		return add(
		    n, "no-samples",
		    "no AllocationSampled events among the %" PRIu64
		    " events of the EventPipe input: it was recorded without the "
		    "AllocationSampling keyword (0x80000000000) of "
		    "Microsoft-Windows-DotNETRuntime, or from a .NET older than 10; " EVENTPIPE_HINT
		    ".",
		    events);
	return add(n, "no-samples",
		   "no %s events among the %" PRIu64
		   " events read: for the EventPipe files, " EVENTPIPE_HINT
		   "; for the LTTng traces, " LTTNG_HINT,
		   RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG, events,
		   RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG);
}

/* The no-samples note of an input without any event. */
static int no_events_note(const struct rasp_tally *t, struct rasp_notes *n)
{
	bool eventpipe, ctf;

	input_kinds(t, &eventpipe, &ctf);
	if (eventpipe && !ctf)
		return add(n, "no-samples",
			   "the EventPipe input holds no events at all: the program allocated "
			   "nothing while it was recorded, or the session enabled none of its "
			   "events; " EVENTPIPE_HINT ".");
	return add(n, "no-samples",
		   "the input holds no events at all: the traced program emitted none (does it "
		   "allocate through librasp, and did a session enable %s?)%s",
		   RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
		   eventpipe ? "; for the EventPipe files, " EVENTPIPE_HINT "." : ".");
}

const char *rasp_note_code(const char *code)
{
	static const char *const codes[] = {
	    "lost-data",      "skipped-events",	 "assumed-mean", "input",	 "no-samples",
	    "model-mismatch", "unmatched-frees", "lost-frees",	 "no-lifetimes", "inuse-moment"};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(code, codes[i]) == 0)
			return codes[i];
	return "input";
}

/* What qualifies the in-use figures (a report of what is live): frees without their sample,
 * samples without their free, a moment past the end. */
static int live_notes(const struct rasp_tally *t, const struct rasp_rows *rows,
		      struct rasp_notes *out)
{
	const struct rasp_live *l = t->live;
	int ret = 0;

	if (!rows->live_known)
		return add(out, "no-lifetimes", "%s", rasp_live_unavailable_why(l));
	if (l->frees_unmatched)
		ret = add(out, "unmatched-frees",
			  "%" PRIu64 " of %" PRIu64 " frees (%s events, or one of a "
			  "SampledObjectsFreed) had no sample live at their address (objects "
			  "allocated before the recording started, or whose sample "
			  "was lost): counted, and no figure changes for them. Objects allocated "
			  "before the recording started and still live are in no in-use figure.",
			  l->frees_unmatched, l->frees,
			  RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_LTTNG);
	if (!ret && l->replaced)
		ret = add(out, "lost-frees",
			  "%" PRIu64 " sample%s had no free before another sample came at the same "
			  "address (a lost free event): each counts as freed when the "
			  "next sample came.",
			  l->replaced, plural(l->replaced));
	if (!ret && l->size_mismatch)
		ret = add(out, "lost-frees",
			  "%" PRIu64 " free%s gave another ObjectSize than %s sample: the events "
			  "disagree (paired by address all the same).",
			  l->size_mismatch, plural(l->size_mismatch),
			  l->size_mismatch == 1 ? "its" : "their");
	if (!ret && l->no_address)
		ret = add(out, "no-lifetimes",
			  "%" PRIu64 " sample%s carried no Address: counted as allocated, never as "
			  "live.",
			  l->no_address, plural(l->no_address));
	if (!ret && rasp_tally_lost_data(t))
		ret = add(out, "lost-frees",
			  "events were lost: frees among them leave their objects counted as live, "
			  "so the in-use figures may be too high.");
	if (!ret && l->moment == RASP_LIVE_AT && !l->moment_set)
		ret = add(out, "inuse-moment",
			  "the recording ended %.3f s after its first event, before --at %g s: the "
			  "in-use figures are of its end.",
			  (double)rasp_tally_duration_ns(t) / 1e9, l->at_seconds);
	return ret;
}

int rasp_notes_build(const struct rasp_tally *t, const struct rasp_rows *rows,
		     const char *mean_flag, struct rasp_notes *out)
{
	int ret = 0;

	*out = (struct rasp_notes){0};
	for (size_t i = 0; i < t->nwarnings && !ret; i++)
		ret = add(out, "input", "%s", t->warnings[i]);
	/* Part of an input is missing: events are lost as surely as discarded ones. */
	out->incomplete = t->nwarnings > 0;
	out->lost_data = out->incomplete;
	if (!ret && rasp_tally_lost_data(t)) {
		out->lost_data = 1;
		ret = lost_note(t, out);
	}
	if (!ret && t->skipped)
		ret = add(out, "skipped-events",
			  "%" PRIu64 " malformed event%s skipped (strict=false): the estimates "
			  "leave them out.",
			  t->skipped, t->skipped == 1 ? " was" : "s were");
	if (!ret && rasp_tally_samples_assumed(t)) {
		out->assumed_mean = 1;
		ret = assumed_notes(t, mean_flag, out);
	}
	if (!ret && rows && rows->contradictions)
		ret =
		    add(out, "model-mismatch",
			"%zu estimate%s outside even %s one-in-a-million interval: the samples "
			"contradict the sampling model (a wrong sampling mean, see any ASSUMED "
			"mean; or events that no Bernoulli sampler drew), so those figures are not "
			"to be trusted.",
			rows->contradictions, rows->contradictions == 1 ? " lies" : "s lie",
			rows->contradictions == 1 ? "its" : "their");
	if (!ret && rows && rows->inuse && t->samples)
		ret = live_notes(t, rows, out);
	if (!ret && rows && rows->unplaced_samples && only_eventpipe(t))
		ret =
		    add(out, "unplaced-frames",
			"%" PRIu64 " of the %" PRIu64 " samples with a stack were allocated in "
			"code that no method or loaded-object event of the input names (shown as "
			"[no object] 0x...), so their sites cannot be named. From a .NET program, "
			"the file lacks the MethodLoadVerbose events of those methods (the "
			"runtime's Jit and Loader keywords, 0x18) and the rundown that names the "
			"methods still alive at its end, which rasp record -p asks for; from a "
			"rasp program (its own EventPipe writer or rasp convert), it lacks the "
			"Rasp-Runtime ObjectLoaded events that name native code: written by an "
			"older rasp, or by .NET's tools, which write none.",
			rows->unplaced_samples, rows->stacked_samples);
	else if (!ret && rows && rows->unplaced_samples)
		ret =
		    add(out, "unplaced-frames",
			"%" PRIu64 " of the %" PRIu64 " samples with a stack were allocated in "
			"code that lies in no object the trace recorded (shown as [no object] "
			"0x...): the trace lacks the state dump of those processes' loaded objects "
			"(lttng_ust_statedump:* and lttng_ust_dl:*, which rasp record enables; a "
			"session filtering on $ctx.procname drops the state dump, which LTTng-UST "
			"emits from its own thread), so their sites cannot be named.",
			rows->unplaced_samples, rows->stacked_samples);
	if (!ret && t->samples == 0) {
		if (out->incomplete)
			ret =
			    add(out, "no-samples",
				"no %s events were read, and the input is incomplete (see above): "
				"the samples may be in what is missing.",
				RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG);
		else if (t->ticks_total)
			ret =
			    add(out, "no-samples",
				"no %s events, but %" PRIu64 " GCAllocationTick events: the trace "
				"comes from a .NET older than 10, or one recorded without the "
				"AllocationSampling keyword (0x80000000000); the biased tick "
				"section is all it holds.",
				RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG, t->ticks_total);
		else if (t->other_events || t->configured)
			ret = no_samples_note(t, out);
		else
			ret = no_events_note(t, out);
	}
	if (ret)
		rasp_notes_free(out);
	return ret;
}

void rasp_notes_free(struct rasp_notes *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i].text);
	free(n->v);
	*n = (struct rasp_notes){0};
}
