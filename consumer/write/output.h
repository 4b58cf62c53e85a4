/* Where a report goes: standard output, or a file that is replaced only once the report is
 * complete. The text is written to a temporary file beside the destination and renamed over
 * it at commit, so a failed report never destroys what the file held. No babeltrace2 types. */
#ifndef RASP_CONSUMER_OUTPUT_H
#define RASP_CONSUMER_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

struct rasp_output {
	FILE *f;    /* write here */
	char *path; /* destination, NULL for standard output */
	char *tmp;  /* the temporary file, NULL for standard output */
};

/* Opens the output (path NULL: standard output). Fails at once when the destination's
 * directory cannot take a file. 0, or a negative errno value with a message in err. */
int rasp_output_open(struct rasp_output *o, const char *path, char *err, size_t errlen);
/* Flushes and, for a file, renames the temporary file over the destination. 0 or a negative
 * errno value (the destination is then untouched, the temporary file removed). */
int rasp_output_commit(struct rasp_output *o);
/* Drops the output: the temporary file is removed, the destination untouched. */
void rasp_output_abort(struct rasp_output *o);

#endif /* RASP_CONSUMER_OUTPUT_H */
