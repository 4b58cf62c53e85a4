/* Shared formatting: human units for text and their intervals, the JSON string and number
 * helpers, and the legend of wide intervals. */
#include "writer.h"

#include "rasp/rasp.h" /* RASP_DEFAULT_SAMPLING_MEAN */
#include "report/estimate.h"
#include "sanitize.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* v scaled by `base` until below it, with three or four significant digits and a unit. */
static void human(double v, double base, const char *const *units, size_t nunits, int exact_max,
		  char *buf, size_t len)
{
	size_t u = 0;
	double a = fabs(v);

	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return;
	}
	while (a >= base * 0.9995 && u + 1 < nunits) {
		a /= base;
		v /= base;
		u++;
	}
	if (u == 0 && a < exact_max && v == floor(v))
		snprintf(buf, len, "%.0f%s%s", v, units[0][0] ? " " : "", units[0]);
	else if (a < 9.995)
		snprintf(buf, len, "%.2f %s", v, units[u]);
	else if (a < 99.95)
		snprintf(buf, len, "%.1f %s", v, units[u]);
	else if (a < 1e6)
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else /* past the last unit */
		snprintf(buf, len, "%.3g %s", v, units[u]);
	/* Counts below 1000 with no unit: no trailing space. */
	for (size_t i = 0; buf[i]; i++)
		if (buf[i] == ' ' && buf[i + 1] == '\0')
			buf[i] = '\0';
}

void rasp_format_bytes(double v, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

	human(v, 1024.0, units, 7, 1024, buf, len);
}

void rasp_format_count(double v, char *buf, size_t len)
{
	static const char *const units[] = {"", "k", "M", "G", "T", "P", "E"};

	human(v, 1000.0, units, 7, 1000, buf, len);
}

void rasp_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	while (*s) {
		int32_t cp;
		size_t len = rasp_utf8_next(s, &cp);

		if (cp == '"' || cp == '\\') {
			fputc('\\', out);
			fputc((int)cp, out);
		} else if (cp >= 8 && cp <= 13 && cp != 11) {
			static const char esc[] = {'b', 't', 'n', 0, 'f', 'r'};

			fprintf(out, "\\%c", esc[cp - 8]);
		} else if (cp < 0) {
			/* One U+FFFD per byte that is not UTF-8: the output always parses. */
			fputs("\\ufffd", out);
		} else if (rasp_char_unsafe(cp)) {
			/* Controls (ESC, C1's CSI) and bidirectional overrides as \u escapes: the
			 * same string to a parser, inert on a terminal. */
			fprintf(out, "\\u%04x", (unsigned)cp);
		} else {
			fwrite(s, 1, len, out);
		}
		s += len;
	}
	fputc('"', out);
}

void rasp_json_number(FILE *out, double v, const char *fmt)
{
	if (isfinite(v))
		fprintf(out, fmt, v);
	else
		fputs("null", out);
}

/* 0.95 -> "95%", 0.999999999 -> "99.9999999%": as many digits as the confidence has, never
 * rounded up to 100%. */
const char *rasp_format_percent(double c, char *buf, size_t len)
{
	for (int digits = 3; digits < 17; digits++) {
		snprintf(buf, len, "%.*g%%", digits, 100.0 * c);
		if (strtod(buf, NULL) == 100.0 * c || (digits > 9 && strtod(buf, NULL) < 100.0))
			break;
	}
	return buf;
}

const char *rasp_format_duration(uint64_t ns, char *buf, size_t len)
{
	double s = (double)ns * 1e-9;

	if (s < 1e-3)
		snprintf(buf, len, "%.3g us", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.3g ms", s * 1e3);
	else if (s < 600)
		snprintf(buf, len, "%.3g s", s);
	else
		snprintf(buf, len, "%.0f min", s / 60);
	return buf;
}

/* How far the interval of n samples of small objects reaches below and above its estimate, in
 * percent (the same at any mean much larger than the objects). */
static void spread(double confidence, uint64_t n, double *below, double *above)
{
	struct rasp_est_cell c;
	struct rasp_est_total t;

	*below = *above = 0;
	if (rasp_est_cell_init(&c, 1.0 / RASP_DEFAULT_SAMPLING_MEAN) != 0)
		return;
	for (uint64_t i = 0; i < n; i++)
		rasp_est_cell_add(&c, 8, 0);
	if (rasp_est_sum(&c, 1, confidence, &t) != 0 || !(t.bytes > 0))
		return;
	*below = 100 * (1 - t.bytes_low / t.bytes);
	*above = 100 * (t.bytes_high / t.bytes - 1);
}

const char *rasp_format_few_legend(double confidence, char *buf, size_t len)
{
	double lo_few, hi_few, lo1, hi1;

	spread(confidence, RASP_FEW_SAMPLES, &lo_few, &hi_few);
	spread(confidence, 1, &lo1, &hi1);
	snprintf(buf, len,
		 "~ fewer than %d samples: a wide interval (-%.0f%%/+%.0f%% at %d samples, "
		 "-%.0f%%/+%.0f%% at 1)",
		 RASP_FEW_SAMPLES, lo_few, hi_few, RASP_FEW_SAMPLES, lo1, hi1);
	return buf;
}

/* "97.5 - 109.8 MiB" when both ends share a unit, else "980 KiB - 1.20 MiB"; in front, "!"
 * when the samples contradict the model (rasp_est_total.contradicts), else "~" when the row
 * has too few samples for a narrow interval. */
void rasp_format_interval(char *buf, size_t len, double lo, double hi, bool bytes, const char *mark)
{
	char a[48], b[48];
	const char *ua, *ub;

	if (bytes) {
		rasp_format_bytes(lo, a, sizeof(a));
		rasp_format_bytes(hi, b, sizeof(b));
	} else {
		rasp_format_count(lo, a, sizeof(a));
		rasp_format_count(hi, b, sizeof(b));
	}
	/* "1.03 - 4.27 PiB": a shared unit is written once. Bytes only: a byte count always has
	 * a unit ("9 B"), so a bare low bound reads as sharing the high one's; a count below
	 * 1,000 has none, and "9 - 32.5 T" would read as 9 T. */
	ua = strrchr(a, ' ');
	ub = strrchr(b, ' ');
	if (bytes && ua && ub && strcmp(ua, ub) == 0) {
		snprintf(buf, len, "%s%.*s - %s", mark, (int)(ua - a), a, b);
		return;
	}
	snprintf(buf, len, "%s%s - %s", mark, a, b);
}
