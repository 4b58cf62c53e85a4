/* Parameters of the report, defined once: name, type, range, default and help. The sink
 * validates its babeltrace2 parameters against this table, and the rasp command derives its
 * flags, their parsing and its --help from it, so the two cannot disagree. A table is an
 * array of struct rasp_param ending with a NULL name; rasp_report_params is the report's.
 * No babeltrace2 types. Errors are 0 or a negative errno value plus a message naming the
 * parameter and what it accepts. */
#ifndef RASP_CONSUMER_PARAMS_H
#define RASP_CONSUMER_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rasp/rasp.h" /* RASP_DEFAULT_SAMPLING_MEAN, RASP_MAX_SAMPLING_MEAN */

/* The text of a macro's value, for tables and help: RASP_STR(RASP_DEFAULT_SAMPLING_MEAN) is
 * "102400". */
#define RASP_STR_(x) #x
#define RASP_STR(x)  RASP_STR_(x)

/* The report's formats (each a writer's name), its group-by keys (in the bit order of enum
 * rasp_group_key) and its default confidence: the table's entries, the sink's help and the
 * writers' registry (a test holds the two lists of formats together) say them from here. */
#define RASP_REPORT_FORMATS	       "text|csv|json|folded|pprof|html"
#define RASP_REPORT_KEYS	       "type|kind|thread|process|site|stack"
#define RASP_REPORT_DEFAULT_CONFIDENCE 0.95

enum rasp_param_type {
	RASP_PARAM_CHOICE, /* one string of `accepted` (words separated by |) */
	RASP_PARAM_KEYS,   /* comma-separated words of `accepted`, or an array of them */
	RASP_PARAM_REAL,   /* a number in the range */
	RASP_PARAM_UINT,   /* an integer in the range */
	RASP_PARAM_PATH,   /* a non-empty string */
	RASP_PARAM_BOOL,
	/* Non-empty strings, each one given added to a list (a flag given again, or an array of
	 * strings) */
	RASP_PARAM_LIST,
};

/* The value a UINT parameter holds when given its word ("auto"): what it means is the
 * parameter's own (the terminal's size, for the text writer's). */
#define RASP_PARAM_AUTO UINT64_MAX

/* A LIST parameter's strings (owned). */
struct rasp_param_list {
	char **v;
	size_t n;
};

/* A value as it arrives: from babeltrace2 (typed) or from the command line (text). */
struct rasp_param_value {
	enum {
		RASP_VALUE_STRING,
		RASP_VALUE_SIGNED,
		RASP_VALUE_UNSIGNED,
		RASP_VALUE_REAL,
		RASP_VALUE_BOOL,
		RASP_VALUE_STRINGS,
		RASP_VALUE_OTHER
	} kind;
	const char *s;
	int64_t i;
	uint64_t u;
	double d;
	bool b;
	const char *const *strings; /* RASP_VALUE_STRINGS */
	size_t nstrings;
};

/* Where a parameter's value goes in the options struct: at `offset`, a char[size] (CHOICE), an
 * unsigned group-by mask (KEYS), a double (REAL), a uint64_t (UINT), an owned char * (PATH),
 * a bool (BOOL) or a struct rasp_param_list (LIST). */
struct rasp_param {
	const char *name; /* babeltrace2 parameter; the CLI flag is --name */
	char short_flag;  /* CLI short flag, or 0 */
	enum rasp_param_type type;
	const char *metavar;  /* CLI: FMT, KEYS, C, BYTES, N, FILE */
	const char *accepted; /* CHOICE/KEYS: the words; others: how errors describe the range */
	const char *def;      /* the default, as help shows it */
	const char *help;
	double min, max; /* REAL and UINT, inclusive; REAL excludes min when min_open */
	bool min_open;
	bool suffixes;	     /* CLI text may end in K, M or G (powers of 1024) */
	const char *word;    /* UINT: a word it takes too, stored as RASP_PARAM_AUTO */
	size_t offset, size; /* of the field in the options struct */
};

/* The report's options. */
struct rasp_report_options {
	char format[16];      /* a writer's name (RASP_REPORT_FORMATS) */
	unsigned group_by;    /* enum rasp_group_key mask */
	double confidence;    /* in (0, RASP_EST_MAX_CONFIDENCE] */
	double sampling_mean; /* for processes with no SamplingConfigured, 1..2^48 */
	/* text: rows shown, 0 = all, RASP_PARAM_AUTO = those that fit a terminal (all when not
	 * writing to one) */
	uint64_t top;
	/* text: columns of a line, 0 = no limit, RASP_PARAM_AUTO = the terminal's (no limit when
	 * not writing to one) */
	uint64_t width;
	bool wide;    /* text: names in full, every column (as width 0) */
	char site[8]; /* "user": the innermost frame of the program's own code; "leaf" */
	struct rasp_param_list
	    site_exclude; /* fnmatch patterns of code that is not the program's */
	bool raw_names;	  /* .NET names in the runtime's form, not C#'s */
	char *output;	  /* file (owned), NULL = standard output */
	bool strict;	  /* malformed events are errors (true) or counted and skipped */
	/* Not parameters: lines a caller writes above the report on the same screen (rasp
	 * report --live's title), which the text writer leaves room for. */
	unsigned lines_above;
};

/* Whether `top` was set to a number of rows (not all, not the terminal's). */
static inline bool rasp_report_top_given(const struct rasp_report_options *opt)
{
	return opt->top != 0 && opt->top != RASP_PARAM_AUTO;
}

extern const struct rasp_param rasp_report_params[];

/* The defaults: every entry's `def` but output's (standard output) set through the table, so
 * that what help shows is what the options hold. */
void rasp_report_options_init(struct rasp_report_options *opt);
void rasp_report_options_fini(struct rasp_report_options *opt);
void rasp_param_list_free(struct rasp_param_list *l);

/* The table entry called `name`, or NULL. */
const struct rasp_param *rasp_param_find(const struct rasp_param *table, const char *name);

/* Sets parameter `name` of a table from a typed value: checks the value's kind and range,
 * then stores it. -EINVAL with a message for an unknown name, a wrong kind or a value out of
 * range; -ENOMEM. err is always NUL-terminated when errlen > 0. */
int rasp_param_set(const struct rasp_param *table, void *opts, const char *name,
		   const struct rasp_param_value *v, char *err, size_t errlen);

/* Sets a parameter from command-line text, parsed as its type says (numbers in decimal or
 * 0x hex, never octal; K/M/G where allowed; true/false for booleans). Same errors. */
int rasp_param_set_text(const struct rasp_param *table, void *opts, const char *name,
			const char *text, char *err, size_t errlen);

/* "format|group-by|...": the names of a table, for messages. */
void rasp_param_names(const struct rasp_param *table, char *buf, size_t len);

/* Parses group-by words ("type,kind") into an enum rasp_group_key mask. */
int rasp_group_by_parse(const char *text, unsigned *mask);

#endif /* RASP_CONSUMER_PARAMS_H */
