/* Test support: reads recorded traces with the real libbabeltrace2 (the ctf and utils
 * plugins from the system): the rasp command's own graph builder (cli/graph.h) adds one
 * source.ctf.fs per CTF trace under a directory into filter.utils.muxer, and a simple sink
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
	int failed;
};

static bt_graph_simple_sink_component_consume_func_status consume(bt_message_iterator *it,
								  void *data)
{
	struct reader *r = data;
	bt_message_array_const msgs;
	uint64_t count, i, n;

	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (i = 0; i < count; i++) {
		const bt_message *m = msgs[i];

		switch (bt_message_get_type(m)) {
		case BT_MESSAGE_TYPE_EVENT:
			if (!r->failed) {
				r->events++;
				if (r->fn(bt_message_event_borrow_event_const(m), r->user) != 0)
					r->failed = 1;
			}
			break;
		case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
			if (r->discarded && bt_message_discarded_events_get_count(m, &n) ==
						BT_PROPERTY_AVAILABILITY_AVAILABLE)
				*r->discarded += n;
			break;
		case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
			if (r->discarded)
				*r->discarded += 1;
			break;
		default:
			break;
		}
		bt_message_put_ref(m);
	}
	return r->failed ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR
			 : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

long rasp_test_trace_foreach(const char *root, rasp_test_event_fn fn, void *user,
			     uint64_t *discarded)
{
	const bt_plugin *ctf = NULL, *utils = NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	struct reader r = {fn, user, 0, discarded, 0};
	bt_graph *graph = NULL;
	bt_graph_run_status st;
	long result = -1;

	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &ctf) !=
		BT_PLUGIN_FIND_STATUS_OK ||
	    bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &utils) !=
		BT_PLUGIN_FIND_STATUS_OK) {
		fprintf(stderr, "test-support: babeltrace2 plugins 'ctf'/'utils' not found\n");
		goto end;
	}
	graph = bt_graph_create(0);
	if (!graph ||
	    bt_graph_add_filter_component(
		graph, bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer"), "mux",
		NULL, BT_LOGGING_LEVEL_WARNING, &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_simple_sink_component(graph, "reader", NULL, consume, NULL, &r, &sink) !=
		BT_GRAPH_ADD_COMPONENT_STATUS_OK)
		goto end;
	if (rasp_graph_add_ctf_sources("test-support", graph, ctf, root, mux) <= 0) {
		fprintf(stderr, "test-support: no readable CTF trace under '%s'\n", root);
		goto end;
	}
	if (bt_graph_connect_ports(graph,
				   bt_component_filter_borrow_output_port_by_name_const(mux, "out"),
				   bt_component_sink_borrow_input_port_by_name_const(sink, "in"),
				   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
		goto end;
	do
		st = bt_graph_run(graph);
	while (st == BT_GRAPH_RUN_STATUS_AGAIN);
	if (st != BT_GRAPH_RUN_STATUS_OK || r.failed) {
		fprintf(stderr, "test-support: reading '%s' failed (graph status %d)\n", root,
			(int)st);
		goto end;
	}
	result = r.events;
end:
	bt_graph_put_ref(graph);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	return result;
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
