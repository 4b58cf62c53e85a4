/* rasp report: per-type estimates of recorded traces (or a live session), read in process
 * through the consumer's babeltrace2 sink into a tally, then rendered by the chosen writer.
 * Flags, their checks and their help come from the report's parameter table, the same one
 * sink.rasp.report validates its parameters with. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "write/output.h"
#include "write/writer.h"

enum { F_LIVE, F_PID, F_INTERVAL, NFLAGS };

static const struct rasp_cli_flag flags[NFLAGS] = {
    [F_LIVE] = {"live", 0, NULL,
		"with -p: record process PID through its diagnostic socket and redraw the "
		"per-type table every --interval seconds until Ctrl-C or its exit"},
    [F_PID] = {"pid", 'p', "PID", "the process for --live"},
    [F_INTERVAL] = {"interval", 0, "SECONDS", "--live's refresh period (default 2)"},
};

struct live {
	bool on;
	long pid;
	double interval;
};

static int on_flag(void *ctx, size_t f, const char *value)
{
	struct live *l = ctx;
	uint64_t v;

	switch (f) {
	case F_LIVE:
		l->on = true;
		return 0;
	case F_PID:
		if (rasp_cli_parse_u64("report", "-p", value, 1, INT32_MAX, false, &v))
			return -1;
		l->pid = (long)v;
		return 0;
	case F_INTERVAL:
		if (rasp_cli_parse_u64("report", "--interval", value, 1, 3600, false, &v))
			return -1;
		l->interval = (double)v;
		return 0;
	}
	return -1;
}

static void usage(void)
{
	fputs("usage: rasp report [options] TRACE...\n"
	      "Estimates the bytes and objects each type allocated, with confidence intervals, "
	      "from\nthe AllocationSampled events of one or more traces (directories recorded by "
	      "rasp record\nor lttng, reported together: unbiased per sample, then summed) or of "
	      "one live session\n(net://HOST[:PORT]/host/HOSTNAME/SESSION through lttng-relayd).\n"
	      "       rasp report --live -p PID [--interval SECONDS]\n"
	      "records running process PID over its diagnostic socket (rasp record -p) and\n"
	      "redraws the table as events arrive.\n",
	      stdout);
	rasp_cli_args_help(rasp_report_params, flags, NFLAGS);
}

static bool writer_takes_top(const struct rasp_writer *w)
{
	return w->top;
}

/* The report of one .nettrace file, with the default options (rasp record -p). */
int rasp_cli_report_file(const char *path)
{
	char *argv[] = {"report", (char *)path, NULL};

	return rasp_cli_report(2, argv);
}

/* Reads the operands (or, growing, the one .nettrace file still being written) and writes
 * their report as opt says; the exit status. */
static int report(const char *cmd, const struct rasp_report_options *opt, char *const *ops,
		  size_t n, bool growing)
{
	const struct rasp_writer *w = rasp_writer_find(opt->format);
	struct rasp_tally *t = rasp_tally_create(rasp_report_keys(opt), opt->sampling_mean);
	struct rasp_output out = {0};
	char err[512];
	int rc, status = 1;

	if (!t) {
		rasp_cli_error(cmd, "out of memory");
		return 1;
	}
	/* Opened first, so a bad path fails before the traces are read; the file is replaced
	 * only by a complete report. */
	if (rasp_output_open(&out, opt->output, err, sizeof(err))) {
		rasp_cli_error(cmd, "%s", err);
		goto out;
	}
	rc = growing ? rasp_cli_tally_growing(cmd, ops[0], opt->strict, t)
		     : rasp_cli_tally_operands(cmd, ops, n, opt->strict, t);
	if (rc)
		goto out;
	rc = rasp_report_render(t, opt, "--sampling-mean", out.f);
	if (rc == -ERANGE && w->integers)
		rasp_cli_error(cmd,
			       "cannot write the report: an estimate is beyond the 64-bit integers "
			       "of --format %s (2^63); --format json keeps every value",
			       opt->format);
	else if (rc == -ERANGE)
		rasp_cli_error(cmd,
			       "cannot write the report: an estimate is not finite, which --format "
			       "%s cannot write; --format json writes it as null",
			       opt->format);
	else if (rc)
		rasp_cli_error(cmd, "cannot write the report: %s", strerror(-rc));
	if (rc)
		goto out;
	rc = rasp_output_commit(&out);
	if (rc) {
		rasp_cli_error(cmd, "cannot write the report to '%s': %s", opt->output,
			       strerror(-rc));
		goto out;
	}
	status = 0;
out:
	if (out.f)
		rasp_output_abort(&out);
	rasp_tally_destroy(t);
	return status;
}

/* --live's reports: with the command's options, of the stream so far (under the title line
 * attach.c writes) and, at the end, of all of it. */
static int live_report(void *ctx, const char *path, bool growing)
{
	struct rasp_report_options *opt = ctx;
	char *ops[] = {(char *)path};

	opt->lines_above = growing ? 1 : 0;
	return report("report", opt, ops, 1, growing);
}

int rasp_cli_report(int argc, char **argv)
{
	const char *cmd = "report";
	struct rasp_report_options opt;
	const struct rasp_writer *w;
	struct live live = {.interval = 2};
	int first, rc, status = 2;

	rasp_report_options_init(&opt);
	rc = rasp_cli_args_parse(cmd, argc, argv, rasp_report_params, &opt, flags, NFLAGS, on_flag,
				 &live, false, &first);
	if (rc != RASP_CLI_ARGS_OK) {
		if (rc == RASP_CLI_ARGS_HELP)
			usage();
		rasp_report_options_fini(&opt);
		return rc == RASP_CLI_ARGS_HELP ? 0 : 2;
	}
	/* The table's checks passed, so the format has its writer. */
	w = rasp_writer_find(opt.format);
	if (live.on != (live.pid != 0) || (live.on && first < argc)) {
		rasp_cli_error(cmd, live.on
					? (first < argc ? "--live reads process -p PID, not TRACE "
							  "operands"
							: "--live needs -p PID")
					: "-p PID goes with --live");
		goto out;
	}
	if (!live.on && first >= argc) {
		rasp_cli_error(cmd, "no TRACE given (usage: rasp report [options] TRACE...)");
		goto out;
	}
	/* gzip's rule: binary bytes are not for a terminal. */
	if (w->binary && !opt.output && isatty(STDOUT_FILENO)) {
		rasp_cli_error(cmd,
			       "--format %s writes binary data, not for a terminal: give -o FILE%s "
			       "or redirect the output",
			       w->name, w->suffix);
		goto out;
	}
	if (rasp_report_top_given(&opt) && !w->top) {
		char names[64];

		rasp_cli_error(cmd,
			       "--top shows the largest rows with --format %s only; --format %s "
			       "writes every row",
			       rasp_writer_names(writer_takes_top, names, sizeof(names)), w->name);
		goto out;
	}
	if (live.on) {
		/* No output named: the stream goes to a temporary file, removed at the end. Each
		 * redraw is a report with these options. */
		struct rasp_attach a = {.cmd = cmd,
					.pid = (pid_t)live.pid,
					.live = true,
					.interval = live.interval,
					.redraw = live_report,
					.ctx = &opt};

		status = rasp_cli_attach(&a);
		goto out;
	}
	status = report(cmd, &opt, argv + first, (size_t)(argc - first), false);
out:
	rasp_report_options_fini(&opt);
	return status;
}
