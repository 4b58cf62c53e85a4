/* The report's parameter table (params.h) and the machinery every parameter table shares:
 * kind and range checks, parsing command-line text, and the messages. */
#include "params.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate.h"
#include "tally.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Is word (len bytes) one of the |-separated words of list? */
static bool word_in(const char *list, const char *word, size_t len)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, "|");

		if (n == len && strncmp(p, word, len) == 0)
			return true;
		p += n + (p[n] == '|');
	}
	return false;
}

int rasp_group_by_parse(const char *text, unsigned *mask)
{
	unsigned m = 0;

	for (const char *p = text;;) {
		size_t len = strcspn(p, ",");
		const char *w = p, *key = RASP_REPORT_KEYS;
		unsigned bit = 0;

		while (len > 0 && *w == ' ') {
			w++;
			len--;
		}
		while (len > 0 && w[len - 1] == ' ')
			len--;
		/* Key k of the list is bit k. */
		for (unsigned k = 0; *key; k++) {
			size_t n = strcspn(key, "|");

			if (n == len && strncmp(w, key, len) == 0)
				bit = 1u << k;
			key += n + (key[n] == '|');
		}
		if (!bit)
			return -EINVAL;
		m |= bit;
		p += strcspn(p, ",");
		if (*p == '\0')
			break;
		p++;
	}
	*mask = m;
	return 0;
}

/* ---- The report's parameters -------------------------------------------------------------- */

#define FIELD(f)                                                                                   \
	.offset = offsetof(struct rasp_report_options, f),                                         \
	.size = sizeof(((struct rasp_report_options *)0)->f)

const struct rasp_param rasp_report_params[] = {
    {.name = "format",
     .type = RASP_PARAM_CHOICE,
     .metavar = "FMT",
     .accepted = RASP_REPORT_FORMATS,
     .def = "text",
     .help = "output format",
     FIELD(format)},
    {.name = "group-by",
     .type = RASP_PARAM_KEYS,
     .metavar = "KEYS",
     .accepted = RASP_REPORT_KEYS,
     .def = "type",
     .help = "comma-separated keys the rows are grouped by (site: the allocating function; "
	     "stack: the whole call stack)",
     FIELD(group_by)},
    {.name = "by",
     .type = RASP_PARAM_KEYS,
     .metavar = "KEYS",
     .accepted = RASP_REPORT_KEYS,
     .def = "type",
     .help = "the same as group-by",
     FIELD(group_by)},
    {.name = "confidence",
     .type = RASP_PARAM_REAL,
     .metavar = "C",
     .accepted = "real number in (0, " RASP_STR(RASP_EST_MAX_CONFIDENCE) "]",
     .def = RASP_STR(RASP_REPORT_DEFAULT_CONFIDENCE),
     .help = "confidence of the intervals",
     .min = 0.0,
     .max = RASP_EST_MAX_CONFIDENCE,
     .min_open = true,
     FIELD(confidence)},
    {.name = "sampling-mean",
     .type = RASP_PARAM_REAL,
     .metavar = "BYTES",
     .accepted = "number of bytes in [1, 2^48]",
     .def = RASP_STR(RASP_DEFAULT_SAMPLING_MEAN),
     .help = "mean assumed for processes whose trace has no SamplingConfigured event "
	     "(.NET's by default)",
     .min = 1.0,
     .max = (double)RASP_MAX_SAMPLING_MEAN,
     .suffixes = true,
     FIELD(sampling_mean)},
    {.name = "top",
     .type = RASP_PARAM_UINT,
     .metavar = "N",
     .accepted = "integer >= 0 (0 = all rows) or auto",
     .def = "auto",
     .help = "text: show the N largest rows only (0: all; auto: those that fit the terminal, "
	     "all when the output is not one; the total counts all)",
     .min = 0.0,
     .max = 1e18,
     .word = "auto",
     FIELD(top)},
    {.name = "width",
     .type = RASP_PARAM_UINT,
     .metavar = "N",
     .accepted = "integer >= 0 (0 = no limit) or auto",
     .def = "auto",
     .help = "text: fit every line in N columns, long names shortened in the middle (0: no "
	     "limit; auto: the terminal's width, no limit when the output is not one)",
     .min = 0.0,
     .max = 1e6,
     .word = "auto",
     FIELD(width)},
    {.name = "wide",
     .type = RASP_PARAM_BOOL,
     .accepted = "boolean true|false",
     .def = "false",
     .help = "text: names in full and every column whatever the terminal's width (as "
	     "--width 0)",
     FIELD(wide)},
    {.name = "site",
     .type = RASP_PARAM_CHOICE,
     .metavar = "RULE",
     .accepted = "user|leaf",
     .def = "user",
     .help = "the frame a row by site names: user, the innermost of the program's own code "
	     "(not .NET's System.*, Microsoft.* and runtime, libc, libstdc++ or rasp); leaf, "
	     "the innermost",
     FIELD(site)},
    {.name = "site-exclude",
     .type = RASP_PARAM_LIST,
     .metavar = "PATTERN",
     .accepted = "non-empty fnmatch pattern string, or an array of them",
     .def = "none",
     .help = "also not the program's own code: frames whose function or object file name "
	     "matches PATTERN ('MyCompany.Logging.*', 'libfoo.so*'); repeatable",
     FIELD(site_exclude)},
    {.name = "raw-names",
     .type = RASP_PARAM_BOOL,
     .accepted = "boolean true|false",
     .def = "false",
     .help = ".NET types and methods named in the runtime's form (List`1[System.String]), "
	     "not C#'s (List<string>)",
     FIELD(raw_names)},
    {.name = "output",
     .short_flag = 'o',
     .type = RASP_PARAM_PATH,
     .metavar = "FILE",
     .accepted = "non-empty file path string",
     .def = "standard output",
     .help = "write the report to FILE (replaced only once the report is complete)",
     FIELD(output)},
    {.name = "strict",
     .type = RASP_PARAM_BOOL,
     .accepted = "boolean true|false",
     .def = "true",
     .help = "malformed AllocationSampled events are errors (--no-strict: counted and "
	     "skipped)",
     FIELD(strict)},
    {.name = NULL},
};

void rasp_report_options_init(struct rasp_report_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	/* A default the table cannot parse is a bug the params test catches (every entry). */
	for (const struct rasp_param *p = rasp_report_params; p->name; p++)
		if (p->type != RASP_PARAM_PATH && p->type != RASP_PARAM_LIST)
			rasp_param_set_text(rasp_report_params, opt, p->name, p->def, NULL, 0);
}

void rasp_report_options_fini(struct rasp_report_options *opt)
{
	free(opt->output);
	opt->output = NULL;
	rasp_param_list_free(&opt->site_exclude);
}

void rasp_param_list_free(struct rasp_param_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* ---- The machinery ------------------------------------------------------------------------ */

const struct rasp_param *rasp_param_find(const struct rasp_param *table, const char *name)
{
	for (const struct rasp_param *p = table; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

void rasp_param_names(const struct rasp_param *table, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (const struct rasp_param *p = table; p->name && used < len; p++) {
		int n = snprintf(buf + used, len - used, "%s%s", p == table ? "" : "|", p->name);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

static const char *kind_name(const struct rasp_param_value *v)
{
	switch (v->kind) {
	case RASP_VALUE_STRING:
		return "string";
	case RASP_VALUE_SIGNED:
	case RASP_VALUE_UNSIGNED:
		return "integer";
	case RASP_VALUE_REAL:
		return "real";
	case RASP_VALUE_BOOL:
		return "boolean";
	case RASP_VALUE_STRINGS:
		return "array";
	default:
		return "other";
	}
}

static int wrong_kind(const struct rasp_param *p, const struct rasp_param_value *v, char *err,
		      size_t errlen)
{
	set_err(err, errlen, "bad parameter: name=%s value-kind=%s accepted=%s", p->name,
		kind_name(v), p->accepted);
	return -EINVAL;
}

/* The value as a number, if it is one. */
static bool as_number(const struct rasp_param_value *v, double *d, bool *integer)
{
	switch (v->kind) {
	case RASP_VALUE_SIGNED:
		*d = (double)v->i;
		*integer = true;
		return true;
	case RASP_VALUE_UNSIGNED:
		*d = (double)v->u;
		*integer = true;
		return true;
	case RASP_VALUE_REAL:
		*d = v->d;
		*integer = false;
		return true;
	default:
		return false;
	}
}

/* Stores a checked value into its field. */
static int store(const struct rasp_param *p, void *opts, const struct rasp_param_value *v,
		 char *err, size_t errlen)
{
	char *field = (char *)opts + p->offset, *copy;
	unsigned mask = 0, m;

	switch (p->type) {
	case RASP_PARAM_CHOICE:
		snprintf(field, p->size, "%s", v->s);
		return 0;
	case RASP_PARAM_KEYS:
		for (size_t i = 0; i < (v->kind == RASP_VALUE_STRINGS ? v->nstrings : 1); i++) {
			if (rasp_group_by_parse(
				v->kind == RASP_VALUE_STRINGS ? v->strings[i] : v->s, &m))
				goto bad_keys;
			mask |= m;
		}
		if (!mask)
			goto bad_keys;
		*(unsigned *)field = mask;
		return 0;
	case RASP_PARAM_REAL:
		*(double *)field = v->d;
		return 0;
	case RASP_PARAM_UINT:
		*(uint64_t *)field = v->u;
		return 0;
	case RASP_PARAM_PATH:
		copy = strdup(v->s);
		if (!copy) {
			set_err(err, errlen, "out of memory: name=%s", p->name);
			return -ENOMEM;
		}
		free(*(char **)field);
		*(char **)field = copy;
		return 0;
	case RASP_PARAM_BOOL:
		*(bool *)field = v->b;
		return 0;
	case RASP_PARAM_LIST: {
		struct rasp_param_list *l = (struct rasp_param_list *)field;
		size_t n = v->kind == RASP_VALUE_STRINGS ? v->nstrings : 1;
		char **grown = realloc(l->v, (l->n + n) * sizeof(*l->v));

		if (!grown) {
			set_err(err, errlen, "out of memory: name=%s", p->name);
			return -ENOMEM;
		}
		l->v = grown;
		for (size_t i = 0; i < n; i++) {
			l->v[l->n] = strdup(v->kind == RASP_VALUE_STRINGS ? v->strings[i] : v->s);
			if (!l->v[l->n]) {
				set_err(err, errlen, "out of memory: name=%s", p->name);
				return -ENOMEM;
			}
			l->n++;
		}
		return 0;
	}
	}
	return -EINVAL;
bad_keys:
	set_err(err, errlen,
		"bad parameter: name=%s value=\"%s\" accepted=comma-separated list or array of "
		"%s",
		p->name, v->kind == RASP_VALUE_STRINGS ? "(array)" : v->s, p->accepted);
	return -EINVAL;
}

int rasp_param_set(const struct rasp_param *table, void *opts, const char *name,
		   const struct rasp_param_value *v, char *err, size_t errlen)
{
	const struct rasp_param *p = rasp_param_find(table, name);
	struct rasp_param_value n = *v;
	bool integer, in_range;
	double d;

	if (err && errlen)
		err[0] = '\0';
	if (!p) {
		char names[256];

		rasp_param_names(table, names, sizeof(names));
		set_err(err, errlen, "unknown parameter: name=%s accepted=%s", name, names);
		return -EINVAL;
	}
	switch (p->type) {
	case RASP_PARAM_CHOICE:
		if (v->kind != RASP_VALUE_STRING)
			return wrong_kind(p, v, err, errlen);
		if (!word_in(p->accepted, v->s, strlen(v->s))) {
			set_err(err, errlen, "bad parameter: name=%s value=\"%s\" accepted=%s",
				p->name, v->s, p->accepted);
			return -EINVAL;
		}
		break;
	case RASP_PARAM_KEYS:
		if (v->kind != RASP_VALUE_STRING && v->kind != RASP_VALUE_STRINGS)
			return wrong_kind(p, v, err, errlen);
		break;
	case RASP_PARAM_PATH:
		if (v->kind != RASP_VALUE_STRING || v->s[0] == '\0') {
			set_err(err, errlen, "bad parameter: name=%s value-kind=%s accepted=%s",
				p->name,
				v->kind == RASP_VALUE_STRING ? "empty-string" : kind_name(v),
				p->accepted);
			return -EINVAL;
		}
		break;
	case RASP_PARAM_BOOL:
		if (v->kind != RASP_VALUE_BOOL)
			return wrong_kind(p, v, err, errlen);
		break;
	case RASP_PARAM_LIST:
		if (v->kind != RASP_VALUE_STRING && v->kind != RASP_VALUE_STRINGS)
			return wrong_kind(p, v, err, errlen);
		for (size_t i = 0; i < (v->kind == RASP_VALUE_STRINGS ? v->nstrings : 1); i++)
			if (!(v->kind == RASP_VALUE_STRINGS ? v->strings[i] : v->s)[0]) {
				set_err(
				    err, errlen,
				    "bad parameter: name=%s value-kind=empty-string accepted=%s",
				    p->name, p->accepted);
				return -EINVAL;
			}
		break;
	case RASP_PARAM_UINT:
		/* Its word: the parameter's own meaning (RASP_PARAM_AUTO). */
		if (p->word && v->kind == RASP_VALUE_STRING && strcmp(v->s, p->word) == 0) {
			n.u = RASP_PARAM_AUTO;
			break;
		}
		/* fall through */
	case RASP_PARAM_REAL:
		if (!as_number(v, &d, &integer) || (p->type == RASP_PARAM_UINT && !integer))
			return wrong_kind(p, v, err, errlen);
		in_range = isfinite(d) && (p->min_open ? d > p->min : d >= p->min) && d <= p->max;
		/* Integers compare as integers: past 2^53 a double rounds (10^18 + 1 would pass a
		 * bound of 10^18). A signed value below zero never fits an unsigned parameter. */
		if (v->kind == RASP_VALUE_UNSIGNED && v->u > (uint64_t)p->max)
			in_range = false;
		if (v->kind == RASP_VALUE_SIGNED && v->i < 0 && p->min >= 0)
			in_range = false;
		if (!in_range) {
			if (v->kind == RASP_VALUE_SIGNED)
				set_err(err, errlen,
					"bad parameter: name=%s value=%" PRId64 " accepted=%s",
					p->name, v->i, p->accepted);
			else if (v->kind == RASP_VALUE_UNSIGNED)
				set_err(err, errlen,
					"bad parameter: name=%s value=%" PRIu64 " accepted=%s",
					p->name, v->u, p->accepted);
			else
				set_err(err, errlen,
					"bad parameter: name=%s value=%.17g accepted=%s", p->name,
					d, p->accepted);
			return -EINVAL;
		}
		n.d = d;
		n.u = v->kind == RASP_VALUE_UNSIGNED ? v->u
		      : v->kind == RASP_VALUE_SIGNED ? (uint64_t)v->i
						     : (uint64_t)d;
		break;
	}
	return store(p, opts, &n, err, errlen);
}

/* Decimal or 0x hex, never octal, no sign; a K/M/G suffix where allowed. */
static int parse_uint_text(const char *text, bool suffixes, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (!(text[0] >= '0' && text[0] <= '9'))
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, text[0] == '0' && (text[1] == 'x' || text[1] == 'X') ? 16 : 10);
	if (errno || end == text)
		return -EINVAL;
	if (suffixes && end[0] && !end[1]) {
		const char *units = "KMG", *u = strchr(units, end[0] & ~0x20);

		if (u) {
			mult = UINT64_C(1) << (10 * (u - units + 1));
			end++;
		}
	}
	if (*end || (v && mult > UINT64_MAX / v))
		return -EINVAL;
	*out = v * mult;
	return 0;
}

int rasp_param_set_text(const struct rasp_param *table, void *opts, const char *name,
			const char *text, char *err, size_t errlen)
{
	const struct rasp_param *p = rasp_param_find(table, name);
	struct rasp_param_value v = {.kind = RASP_VALUE_STRING, .s = text};
	uint64_t u;
	char *end;

	if (!p)
		return rasp_param_set(table, opts, name, &v, err, errlen);
	switch (p->type) {
	case RASP_PARAM_REAL:
		/* An integer (with its suffix) or a plain real number. */
		if (parse_uint_text(text, p->suffixes, &u) == 0) {
			v = (struct rasp_param_value){.kind = RASP_VALUE_UNSIGNED, .u = u};
			break;
		}
		errno = 0;
		v.d = strtod(text, &end);
		if (errno || end == text || *end || !(text[0] >= '0' && text[0] <= '9'))
			goto bad;
		v.kind = RASP_VALUE_REAL;
		break;
	case RASP_PARAM_UINT:
		if (p->word && strcmp(text, p->word) == 0)
			break; /* the word, as a string */
		if (parse_uint_text(text, p->suffixes, &u))
			goto bad;
		v = (struct rasp_param_value){.kind = RASP_VALUE_UNSIGNED, .u = u};
		break;
	case RASP_PARAM_BOOL:
		if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0)
			goto bad;
		v = (struct rasp_param_value){.kind = RASP_VALUE_BOOL, .b = text[0] == 't'};
		break;
	default:
		break;
	}
	return rasp_param_set(table, opts, name, &v, err, errlen);
bad:
	set_err(err, errlen, "bad parameter: name=%s value=\"%s\" accepted=%s%s", p->name, text,
		p->accepted, p->suffixes ? " (K, M, G suffixes allowed)" : "");
	return -EINVAL;
}
