/* rasp report: per-type estimates of a recorded trace (or several, or a live session),
 * through the rasp babeltrace2 plugin in an in-process graph: source.ctf.fs (or
 * source.ctf.lttng-live) -> filter.utils.muxer -> sink.rasp.report. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: rasp report [options] TRACE...\n"
    "Estimates the bytes and objects each type allocated, with confidence intervals, from\n"
    "the AllocationSampled events of one or more traces (directories recorded by rasp record\n"
    "or lttng, reported together: unbiased per thread, then summed) or of one live session\n"
    "(net://HOST[:PORT]/host/HOSTNAME/SESSION through lttng-relayd).\n"
    "  --format FMT          text (default), csv or json\n"
    "  --group-by KEYS       comma-separated: type (default), kind, thread, process\n"
    "  --confidence C        interval confidence in (0, 1), default 0.95\n"
    "  --sampling-mean BYTES mean for processes whose trace has no SamplingConfigured event\n"
    "                        (default 102400, .NET's)\n"
    "  --top N               text: show the N largest rows only\n"
    "  --no-strict           skip malformed AllocationSampled events instead of failing\n"
    "  -o, --output FILE     write the report to FILE instead of standard output\n";

/* Sets (or replaces: the last occurrence of an option wins) one sink parameter. */
static void set_param(struct rasp_graph_param *params, size_t *n, struct rasp_graph_param p)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(params[i].key, p.key) == 0) {
			params[i] = p;
			return;
		}
	params[(*n)++] = p;
}

int rasp_cli_report(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"group-by", required_argument, NULL, 'g'},
	    {"confidence", required_argument, NULL, 'c'},
	    {"sampling-mean", required_argument, NULL, 'm'},
	    {"top", required_argument, NULL, 't'},
	    {"no-strict", no_argument, NULL, 'S'},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *cmd = "report";
	struct rasp_graph_param params[8];
	size_t n = 0;
	uint64_t v;
	double d;
	int c;

	optind = 1;
	opterr = 0; /* our own one-line messages below */
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			set_param(
			    params, &n,
			    (struct rasp_graph_param){"format", RASP_PARAM_STRING, .s = optarg});
			break;
		case 'g':
			set_param(
			    params, &n,
			    (struct rasp_graph_param){"group-by", RASP_PARAM_STRING, .s = optarg});
			break;
		case 'o':
			set_param(
			    params, &n,
			    (struct rasp_graph_param){"output", RASP_PARAM_STRING, .s = optarg});
			break;
		case 'c':
			if (rasp_cli_parse_confidence(cmd, optarg, &d))
				return 2;
			set_param(params, &n,
				  (struct rasp_graph_param){"confidence", RASP_PARAM_REAL, .d = d});
			break;
		case 'm':
			if (rasp_cli_parse_u64(cmd, "--sampling-mean", optarg, 1, UINT64_C(1) << 48,
					       true, &v))
				return 2;
			set_param(params, &n,
				  (struct rasp_graph_param){"sampling-mean", RASP_PARAM_INT,
							    .i = (int64_t)v});
			break;
		case 't':
			if (rasp_cli_parse_u64(cmd, "--top", optarg, 1, INT64_MAX, false, &v))
				return 2;
			set_param(
			    params, &n,
			    (struct rasp_graph_param){"top", RASP_PARAM_INT, .i = (int64_t)v});
			break;
		case 'S':
			set_param(params, &n,
				  (struct rasp_graph_param){"strict", RASP_PARAM_BOOL, .i = 0});
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			rasp_cli_bad_option(cmd, argv[optind - 1]);
			return 2;
		}
	}
	if (optind >= argc) {
		rasp_cli_error(cmd, "no TRACE given (usage: rasp report [options] TRACE...)");
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (strncmp(argv[i], "net://", 6) == 0 && argc - optind > 1) {
			rasp_cli_error(cmd, "a live URL ('%s') must be the only input", argv[i]);
			return 2;
		}
	return rasp_graph_report(cmd, (const char *const *)argv + optind, (size_t)(argc - optind),
				 params, n) == 0
		   ? 0
		   : 1;
}
