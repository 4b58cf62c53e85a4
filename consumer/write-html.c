/* PLACEHOLDER until the html writer lands: refuses to write. */
#include <errno.h>

#include "writer.h"

static int write_html(const struct rasp_report_view *v, FILE *out)
{
	(void)v;
	(void)out;
	return -ENOSYS;
}

const struct rasp_writer rasp_writer_html = {"html", write_html};
