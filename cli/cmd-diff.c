/* rasp diff: per type, the change in estimated bytes and objects between two recordings,
 * flagged when it is statistically significant given both intervals. BASE and NEW are trace
 * directories (reported here by type) or JSON reports from `rasp report --format json`.
 *
 * The test: each side's interval gives a standard error on the side facing the other estimate
 * (intervals are skewed at few samples, so the half that matters is used, divided by the
 * normal quantile of the confidence); the change's z-score is (new - base) /
 * sqrt(se_base^2 + se_new^2) and its two-sided p-value follows. A report compares many types
 * at once: at 5% each, 11 unchanged types would show a false change in 43% of diffs. So the
 * flags control the false discovery rate at 1 - confidence (Benjamini-Hochberg): when nothing
 * changed, any flag at all appears in at most 5% of diffs, and a real change of one big type
 * is still flagged. A type one side never sampled has 0 bytes there, and an upper bound of
 * the negative binomial quantile for one sample at the largest mean the report used (what
 * could hide below the sampling rate). */
#define _GNU_SOURCE
#include "cli.h"
#include "estimate.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: rasp diff [--format text|json] [--confidence C] BASE NEW\n"
    "Per type, the change in estimated bytes and objects from BASE to NEW, with '*' on\n"
    "changes that are statistically significant given both confidence intervals\n"
    "(Benjamini-Hochberg over the types: false discovery rate 1 - C).\n"
    "BASE and NEW are trace directories or JSON reports (rasp report --format json).\n"
    "  --format FMT    text (default) or json\n"
    "  --confidence C  in (0, 1), default 0.95\n";

struct row {
	char *type;
	double bytes, low, high, objects;
	uint64_t samples;
};

struct side {
	const char *path;
	double mean; /* largest sampling mean the report used, for the bound of unseen types */
	struct row *rows;
	size_t n;
};

/* Standard normal quantile by bisection on erfc: exact enough, and cold. */
static double normal_quantile(double prob)
{
	double lo = -40, hi = 40;

	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (0.5 * erfc(-mid / M_SQRT2) < prob)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A trace directory is reported by type, as JSON, into a temporary file. */
static int report_to_json(const char *cmd, const char *trace, double confidence, char *tmp,
			  size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(tmp, len, "%s/rasp-diff-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(tmp);
	if (fd < 0) {
		rasp_cli_error(cmd, "cannot create a temporary file: %s", strerror(errno));
		return -errno;
	}
	close(fd);
	struct rasp_graph_param p[] = {
	    {"format", RASP_PARAM_STRING, "json", 0, 0},
	    {"group-by", RASP_PARAM_STRING, "type", 0, 0},
	    {"output", RASP_PARAM_STRING, tmp, 0, 0},
	    {"confidence", RASP_PARAM_REAL, NULL, 0, confidence},
	};
	const char *inputs[] = {trace};

	if (rasp_graph_report(cmd, inputs, 1, p, 4) != 0) {
		unlink(tmp);
		return -EIO;
	}
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

static int load_side(const char *cmd, struct side *s, double confidence)
{
	char tmp[4096] = "";
	json_object *root = NULL, *rows, *conf;
	int ok = 1, rc = -EINVAL;

	if (is_dir(s->path)) {
		if (report_to_json(cmd, s->path, confidence, tmp, sizeof(tmp)) != 0)
			return -EIO;
		root = json_object_from_file(tmp);
		unlink(tmp);
	} else if (access(s->path, R_OK) != 0) {
		rasp_cli_error(cmd, "'%s': %s", s->path, strerror(errno));
		return -errno;
	} else {
		root = json_object_from_file(s->path);
	}
	if (!root || !json_object_object_get_ex(root, "rows", &rows) ||
	    !json_object_is_type(rows, json_type_array)) {
		rasp_cli_error(cmd, "'%s' is neither a trace directory nor a rasp JSON report",
			       s->path);
		goto out;
	}
	s->mean = num(root, "sampling_mean", &ok);
	if (!ok || s->mean < 1)
		s->mean = RASP_EST_DEFAULT_MEAN;
	/* Per-process means (SamplingConfigured): the unseen bound takes the largest. */
	if (json_object_object_get_ex(root, "sampling_means", &conf) &&
	    json_object_is_type(conf, json_type_array)) {
		double largest = 0;

		for (size_t i = 0; i < json_object_array_length(conf); i++) {
			json_object *e = json_object_array_get_idx(conf, i);
			int has = 1;
			double m = json_object_is_type(e, json_type_object)
				       ? num(e, "sampling_mean", &has)
				       : json_object_get_double(e);

			if (has && m > largest)
				largest = m;
		}
		if (largest >= 1)
			s->mean = largest;
	}
	/* A JSON report made at another confidence would make the test wrong. */
	ok = 1;
	if (json_object_object_get_ex(root, "confidence", &conf) &&
	    fabs(json_object_get_double(conf) - confidence) > 1e-9) {
		rasp_cli_error(cmd,
			       "'%s' was reported at confidence %g, not %g; pass --confidence %g",
			       s->path, json_object_get_double(conf), confidence,
			       json_object_get_double(conf));
		goto out;
	}
	s->rows = calloc(json_object_array_length(rows) + 1, sizeof(*s->rows));
	if (!s->rows) {
		rc = -ENOMEM;
		goto out;
	}
	s->n = json_object_array_length(rows);
	for (size_t i = 0; i < s->n; i++) {
		json_object *r = json_object_array_get_idx(rows, i), *t;
		struct row *row = &s->rows[i];

		if (!json_object_object_get_ex(r, "type", &t) ||
		    !json_object_is_type(t, json_type_string) ||
		    json_object_object_get_ex(r, "kind", NULL) ||
		    json_object_object_get_ex(r, "thread", NULL) ||
		    json_object_object_get_ex(r, "process", NULL)) {
			rasp_cli_error(cmd,
				       "'%s': row %zu is not a per-type row (make the report "
				       "with --group-by type)",
				       s->path, i);
			goto out;
		}
		row->type = strdup(json_object_get_string(t));
		row->bytes = num(r, "bytes", &ok);
		row->low = num(r, "bytes_low", &ok);
		row->high = num(r, "bytes_high", &ok);
		row->objects = num(r, "objects", &ok);
		row->samples = (uint64_t)num(r, "samples", &ok);
		if (!ok || !row->type) {
			rasp_cli_error(cmd,
				       "'%s': row %zu lacks bytes, bytes_low, bytes_high, "
				       "objects or samples",
				       s->path, i);
			goto out;
		}
	}
	rc = 0;
out:
	json_object_put(root);
	return rc;
}

static const struct row *find(const struct side *s, const char *type)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->rows[i].type, type) == 0)
			return &s->rows[i];
	return NULL;
}

struct change {
	const char *type;
	struct row base, new_;
	double p_value; /* two-sided, of the change in bytes */
	int significant;
};

/* A side that never sampled the type: nothing seen, but up to one sample's worth could hide. */
static struct row unseen(const struct side *s, const char *type, double confidence)
{
	struct row r = {(char *)type, 0, 0, 0, 0, 0};

	r.high = rasp_nb_quantile((1 + confidence) / 2, 1, 1 / s->mean) + 1;
	return r;
}

/* Two-sided p-value of the change in bytes, from the halves of the intervals that face each
 * other (z_c: the normal quantile the intervals were made at). */
static double p_value(const struct row *b, const struct row *n, double z_c)
{
	double se_b, se_n, diff = n->bytes - b->bytes, se;

	if (diff == 0)
		return 1;
	se_b = (diff > 0 ? b->high - b->bytes : b->bytes - b->low) / z_c;
	se_n = (diff > 0 ? n->bytes - n->low : n->high - n->bytes) / z_c;
	se = sqrt(se_b * se_b + se_n * se_n);
	if (!(se > 0))
		return 0; /* both exact and different */
	return erfc(fabs(diff) / se / M_SQRT2);
}

static int cmp_p(const void *a, const void *b)
{
	const struct change *const *x = a, *const *y = b;

	return (*x)->p_value < (*y)->p_value ? -1 : (*x)->p_value > (*y)->p_value;
}

/* Benjamini-Hochberg at level alpha: flags the k smallest p-values, k the largest rank with
 * p_(k) <= k alpha / m. */
static int flag_changes(struct change *c, size_t n, double alpha)
{
	struct change **by_p = calloc(n + 1, sizeof(*by_p));
	size_t k = 0;

	if (!by_p)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		by_p[i] = &c[i];
	qsort(by_p, n, sizeof(*by_p), cmp_p);
	for (size_t i = 0; i < n; i++)
		if (by_p[i]->p_value <= (double)(i + 1) * alpha / (double)n)
			k = i + 1;
	for (size_t i = 0; i < n; i++)
		by_p[i]->significant = i < k;
	free(by_p);
	return 0;
}

static int cmp_change(const void *a, const void *b)
{
	const struct change *x = a, *y = b;
	double dx = fabs(x->new_.bytes - x->base.bytes), dy = fabs(y->new_.bytes - y->base.bytes);

	return dx < dy ? 1 : dx > dy ? -1 : strcmp(x->type, y->type);
}

static void print_json_string(FILE *out, const char *s)
{
	json_object *o = json_object_new_string(s);

	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), out);
	json_object_put(o);
}

static void write_text(const struct change *c, size_t n, double confidence)
{
	int w = 4;

	for (size_t i = 0; i < n; i++)
		if ((int)strlen(c[i].type) > w)
			w = (int)strlen(c[i].type);
	printf("rasp diff: estimated bytes per type; '*' marks a significant change (false "
	       "discovery rate %g%%)\n",
	       (1 - confidence) * 100);
	printf("%-*s %16s %16s %9s %14s %14s  %s\n", w, "type", "base bytes", "new bytes", "change",
	       "base objects", "new objects", "sig");
	for (size_t i = 0; i < n; i++) {
		double b = c[i].base.bytes, nw = c[i].new_.bytes;
		char pct[32];

		if (b > 0)
			snprintf(pct, sizeof(pct), "%+.1f%%", 100 * (nw - b) / b);
		else
			snprintf(pct, sizeof(pct), "new");
		printf("%-*s %16.0f %16.0f %9s %14.0f %14.0f  %s\n", w, c[i].type, b, nw,
		       nw == 0 && b > 0 ? "gone" : pct, c[i].base.objects, c[i].new_.objects,
		       c[i].significant ? "*" : "");
	}
}

static void write_json(const struct change *c, size_t n, double confidence)
{
	printf("{\"confidence\": %.10g, \"rows\": [", confidence);
	for (size_t i = 0; i < n; i++) {
		printf("%s\n  {\"type\": ", i ? "," : "");
		print_json_string(stdout, c[i].type);
		printf(", \"bytes_base\": %.17g, \"bytes_new\": %.17g, \"bytes_change\": %.17g, "
		       "\"bytes_base_low\": %.17g, \"bytes_base_high\": %.17g, "
		       "\"bytes_new_low\": %.17g, \"bytes_new_high\": %.17g, "
		       "\"objects_base\": %.17g, \"objects_new\": %.17g, \"samples_base\": %llu, "
		       "\"samples_new\": %llu, \"p_value\": %.6g, \"significant\": %s}",
		       c[i].base.bytes, c[i].new_.bytes, c[i].new_.bytes - c[i].base.bytes,
		       c[i].base.low, c[i].base.high, c[i].new_.low, c[i].new_.high,
		       c[i].base.objects, c[i].new_.objects, (unsigned long long)c[i].base.samples,
		       (unsigned long long)c[i].new_.samples, c[i].p_value,
		       c[i].significant ? "true" : "false");
	}
	printf("\n]}\n");
}

static void free_side(struct side *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->rows[i].type);
	free(s->rows);
}

int rasp_cli_diff(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"confidence", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *cmd = "diff", *format = "text";
	struct side base = {0}, new_ = {0};
	struct change *changes = NULL;
	double confidence = 0.95, z;
	size_t n = 0;
	int c, rc = 1;

	optind = 1;
	opterr = 0; /* our own one-line messages below */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				rasp_cli_error(cmd, "--format '%s' is not text or json", optarg);
				return 2;
			}
			format = optarg;
			break;
		case 'c':
			if (rasp_cli_parse_confidence(cmd, optarg, &confidence))
				return 2;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			rasp_cli_bad_option(cmd, argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind != 2) {
		rasp_cli_error(cmd, "needs exactly two inputs, BASE and NEW (got %d)",
			       argc - optind);
		return 2;
	}
	base.path = argv[optind];
	new_.path = argv[optind + 1];
	if (load_side(cmd, &base, confidence) || load_side(cmd, &new_, confidence))
		goto out;
	z = normal_quantile((1 + confidence) / 2);
	changes = calloc(base.n + new_.n + 1, sizeof(*changes));
	if (!changes)
		goto out;
	for (size_t i = 0; i < base.n; i++) {
		const struct row *r = find(&new_, base.rows[i].type);

		changes[n].type = base.rows[i].type;
		changes[n].base = base.rows[i];
		changes[n].new_ = r ? *r : unseen(&new_, base.rows[i].type, confidence);
		n++;
	}
	for (size_t i = 0; i < new_.n; i++) {
		if (find(&base, new_.rows[i].type))
			continue;
		changes[n].type = new_.rows[i].type;
		changes[n].base = unseen(&base, new_.rows[i].type, confidence);
		changes[n].new_ = new_.rows[i];
		n++;
	}
	for (size_t i = 0; i < n; i++)
		changes[i].p_value = p_value(&changes[i].base, &changes[i].new_, z);
	if (flag_changes(changes, n, 1 - confidence) != 0)
		goto out;
	qsort(changes, n, sizeof(*changes), cmp_change);
	if (strcmp(format, "json") == 0)
		write_json(changes, n, confidence);
	else
		write_text(changes, n, confidence);
	rc = fflush(stdout) == 0 ? 0 : 1;
out:
	free(changes);
	free_side(&base);
	free_side(&new_);
	return rc;
}
