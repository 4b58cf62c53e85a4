/* rasp: the command-line entry point. `rasp record` runs a program under an LTTng session,
 * `rasp report` turns traces into per-type estimates, `rasp diff` compares two recordings.
 * Exit status: 0 on success, the program's status for record, 1 on failure, 2 on bad usage. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: rasp COMMAND [options]\n"
    "  record [options] -- PROGRAM [ARGS...]   record a program's sampled allocations\n"
    "  report [options] TRACE...               per-type estimates with confidence intervals\n"
    "  diff [options] BASE NEW                 significant per-type changes between two\n"
    "                                          recordings\n"
    "  rasp COMMAND --help shows a command's options; docs/usage.md is the tutorial.\n";

void rasp_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rasp %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void rasp_cli_bad_option(const char *cmd, const char *arg)
{
	if (optopt && arg[0] == '-' && arg[1] != '-' && strchr(arg, optopt))
		rasp_cli_error(cmd,
			       "option '-%c' is unknown or lacks its value (see rasp %s --help)",
			       optopt, cmd);
	else
		rasp_cli_error(cmd,
			       "option '%s' is unknown or lacks its value (see rasp %s --help)",
			       arg, cmd);
}

int rasp_cli_parse_u64(const char *cmd, const char *opt, const char *text, uint64_t min,
		       uint64_t max, bool suffixes, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	errno = 0;
	v = strtoull(text, &end, 0);
	if (suffixes && end != text && end[0] && !end[1]) {
		switch (end[0]) {
		case 'K':
		case 'k':
			mult = UINT64_C(1) << 10;
			end++;
			break;
		case 'M':
		case 'm':
			mult = UINT64_C(1) << 20;
			end++;
			break;
		case 'G':
		case 'g':
			mult = UINT64_C(1) << 30;
			end++;
			break;
		default:
			break;
		}
	}
	if (errno || end == text || *end || text[0] == '-' || (v && mult > UINT64_MAX / v) ||
	    v * mult < min || v * mult > max) {
		rasp_cli_error(cmd, "%s '%s' is not an integer in [%" PRIu64 ", %" PRIu64 "]%s",
			       opt, text, min, max, suffixes ? " (K, M, G suffixes allowed)" : "");
		return -EINVAL;
	}
	*out = v * mult;
	return 0;
}

int rasp_cli_exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return -errno;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("rasp %s\n", RASP_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "record") == 0)
		return rasp_cli_record(argc - 1, argv + 1);
	if (strcmp(argv[1], "report") == 0)
		return rasp_cli_report(argc - 1, argv + 1);
	if (strcmp(argv[1], "diff") == 0)
		return rasp_cli_diff(argc - 1, argv + 1);
	fprintf(stderr, "rasp: unknown command '%s' (record, report, diff; see rasp --help)\n",
		argv[1]);
	return 2;
}
