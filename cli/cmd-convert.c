/* rasp convert: a recording (CTF traces, .nettrace files, or a live session) written as one
 * EventPipe .nettrace file that .NET tools (TraceEvent, PerfView, dotnet-trace) open: the
 * inputs go through filter.utils.muxer into sink.rasp.nettrace, in process. The output file
 * appears only once complete. What the file cannot say (events lost in unknown numbers,
 * other processes, events rasp does not write) is said on stderr. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sink-nettrace-stats.h"

enum { F_OUTPUT, F_PID, NFLAGS };

static const struct rasp_cli_flag flags[NFLAGS] = {
    [F_OUTPUT] = {"output", 'o', "FILE", "the .nettrace file to write (required)"},
    [F_PID] = {"pid", 0, "PID",
	       "the process to write when the inputs hold several (a .nettrace file holds one)"},
};

struct convert_args {
	const char *output;
	int64_t pid;
};

static int on_flag(void *ctx, size_t f, const char *value)
{
	struct convert_args *a = ctx;
	uint64_t v;

	if (f == F_OUTPUT) {
		a->output = value;
		return 0;
	}
	if (rasp_cli_parse_u64("convert", "--pid", value, 0, INT32_MAX, false, &v))
		return -1;
	a->pid = (int64_t)v;
	return 0;
}

static void usage(void)
{
	fputs("usage: rasp convert -o OUT.nettrace [--pid PID] TRACE...\n"
	      "Writes the AllocationSampled events of one process (and rasp's SamplingConfigured,\n"
	      "so the sampling mean is known) as an EventPipe NetTrace file, the format of\n"
	      "dotnet-trace: TraceEvent, PerfView and rasp report read it. TRACE: directories\n"
	      "recorded by rasp record or lttng, .nettrace files, or one live session URL.\n",
	      stdout);
	rasp_cli_args_help(NULL, flags, NFLAGS);
}

int rasp_cli_convert(int argc, char **argv)
{
	const char *cmd = "convert";
	struct convert_args a = {.pid = -1};
	struct rasp_nettrace_sink_stats st = {0};
	struct rasp_inputs in = {0};
	struct rasp_tally *warnings;
	int first, rc;

	rc = rasp_cli_args_parse(cmd, argc, argv, NULL, NULL, flags, NFLAGS, on_flag, &a, false,
				 &first);
	if (rc != RASP_CLI_ARGS_OK) {
		if (rc == RASP_CLI_ARGS_HELP)
			usage();
		return rc == RASP_CLI_ARGS_HELP ? 0 : 2;
	}
	if (!a.output || !*a.output) {
		rasp_cli_error(cmd, "no output file: give -o OUT.nettrace");
		return 2;
	}
	if (first >= argc) {
		rasp_cli_error(cmd,
			       "no TRACE given (usage: rasp convert -o OUT.nettrace TRACE...)");
		return 2;
	}
	/* A tally only to collect what inputs.c finds doubtful (incomplete traces). */
	warnings = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	if (!warnings) {
		rasp_cli_error(cmd, "out of memory");
		return 1;
	}
	rc = rasp_inputs_collect(cmd, argv + first, (size_t)(argc - first), &in, warnings);
	if (!rc)
		rc = rasp_graph_convert(cmd, &in, a.output, a.pid, &st, warnings);
	for (size_t i = 0; i < warnings->nwarnings; i++)
		rasp_cli_error(cmd, "warning: %s", warnings->warnings[i]);
	rasp_inputs_free(&in);
	rasp_tally_destroy(warnings);
	if (rc)
		return 1;
	if (st.pid >= 0)
		fprintf(stderr,
			"rasp convert: wrote %" PRIu64 " events of process %" PRId64 " to %s\n",
			st.written, st.pid, a.output);
	else
		fprintf(stderr, "rasp convert: no event to write; %s holds an empty trace\n",
			a.output);
	if (st.other_pid)
		rasp_cli_error(cmd,
			       "%" PRIu64 " events of other processes left out (--pid %" PRId64 ")",
			       st.other_pid, a.pid);
	if (st.other)
		rasp_cli_error(cmd,
			       "%" PRIu64
			       " events of other kinds left out (only AllocationSampled, "
			       "GCAllocationTick and rasp's sampling events are written)",
			       st.other);
	if (st.lost)
		rasp_cli_error(
		    cmd,
		    "warning: the input lost %s%" PRIu64 " events; the file records them as "
		    "lost%s",
		    st.lost_unknown ? "at least " : "", st.lost,
		    st.lost_unknown ? " (a lost packet counts as one: the true number is "
				      "unknown, so readers will under-count)"
				    : "");
	return 0;
}
