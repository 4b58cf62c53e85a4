/* libFuzzer targets: a .nettrace file through the whole babeltrace2 graph, in process, as
 * `rasp report` and `rasp convert --to ctf` build it. fuzz-nettrace-report: source.rasp.nettrace
 * -> filter.utils.muxer -> sink.rasp.report (into a tally). fuzz-nettrace-ctf
 * (FUZZ_CTF): source.rasp.nettrace -> muxer -> sink.ctf.fs into a temporary directory, then
 * that CTF trace read back by source.ctf.fs, then the directory removed. Any bytes: the graph
 * succeeds, or fails for a reason its root cause names (the source: with the file offset; the
 * report sink: a malformed event); sink.ctf.fs takes whatever the source gives, and its trace
 * reads back with as many events as the source gave. Anything else aborts, as do crashes,
 * hangs, leaks and sanitizer reports. The input is one unlinked temporary file, reopened
 * through /proc/self/fd (the source takes paths). */
#define _GNU_SOURCE
#include <babeltrace2/babeltrace.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bt/sink-report.h"
#include "bt/source-nettrace.h"
#include "report/tally.h"

static char path[64];
static int fd = -1;
static const bt_plugin *utils, *ctf;
static bt_component_class_source *nettrace;
static bt_component_class_sink *report;

/* The input as the file at `path`. */
static void put_input(const uint8_t *data, size_t size)
{
	if (fd < 0) {
		const char *dir = getenv("TMPDIR");
		char tmpl[4096];

		snprintf(tmpl, sizeof(tmpl), "%s/fuzz-nettrace-graph-XXXXXX",
			 dir && *dir ? dir : "/tmp");
		fd = mkstemp(tmpl);
		if (fd < 0 || unlink(tmpl) != 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The system's plugins, found once: a lookup loads every plugin of the path. */
	if (bt_plugin_find("utils", BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, &utils) !=
		BT_PLUGIN_FIND_STATUS_OK ||
	    bt_plugin_find("ctf", BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, &ctf) !=
		BT_PLUGIN_FIND_STATUS_OK) {
		fprintf(stderr,
			"fuzz-nettrace-graph: babeltrace2's utils and ctf plugins not found\n");
		abort();
	}
	nettrace = rasp_nettrace_source_class_create();
	report = rasp_report_sink_class_create();
	if (!nettrace || !report)
		abort();
	return 0;
}

/* Events seen by a simple sink. */
struct counts {
	uint64_t events, discarded;
};

static bt_graph_simple_sink_component_consume_func_status count_consume(bt_message_iterator *it,
									void *data)
{
	struct counts *c = data;
	bt_message_array_const msgs;
	uint64_t n;

	switch (bt_message_iterator_next(it, &msgs, &n)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (uint64_t i = 0; i < n; i++) {
		c->events += bt_message_get_type(msgs[i]) == BT_MESSAGE_TYPE_EVENT;
		c->discarded += bt_message_get_type(msgs[i]) == BT_MESSAGE_TYPE_DISCARDED_EVENTS;
		bt_message_put_ref(msgs[i]);
	}
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* source (class cls, parameter `inputs` or `inputs` = [input]) -> muxer -> the sink made by
 * add_sink. The graph's run status. */
static bt_graph_run_status run(const bt_component_class_source *cls, const char *input,
			       const bt_component_class_sink *sink_cls, const bt_value *sink_params,
			       void *sink_init, struct counts *counts)
{
	bt_graph *g = bt_graph_create(0);
	bt_value *params = bt_value_map_create(), *inputs = NULL;
	const bt_component_source *src;
	const bt_component_filter *mux;
	const bt_component_sink *sink;
	bt_graph_run_status st;

	if (!g || !params ||
	    bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) !=
		BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
	    bt_value_array_append_string_element(inputs, input) !=
		BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK ||
	    bt_graph_add_filter_component(
		g, bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer"), "mux",
		NULL, BT_LOGGING_LEVEL_NONE, &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    (sink_cls
		 ? bt_graph_add_sink_component_with_initialize_method_data(
		       g, sink_cls, "sink", sink_params, sink_init, BT_LOGGING_LEVEL_NONE, &sink)
		 : bt_graph_add_simple_sink_component(g, "sink", NULL, count_consume, NULL, counts,
						      &sink)) != BT_GRAPH_ADD_COMPONENT_STATUS_OK)
		abort();
	if (bt_graph_add_source_component(g, cls, "src", params, BT_LOGGING_LEVEL_NONE, &src) !=
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		/* Only a file that is no NetTrace file, refused at once. */
		st = BT_GRAPH_RUN_STATUS_ERROR;
		goto out;
	}
	for (uint64_t p = 0; p < bt_component_source_get_output_port_count(src); p++)
		if (bt_graph_connect_ports(
			g, bt_component_source_borrow_output_port_by_index_const(src, p),
			bt_component_filter_borrow_input_port_by_index_const(
			    mux, bt_component_filter_get_input_port_count(mux) - 1),
			NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
			abort();
	if (bt_graph_connect_ports(g,
				   bt_component_filter_borrow_output_port_by_name_const(mux, "out"),
				   bt_component_sink_borrow_input_port_by_name_const(sink, "in"),
				   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
		abort();
	do
		st = bt_graph_run(g);
	while (st == BT_GRAPH_RUN_STATUS_AGAIN);
out:
	bt_value_put_ref(params);
	bt_graph_put_ref(g);
	return st;
}

/* A failed graph's root cause: from source.rasp.nettrace and naming the offset, or (what) from
 * the component class named `also`; else abort. The error is cleared. */
static void explained(const char *also)
{
	const bt_error *err = bt_current_thread_take_error();
	const bt_error_cause *root;
	const char *cls = NULL, *msg;

	if (!err || !bt_error_get_cause_count(err))
		abort(); /* a failure with no reason */
	root = bt_error_borrow_cause_by_index(err, 0);
	msg = bt_error_cause_get_message(root);
	if (bt_error_cause_get_actor_type(root) == BT_ERROR_CAUSE_ACTOR_TYPE_COMPONENT)
		cls = bt_error_cause_component_actor_get_component_class_name(root);
	else if (bt_error_cause_get_actor_type(root) == BT_ERROR_CAUSE_ACTOR_TYPE_MESSAGE_ITERATOR)
		cls = bt_error_cause_message_iterator_actor_get_component_class_name(root);
	else if (bt_error_cause_get_actor_type(root) == BT_ERROR_CAUSE_ACTOR_TYPE_COMPONENT_CLASS)
		cls = bt_error_cause_component_class_actor_get_component_class_name(root);
	if (!cls || !((strcmp(cls, "nettrace") == 0 && strstr(msg, "at offset")) ||
		      (also && strcmp(cls, also) == 0))) {
		fprintf(stderr, "fuzz-nettrace-graph: unexplained failure: %s: %s\n",
			cls ? cls : "(no component)", msg);
		abort();
	}
	bt_error_release(err);
}

#ifdef FUZZ_CTF
static int remove_entry(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return type == FTW_DP ? rmdir(p) : unlink(p);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	put_input(data, size);
#ifndef FUZZ_CTF
	{
		struct rasp_tally *t = rasp_tally_create(0, 102400);
		struct rasp_report_sink_init init = {t};
		bt_value *params = bt_value_map_create();

		/* Not strict: a malformed event is counted, not an error. A sink that fails on a
		 * message the muxer returned before a source's error makes filter.utils.muxer
		 * (2.0.4) leak that error (8 bytes it keeps for its next call, never made). */
		if (!t || !params ||
		    bt_value_map_insert_bool_entry(params, "strict", BT_FALSE) !=
			BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK)
			abort();
		if (run(nettrace, path, report, params, &init, NULL) != BT_GRAPH_RUN_STATUS_OK)
			explained("report");
		bt_value_put_ref(params);
		rasp_tally_destroy(t);
	}
#else
	{
		const char *dir = getenv("TMPDIR");
		char tmp[4096], trace[4200], metadata[4300];
		struct counts src = {0}, back = {0};
		bt_value *params = bt_value_map_create();
		bt_graph_run_status st;

		snprintf(tmp, sizeof(tmp), "%s/fuzz-nettrace-ctf-XXXXXX",
			 dir && *dir ? dir : "/tmp");
		if (!mkdtemp(tmp))
			abort();
		snprintf(trace, sizeof(trace), "%s/trace", tmp);
		snprintf(metadata, sizeof(metadata), "%s/metadata", trace);
		if (!params ||
		    bt_value_map_insert_string_entry(params, "path", trace) !=
			BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
		    bt_value_map_insert_bool_entry(params, "assume-single-trace", BT_TRUE) !=
			BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
		    bt_value_map_insert_bool_entry(params, "quiet", BT_TRUE) !=
			BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK)
			abort();
		st = run(nettrace, path,
			 bt_plugin_borrow_sink_component_class_by_name_const(ctf, "fs"), params,
			 NULL, NULL);
		if (st != BT_GRAPH_RUN_STATUS_OK)
			explained(NULL);
		/* What sink.ctf.fs wrote (whole up to a corrupt block) reads back; when the file
		 * read whole, with every event the source gave. (No trace: the file was refused
		 * before any stream began.) */
		if (access(metadata, F_OK) == 0) {
			if (run(bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs"),
				trace, NULL, NULL, NULL, &back) != BT_GRAPH_RUN_STATUS_OK) {
				explained(NULL);
				abort();
			}
			if (st == BT_GRAPH_RUN_STATUS_OK) {
				if (run(nettrace, path, NULL, NULL, NULL, &src) !=
				    BT_GRAPH_RUN_STATUS_OK)
					abort();
				if (src.events != back.events) {
					fprintf(stderr,
						"fuzz-nettrace-ctf: %llu events, %llu read back\n",
						(unsigned long long)src.events,
						(unsigned long long)back.events);
					abort();
				}
			}
		}
		bt_value_put_ref(params);
		nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
#endif
	return 0;
}
