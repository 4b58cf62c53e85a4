/* The babeltrace2 seam of the rasp command: builds source(s) -> filter.utils.muxer -> sink
 * graphs in process (what `babeltrace2 TRACE -c sink.rasp.report` builds, without the CLI),
 * finds the rasp plugin beside the executable or where it was installed, and runs live. */
#define _GNU_SOURCE
#include "cli.h"
#include "graph.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TRACES 256

/* nftw has no user pointer: the walk fills this, one walk at a time. */
static struct {
	char *dirs[MAX_TRACES];
	size_t n;
	int overflow;
	char *unreadable; /* first directory or file the walk could not read */
} walk;

static int collect(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	if ((type == FTW_DNR || type == FTW_NS) && !walk.unreadable) {
		walk.unreadable = strdup(path);
		return 1;
	}
	if (type != FTW_F || strcmp(path + ftw->base, "metadata") != 0)
		return 0;
	if (walk.n == MAX_TRACES) {
		walk.overflow = 1;
		return 1;
	}
	walk.dirs[walk.n] = strndup(path, (size_t)ftw->base - 1);
	return walk.dirs[walk.n++] ? 0 : 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rasp_graph_add_ctf_sources(const char *who, bt_graph *graph, const bt_plugin *ctf,
			       const char *root, const bt_component_filter *mux)
{
	const bt_component_class_source *fs =
	    bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs");
	int rc = 0;

	walk.n = 0;
	walk.overflow = 0;
	walk.unreadable = NULL;
	errno = 0;
	if (nftw(root, collect, 16, FTW_PHYS) != 0 || walk.overflow || walk.unreadable) {
		int err = errno ? errno : EIO;

		if (walk.overflow)
			fprintf(stderr,
				"%s: '%s' holds more than %d CTF traces; report fewer at once\n",
				who, root, MAX_TRACES);
		else if (walk.unreadable)
			fprintf(stderr, "%s: cannot read '%s' under the trace directory '%s'\n",
				who, walk.unreadable, root);
		else
			fprintf(stderr, "%s: cannot read trace directory '%s': %s\n", who, root,
				strerror(err));
		for (size_t i = 0; i < walk.n; i++)
			free(walk.dirs[i]);
		free(walk.unreadable);
		return walk.overflow ? -E2BIG : -err;
	}
	/* Sorted: components get stable names whatever order the directory lists. */
	qsort(walk.dirs, walk.n, sizeof(walk.dirs[0]), cmp_str);
	for (size_t i = 0; i < walk.n && rc == 0; i++) {
		const bt_component_source *src = NULL;
		bt_value *params = bt_value_map_create(), *inputs = NULL;
		char name[64];

		snprintf(name, sizeof(name), "src-%p-%zu", (void *)root, i);
		if (!params ||
		    bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) !=
			BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
		    bt_value_array_append_string_element(inputs, walk.dirs[i]) !=
			BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK ||
		    bt_graph_add_source_component(graph, fs, name, params, BT_LOGGING_LEVEL_WARNING,
						  &src) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
			fprintf(stderr, "%s: '%s' is not a readable CTF trace\n", who,
				walk.dirs[i]);
			rc = -EINVAL;
		}
		bt_value_put_ref(params);
		for (uint64_t p = 0; rc == 0 && p < bt_component_source_get_output_port_count(src);
		     p++) {
			/* The muxer grows one free input port each time one is connected. */
			uint64_t in = bt_component_filter_get_input_port_count(mux) - 1;

			if (bt_graph_connect_ports(
				graph,
				bt_component_source_borrow_output_port_by_index_const(src, p),
				bt_component_filter_borrow_input_port_by_index_const(mux, in),
				NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
				fprintf(stderr, "%s: cannot connect the trace '%s'\n", who,
					walk.dirs[i]);
				rc = -EIO;
			}
		}
	}
	for (size_t i = 0; i < walk.n; i++)
		free(walk.dirs[i]);
	return rc ? rc : (int)walk.n;
}

/* Prints what went wrong inside babeltrace2. The rasp plugin's own causes name the bad
 * parameter or event; libbabeltrace2's own wrapping causes ("component initialization
 * method failed", addresses...) are noise to a user and are shown only when
 * nothing else explains the failure. */
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
				fprintf(stderr, "%s: %s\n", who, bt_error_cause_get_message(c));
				shown++;
			}
		}
	bt_error_release(err);
}

static int find_system_plugins(const char *who, const bt_plugin **ctf, const bt_plugin **utils)
{
	if (bt_plugin_find("ctf", BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, ctf) !=
		BT_PLUGIN_FIND_STATUS_OK ||
	    bt_plugin_find("utils", BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, utils) !=
		BT_PLUGIN_FIND_STATUS_OK) {
		fprintf(
		    stderr,
		    "%s: babeltrace2's 'ctf' and 'utils' plugins were not found; is babeltrace2 "
		    "installed?\n",
		    who);
		return -ENOENT;
	}
	return 0;
}

/* The rasp plugin: $RASP_PLUGIN_PATH alone when set; else beside the executable (build
 * tree: bin/ and lib/babeltrace2/), then the install directory. */
static const bt_plugin *find_rasp_plugin(const char *cmd, const bt_plugin_set **set_out)
{
	const char *env = getenv("RASP_PLUGIN_PATH");
	char exe[PATH_MAX], dirs[3][PATH_MAX + 32];
	size_t n = 0;

	if (env && *env) {
		snprintf(dirs[n++], sizeof(dirs[0]), "%s", env);
	} else {
		if (rasp_cli_exe_dir(exe, sizeof(exe)) == 0)
			snprintf(dirs[n++], sizeof(dirs[0]), "%s/../lib/babeltrace2", exe);
		snprintf(dirs[n++], sizeof(dirs[0]), "%s", RASP_PLUGIN_INSTALL_DIR);
	}
	for (size_t i = 0; i < n; i++) {
		const bt_plugin_set *set = NULL;

		if (bt_plugin_find_all_from_dir(dirs[i], BT_FALSE, BT_FALSE, &set) !=
		    BT_PLUGIN_FIND_ALL_FROM_DIR_STATUS_OK)
			continue;
		for (uint64_t k = 0; k < bt_plugin_set_get_plugin_count(set); k++) {
			const bt_plugin *p = bt_plugin_set_borrow_plugin_by_index_const(set, k);

			if (strcmp(bt_plugin_get_name(p), "rasp") == 0) {
				*set_out = set;
				return p;
			}
		}
		bt_plugin_set_put_ref(set);
	}
	bt_current_thread_clear_error();
	if (env && *env)
		rasp_cli_error(cmd, "babeltrace2 plugin 'rasp' not found in RASP_PLUGIN_PATH='%s'",
			       env);
	else
		rasp_cli_error(cmd,
			       "babeltrace2 plugin 'rasp' not found beside the executable "
			       "nor in %s; set RASP_PLUGIN_PATH to its directory",
			       RASP_PLUGIN_INSTALL_DIR);
	return NULL;
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
	const bt_plugin *ctf = NULL, *utils = NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	struct reader r = {fn, user, 0};
	bt_graph *graph = NULL;
	int rc = find_system_plugins(who, &ctf, &utils);

	if (rc)
		goto out;
	rc = -ENOMEM;
	graph = bt_graph_create(0);
	if (!graph ||
	    bt_graph_add_filter_component(
		graph, bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer"), "mux",
		NULL, BT_LOGGING_LEVEL_WARNING, &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_simple_sink_component(graph, "reader", NULL, read_consume, NULL, &r,
					       &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK)
		goto out;
	rc = rasp_graph_add_ctf_sources(who, graph, ctf, root, mux);
	if (rc <= 0) {
		rc = rc ? rc : -ENOENT; /* no trace under root */
		goto out;
	}
	if (bt_graph_connect_ports(graph,
				   bt_component_filter_borrow_output_port_by_name_const(mux, "out"),
				   bt_component_sink_borrow_input_port_by_name_const(sink, "in"),
				   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		rc = -EIO;
		goto out;
	}
	rc = run_graph(who, graph);
	if (r.stopped)
		rc = -ECANCELED;
out:
	bt_graph_put_ref(graph);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	return rc;
}

static int count_event(const bt_message *msg, void *user)
{
	if (bt_message_get_type(msg) == BT_MESSAGE_TYPE_EVENT)
		++*(uint64_t *)user;
	return 0;
}

int rasp_graph_count_events(const char *cmd, const char *dir, uint64_t *events)
{
	char who[64];

	snprintf(who, sizeof(who), "rasp %s", cmd);
	*events = 0;
	return rasp_graph_read(who, dir, count_event, events);
}

static int insert_param(bt_value *map, const struct rasp_graph_param *p)
{
	switch (p->kind) {
	case RASP_PARAM_STRING:
		return bt_value_map_insert_string_entry(map, p->key, p->s);
	case RASP_PARAM_INT:
		return bt_value_map_insert_signed_integer_entry(map, p->key, p->i);
	case RASP_PARAM_REAL:
		return bt_value_map_insert_real_entry(map, p->key, p->d);
	case RASP_PARAM_BOOL:
		return bt_value_map_insert_bool_entry(map, p->key, p->i ? BT_TRUE : BT_FALSE);
	}
	return -1;
}

static int add_live_source(const char *cmd, bt_graph *graph, const bt_plugin *ctf, const char *url,
			   const bt_component_filter *mux)
{
	const bt_component_class_source *live =
	    bt_plugin_borrow_source_component_class_by_name_const(ctf, "lttng-live");
	const bt_component_source *src = NULL;
	bt_value *params = bt_value_map_create(), *inputs = NULL;
	int ok;

	/* end: a session that does not exist (any more) ends the report instead of waiting. */
	ok = params &&
	     bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) ==
		 BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK &&
	     bt_value_array_append_string_element(inputs, url) ==
		 BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK &&
	     bt_value_map_insert_string_entry(params, "session-not-found-action", "end") ==
		 BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK &&
	     live &&
	     bt_graph_add_source_component(graph, live, "live", params, BT_LOGGING_LEVEL_WARNING,
					   &src) == BT_GRAPH_ADD_COMPONENT_STATUS_OK &&
	     bt_graph_connect_ports(graph,
				    bt_component_source_borrow_output_port_by_index_const(src, 0),
				    bt_component_filter_borrow_input_port_by_index_const(
					mux, bt_component_filter_get_input_port_count(mux) - 1),
				    NULL) == BT_GRAPH_CONNECT_PORTS_STATUS_OK;
	bt_value_put_ref(params);
	if (!ok) {
		{
			char who[64];

			snprintf(who, sizeof(who), "rasp %s", cmd);
			print_bt_error(who);
		}
		rasp_cli_error(cmd, "cannot read the lttng-live URL '%s'", url);
		return -EINVAL;
	}
	return 0;
}

int rasp_graph_report(const char *cmd, const char *const *inputs, size_t n_inputs,
		      const struct rasp_graph_param *params, size_t n_params)
{
	const bt_plugin *ctf = NULL, *utils = NULL, *rasp = NULL;
	const bt_plugin_set *rasp_set = NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	bt_value *sink_params = NULL;
	bt_graph *graph = NULL;
	char who[64];
	int rc;

	snprintf(who, sizeof(who), "rasp %s", cmd);
	rc = find_system_plugins(who, &ctf, &utils);
	if (rc)
		goto out;
	rasp = find_rasp_plugin(cmd, &rasp_set);
	if (!rasp) {
		rc = -ENOENT;
		goto out;
	}
	rc = -ENOMEM;
	sink_params = bt_value_map_create();
	if (!sink_params)
		goto out;
	for (size_t i = 0; i < n_params; i++)
		if (insert_param(sink_params, &params[i]) != 0)
			goto out;
	graph = bt_graph_create(0);
	if (!graph ||
	    bt_graph_add_filter_component(
		graph, bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer"), "mux",
		NULL, BT_LOGGING_LEVEL_WARNING, &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK)
		goto out;
	if (bt_graph_add_sink_component(
		graph, bt_plugin_borrow_sink_component_class_by_name_const(rasp, "report"),
		"report", sink_params, BT_LOGGING_LEVEL_WARNING,
		&sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		/* The sink validates its parameters here: its message names the bad one. */
		print_bt_error(who);
		rc = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < n_inputs; i++) {
		if (strncmp(inputs[i], "net://", 6) == 0) {
			rc = add_live_source(cmd, graph, ctf, inputs[i], mux);
		} else {
			rc = rasp_graph_add_ctf_sources(who, graph, ctf, inputs[i], mux);
			if (rc == 0) {
				rasp_cli_error(cmd, "'%s' holds no CTF trace (no metadata file)",
					       inputs[i]);
				rc = -ENOENT;
			}
		}
		if (rc < 0)
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
	bt_graph_put_ref(graph);
	bt_value_put_ref(sink_params);
	bt_plugin_set_put_ref(rasp_set);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	return rc < 0 ? rc : 0;
}
