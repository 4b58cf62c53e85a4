/* PLACEHOLDER until the pprof writer lands: refuses to write. */
#include <errno.h>

#include "writer.h"

static int write_pprof(const struct rasp_report_view *v, FILE *out)
{
	(void)v;
	(void)out;
	return -ENOSYS;
}

const struct rasp_writer rasp_writer_pprof = {"pprof", write_pprof};
