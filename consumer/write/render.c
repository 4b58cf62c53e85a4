/* Rendering a report: the writer registry, rows and notes built once for any format. */
#include "writer.h"

#include <errno.h>
#include <string.h>

const struct rasp_writer *const rasp_writers[] = {
    &rasp_writer_text,
    &rasp_writer_csv,
    &rasp_writer_json,
    &rasp_writer_folded,
    &rasp_writer_pprof,
    &rasp_writer_html,
    NULL,
};

unsigned rasp_report_keys(const struct rasp_report_options *opt)
{
	const struct rasp_writer *w = rasp_writer_find(opt->format);

	if (w && w->stacks)
		return opt->group_by | RASP_GROUP_TYPE | RASP_GROUP_STACK;
	return opt->group_by;
}

struct rasp_site_rule rasp_report_site_rule(const struct rasp_report_options *opt)
{
	return (struct rasp_site_rule){.leaf = strcmp(opt->site, "leaf") == 0,
				       .exclude = opt->site_exclude.v,
				       .nexclude = opt->site_exclude.n};
}

const struct rasp_writer *rasp_writer_find(const char *name)
{
	for (const struct rasp_writer *const *w = rasp_writers; *w; w++)
		if (strcmp((*w)->name, name) == 0)
			return *w;
	return NULL;
}

const char *rasp_writer_names(bool (*has)(const struct rasp_writer *w), char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (const struct rasp_writer *const *w = rasp_writers; *w && used < len; w++) {
		int n;

		if (!has(*w))
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? "|" : "", (*w)->name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return buf;
}

int rasp_report_render(struct rasp_tally *t, const struct rasp_report_options *opt,
		       const char *mean_flag, FILE *out)
{
	const struct rasp_writer *w = rasp_writer_find(opt->format);
	struct rasp_rows rows;
	struct rasp_notes notes;
	int ret;

	if (!w)
		return -EINVAL;
	ret = rasp_rows_build_with(t,
				   &(struct rasp_rows_options){
				       opt->confidence, rasp_report_site_rule(opt), opt->raw_names},
				   &rows);
	if (ret)
		return ret;
	ret = rasp_notes_build(t, &rows, mean_flag, &notes);
	if (ret) {
		rasp_rows_free(&rows);
		return ret;
	}
	ret = w->write(&(struct rasp_report_view){opt, t, &rows, &notes}, out);
	if (!ret && (fflush(out) || ferror(out)))
		ret = -EIO;
	rasp_notes_free(&notes);
	rasp_rows_free(&rows);
	return ret;
}
