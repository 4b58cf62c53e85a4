/* The report of sink.rasp.report without babeltrace2 types: parameter validation, the cells
 * samples fall in (one per group, process, thread and sampling mean), grouping, sorting, and
 * the text, csv and json writers. sink.c feeds it decoded events; tests feed it directly.
 * Errors are 0 or a negative errno value; parameter errors also fill a message buffer. */
#ifndef RASP_CONSUMER_REPORT_H
#define RASP_CONSUMER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum rasp_report_format {
	RASP_REPORT_FORMAT_TEXT,
	RASP_REPORT_FORMAT_CSV,
	RASP_REPORT_FORMAT_JSON,
};

/* group-by keys, a bit mask; output columns always come in this order. */
enum rasp_report_key {
	RASP_REPORT_BY_TYPE = 1u << 0,
	RASP_REPORT_BY_KIND = 1u << 1,
	RASP_REPORT_BY_THREAD = 1u << 2,
	RASP_REPORT_BY_PROCESS = 1u << 3,
};

/* A process or thread id the trace did not carry (no vpid/vtid context). */
#define RASP_REPORT_ID_UNKNOWN INT64_MIN

struct rasp_report_options {
	enum rasp_report_format format; /* `format`, default text */
	unsigned group_by;		/* `group-by`, enum rasp_report_key mask, default type */
	double confidence;		/* `confidence` in (0, 1), default 0.95 */
	double sampling_mean; /* `sampling-mean` >= 1: processes with no SamplingConfigured */
	uint64_t top;	      /* `top`: text rows shown, 0 = all */
	char *output;	      /* `output`: file path (owned), NULL = stdout */
	bool strict;	      /* `strict`: malformed events are errors (true) or skipped */
};

/* Defaults: text, by type, 0.95, RASP_EST_DEFAULT_MEAN, all rows, stdout, strict. */
void rasp_report_options_init(struct rasp_report_options *opt);
void rasp_report_options_fini(struct rasp_report_options *opt);

/* Set one parameter by its babeltrace2 name. A value of the wrong kind, out of range, or an
 * unknown name gives -EINVAL and a message naming the parameter and the accepted values in
 * err (always NUL-terminated when errlen > 0); -ENOMEM when a copy fails. `integer` says
 * the number came as an integer (top wants one). */
int rasp_report_option_set_string(struct rasp_report_options *opt, const char *name,
				  const char *value, char *err, size_t errlen);
int rasp_report_option_set_number(struct rasp_report_options *opt, const char *name, double value,
				  bool integer, char *err, size_t errlen);
int rasp_report_option_set_bool(struct rasp_report_options *opt, const char *name, bool value,
				char *err, size_t errlen);
/* For any other value kind (array of non-strings, map, null...). Always -EINVAL. */
int rasp_report_option_bad_kind(const char *name, char *err, size_t errlen);

struct rasp_report;

/* Copies opt (output path included). NULL on allocation failure. */
struct rasp_report *rasp_report_create(const struct rasp_report_options *opt);
void rasp_report_destroy(struct rasp_report *r);

/* Sampling mean of a process from its SamplingConfigured (mean >= 1); -EINVAL otherwise.
 * Samples added afterwards for that process use it. */
int rasp_report_set_mean(struct rasp_report *r, int64_t process, double mean);

/* One AllocationSampled event. type may be NULL (kept as "NULL", as .NET writes). -EINVAL
 * when size is 0 or offset >= size (nothing recorded), -ENOMEM. */
int rasp_report_add_sample(struct rasp_report *r, const char *type, uint64_t kind, int64_t process,
			   int64_t thread, uint64_t size, uint64_t offset);

/* One GCAllocationTick_V2/3/4 event: a fixed-stride tick charging `amount` bytes to type. */
int rasp_report_add_tick(struct rasp_report *r, const char *type, uint64_t amount);

/* Lost data. count_known = false when the trace did not say how many. */
void rasp_report_add_discarded_events(struct rasp_report *r, uint64_t count, bool count_known);
void rasp_report_add_discarded_packets(struct rasp_report *r, uint64_t count, bool count_known);
/* A malformed event skipped under strict=false. */
void rasp_report_add_skipped(struct rasp_report *r);

/* Computes the estimates and writes the report in the chosen format. -EIO when writing
 * fails, -ENOMEM, or the estimator's error. */
int rasp_report_write(struct rasp_report *r, FILE *out);

/* Writes s as a JSON string literal, quotes included (invalid UTF-8 bytes become U+FFFD). */
void rasp_report_json_string(FILE *out, const char *s);

#endif /* RASP_CONSUMER_REPORT_H */
