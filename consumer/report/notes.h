/* Notes: what a reader must know before trusting a report's figures, derived once from the
 * tally so that every writer (and rasp diff) says the same: lost data, skipped events,
 * sampling means that had to be assumed, incomplete inputs, an input without samples.
 * No babeltrace2 types. */
#ifndef RASP_CONSUMER_NOTES_H
#define RASP_CONSUMER_NOTES_H

#include <stddef.h>

#include "rows.h"
#include "tally.h"

struct rasp_note {
	const char *code; /* stable, for JSON: lost-data, skipped-events, assumed-mean,
			   * input, no-samples, model-mismatch */
	char *text;	  /* one or two sentences, with their final punctuation */
};

struct rasp_notes {
	struct rasp_note *v;
	size_t n;
	int lost_data;	/* estimates too low by an unknown amount (lost events, an incomplete input)
			 */
	int incomplete; /* an input is incomplete (tally warnings) */
	int assumed_mean; /* some samples were weighed with an assumed mean */
};

/* Every note about t and its rows (NULL: none yet). `mean_flag` names how the user sets the
 * assumed mean ("--sampling-mean" or "sampling-mean="). 0 or -ENOMEM. */
int rasp_notes_build(const struct rasp_tally *t, const struct rasp_rows *rows,
		     const char *mean_flag, struct rasp_notes *out);
/* The code of a note as it reads in JSON, mapped to the stable code string (unknown:
 * "input"). */
const char *rasp_note_code(const char *code);
void rasp_notes_free(struct rasp_notes *n);

#endif /* RASP_CONSUMER_NOTES_H */
