/* The babeltrace2 seam of the rasp command: source(s) -> filter.utils.muxer -> sink graphs
 * built in process. The rasp sink comes from the linked consumer library (its component class
 * is made here, not looked up as a plugin), so the command works wherever it is installed;
 * only babeltrace2's own ctf and utils plugins are found through the system's plugin path. */
#define _GNU_SOURCE
#include "cli.h"
#include "graph.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bt/sink-nettrace.h"
#include "bt/sink-report.h"
#include "bt/source-nettrace.h"
#include "write/sanitize.h"

/* Prints what went wrong inside babeltrace2, and clears it. The rasp components' own causes
 * name the bad parameter or event; libbabeltrace2's wrapping causes ("component
 * initialization method failed"...) are noise to a user and are shown only when nothing else
 * explains the failure. */
static void print_bt_error(const char *who)
{
	const bt_error *err = bt_current_thread_take_error();
	uint64_t n, shown = 0;

	if (!err)
		return;
	n = bt_error_get_cause_count(err);
	for (int pass = 0; pass < 2 && !shown; pass++)
		for (uint64_t i = 0; i < n; i++) {
			const bt_error_cause *c = bt_error_borrow_cause_by_index(err, i);
			const char *module = bt_error_cause_get_module_name(c);
			int lib = module && strcmp(module, "libbabeltrace2") == 0;

			if (pass == 1 || !lib) {
				/* Causes quote the input: its names, its paths. */
				fprintf(stderr, "%s: ", who);
				rasp_safe_put(stderr, bt_error_cause_get_message(c));
				fputc('\n', stderr);
				shown++;
			}
		}
	bt_error_release(err);
}

struct plugins {
	const bt_plugin *ctf, *utils;
	bt_component_class_source *nettrace; /* ours, made in process */
};

/* One of babeltrace2's own plugins. bt_plugin_find loads every plugin of the system's plugin
 * directory (and its Python provider) to return one, each time it is called: rasp report of
 * a 34-event trace took 20.3 ms with the two lookups, 17.7 ms with this one (perf stat -r 30;
 * rasp --version alone, 10.5 ms). The directory is libbabeltrace2's own, where its
 * packages put it (LIBDIR/babeltrace2/plugins), so the plugin's file is loaded alone; where
 * it is not there, the full search. 0, or -ENOENT. */
static int plugin_lookup(const char *name, const bt_plugin **out)
{
	Dl_info info;
	char path[PATH_MAX];
	const char *slash;

	*out = NULL;
	if (dladdr((void *)bt_plugin_find, &info) && info.dli_fname &&
	    (slash = strrchr(info.dli_fname, '/')) != NULL &&
	    snprintf(path, sizeof(path), "%.*s/babeltrace2/plugins/babeltrace-plugin-%s.so",
		     (int)(slash - info.dli_fname), info.dli_fname, name) < (int)sizeof(path) &&
	    access(path, R_OK) == 0) {
		const bt_plugin_set *set = NULL;

		if (bt_plugin_find_all_from_file(path, BT_FALSE, &set) ==
		    BT_PLUGIN_FIND_ALL_FROM_FILE_STATUS_OK) {
			for (uint64_t i = 0; i < bt_plugin_set_get_plugin_count(set) && !*out;
			     i++) {
				const bt_plugin *pl =
				    bt_plugin_set_borrow_plugin_by_index_const(set, i);

				if (strcmp(bt_plugin_get_name(pl), name) == 0) {
					bt_plugin_get_ref(pl);
					*out = pl;
				}
			}
			bt_plugin_set_put_ref(set);
		}
		bt_current_thread_clear_error();
		if (*out)
			return 0;
	}
	if (bt_plugin_find(name, BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, out) ==
	    BT_PLUGIN_FIND_STATUS_OK)
		return 0;
	/* A failed lookup leaves an error on the thread: clear it, or the next call into
	 * libbabeltrace2 aborts on the pending error. */
	bt_current_thread_clear_error();
	*out = NULL;
	return -ENOENT;
}

/* The plugins found, kept for the process: rasp record finds them while its program runs
 * (rasp_cli_graph_warm), not after it. Only the main thread reads traces. */
static const bt_plugin *found_ctf, *found_utils;

/* A new reference to plugin `name` ("ctf" or "utils"). 0, or -ENOENT. */
static int plugin(const char *name, const bt_plugin **out)
{
	const bt_plugin **slot = strcmp(name, "ctf") == 0 ? &found_ctf : &found_utils;

	if (!*slot && plugin_lookup(name, slot) != 0) {
		*out = NULL;
		return -ENOENT;
	}
	bt_plugin_get_ref(*slot);
	*out = *slot;
	return 0;
}

void rasp_cli_graph_warm(void)
{
	const bt_plugin *p;

	if (plugin("ctf", &p) == 0)
		bt_plugin_put_ref(p);
	if (plugin("utils", &p) == 0)
		bt_plugin_put_ref(p);
}

static int find_plugins(const char *who, struct plugins *p)
{
	*p = (struct plugins){0};
	if (plugin("ctf", &p->ctf) != 0 || plugin("utils", &p->utils) != 0) {
		fprintf(stderr,
			"%s: babeltrace2's 'ctf' and 'utils' plugins were not found; is "
			"babeltrace2 installed (Debian: babeltrace2)?\n",
			who);
		bt_plugin_put_ref(p->ctf);
		bt_plugin_put_ref(p->utils);
		*p = (struct plugins){0};
		return -ENOENT;
	}
	p->nettrace = rasp_nettrace_source_class_create();
	if (!p->nettrace) {
		fprintf(stderr, "%s: out of memory\n", who);
		bt_plugin_put_ref(p->ctf);
		bt_plugin_put_ref(p->utils);
		*p = (struct plugins){0};
		return -ENOMEM;
	}
	return 0;
}

static void put_plugins(struct plugins *p)
{
	bt_plugin_put_ref(p->ctf);
	bt_plugin_put_ref(p->utils);
	bt_component_class_source_put_ref(p->nettrace);
}

static int run_graph(const char *who, bt_graph *graph)
{
	bt_graph_run_status st;

	for (;;) {
		struct timespec ts = {0, 100 * 1000 * 1000};

		st = bt_graph_run(graph);
		if (st != BT_GRAPH_RUN_STATUS_AGAIN)
			break;
		/* Live sources have nothing yet: retry as the babeltrace2 CLI does. */
		nanosleep(&ts, NULL);
	}
	if (st != BT_GRAPH_RUN_STATUS_OK) {
		print_bt_error(who);
		return -EIO;
	}
	return 0;
}

/* Connects every output port of src to a fresh input port of the muxer. */
static int connect_source(bt_graph *graph, const bt_component_source *src,
			  const bt_component_filter *mux)
{
	for (uint64_t p = 0; p < bt_component_source_get_output_port_count(src); p++) {
		/* The muxer grows one free input port each time one is connected. */
		uint64_t in = bt_component_filter_get_input_port_count(mux) - 1;

		if (bt_graph_connect_ports(
			graph, bt_component_source_borrow_output_port_by_index_const(src, p),
			bt_component_filter_borrow_input_port_by_index_const(mux, in),
			NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
			return -EIO;
	}
	return 0;
}

/* A .NET file that ends without its end-of-stream marker: said in the report. */
static void nettrace_ended(void *ctx, const char *path, bool complete, uint64_t end_offset)
{
	if (!complete &&
	    rasp_tally_add_warning(ctx,
				   "trace incomplete: %s ends at offset %" PRIu64
				   " without its end-of-stream marker (the EventPipe "
				   "session was never stopped: the process killed, the "
				   "file copied while written?); events after it are "
				   "missing",
				   path, end_offset) != 0)
		fprintf(stderr, "rasp: out of memory\n");
}

/* warnings: where what the sources find doubtful goes (NULL: nowhere). */
static int add_source(const char *who, bt_graph *graph, const struct plugins *pl,
		      const struct rasp_input *in, size_t i, const bt_component_filter *mux,
		      struct rasp_tally *warnings)
{
	struct rasp_nettrace_source_init nt = {warnings && !in->growing ? nettrace_ended : NULL,
					       warnings, in->growing};
	const bt_component_class_source *cls =
	    in->kind == RASP_INPUT_NETTRACE
		? pl->nettrace
		: bt_plugin_borrow_source_component_class_by_name_const(
		      pl->ctf, in->kind == RASP_INPUT_LIVE ? "lttng-live" : "fs");
	const bt_component_source *src = NULL;
	bt_value *params = bt_value_map_create(), *inputs = NULL;
	char name[32];
	int ok;

	snprintf(name, sizeof(name), "src-%zu", i);
	ok = cls && params &&
	     bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) ==
		 BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK &&
	     bt_value_array_append_string_element(inputs, in->path) ==
		 BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK;
	/* A live session that does not exist is an error, not an empty report. */
	if (ok && in->kind == RASP_INPUT_LIVE)
		ok = bt_value_map_insert_string_entry(params, "session-not-found-action", "fail") ==
		     BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK;
	/* No log lines: what goes wrong comes back as error causes, printed once, shortly. */
	ok = ok && bt_graph_add_source_component_with_initialize_method_data(
		       graph, cls, name, params, in->kind == RASP_INPUT_NETTRACE ? &nt : NULL,
		       BT_LOGGING_LEVEL_NONE, &src) == BT_GRAPH_ADD_COMPONENT_STATUS_OK;
	bt_value_put_ref(params);
	if (!ok) {
		print_bt_error(who);
		fprintf(stderr, "%s: '", who);
		rasp_safe_put(stderr, in->path);
		fprintf(stderr, "' is not a readable %s\n",
			in->kind == RASP_INPUT_LIVE	  ? "lttng-live URL"
			: in->kind == RASP_INPUT_NETTRACE ? "NetTrace file"
							  : "CTF trace");
		return -EINVAL;
	}
	if (connect_source(graph, src, mux)) {
		print_bt_error(who);
		fprintf(stderr, "%s: cannot connect the input '", who);
		rasp_safe_put(stderr, in->path);
		fputs("'\n", stderr);
		return -EIO;
	}
	return 0;
}

/* source(s) -> muxer -> the given sink component class with params and init data. */
static int run_inputs(const char *who, const struct rasp_inputs *in,
		      const bt_component_class_sink *sink_cls, const bt_value *sink_params,
		      void *init, bt_graph_simple_sink_component_consume_func simple, void *user,
		      struct rasp_tally *warnings)
{
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	struct plugins pl;
	bt_graph *graph = NULL;
	int rc = find_plugins(who, &pl);

	if (rc)
		return rc;
	rc = -ENOMEM;
	graph = bt_graph_create(0);
	if (!graph ||
	    bt_graph_add_filter_component(
		graph, bt_plugin_borrow_filter_component_class_by_name_const(pl.utils, "muxer"),
		"mux", NULL, BT_LOGGING_LEVEL_WARNING, &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK)
		goto out;
	if (sink_cls) {
		if (bt_graph_add_sink_component_with_initialize_method_data(
			graph, sink_cls, "report", sink_params, init, BT_LOGGING_LEVEL_WARNING,
			&sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
			print_bt_error(who);
			rc = -EINVAL;
			goto out;
		}
	} else if (bt_graph_add_simple_sink_component(graph, "reader", NULL, simple, NULL, user,
						      &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		goto out;
	}
	for (size_t i = 0; i < in->n; i++) {
		rc = add_source(who, graph, &pl, &in->v[i], i, mux, warnings);
		if (rc)
			goto out;
	}
	if (bt_graph_connect_ports(graph,
				   bt_component_filter_borrow_output_port_by_name_const(mux, "out"),
				   bt_component_sink_borrow_input_port_by_name_const(sink, "in"),
				   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		print_bt_error(who);
		rc = -EIO;
		goto out;
	}
	rc = run_graph(who, graph);
out:
	bt_current_thread_clear_error();
	bt_graph_put_ref(graph);
	put_plugins(&pl);
	return rc;
}

int rasp_graph_tally(const char *cmd, const struct rasp_inputs *in, bool strict,
		     struct rasp_tally *t)
{
	bt_component_class_sink *cls = rasp_report_sink_class_create();
	struct rasp_report_sink_init init = {t};
	bt_value *params = bt_value_map_create();
	char who[64];
	int rc = -ENOMEM;

	snprintf(who, sizeof(who), "rasp %s", cmd);
	if (cls && params &&
	    bt_value_map_insert_bool_entry(params, "strict", strict ? BT_TRUE : BT_FALSE) ==
		BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK)
		rc = run_inputs(who, in, cls, params, &init, NULL, NULL, t);
	else
		fprintf(stderr, "%s: out of memory\n", who);
	bt_value_put_ref(params);
	bt_component_class_sink_put_ref(cls);
	return rc;
}

int rasp_graph_convert(const char *cmd, const struct rasp_inputs *in, const char *path, int64_t pid,
		       struct rasp_nettrace_sink_stats *stats, struct rasp_tally *warnings)
{
	bt_component_class_sink *cls = rasp_nettrace_sink_class_create();
	bt_value *params = bt_value_map_create();
	char who[64];
	int rc = -ENOMEM;

	snprintf(who, sizeof(who), "rasp %s", cmd);
	if (cls && params &&
	    bt_value_map_insert_string_entry(params, "path", path) ==
		BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK &&
	    (pid < 0 || bt_value_map_insert_signed_integer_entry(params, "pid", pid) ==
			    BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK))
		rc = run_inputs(who, in, cls, params, stats, NULL, NULL, warnings);
	else
		fprintf(stderr, "%s: out of memory\n", who);
	bt_value_put_ref(params);
	bt_component_class_sink_put_ref(cls);
	return rc;
}

int rasp_graph_convert_ctf(const char *cmd, const struct rasp_inputs *in, const char *dir,
			   struct rasp_tally *warnings)
{
	const bt_plugin *ctf = NULL;
	const bt_component_class_sink *cls = NULL;
	bt_value *params = bt_value_map_create();
	char who[64];
	int rc = -ENOMEM;

	snprintf(who, sizeof(who), "rasp %s", cmd);
	if (plugin("ctf", &ctf) == 0)
		cls = bt_plugin_borrow_sink_component_class_by_name_const(ctf, "fs");
	if (!cls) {
		fprintf(stderr,
			"%s: babeltrace2's sink.ctf.fs was not found; is babeltrace2 "
			"installed (Debian: babeltrace2)?\n",
			who);
		rc = -ENOENT;
	} else if (params &&
		   bt_value_map_insert_string_entry(params, "path", dir) ==
		       BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK &&
		   /* dir is the trace itself, not a directory of traces. */
		   bt_value_map_insert_bool_entry(params, "assume-single-trace", BT_TRUE) ==
		       BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK &&
		   bt_value_map_insert_bool_entry(params, "quiet", BT_TRUE) ==
		       BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK) {
		rc = run_inputs(who, in, cls, params, NULL, NULL, NULL, warnings);
	} else {
		fprintf(stderr, "%s: out of memory\n", who);
	}
	bt_value_put_ref(params);
	bt_plugin_put_ref(ctf);
	return rc;
}

int rasp_cli_tally_operands(const char *cmd, char *const *operands, size_t n, bool strict,
			    struct rasp_tally *t)
{
	struct rasp_inputs in;
	int rc = rasp_inputs_collect(cmd, operands, n, &in, t);

	if (rc)
		return rc;
	rc = rasp_graph_tally(cmd, &in, strict, t);
	rasp_inputs_free(&in);
	return rc;
}

int rasp_cli_tally_growing(const char *cmd, const char *path, bool strict, struct rasp_tally *t)
{
	char *ops[] = {(char *)path};
	struct rasp_inputs in;
	int rc = rasp_inputs_collect(cmd, ops, 1, &in, t);

	if (rc)
		return rc;
	for (size_t i = 0; i < in.n; i++)
		in.v[i].growing = in.v[i].kind == RASP_INPUT_NETTRACE;
	rc = rasp_graph_tally(cmd, &in, strict, t);
	rasp_inputs_free(&in);
	return rc;
}

struct reader {
	rasp_graph_message_fn fn;
	void *user;
	int stopped; /* fn returned non-zero */
};

/* The simple sink: every message goes to the caller's function, then its reference is put
 * (even after the function asked to stop, so nothing leaks). */
static bt_graph_simple_sink_component_consume_func_status read_consume(bt_message_iterator *it,
								       void *data)
{
	struct reader *r = data;
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
		if (!r->stopped && r->fn(msgs[i], r->user) != 0)
			r->stopped = 1;
		bt_message_put_ref(msgs[i]);
	}
	return r->stopped ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR
			  : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

int rasp_graph_read(const char *who, const char *root, rasp_graph_message_fn fn, void *user)
{
	struct reader r = {fn, user, 0};
	struct rasp_inputs in;
	char *ops[] = {(char *)root};
	int rc = rasp_inputs_collect(who, ops, 1, &in, NULL);

	if (rc)
		return rc;
	rc = run_inputs(who, &in, NULL, NULL, NULL, read_consume, &r, NULL);
	rasp_inputs_free(&in);
	return r.stopped ? -ECANCELED : rc;
}
