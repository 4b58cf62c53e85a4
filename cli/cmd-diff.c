/* rasp diff: per type, the change in estimated bytes and objects between two recordings,
 * flagged when it is significant given both intervals (consumer/report/diff.c has the test). Each
 * side is a trace directory, read in process into its own tally exactly as rasp report reads
 * it (warnings included), or a JSON report saved by rasp report --format json (read back
 * beside its writer: consumer/write/read-json.c). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "read/nettrace-read.h"
#include "report/diff.h"
#include "write/read-json.h"
#include "write/text-fit.h"
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
	struct rasp_json_report json; /* a JSON side: the items' names point into its doc */
	/* How its rows are named: .NET names as C# writes them, the site rule (patterns
	 * borrowed from the options or the JSON document). */
	bool csharp_names;
	struct rasp_site_rule rule;
};

/* The report's own entries, with format narrowed to what diff writes and the grouping to one
 * key: types or sites. */
static struct rasp_param diff_params[11];

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
	diff_params[5] = *rasp_param_find(rasp_report_params, "site");
	diff_params[6] = *rasp_param_find(rasp_report_params, "site-exclude");
	diff_params[7] = *rasp_param_find(rasp_report_params, "raw-names");
	diff_params[8] = *rasp_param_find(rasp_report_params, "width");
	diff_params[9] = *rasp_param_find(rasp_report_params, "wide");
	diff_params[10] = (struct rasp_param){.name = NULL};
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
	rc = rasp_rows_build_with(s->tally,
				  &(struct rasp_rows_options){
				      opt->confidence, rasp_report_site_rule(opt), opt->raw_names},
				  &s->rows);
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
	s->csharp_names = s->rows.clr_names;
	s->rule = s->rows.site_rule;
	/* The largest mean its samples were weighed with; --sampling-mean only for a side with
	 * none (starting from --sampling-mean's 102400, a side recorded at 16384 would put what
	 * could hide unsampled 6x too high, and a type present on one side only would not be
	 * flagged). */
	s->mean = 0;
	for (size_t i = 0; i < s->tally->nprocs; i++)
		if (s->tally->procs[i].samples && s->tally->procs[i].mean_high > s->mean)
			s->mean = s->tally->procs[i].mean_high;
	if (!(s->mean >= 1))
		s->mean = opt->sampling_mean;
	return 0;
}

static int load_json(const char *cmd, struct side *s, double confidence, bool by_site)
{
	char err[512];
	int rc = rasp_json_report_read(s->path, confidence, by_site, &s->json, err, sizeof(err));

	if (rc) {
		if (rc != -ENOMEM)
			rasp_cli_error(cmd, "%s", err);
		return rc;
	}
	/* The side owns the items and notes from here; their names stay in the document. */
	s->items = s->json.items;
	s->n = s->json.n;
	s->notes = s->json.notes;
	s->json.items = NULL;
	s->json.notes = (struct rasp_notes){0};
	s->mean = s->json.mean;
	s->samples = s->json.samples;
	s->csharp_names = s->json.csharp_names;
	s->rule = (struct rasp_site_rule){.leaf = s->json.site_leaf,
					  .exclude = (char *const *)s->json.site_exclude,
					  .nexclude = s->json.nsite_exclude};
	return 0;
}

/* Whether two site rules name the same frames. */
static bool same_rule(const struct rasp_site_rule *a, const struct rasp_site_rule *b)
{
	if (a->leaf != b->leaf || a->nexclude != b->nexclude)
		return false;
	for (size_t i = 0; i < a->nexclude; i++)
		if (strcmp(a->exclude[i], b->exclude[i]) != 0)
			return false;
	return true;
}

/* Sides named differently would show every row as new and gone: refused, saying how. */
static int named_alike(const char *cmd, const struct side *s, bool by_site)
{
	if (s[0].csharp_names != s[1].csharp_names) {
		int r = s[0].csharp_names ? 1 : 0;

		rasp_cli_error(
		    cmd,
		    "'%s' names .NET types as the trace does and '%s' as C# writes "
		    "them: every row would differ. Compare with --raw-names (a JSON "
		    "report made with --raw-names, or by an older rasp, names them as the "
		    "trace does)",
		    s[r].path, s[1 - r].path);
		return -EINVAL;
	}
	if (by_site && !same_rule(&s[0].rule, &s[1].rule)) {
		rasp_cli_error(cmd,
			       "'%s' and '%s' name sites by different rules (--site %s and %s, "
			       "--site-exclude): every row would differ. Compare with the rule of "
			       "the JSON report (one made by an older rasp is --site leaf)",
			       s[0].path, s[1].path, s[0].rule.leaf ? "leaf" : "user",
			       s[1].rule.leaf ? "leaf" : "user");
		return -EINVAL;
	}
	return 0;
}

static void side_free(struct side *s)
{
	rasp_rows_free(&s->rows);
	rasp_tally_destroy(s->tally);
	rasp_notes_free(&s->notes);
	free(s->items);
	rasp_json_report_free(&s->json);
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
	if (named_alike(cmd, side, opt.group_by == RASP_GROUP_SITE))
		goto out;
	rc = rasp_diff_compute(
	    &(struct rasp_diff_side){side[0].path, side[0].items, side[0].n, side[0].mean},
	    &(struct rasp_diff_side){side[1].path, side[1].items, side[1].n, side[1].mean},
	    opt.confidence, &changes, &n);
	if (rc) {
		rasp_cli_error(cmd, "cannot compare: %s", strerror(-rc));
		goto out;
	}
	{
		struct rasp_diff_view v = {.base_name = side[0].path,
					   .new_name = side[1].path,
					   .changes = changes,
					   .n = n,
					   .confidence = opt.confidence,
					   .base_notes = &side[0].notes,
					   .new_notes = &side[1].notes,
					   .by_site = opt.group_by == RASP_GROUP_SITE};
		size_t cols = 0, rows = 0;

		/* The width: --wide's none, --width's, or the terminal's, as rasp report's. */
		if (!opt.wide && opt.width == RASP_PARAM_AUTO)
			v.width = rasp_text_terminal(stdout, &cols, &rows) ? cols : 0;
		else if (!opt.wide)
			v.width = (size_t)opt.width;

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
