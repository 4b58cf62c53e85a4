/* rasp convert: a recording (CTF traces, .nettrace files, or a live session) written as one
 * EventPipe .nettrace file that .NET tools (TraceEvent, PerfView, dotnet-trace) open, or (--to
 * ctf) one trace as a CTF 1.8 directory for Trace Compass, babeltrace2 and LTTng's tools: the
 * inputs go through filter.utils.muxer into sink.rasp.nettrace or sink.ctf.fs, in process.
 * The output appears only once complete. What it cannot say (events lost in unknown numbers,
 * other processes, events rasp does not write) is said on stderr. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bt/sink-nettrace-stats.h"

enum { F_OUTPUT, F_PID, F_TO, NFLAGS };

static const struct rasp_cli_flag flags[NFLAGS] = {
    [F_OUTPUT] = {"output", 'o', "OUT",
		  "the .nettrace file (--to ctf: the new directory) to write (required)"},
    [F_PID] = {"pid", 0, "PID",
	       "the process to write when the inputs hold several (a .nettrace file holds one)"},
    [F_TO] = {"to", 0, "FORMAT",
	      "nettrace (default): an EventPipe file; ctf: a CTF 1.8 trace directory"},
};

struct convert_args {
	const char *output;
	int64_t pid;
	bool ctf;
};

static int on_flag(void *ctx, size_t f, const char *value)
{
	struct convert_args *a = ctx;
	uint64_t v;

	if (f == F_OUTPUT) {
		a->output = value;
		return 0;
	}
	if (f == F_TO) {
		if (strcmp(value, "ctf") != 0 && strcmp(value, "nettrace") != 0) {
			rasp_cli_error("convert",
				       "bad value '%s' for --to: accepted: nettrace, ctf", value);
			return -1;
		}
		a->ctf = strcmp(value, "ctf") == 0;
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
	      "       rasp convert --to ctf -o DIR TRACE\n"
	      "Writes the AllocationSampled events of one process (and rasp's SamplingConfigured,\n"
	      "so the sampling mean is known) as an EventPipe NetTrace file, the format of\n"
	      "dotnet-trace: TraceEvent, PerfView and rasp report read it. With --to ctf, writes\n"
	      "every event of one trace (a .nettrace file, say) as a CTF 1.8 trace in the new\n"
	      "directory DIR, for babeltrace2, Trace Compass and rasp report. TRACE: directories\n"
	      "recorded by rasp record or lttng, .nettrace files, or one live session URL.\n",
	      stdout);
	rasp_cli_args_help(NULL, flags, NFLAGS);
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* --to ctf: the trace is written inside a fresh directory beside dir and moved to dir once
 * complete (removed otherwise), so dir never holds a partial trace. An existing dir is
 * refused: sink.ctf.fs would add to it. */
static int convert_ctf(const char *cmd, const struct rasp_inputs *in, const char *dir,
		       struct rasp_tally *warnings)
{
	char tmp[PATH_MAX], trace[PATH_MAX + 8];
	struct stat st;
	int rc;

	if (in->n != 1) {
		rasp_cli_error(cmd,
			       "--to ctf writes one trace, and the inputs hold %zu: convert them "
			       "one at a time",
			       in->n);
		return -EINVAL;
	}
	if (lstat(dir, &st) == 0 || errno != ENOENT) {
		rasp_cli_error(cmd,
			       "'%s' exists: give a directory that does not (the trace is "
			       "written there whole)",
			       dir);
		return -EEXIST;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.partial-XXXXXX", dir) >= (int)sizeof(tmp) ||
	    !mkdtemp(tmp)) {
		rasp_cli_error(cmd, "cannot create a directory beside '%s': %s", dir,
			       strerror(errno));
		return -EIO;
	}
	/* sink.ctf.fs creates the trace's directory itself (with the umask's mode). */
	snprintf(trace, sizeof(trace), "%s/ctf", tmp);
	rc = rasp_graph_convert_ctf(cmd, in, trace, warnings);
	if (!rc && rename(trace, dir)) {
		rasp_cli_error(cmd, "cannot move the trace to '%s': %s", dir, strerror(errno));
		rc = -EIO;
	}
	nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
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
		rasp_cli_error(cmd, a.ctf ? "no output directory: give -o DIR"
					  : "no output file: give -o OUT.nettrace");
		return 2;
	}
	if (first >= argc) {
		rasp_cli_error(cmd, a.ctf ? "no TRACE given (usage: rasp convert --to ctf -o DIR "
					    "TRACE)"
					  : "no TRACE given (usage: rasp convert -o OUT.nettrace "
					    "TRACE...)");
		return 2;
	}
	if (a.ctf && a.pid >= 0) {
		rasp_cli_error(cmd, "--pid applies to --to nettrace: a CTF trace keeps every "
				    "process");
		return 2;
	}
	if (a.ctf && argc - first > 1) {
		rasp_cli_error(cmd, "--to ctf writes one trace: give one TRACE, not %d",
			       argc - first);
		return 2;
	}
	/* A tally only to collect what inputs.c finds doubtful (incomplete traces). */
	warnings = rasp_tally_create(RASP_GROUP_TYPE, RASP_DEFAULT_SAMPLING_MEAN);
	if (!warnings) {
		rasp_cli_error(cmd, "out of memory");
		return 1;
	}
	rc = rasp_inputs_collect(cmd, argv + first, (size_t)(argc - first), &in, warnings);
	if (!rc)
		rc = a.ctf ? convert_ctf(cmd, &in, a.output, warnings)
			   : rasp_graph_convert(cmd, &in, a.output, a.pid, &st, warnings);
	for (size_t i = 0; i < warnings->nwarnings; i++)
		rasp_cli_error(cmd, "warning: %s", warnings->warnings[i]);
	rasp_inputs_free(&in);
	if (!rc && a.ctf) {
		fprintf(stderr, "rasp convert: wrote the CTF trace %s\n", a.output);
		/* CTF 1.8 counts discarded events: a loss of unknown size becomes 1. */
		if (warnings->nwarnings)
			rasp_cli_error(cmd, "warning: the CTF trace counts each loss of unknown "
					    "size as 1 discarded event");
	}
	rasp_tally_destroy(warnings);
	if (rc)
		return 1;
	if (a.ctf)
		return 0;
	if (st.pid >= 0)
		fprintf(stderr,
			"rasp convert: wrote %" PRIu64 " events of process %" PRId64
			" to %s (%" PRIu64 " of them loaded objects, which name native frames)\n",
			st.written, st.pid, a.output, st.objects);
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
			       "GCAllocationTick, the stacks, rasp's own events and the loaded "
			       "objects are written)",
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
	if (st.frees_late)
		rasp_cli_error(cmd,
			       "warning: %" PRIu64 " of %" PRIu64
			       " frees (from LTTng's SampledObjectsFreed) were sent more than 1 s "
			       "after them, once later events were written: they are written at "
			       "the time written last, up to %.3f s after their own",
			       st.frees_late, st.frees, (double)st.frees_late_max_ns / 1e9);
	return 0;
}
