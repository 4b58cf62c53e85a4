/* A JSON report read back (read-json.h): the keys write-json.c writes, through json-c. */
#include "read-json.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rasp/rasp.h" /* RASP_DEFAULT_SAMPLING_MEAN, RASP_MAX_SAMPLING_MEAN */

__attribute__((format(printf, 3, 4))) static int refuse(char *err, size_t errlen, const char *fmt,
							...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* o[key] as a number; *ok = 0 when it is absent or not a number. */
static double num(json_object *o, const char *key, int *ok)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))) {
		*ok = 0;
		return 0;
	}
	return json_object_get_double(v);
}

/* The report's notes back into notes (only their presence matters for lost data). */
static int read_notes(json_object *root, struct rasp_notes *n)
{
	json_object *arr, *lost;

	if (json_object_object_get_ex(root, "estimates_too_low", &lost))
		n->lost_data = json_object_get_boolean(lost);
	if (!json_object_object_get_ex(root, "notes", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return 0;
	n->v = calloc(json_object_array_length(arr) + 1, sizeof(*n->v));
	if (!n->v)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i), *text, *code;

		if (!json_object_object_get_ex(e, "text", &text) ||
		    !json_object_object_get_ex(e, "code", &code))
			continue;
		n->v[n->n].text = strdup(json_object_get_string(text));
		/* Codes are a fixed set: keep ours, not a pointer into the document. */
		n->v[n->n].code = rasp_note_code(json_object_get_string(code));
		if (!n->v[n->n].text)
			return -ENOMEM;
		n->n++;
	}
	return 0;
}

/* A sampling mean the report names, refused outside [1, RASP_MAX_SAMPLING_MEAN] (what rasp
 * record and the report's own parameter accept): a comparison would weigh with it. */
static int mean_ok(double m, const char *path, const char *what, size_t i, char *err, size_t errlen)
{
	if (m >= 1 && m <= (double)RASP_MAX_SAMPLING_MEAN)
		return 0;
	return refuse(err, errlen, "'%s': %s %zu has sampling mean %g, outside [1, 2^48]", path,
		      what, i, m);
}

/* As for a trace: the largest mean the report's samples were weighed with
 * (processes[].sampling_mean_high); for reports without it, the largest it names. 0 or
 * -EINVAL (a mean out of range). */
static int read_mean(json_object *doc, const char *path, double *out, char *err, size_t errlen)
{
	json_object *means;
	double mean = 0;
	int ok = 1;

	if (json_object_object_get_ex(doc, "processes", &means) &&
	    json_object_is_type(means, json_type_array))
		for (size_t i = 0; i < json_object_array_length(means); i++) {
			json_object *p = json_object_array_get_idx(means, i);
			int has = 1, has_n = 1;
			double m = num(p, "sampling_mean_high", &has),
			       n = num(p, "samples", &has_n);

			if (!has || !has_n || !(n > 0))
				continue;
			if (mean_ok(m, path, "process", i, err, errlen))
				return -EINVAL;
			if (m > mean)
				mean = m;
		}
	if (mean >= 1) {
		*out = mean;
		return 0;
	}
	mean = num(doc, "sampling_mean", &ok);
	if (!ok)
		mean = RASP_DEFAULT_SAMPLING_MEAN;
	else if (mean_ok(mean, path, "report", 0, err, errlen))
		return -EINVAL;
	if (json_object_object_get_ex(doc, "sampling_means", &means) &&
	    json_object_is_type(means, json_type_array))
		for (size_t i = 0; i < json_object_array_length(means); i++) {
			int has = 1;
			double m = num(json_object_array_get_idx(means, i), "sampling_mean", &has);

			if (!has)
				continue;
			if (mean_ok(m, path, "sampling_means entry", i, err, errlen))
				return -EINVAL;
			if (m > mean)
				mean = m;
		}
	*out = mean;
	return 0;
}

/* How the rows were named ("names", "site", "site_exclude"); a report without them is an
 * older rasp's: the trace's names, sites by the innermost frame. 0, -EINVAL (a value of the
 * wrong kind), -ENOMEM. */
static int read_naming(struct rasp_json_report *r, char *err, size_t errlen, const char *path)
{
	json_object *v;

	r->site_leaf = true;
	if (json_object_object_get_ex(r->doc, "names", &v)) {
		const char *s = json_object_get_string(v);

		if (!json_object_is_type(v, json_type_string) ||
		    (strcmp(s, "csharp") != 0 && strcmp(s, "runtime") != 0))
			return refuse(err, errlen,
				      "'%s': \"names\" is not \"csharp\" or \"runtime\"", path);
		r->csharp_names = strcmp(s, "csharp") == 0;
	}
	if (json_object_object_get_ex(r->doc, "site", &v)) {
		const char *s = json_object_get_string(v);

		if (!json_object_is_type(v, json_type_string) ||
		    (strcmp(s, "user") != 0 && strcmp(s, "leaf") != 0))
			return refuse(err, errlen, "'%s': \"site\" is not \"user\" or \"leaf\"",
				      path);
		r->site_leaf = strcmp(s, "leaf") == 0;
	}
	if (json_object_object_get_ex(r->doc, "site_exclude", &v)) {
		size_t n;

		if (!json_object_is_type(v, json_type_array))
			return refuse(err, errlen, "'%s': \"site_exclude\" is not an array", path);
		n = json_object_array_length(v);
		r->site_exclude = calloc(n + 1, sizeof(*r->site_exclude));
		if (!r->site_exclude)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(v, i);

			if (!json_object_is_type(e, json_type_string))
				return refuse(err, errlen,
					      "'%s': \"site_exclude\" %zu is not a string", path,
					      i);
			r->site_exclude[r->nsite_exclude++] = json_object_get_string(e);
		}
	}
	return 0;
}

int rasp_json_report_read(const char *path, double confidence, bool by_site,
			  struct rasp_json_report *r, char *err, size_t errlen)
{
	const char *key = by_site ? "site" : "type";
	json_object *rows, *conf;

	*r = (struct rasp_json_report){0};
	if (errlen)
		err[0] = '\0';
	if (access(path, R_OK) != 0) {
		int e = errno;

		if (errlen)
			snprintf(err, errlen, "cannot read '%s': %s", path, strerror(e));
		return -e;
	}
	r->doc = json_object_from_file(path);
	if (!r->doc || !json_object_object_get_ex(r->doc, "rows", &rows) ||
	    !json_object_is_type(rows, json_type_array))
		return refuse(err, errlen,
			      "'%s' is neither a trace (a directory, a .nettrace file) nor a rasp "
			      "JSON report",
			      path);
	if (json_object_object_get_ex(r->doc, "confidence", &conf) &&
	    fabs(json_object_get_double(conf) - confidence) > 1e-9)
		return refuse(
		    err, errlen, "'%s' was reported at confidence %g, not %g; pass --confidence %g",
		    path, json_object_get_double(conf), confidence, json_object_get_double(conf));
	if (read_mean(r->doc, path, &r->mean, err, errlen))
		return -EINVAL;
	{
		int rc = read_naming(r, err, errlen, path);

		if (rc)
			return rc;
	}
	r->items = calloc(json_object_array_length(rows) + 1, sizeof(*r->items));
	if (!r->items || read_notes(r->doc, &r->notes))
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *row = json_object_array_get_idx(rows, i), *t;
		struct rasp_diff_item *it = &r->items[r->n];
		double samples;
		int ok = 1;

		if (!json_object_object_get_ex(row, key, &t) ||
		    !json_object_is_type(t, json_type_string) ||
		    json_object_object_get_ex(row, by_site ? "type" : "site", NULL) ||
		    json_object_object_get_ex(row, "stack", NULL) ||
		    json_object_object_get_ex(row, "kind", NULL) ||
		    json_object_object_get_ex(row, "thread", NULL) ||
		    json_object_object_get_ex(row, "process", NULL))
			return refuse(err, errlen,
				      "'%s': row %zu is not a per-%s row (make the report with "
				      "--group-by %s)",
				      path, i, key, key);
		it->type = json_object_get_string(t);
		it->est.bytes = num(row, "bytes", &ok);
		it->est.bytes_low = num(row, "bytes_low", &ok);
		it->est.bytes_high = num(row, "bytes_high", &ok);
		it->est.objects = num(row, "objects", &ok);
		samples = num(row, "samples", &ok);
		if (!ok)
			return refuse(
			    err, errlen,
			    "'%s': row %zu lacks bytes, bytes_low, bytes_high, objects or "
			    "samples",
			    path, i);
		/* Its numbers must make sense before a test trusts them; samples a count (a
		 * double past 2^64 or below 0 has no uint64_t value). */
		if (!(it->est.bytes_low >= 0 && it->est.bytes_low <= it->est.bytes_high &&
		      it->est.bytes >= 0 && it->est.objects >= 0 && isfinite(it->est.bytes_high) &&
		      isfinite(it->est.bytes) && isfinite(it->est.objects) && samples >= 0 &&
		      samples < 0x1p64 && samples == floor(samples)))
			return refuse(err, errlen,
				      "'%s': row %zu (%s) has inconsistent numbers: bytes %g in "
				      "[%g, %g], objects %g, samples %g",
				      path, i, it->type, it->est.bytes, it->est.bytes_low,
				      it->est.bytes_high, it->est.objects, samples);
		it->est.samples = (uint64_t)samples;
		r->samples = r->samples + it->est.samples < r->samples
				 ? UINT64_MAX
				 : r->samples + it->est.samples;
		r->n++;
	}
	return 0;
}

void rasp_json_report_free(struct rasp_json_report *r)
{
	free(r->items);
	free(r->site_exclude);
	rasp_notes_free(&r->notes);
	json_object_put(r->doc);
	*r = (struct rasp_json_report){0};
}
