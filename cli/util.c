/* Small helpers shared by the rasp subcommands (and, through rasp-cli-core, the tests):
 * one-line error messages, number parsing that names the bad option, the executable's
 * directory. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

	/* Decimal, or hexadecimal with 0x: never octal (a leading 0 is not base 8), no sign, no
	 * leading space. */
	errno = 0;
	if (!(text[0] >= '0' && text[0] <= '9')) {
		end = (char *)text;
		v = 0;
	} else {
		v = strtoull(text, &end,
			     text[0] == '0' && (text[1] == 'x' || text[1] == 'X') ? 16 : 10);
	}
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

int rasp_cli_parse_confidence(const char *cmd, const char *text, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(text, &end);
	if (errno || end == text || *end || !(d > 0 && d < 1)) {
		rasp_cli_error(cmd, "--confidence '%s' is not a number in (0, 1)", text);
		return -EINVAL;
	}
	*out = d;
	return 0;
}
