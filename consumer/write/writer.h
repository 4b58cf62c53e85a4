/* The writer interface: one file per output format (write-text.c, write-csv.c, ...), each a
 * struct rasp_writer in the registry (render.c) that says what the format is and what it can
 * do, so callers ask the table rather than compare names. A writer gets a view of a finished
 * report (options, tally, rows, notes) and prints it; adding a format is one new file, one
 * line in render.c and its name in RASP_REPORT_FORMATS (report/params.h; the render test
 * holds the two lists together). No babeltrace2 types. */
#ifndef RASP_CONSUMER_WRITER_H
#define RASP_CONSUMER_WRITER_H

#include <stdbool.h>
#include <stdio.h>

#include "report/notes.h"
#include "report/params.h"
#include "report/rows.h"
#include "report/tally.h"

struct rasp_report_view {
	const struct rasp_report_options *opt;
	const struct rasp_tally *tally;
	const struct rasp_rows *rows;
	const struct rasp_notes *notes;
};

struct rasp_diff_view; /* write-diff.h */

struct rasp_writer {
	const char *name; /* the `format` parameter's value */
	/* 0, or a negative errno value (-EIO when writing fails, -ERANGE for an estimate the
	 * format cannot hold). */
	int (*write)(const struct rasp_report_view *v, FILE *out);
	/* rasp diff's output in this format (0 or -EIO); NULL: diff does not write it. */
	int (*write_diff)(FILE *out, const struct rasp_diff_view *v);
	/* Its traits. */
	bool binary;	    /* bytes, not text: never written to a terminal */
	bool stacks;	    /* lays out stacks: the rows group by type and stack at least */
	bool top;	    /* shows the `top` largest rows alone (the others write every row) */
	bool integers;	    /* numbers as 64-bit integers: -ERANGE for an estimate past 2^63 */
	const char *suffix; /* the usual ending of a file of it, for messages */
};

extern const struct rasp_writer rasp_writer_text, rasp_writer_csv, rasp_writer_json;
/* Formats of stacks: folded stacks (flamegraph.pl, speedscope), pprof's profile.proto,
 * gzipped (go tool pprof, Pyroscope), and one self-contained HTML page with a flame graph and
 * the type table. */
extern const struct rasp_writer rasp_writer_folded, rasp_writer_pprof, rasp_writer_html;

/* Every writer, in the order of RASP_REPORT_FORMATS, then NULL. */
extern const struct rasp_writer *const rasp_writers[];

/* The writer called name, NULL if none. */
const struct rasp_writer *rasp_writer_find(const char *name);

/* The names of the writers for which has(w) is true, "|"-separated, into buf ("" when none);
 * returns buf. */
const char *rasp_writer_names(bool (*has)(const struct rasp_writer *w), char *buf, size_t len);

/* The keys a report's tally must group by: the options' group-by, and type and stack for the
 * formats of stacks. */
unsigned rasp_report_keys(const struct rasp_report_options *opt);

/* The site rule the options say (--site, --site-exclude); its patterns are the options'. */
struct rasp_site_rule rasp_report_site_rule(const struct rasp_report_options *opt);

/* Builds the rows and notes of t and writes them with the writer opt->format names.
 * mean_flag: how the user overrides the assumed mean, for the notes. 0 or a negative errno
 * value. */
int rasp_report_render(struct rasp_tally *t, const struct rasp_report_options *opt,
		       const char *mean_flag, FILE *out);

/* What the writers of a table for people (text, html) share: rows of fewer than
 * RASP_FEW_SAMPLES samples are marked "~" (a wide interval), the header lists at most
 * RASP_HEADER_PROCESSES processes one per line, and the marks' legends read the same. */
#define RASP_FEW_SAMPLES      10
#define RASP_HEADER_PROCESSES 5
#define RASP_LEGEND_CONTRADICTS                                                                    \
	"! the samples contradict the sampling model: the estimate lies outside even a "           \
	"one-in-a-million interval (see the WARNING above)"
#define RASP_LEGEND_DOUBTFUL                                                                       \
	"? too few samples for the spread of sizes: the objects interval rests on the objects "    \
	"smaller than any sample"
/* The json report's warning when notes->lost_data (html's page heads with it too). */
#define RASP_LOST_WARNING                                                                          \
	"events were lost (discarded by the tracer, or missing from an incomplete input): every "  \
	"estimate is too low by an unknown amount"
/* The legend of "~": how far the interval of RASP_FEW_SAMPLES samples, and of 1, of small
 * objects reaches below and above its estimate at this confidence (the estimator's own
 * figures), into buf; returns buf. */
const char *rasp_format_few_legend(double confidence, char *buf, size_t len);

/* Human units for the text writers (buffers of at least 32 bytes): bytes in B, KiB, MiB...
 * and counts with k, M, G..., three or four significant digits. */
void rasp_format_bytes(double v, char *buf, size_t len);
void rasp_format_count(double v, char *buf, size_t len);
/* An interval in those units after mark ("~97.5 - 109.8 MiB"), a shared unit written once. */
void rasp_format_interval(char *buf, size_t len, double lo, double hi, bool bytes,
			  const char *mark);
/* A confidence as a percentage with as many digits as it has (0.95 -> "95%"), never rounded
 * up to 100%; a duration in us, ms, s or min. Both return buf. */
const char *rasp_format_percent(double c, char *buf, size_t len);
const char *rasp_format_duration(uint64_t ns, char *buf, size_t len);

/* JSON helpers shared by every JSON writer: a string literal with its quotes (RFC 8259
 * escapes; invalid UTF-8 bytes become U+FFFD so the output always parses; DEL, C1 controls and
 * bidirectional overrides (sanitize.h) are \u escaped too, so no byte of it acts on a
 * terminal), and a number (null when not finite). */
void rasp_json_string(FILE *out, const char *s);
void rasp_json_number(FILE *out, double v, const char *fmt);

#endif /* RASP_CONSUMER_WRITER_H */
