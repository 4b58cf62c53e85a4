/* Test support: read a recorded trace with libbabeltrace2 (source.ctf.fs for every CTF trace
 * under a directory -> filter.utils.muxer -> a sink calling back for every event). */
#ifndef RASP_TEST_TRACE_READ_H
#define RASP_TEST_TRACE_READ_H

#include <babeltrace2/babeltrace.h>
#include <stdint.h>

/* Called for every event in time order; return 0 to go on, non-zero to stop with an error. */
typedef int (*rasp_test_event_fn)(const bt_event *event, void *user);

/* Reads every CTF trace (directory holding a `metadata` file) under `root`. Returns the
 * number of events visited, or -1 on error (printed). Discarded-events counts reported by
 * the trace are added to *discarded when it is non-NULL. */
long rasp_test_trace_foreach(const char *root, rasp_test_event_fn fn, void *user,
			     uint64_t *discarded);

/* Payload field `name` of `event`, or NULL. */
const bt_field *rasp_test_event_field(const bt_event *event, const char *name);

/* Common-context field (vpid, vtid, procname) of `event`, or NULL. */
const bt_field *rasp_test_event_context(const bt_event *event, const char *name);

/* Unsigned value of an integer field (signed ones must be >= 0); -1 if not an integer. */
int rasp_test_field_u64(const bt_field *field, uint64_t *out);

#endif /* RASP_TEST_TRACE_READ_H */
