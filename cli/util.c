/* Small helpers shared by the rasp subcommands: one-line error messages (inert on a terminal)
 * and number parsing that names the bad option. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "index.h"
#include "write/sanitize.h"

/* Messages quote paths, operands and text from traces and /proc: written as their safe text
 * (sanitize.h), so none of it acts on the terminal. */
void rasp_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int saved = errno; /* callers return -errno after the message */

	va_start(ap, fmt);
	msg = rasp_vstrdupf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "rasp %s: ", cmd);
	rasp_safe_put(stderr, msg ? msg : fmt);
	fputc('\n', stderr);
	free(msg);
	errno = saved;
}

int rasp_cli_parse_u64(const char *cmd, const char *opt, const char *text, uint64_t min,
		       uint64_t max, bool suffixes, uint64_t *out)
{
	unsigned long long v = 0;
	uint64_t mult = 1;
	char *end = (char *)text;

	/* Decimal, or hexadecimal with 0x: never octal (a leading 0 is not base 8), no sign, no
	 * leading space. */
	errno = 0;
	if (text[0] >= '0' && text[0] <= '9')
		v = strtoull(text, &end,
			     text[0] == '0' && (text[1] == 'x' || text[1] == 'X') ? 16 : 10);
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
	if (errno || end == text || *end || (v && mult > UINT64_MAX / v) || v * mult < min ||
	    v * mult > max) {
		rasp_cli_error(cmd, "%s '%s' is not an integer in [%" PRIu64 ", %" PRIu64 "]%s",
			       opt, text, min, max, suffixes ? " (K, M, G suffixes allowed)" : "");
		return -EINVAL;
	}
	*out = v * mult;
	return 0;
}
