/* Golden tests of consumer/write/write-json.c (tests/consumer/write/expect/json-*.expect;
 * regenerate with RASP_UPDATE_EXPECT=1 ctest -R write-json, then review the diff). Every output is
 * parsed by python3 -m json.tool and a strict load (no NaN), and read back in Python: the keys
 * docs/consumer.md lists, rows that add up to the total, type names decoded as written (invalid
 * UTF-8 as U+FFFD), controls escaped so that no byte acts on a terminal, unknown ids as null,
 * lost data flagged. Nothing goes to standard error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "write/writer.h"

/* The names as the trace gives them (raw_names): the awkward fixture's names are about their
 * bytes, and its ticks would make it a .NET trace. */
static bool raw_names;

static struct golden_out render(struct rasp_tally *t, unsigned group_by, const char *expect)
{
	struct rasp_report_options opt;
	struct golden_out g;

	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "json");
	opt.group_by = group_by;
	opt.raw_names = raw_names;
	golden_render(t, &opt, &g);
	rasp_report_options_fini(&opt);
	assert_string_equal(g.err, "");
	golden_check(g.out, g.len, expect);
	golden_check_json(g.out, g.len);
	return g;
}

/* Runs a Python check on the output (as `d`); it prints what the test compares. */
static void check_py(const struct golden_out *g, const char *body, const char *want)
{
	char script[4096], out[2048];

	snprintf(script, sizeof(script),
		 "import json, sys\n"
		 "d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
		 "%s",
		 body);
	if (golden_python(g->out, g->len, script, out, sizeof(out)) != 0 ||
	    strcmp(out, want) != 0) {
		printf("python check:\n%s--- printed\n%s--- want\n%s", body, out, want);
		fail();
	}
}

/* Keys of docs/consumer.md, their kinds, and the rows adding up to the total. */
static const char shape[] =
    "top = ['sampling_mean', 'sampling_means', 'confidence', 'group_by', 'discarded_events',\n"
    "       'discarded_events_unknown', 'discarded_packets', 'discarded_packets_unknown',\n"
    "       'skipped_events', 'estimates_too_low', 'rows', 'total', 'allocation_ticks']\n"
    "missing = [k for k in top if k not in d]\n"
    "est = ['samples', 'bytes', 'bytes_low', 'bytes_high', 'objects']\n"
    "bad = [r for r in d['rows'] + [d['total']] for k in est if not isinstance(r[k], (int, "
    "float))]\n"
    "s = sum(r['samples'] for r in d['rows'])\n"
    "b = sum(r['bytes'] for r in d['rows'])\n"
    "inside = all(r['bytes_low'] <= r['bytes'] <= r['bytes_high'] for r in d['rows'])\n"
    "t = d['allocation_ticks']\n"
    "print(missing, len(bad), s == d['total']['samples'],\n"
    "      abs(b - d['total']['bytes']) <= len(d['rows']), inside,\n"
    "      sorted(t) == ['allocation_amount', 'note', 'rows', 'ticks'])\n";

static void test_write_json_two_procs(void **state)
{
	(void)state;
	struct rasp_tally *t = golden_two_procs(RASP_GROUP_TYPE);
	struct golden_out g = render(t, RASP_GROUP_TYPE, "json-two-procs.expect");

	check_py(&g, shape, "[] 0 True True True True\n");
	check_py(&g,
		 "print(d['group_by'], d['sampling_mean'], d['confidence'], d['inputs'],\n"
		 "      d['sampling_means'], d['duration_ns'], d['estimates_too_low'],\n"
		 "      d['assumed_mean'], [n['code'] for n in d['notes']],\n"
		 "      [r['type'] for r in d['rows']], d['total']['samples'])\n",
		 "['type'] 102400 0.95 ['/traces/emit-two-procs'] [{'process': 6189, "
		 "'sampling_mean': 4096}] 1500000000 False True ['assumed-mean'] ['System.Byte[]', "
		 "'Demo.Node', 'System.String', 'Demo.Leaf'] 15\n");
	check_py(&g,
		 "print([(p['pid'], p['name'], p['samples'], p['samples_assumed_mean'],\n"
		 "        p['sampling_mean_low'], p['sampling_mean_high'],\n"
		 "        p['sampling_configured_events']) for p in d['processes']])\n",
		 "[(6189, 'emit', 10, 0, 4096, 4096, 1), (6192, 'emit2', 5, 5, 102400, 102400, "
		 "0)]\n");
	golden_out_free(&g);
	rasp_tally_destroy(t);

	t = golden_two_procs(RASP_GROUP_ALL);
	g = render(t, RASP_GROUP_ALL, "json-two-procs-all-keys.expect");
	check_py(&g, shape, "[] 0 True True True True\n");
	check_py(&g,
		 "r = d['rows'][0]\n"
		 "print(d['group_by'], r['type'], r['kind'], r['thread'], r['process'],\n"
		 "      r['process_name'], sorted({x['kind'] for x in d['rows']}))\n",
		 "['type', 'kind', 'thread', 'process'] System.Byte[] Large 6193 6192 emit2 "
		 "['Large', 'Pinned', 'Small']\n");
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

static void test_write_json_awkward(void **state)
{
	(void)state;
	unsigned by = RASP_GROUP_TYPE | RASP_GROUP_KIND | RASP_GROUP_PROCESS;
	struct rasp_tally *t = golden_awkward(by);
	struct golden_out g;

	raw_names = true;
	g = render(t, by, "json-awkward.expect");
	raw_names = false;

	check_py(&g, shape, "[] 0 True True True True\n");
	/* Names as written; the invalid bytes of one as U+FFFD each. */
	check_py(&g,
		 "print(json.dumps(sorted({r['type'] for r in d['rows']})),\n"
		 "      json.dumps(sorted({r['process_name'] for r in d['rows']}, key=str)))\n",
		 "[\"\", \"Bad\\ufffd\\ufffd\\ufffdUTF8\", \"CR\\rName\", "
		 "\"Ctl\\u0001\\u001f\\u007fEnd\", "
		 "\"Line\\nBreak\", \"NULL\", \"Tab\\there\", \"Weird,\\\"Name\\\"\", "
		 "\"\\u00dcn\\u00efcode.\\u0422\\u0438\\u043f\"] [null, "
		 "\"proc, with \\\"comma\\\"\"]\n");
	check_py(
	    &g,
	    "print(d['estimates_too_low'], d['discarded_events'], d['discarded_packets'],\n"
	    "      d['skipped_events'], d['incomplete_input'], 'warning' in d,\n"
	    "      [n['code'] for n in d['notes']], d['inputs'],\n"
	    "      [(r['type'], r['ticks'], r['allocation_amount'])\n"
	    "       for r in d['allocation_ticks']['rows']],\n"
	    "      d['allocation_ticks']['ticks'], d['allocation_ticks']['allocation_amount'])\n",
	    "True 257 2 3 True True ['input', 'lost-data', 'skipped-events', 'assumed-mean'] "
	    "['trace with \"quotes\", commas'] [('System.Int32[]', 2, 202400), "
	    "('Weird,\"Name\"', 1, 5000)] 3 207400\n");
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

/* What a traced program controls (golden_hostile): the JSON encoder escapes every control
 * (ESC as \u001b, C1 and bidirectional controls as \u escapes), so no byte of the file acts on
 * a terminal, and a parser gets every name back exactly as the trace wrote it. */
static void test_write_json_hostile(void **state)
{
	(void)state;
	unsigned by = RASP_GROUP_TYPE | RASP_GROUP_PROCESS | RASP_GROUP_STACK;
	struct rasp_tally *t = golden_hostile(by);
	struct golden_out g = render(t, by, "json-hostile.expect");

	golden_check_inert(g.out, g.len, false, "json");
	assert_non_null(strstr(g.out, "\"Clear\\u001b[2J\\u0007Bell\""));
	assert_non_null(strstr(g.out, "\"Rlo\\u202etxt.exe\""));
	check_py(
	    &g,
	    "types = {r['type'] for r in d['rows']}\n"
	    "want = {'Clear\\x1b[2J\\x07Bell', 'Rlo\\u202etxt.exe', 'Isolate\\u2066x\\u2069',\n"
	    "        'Csi\\x9b31m', \"=cmd|' /C calc'!A0\", '+SUM(1,2)', '-1+2', '@SUM(A1)',\n"
	    "        '-42', '+1.5e3'}\n"
	    "names = {r['process_name'] for r in d['rows']}\n"
	    "frames = {f['name'] for r in d['rows'] for f in r['stack']}\n"
	    "print(types == want, names == {'\\x1b]0;pwned\\x07\\u202eeman',\n"
	    "      '=HYPERLINK(\"http://x\")'}, d['inputs'] == ['/traces/\\x1b[31mred\\x1b[0m'],\n"
	    "      'Ns.\\x1b[2JAlloc\\u202e' in frames, ascii(d['notes'][0]['text']))\n",
	    "True True True True 'stream \\x1b[2J\\x07ch0 is cut short'\n");
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

static void test_write_json_empty_ticks_many(void **state)
{
	(void)state;
	struct rasp_tally *t = golden_empty(RASP_GROUP_TYPE);
	struct golden_out g = render(t, RASP_GROUP_TYPE, "json-empty.expect");

	check_py(&g, shape, "[] 0 True True True True\n");
	check_py(&g,
		 "print(d['rows'], d['total'], d['processes'], d['duration_ns'],\n"
		 "      [n['code'] for n in d['notes']])\n",
		 "[] {'samples': 0, 'bytes': 0, 'bytes_low': 0, 'bytes_high': 0, 'objects': 0.0, "
		 "'objects_low': 0.0, 'objects_high': 0.0, 'model_mismatch': False, "
		 "'low_confidence': False} [] None ['no-samples']\n");
	golden_out_free(&g);
	rasp_tally_destroy(t);

	t = golden_ticks(RASP_GROUP_TYPE);
	g = render(t, RASP_GROUP_TYPE, "json-ticks.expect");
	check_py(&g,
		 "print([r['type'] for r in d['allocation_ticks']['rows']], d['other_events'])\n",
		 "['int[]', 'object[]', 'string'] 5\n");
	golden_out_free(&g);
	rasp_tally_destroy(t);

	t = golden_many(RASP_GROUP_PROCESS);
	g = render(t, RASP_GROUP_PROCESS, "json-many.expect");
	check_py(&g, shape, "[] 0 True True True True\n");
	check_py(&g,
		 "print(len(d['processes']), len(d['notes']), d['notes'][-1]['text'][:23],\n"
		 "      [r['process_name'] for r in d['rows']][:4])\n",
		 "7 6 in all, 6 processes had ['worker-1', 'worker-6', 'worker-5', None]\n");
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

static void test_write_json_unknown(void **state)
{
	(void)state;
	unsigned by = RASP_GROUP_THREAD | RASP_GROUP_PROCESS;
	struct rasp_tally *t = golden_unknown(by);
	struct golden_out g = render(t, by, "json-unknown.expect");

	check_py(&g, shape, "[] 0 True True True True\n");
	check_py(&g,
		 "r = d['rows'][0]\n"
		 "print(r['thread'], r['process'], r['process_name'], d['processes'][0]['pid'],\n"
		 "      'type' in r)\n",
		 "None None None None False\n");
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_json_two_procs),
	    cmocka_unit_test(test_write_json_awkward),
	    cmocka_unit_test(test_write_json_hostile),
	    cmocka_unit_test(test_write_json_empty_ticks_many),
	    cmocka_unit_test(test_write_json_unknown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
