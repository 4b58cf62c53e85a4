/* rasp diff's output: the changes and both sides' notes, as text or json. */
#ifndef RASP_CONSUMER_WRITE_DIFF_H
#define RASP_CONSUMER_WRITE_DIFF_H

#include <stdio.h>

#include "report/diff.h"
#include "report/notes.h"
#include "writer.h"

struct rasp_diff_view {
	const char *base_name, *new_name;
	const struct rasp_diff_change *changes;
	size_t n;
	double confidence;
	const struct rasp_notes *base_notes, *new_notes;
	bool by_site; /* the items are sites ("function (file:line)"), not types */
	/* text: the columns a line may take (0: no limit): names are shortened in the middle
	 * and the objects columns left out to fit, as rasp report's text does. */
	size_t width;
};

int rasp_diff_write_text(FILE *out, const struct rasp_diff_view *v);
int rasp_diff_write_json(FILE *out, const struct rasp_diff_view *v);

#endif /* RASP_CONSUMER_WRITE_DIFF_H */
