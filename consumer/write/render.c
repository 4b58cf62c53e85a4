/* Rendering a report: the writer registry, rows and notes built once for any format. */
#include "writer.h"

#include <errno.h>
#include <string.h>

static const struct rasp_writer *const writers[] = {
    &rasp_writer_text,	 &rasp_writer_csv,   &rasp_writer_json,
    &rasp_writer_folded, &rasp_writer_pprof, &rasp_writer_html,
};

unsigned rasp_report_keys(const struct rasp_report_options *opt)
{
	if (strcmp(opt->format, "folded") == 0 || strcmp(opt->format, "pprof") == 0 ||
	    strcmp(opt->format, "html") == 0)
		return opt->group_by | RASP_GROUP_TYPE | RASP_GROUP_STACK;
	return opt->group_by;
}

const struct rasp_writer *rasp_writer_find(const char *name)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (strcmp(writers[i]->name, name) == 0)
			return writers[i];
	return NULL;
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
	ret = rasp_rows_build(t, opt->confidence, &rows);
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
