/* A JSON report read back (what write-json.c writes, docs/consumer.md lists its keys), for
 * rasp diff: its rows as diff items, the largest sampling mean its samples were weighed with,
 * and its notes. A saved report is outside input: every value a comparison trusts is checked,
 * and a refusal names the file and the row. Parsing is json-c's; this library
 * (rasp-report-json) is apart from the writers so that the plugin does not link json-c. */
#ifndef RASP_CONSUMER_READ_JSON_H
#define RASP_CONSUMER_READ_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/diff.h"
#include "report/notes.h"

struct json_object;

struct rasp_json_report {
	struct rasp_diff_item *items; /* the rows; their names point into doc */
	size_t n;
	double mean;	  /* the largest mean its samples were weighed with */
	uint64_t samples; /* the rows' samples */
	struct rasp_notes notes;
	/* How its rows were named (absent from reports of older rasp versions, which named
	 * them as the trace does, by the innermost frame): .NET names as C# writes them, the
	 * site rule; the patterns point into doc. */
	bool csharp_names, site_leaf;
	const char **site_exclude;
	size_t nsite_exclude;
	struct json_object *doc;
};

/* Reads the report at path, whose rows must group by one key: type, or site when by_site,
 * and whose confidence (when it says one) must be `confidence`. 0; -ENOMEM; or a negative
 * errno value with the reason in err (errlen bytes, naming path): -errno when the file
 * cannot be read, -EINVAL when it is not a rasp JSON report, was reported at another
 * confidence, names a sampling mean outside [1, 2^48], groups by other keys, or holds a row
 * without its numbers or with inconsistent ones. r is set even on failure:
 * rasp_json_report_free it. */
int rasp_json_report_read(const char *path, double confidence, bool by_site,
			  struct rasp_json_report *r, char *err, size_t errlen);
void rasp_json_report_free(struct rasp_json_report *r);

#endif /* RASP_CONSUMER_READ_JSON_H */
