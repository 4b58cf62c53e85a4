/* Test support: reads recorded traces with the real libbabeltrace2 (the ctf and utils
 * plugins from the system) through the rasp command's own reader (cli/graph.h: one
 * source.ctf.fs per CTF trace under a directory, filter.utils.muxer, a simple sink), and
 * calls back per event. */
#define _GNU_SOURCE
#include "trace-read.h"

#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reader {
	rasp_test_event_fn fn;
	void *user;
	long events;
	uint64_t *discarded;
};

static int on_message(const bt_message *m, void *data)
{
	struct reader *r = data;
	uint64_t n;

	switch (bt_message_get_type(m)) {
	case BT_MESSAGE_TYPE_EVENT:
		r->events++;
		return r->fn(bt_message_event_borrow_event_const(m), r->user);
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		if (r->discarded && bt_message_discarded_events_get_count(m, &n) ==
					BT_PROPERTY_AVAILABILITY_AVAILABLE)
			*r->discarded += n;
		return 0;
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		if (r->discarded)
			*r->discarded += 1;
		return 0;
	default:
		return 0;
	}
}

long rasp_test_trace_foreach(const char *root, rasp_test_event_fn fn, void *user,
			     uint64_t *discarded)
{
	struct reader r = {fn, user, 0, discarded};
	int rc = rasp_graph_read("test-support", root, on_message, &r);

	if (rc) {
		fprintf(stderr, "test-support: reading the traces under '%s' failed (%d)\n", root,
			rc);
		return -1;
	}
	return r.events;
}

const bt_field *rasp_test_event_field(const bt_event *event, const char *name)
{
	const bt_field *payload = bt_event_borrow_payload_field_const(event);

	return payload ? bt_field_structure_borrow_member_field_by_name_const(payload, name) : NULL;
}

const bt_field *rasp_test_event_context(const bt_event *event, const char *name)
{
	const bt_field *ctx = bt_event_borrow_common_context_field_const(event);

	return ctx ? bt_field_structure_borrow_member_field_by_name_const(ctx, name) : NULL;
}

int rasp_test_field_u64(const bt_field *field, uint64_t *out)
{
	bt_field_class_type t;

	if (!field)
		return -1;
	t = bt_field_get_class_type(field);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		*out = bt_field_integer_unsigned_get_value(field);
		return 0;
	}
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
		int64_t v = bt_field_integer_signed_get_value(field);

		if (v < 0)
			return -1;
		*out = (uint64_t)v;
		return 0;
	}
	return -1;
}
