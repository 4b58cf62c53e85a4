/* rasp diff: per type, the change in estimated bytes and objects between two recordings,
 * flagged when it is significant given both intervals (consumer/diff.c has the test). Each
 * side is a trace directory, read in process into its own tally exactly as rasp report reads
 * it (warnings included), or a JSON report saved by rasp report --format json. */
#include "cli.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/diff.h"
#include "read/nettrace-read.h"
#include "write/write-diff.h"

struct side {
	const char *path;
	struct rasp_tally *tally; /* a trace side */
	struct rasp_rows rows;	  /* of the tally */
	struct rasp_diff_item *items;
	size_t n;
	double mean; /* largest sampling mean */
	uint64_t samples;
	struct rasp_notes notes;
	json_object *json; /* a JSON side: the items' type names point into it */
};

/* The report's own entries, with format narrowed to what diff writes and the grouping to one
 * key: types or sites. */
static struct rasp_param diff_params[6];

static bool writes_diff(const struct rasp_writer *w)
{
	return w->write_diff != NULL;
}

static void make_params(void)
{
	static const char *const shared[] = {"confidence", "sampling-mean", "strict"};
	static char formats[64];

	diff_params[0] = *rasp_param_find(rasp_report_params, "format");
	diff_params[0].accepted = rasp_writer_names(writes_diff, formats, sizeof(formats));
	for (size_t i = 0; i < 3; i++)
		diff_params[i + 1] = *rasp_param_find(rasp_report_params, shared[i]);
	diff_params[4] = *rasp_param_find(rasp_report_params, "by");
	diff_params[4].accepted = "type|site";
	diff_params[4].help = "compare per type (default) or per allocating function (traces "
			      "recorded with stacks)";
	diff_params[5] = (struct rasp_param){.name = NULL};
}

static void usage(void)
{
	fputs("usage: rasp diff [options] BASE NEW\n"
	      "Per type, the change in estimated bytes and objects from BASE to NEW, with '*' on\n"
	      "changes that are statistically significant given both confidence intervals\n"
	      "(Benjamini-Hochberg over the types: false discovery rate 1 - C).\n"
	      "BASE and NEW are trace directories, .nettrace files or JSON reports (rasp report\n"
	      "--format json).\n",
	      stdout);
	rasp_cli_args_help(diff_params, NULL, 0);
}

/* A trace: a directory (CTF), an EventPipe file, or a live URL; anything else is taken for a
 * saved JSON report. */
static int is_trace(const char *path)
{
	struct stat st;

	return (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) || rasp_nt_is_nettrace(path) ||
	       strncmp(path, "net://", 6) == 0;
}

static int load_trace(const char *cmd, struct side *s, const struct rasp_report_options *opt)
{
	char *ops[] = {(char *)s->path};
	int rc;

	s->tally = rasp_tally_create(opt->group_by, opt->sampling_mean);
	if (!s->tally)
		return -ENOMEM;
	rc = rasp_cli_tally_operands(cmd, ops, 1, opt->strict, s->tally);
	if (rc)
		return rc;
	rc = rasp_rows_build(s->tally, opt->confidence, &s->rows);
	if (!rc)
		rc = rasp_notes_build(s->tally, &s->rows, "--sampling-mean", &s->notes);
	if (rc)
		return rc;
	s->items = calloc(s->rows.n + 1, sizeof(*s->items));
	if (!s->items)
		return -ENOMEM;
	for (size_t i = 0; i < s->rows.n; i++)
		s->items[s->n++] = (struct rasp_diff_item){
		    opt->group_by == RASP_GROUP_SITE ? rasp_row_site(&s->rows, &s->rows.v[i])
						     : rasp_row_type(s->tally, &s->rows.v[i]),
		    s->rows.v[i].est};
	s->samples = s->tally->samples;
	/* The largest mean its samples were weighed with; --sampling-mean only for a side with
	 * none (found by review: starting from --sampling-mean's 102400, a side recorded at 16384
	 * put what could hide unsampled 6x too high, and a type present on one side only was not
	 * flagged). */
	s->mean = 0;
	for (size_t i = 0; i < s->tally->nprocs; i++)
		if (s->tally->procs[i].samples && s->tally->procs[i].mean_high > s->mean)
			s->mean = s->tally->procs[i].mean_high;
	if (!(s->mean >= 1))
		s->mean = opt->sampling_mean;
	return 0;
}

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

/* A JSON report's notes back into notes (only their presence matters for lost data). */
static int json_notes(json_object *root, struct rasp_notes *n)
{
	json_object *arr, *lost;

	*n = (struct rasp_notes){0};
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

static int load_json(const char *cmd, struct side *s, double confidence, bool by_site)
{
	json_object *rows, *conf, *means;
	int ok = 1;

	if (access(s->path, R_OK) != 0) {
		int err = errno;

		rasp_cli_error(cmd, "cannot read '%s': %s", s->path, strerror(err));
		return -err;
	}
	s->json = json_object_from_file(s->path);
	if (!s->json || !json_object_object_get_ex(s->json, "rows", &rows) ||
	    !json_object_is_type(rows, json_type_array)) {
		rasp_cli_error(cmd,
			       "'%s' is neither a trace (a directory, a .nettrace file) nor a rasp "
			       "JSON report",
			       s->path);
		return -EINVAL;
	}
	if (json_object_object_get_ex(s->json, "confidence", &conf) &&
	    fabs(json_object_get_double(conf) - confidence) > 1e-9) {
		rasp_cli_error(cmd,
			       "'%s' was reported at confidence %g, not %g; pass --confidence %g",
			       s->path, json_object_get_double(conf), confidence,
			       json_object_get_double(conf));
		return -EINVAL;
	}
	/* As for a trace: the largest mean the report's samples were weighed with
	 * (processes[].sampling_mean_high); reports without it, the largest it names. */
	s->mean = 0;
	if (json_object_object_get_ex(s->json, "processes", &means) &&
	    json_object_is_type(means, json_type_array))
		for (size_t i = 0; i < json_object_array_length(means); i++) {
			json_object *p = json_object_array_get_idx(means, i);
			int has = 1, has_n = 1;
			double m = num(p, "sampling_mean_high", &has),
			       n = num(p, "samples", &has_n);

			if (has && has_n && n > 0 && m > s->mean)
				s->mean = m;
		}
	if (!(s->mean >= 1)) {
		s->mean = num(s->json, "sampling_mean", &ok);
		if (!ok || s->mean < 1)
			s->mean = RASP_DEFAULT_SAMPLING_MEAN;
		if (json_object_object_get_ex(s->json, "sampling_means", &means) &&
		    json_object_is_type(means, json_type_array))
			for (size_t i = 0; i < json_object_array_length(means); i++) {
				int has = 1;
				double m =
				    num(json_object_array_get_idx(means, i), "sampling_mean", &has);

				if (has && m > s->mean)
					s->mean = m;
			}
	}
	s->items = calloc(json_object_array_length(rows) + 1, sizeof(*s->items));
	if (!s->items || json_notes(s->json, &s->notes))
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *t;
		struct rasp_diff_item *it = &s->items[s->n];

		ok = 1;
		if (!json_object_object_get_ex(r, by_site ? "site" : "type", &t) ||
		    !json_object_is_type(t, json_type_string) ||
		    json_object_object_get_ex(r, by_site ? "type" : "site", NULL) ||
		    json_object_object_get_ex(r, "stack", NULL) ||
		    json_object_object_get_ex(r, "kind", NULL) ||
		    json_object_object_get_ex(r, "thread", NULL) ||
		    json_object_object_get_ex(r, "process", NULL)) {
			rasp_cli_error(cmd,
				       "'%s': row %zu is not a per-%s row (make the report with "
				       "--group-by %s)",
				       s->path, i, by_site ? "site" : "type",
				       by_site ? "site" : "type");
			return -EINVAL;
		}
		it->type = json_object_get_string(t);
		it->est.bytes = num(r, "bytes", &ok);
		it->est.bytes_low = num(r, "bytes_low", &ok);
		it->est.bytes_high = num(r, "bytes_high", &ok);
		it->est.objects = num(r, "objects", &ok);
		it->est.samples = (uint64_t)num(r, "samples", &ok);
		if (!ok) {
			rasp_cli_error(cmd,
				       "'%s': row %zu lacks bytes, bytes_low, bytes_high, objects "
				       "or samples",
				       s->path, i);
			return -EINVAL;
		}
		/* A saved report is outside input: its numbers must make sense before a test
		 * trusts them. */
		if (!(it->est.bytes_low >= 0 && it->est.bytes_low <= it->est.bytes_high &&
		      it->est.bytes >= 0 && it->est.objects >= 0 && isfinite(it->est.bytes_high) &&
		      isfinite(it->est.bytes))) {
			rasp_cli_error(cmd,
				       "'%s': row %zu (%s) has inconsistent numbers: bytes %g in "
				       "[%g, %g], objects %g",
				       s->path, i, it->type, it->est.bytes, it->est.bytes_low,
				       it->est.bytes_high, it->est.objects);
			return -EINVAL;
		}
		s->samples += it->est.samples;
		s->n++;
	}
	return 0;
}

static void side_free(struct side *s)
{
	rasp_rows_free(&s->rows);
	rasp_tally_destroy(s->tally);
	rasp_notes_free(&s->notes);
	free(s->items);
	json_object_put(s->json);
}

int rasp_cli_diff(int argc, char **argv)
{
	const char *cmd = "diff";
	struct rasp_report_options opt;
	struct side side[2] = {{0}, {0}};
	struct rasp_diff_change *changes = NULL;
	size_t n = 0;
	int first, rc, status = 1;

	make_params();
	rasp_report_options_init(&opt);
	rc = rasp_cli_args_parse(cmd, argc, argv, diff_params, &opt, NULL, 0, NULL, NULL, false,
				 &first);
	if (rc != RASP_CLI_ARGS_OK) {
		if (rc == RASP_CLI_ARGS_HELP)
			usage();
		rasp_report_options_fini(&opt);
		return rc == RASP_CLI_ARGS_HELP ? 0 : 2;
	}
	if (argc - first != 2) {
		rasp_cli_error(cmd, "needs exactly two inputs, BASE and NEW (got %d)",
			       argc - first);
		rasp_report_options_fini(&opt);
		return 2;
	}
	if (opt.group_by != RASP_GROUP_TYPE && opt.group_by != RASP_GROUP_SITE) {
		rasp_cli_error(cmd, "--by takes one key: type or site");
		rasp_report_options_fini(&opt);
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		static const char *const which[] = {"BASE", "NEW"};

		side[i].path = argv[first + i];
		if (is_trace(side[i].path))
			rc = load_trace(cmd, &side[i], &opt);
		else
			rc = load_json(cmd, &side[i], opt.confidence,
				       opt.group_by == RASP_GROUP_SITE);
		if (rc) {
			if (rc == -ENOMEM)
				rasp_cli_error(cmd, "out of memory");
			goto out;
		}
		/* A side with nothing sampled would show every type as new or gone. */
		if (!side[i].samples) {
			rasp_cli_error(cmd,
				       "%s '%s' holds no AllocationSampled samples, so every type "
				       "would show as %s; nothing to compare (rasp report '%s' "
				       "says why)",
				       which[i], side[i].path, i ? "gone" : "new", side[i].path);
			goto out;
		}
	}
	rc = rasp_diff_compute(
	    &(struct rasp_diff_side){side[0].path, side[0].items, side[0].n, side[0].mean},
	    &(struct rasp_diff_side){side[1].path, side[1].items, side[1].n, side[1].mean},
	    opt.confidence, &changes, &n);
	if (rc) {
		rasp_cli_error(cmd, "cannot compare: %s", strerror(-rc));
		goto out;
	}
	{
		struct rasp_diff_view v = {side[0].path,   side[1].path,
					   changes,	   n,
					   opt.confidence, &side[0].notes,
					   &side[1].notes, opt.group_by == RASP_GROUP_SITE};

		/* The format was checked against the writers that have write_diff. */
		rc = rasp_writer_find(opt.format)->write_diff(stdout, &v);
	}
	status = rc == 0 && fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
out:
	free(changes);
	side_free(&side[0]);
	side_free(&side[1]);
	rasp_report_options_fini(&opt);
	return status;
}
