/* sink.rasp.report inside a graph built with libbabeltrace2 in this process (source.ctf.fs
 * -> filter.utils.muxer -> the sink loaded from the built .so): the same report as the CLI,
 * and a graph torn down before END (finalize without a report) — under ASan both run with
 * the plugin instrumented in-process, so its leaks and use-after-free show here. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <babeltrace2/babeltrace.h>
#include <inttypes.h>
#include <limits.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin-cli.h"

struct graph {
	const bt_plugin *ctf, *utils;
	const bt_plugin_set *ours;
	bt_graph *g;
};

static void graph_put(struct graph *gr)
{
	bt_graph_put_ref(gr->g);
	bt_plugin_set_put_ref(gr->ours);
	bt_plugin_put_ref(gr->ctf);
	bt_plugin_put_ref(gr->utils);
	memset(gr, 0, sizeof(*gr));
}

/* Builds ctf.fs(trace) -> muxer -> sink.rasp.report(params). */
static void graph_build(struct graph *gr, const char *trace, const bt_value *sink_params)
{
	const bt_component_source *src;
	const bt_component_filter *mux;
	const bt_component_sink *sink;
	const bt_component_class_sink *cls;
	bt_value *sp, *inputs;

	memset(gr, 0, sizeof(*gr));
	assert_int_equal(
	    bt_plugin_find("ctf", BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, &gr->ctf),
	    BT_PLUGIN_FIND_STATUS_OK);
	assert_int_equal(
	    bt_plugin_find("utils", BT_FALSE, BT_FALSE, BT_TRUE, BT_TRUE, BT_TRUE, &gr->utils),
	    BT_PLUGIN_FIND_STATUS_OK);
	assert_int_equal(bt_plugin_find_all_from_file(RASP_TEST_PLUGIN_DIR "/rasp-bt2-plugin.so",
						      BT_TRUE, &gr->ours),
			 BT_PLUGIN_FIND_ALL_FROM_FILE_STATUS_OK);
	cls = bt_plugin_borrow_sink_component_class_by_name_const(
	    bt_plugin_set_borrow_plugin_by_index_const(gr->ours, 0), "report");
	assert_non_null(cls);

	gr->g = bt_graph_create(0);
	assert_non_null(gr->g);
	sp = bt_value_map_create();
	assert_int_equal(bt_value_map_insert_empty_array_entry(sp, "inputs", &inputs), 0);
	assert_int_equal(bt_value_array_append_string_element(inputs, trace), 0);
	assert_int_equal(bt_graph_add_source_component(
			     gr->g,
			     bt_plugin_borrow_source_component_class_by_name_const(gr->ctf, "fs"),
			     "src", sp, BT_LOGGING_LEVEL_WARNING, &src),
			 BT_GRAPH_ADD_COMPONENT_STATUS_OK);
	bt_value_put_ref(sp);
	assert_int_equal(
	    bt_graph_add_filter_component(
		gr->g, bt_plugin_borrow_filter_component_class_by_name_const(gr->utils, "muxer"),
		"mux", NULL, BT_LOGGING_LEVEL_WARNING, &mux),
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK);
	assert_int_equal(bt_graph_add_sink_component(gr->g, cls, "report", sink_params,
						     BT_LOGGING_LEVEL_WARNING, &sink),
			 BT_GRAPH_ADD_COMPONENT_STATUS_OK);
	for (uint64_t i = 0; i < bt_component_source_get_output_port_count(src); i++) {
		char name[32];

		snprintf(name, sizeof(name), "in%" PRIu64, i);
		assert_int_equal(
		    bt_graph_connect_ports(
			gr->g, bt_component_source_borrow_output_port_by_index_const(src, i),
			bt_component_filter_borrow_input_port_by_name_const(mux, name), NULL),
		    BT_GRAPH_CONNECT_PORTS_STATUS_OK);
	}
	assert_int_equal(bt_graph_connect_ports(
			     gr->g,
			     bt_component_filter_borrow_output_port_by_name_const(mux, "out"),
			     bt_component_sink_borrow_input_port_by_name_const(sink, "in"), NULL),
			 BT_GRAPH_CONNECT_PORTS_STATUS_OK);
}

static bt_value *params_json(const char *output)
{
	bt_value *p = bt_value_map_create();

	assert_non_null(p);
	assert_int_equal(bt_value_map_insert_string_entry(p, "format", "json"), 0);
	assert_int_equal(bt_value_map_insert_string_entry(p, "output", output), 0);
	return p;
}

static void test_plugin_graph_report(void **state)
{
	char file[PATH_MAX];
	struct graph gr;
	bt_value *p;
	bt_graph_run_status st;

	(void)state;
	assert_int_equal(plugin_mkdirs(RASP_TEST_OUT), 0);
	snprintf(file, sizeof(file), "%s/graph-emit-two-procs.json", RASP_TEST_OUT);
	p = params_json(file);
	graph_build(&gr, RASP_TEST_TRACES "/emit-two-procs", p);
	bt_value_put_ref(p);
	do
		st = bt_graph_run(gr.g);
	while (st == BT_GRAPH_RUN_STATUS_AGAIN);
	assert_int_equal(st, BT_GRAPH_RUN_STATUS_OK);
	graph_put(&gr);
	/* The very same bytes as the CLI writes. */
	if (getenv("RASP_UPDATE_EXPECT"))
		unsetenv("RASP_UPDATE_EXPECT");
	assert_int_equal(plugin_compare(file, "emit-two-procs.json.expect"), 0);
}

/* A graph destroyed after a few steps: finalize frees everything and writes nothing; the
 * output file holds what it held before (the report goes to a temporary file renamed over
 * it only at END), and no temporary file is left. */
static void test_plugin_graph_torn_down(void **state)
{
	char file[PATH_MAX], line[64] = "";
	struct graph gr;
	bt_value *p;
	FILE *f;
	DIR *d;
	struct dirent *e;

	(void)state;
	assert_int_equal(plugin_mkdirs(RASP_TEST_OUT), 0);
	snprintf(file, sizeof(file), "%s/graph-torn-down.json", RASP_TEST_OUT);
	f = fopen(file, "w");
	assert_non_null(f);
	fputs("an earlier report\n", f);
	fclose(f);
	p = params_json(file);
	graph_build(&gr, RASP_TEST_TRACES "/emit-two-procs", p);
	bt_value_put_ref(p);
	for (int i = 0; i < 3; i++)
		assert_true(bt_graph_run_once(gr.g) == BT_GRAPH_RUN_ONCE_STATUS_OK);
	graph_put(&gr);
	f = fopen(file, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "an earlier report\n");
	fclose(f);
	d = opendir(RASP_TEST_OUT);
	assert_non_null(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, "graph-torn-down.json.tmp"))
			fail_msg("temporary file %s left behind", e->d_name);
	closedir(d);
}

/* Bad parameters fail bt_graph_add_sink_component with a cause naming the parameter. */
static void test_plugin_graph_bad_param(void **state)
{
	const bt_plugin_set *ours;
	const bt_component_class_sink *cls;
	const bt_component_sink *sink;
	const bt_error *err;
	bt_graph *g;
	bt_value *p = bt_value_map_create();
	int found = 0;

	(void)state;
	assert_int_equal(bt_plugin_find_all_from_file(RASP_TEST_PLUGIN_DIR "/rasp-bt2-plugin.so",
						      BT_TRUE, &ours),
			 BT_PLUGIN_FIND_ALL_FROM_FILE_STATUS_OK);
	cls = bt_plugin_borrow_sink_component_class_by_name_const(
	    bt_plugin_set_borrow_plugin_by_index_const(ours, 0), "report");
	g = bt_graph_create(0);
	assert_int_equal(bt_value_map_insert_signed_integer_entry(p, "top", -2), 0);
	assert_int_not_equal(
	    bt_graph_add_sink_component(g, cls, "report", p, BT_LOGGING_LEVEL_NONE, &sink),
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK);
	err = bt_current_thread_take_error();
	assert_non_null(err);
	for (uint64_t i = 0; i < bt_error_get_cause_count(err); i++) {
		const char *m = bt_error_cause_get_message(bt_error_borrow_cause_by_index(err, i));

		found |= strstr(m, "bad parameter: name=top value=-2") != NULL;
	}
	bt_error_release(err);
	assert_true(found);
	bt_value_put_ref(p);
	bt_graph_put_ref(g);
	bt_plugin_set_put_ref(ours);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plugin_graph_report),
	    cmocka_unit_test(test_plugin_graph_torn_down),
	    cmocka_unit_test(test_plugin_graph_bad_param),
	};

	return cmocka_run_group_tests_name("plugin-graph", tests, NULL, NULL);
}
