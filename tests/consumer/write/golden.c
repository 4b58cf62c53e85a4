/* The writers' golden-test helpers (golden.h): fixtures, rendering into memory, the expect
 * files and the Python checks. */
#include "golden.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "write/writer.h"

#define UNK RASP_ID_UNKNOWN

static struct rasp_tally *create(unsigned group_by)
{
	struct rasp_tally *t = rasp_tally_create(group_by, RASP_DEFAULT_SAMPLING_MEAN);

	assert_non_null(t);
	return t;
}

struct smp {
	const char *type;
	uint64_t kind;
	int64_t pid, tid;
	uint64_t size, offset;
};

static void add(struct rasp_tally *t, const struct smp *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rasp_tally_add_sample(t, s[i].type, s[i].kind, s[i].pid, s[i].tid,
						       s[i].size, s[i].offset),
				 0);
}

struct rasp_tally *golden_two_procs(unsigned group_by)
{
	static const struct smp s[] = {
	    {"Demo.Node", 0, 6189, 6190, 72, 5},
	    {"Demo.Node", 0, 6189, 6190, 72, 40},
	    {"Demo.Node", 0, 6189, 6190, 96, 0},
	    {"Demo.Leaf", 0, 6189, 6190, 24, 3},
	    {"System.String", 0, 6189, 6190, 30, 29},
	    {"System.Byte[]", 1, 6189, 6190, 90000, 12345},
	    {"System.Byte[]", 2, 6189, 6190, 4096, 100},
	    {"Demo.Node", 0, 6189, 6191, 72, 71},
	    {"Demo.Leaf", 0, 6189, 6191, 24, 0},
	    {"System.String", 0, 6189, 6191, 64, 8},
	    {"Demo.Node", 0, 6192, 6193, 72, 1},
	    {"Demo.Node", 0, 6192, 6193, 72, 2},
	    {"System.Byte[]", 1, 6192, 6193, 200000, 150000},
	    {"System.String", 0, 6192, 6193, 1000, 999},
	    {"Demo.Leaf", 0, 6192, 6193, 24, 23},
	};
	struct rasp_tally *t = create(group_by);

	assert_int_equal(rasp_tally_add_input(t, "/traces/emit-two-procs"), 0);
	assert_int_equal(rasp_tally_set_process_name(t, 6189, "emit"), 0);
	assert_int_equal(rasp_tally_set_mean(t, 6189, 6190, 4096), 0);
	assert_int_equal(rasp_tally_set_process_name(t, 6192, "emit2"), 0);
	add(t, s, sizeof(s) / sizeof(s[0]));
	rasp_tally_add_other_event(t);
	rasp_tally_add_other_event(t);
	rasp_tally_note_time(t, 1000000000);
	rasp_tally_note_time(t, 2500000000);
	return t;
}

const char *const golden_awkward_types[] = {
    "Weird,\"Name\"",
    "Ctl\x01\x1f\x7f"
    "End",
    "Tab\there",
    "\xc3\x9cn\xc3\xaf"
    "code.\xd0\xa2\xd0\xb8\xd0\xbf", /* Ünïcode.Тип */
    "Bad\xff\xfe\xc3UTF8",
    "Line\nBreak",
    "CR\rName",
    "NULL",
    "",
    NULL,
};

struct rasp_tally *golden_awkward(unsigned group_by)
{
	struct rasp_tally *t = create(group_by);
	uint64_t size = 40;

	assert_int_equal(rasp_tally_add_input(t, "trace with \"quotes\", commas"), 0);
	assert_int_equal(rasp_tally_add_warning(t, "stream %s is cut short: %d of %d bytes.",
						"ch0_1", 4096, 8192),
			 0);
	rasp_tally_add_discarded_events(t, 257, true);
	rasp_tally_add_discarded_packets(t, 2, true);
	for (int i = 0; i < 3; i++)
		rasp_tally_add_skipped(t);
	assert_int_equal(rasp_tally_set_process_name(t, 100, "proc, with \"comma\""), 0);
	assert_int_equal(rasp_tally_set_mean(t, 100, UNK, 1024), 0);
	for (size_t i = 0; golden_awkward_types[i]; i++) {
		const char *type =
		    strcmp(golden_awkward_types[i], "NULL") == 0 ? NULL : golden_awkward_types[i];

		assert_int_equal(rasp_tally_add_sample(t, type, i % 3, 100, 101, size, i), 0);
		assert_int_equal(rasp_tally_add_sample(t, type, 0, 200, 201, 3 * size, 1), 0);
		size += 24;
	}
	assert_int_equal(rasp_tally_add_tick(t, "System.Int32[]", 100000), 0);
	assert_int_equal(rasp_tally_add_tick(t, "System.Int32[]", 102400), 0);
	assert_int_equal(rasp_tally_add_tick(t, "Weird,\"Name\"", 5000), 0);
	return t;
}

struct rasp_tally *golden_empty(unsigned group_by)
{
	return create(group_by);
}

struct rasp_tally *golden_ticks(unsigned group_by)
{
	struct rasp_tally *t = create(group_by);

	assert_int_equal(rasp_tally_add_input(t, "netcoreapp31.trace"), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rasp_tally_add_tick(t, "System.Int32[]", 102400), 0);
	assert_int_equal(rasp_tally_add_tick(t, "System.String", 110000), 0);
	assert_int_equal(rasp_tally_add_tick(t, "System.Object[]", 110000), 0);
	for (int i = 0; i < 5; i++)
		rasp_tally_add_other_event(t);
	rasp_tally_note_time(t, 5);
	rasp_tally_note_time(t, 700000005);
	return t;
}

struct rasp_tally *golden_many(unsigned group_by)
{
	struct rasp_tally *t = create(group_by);
	char name[32];

	assert_int_equal(rasp_tally_set_mean(t, 1007, UNK, 8192), 0);
	for (int64_t pid = 1001; pid <= 1007; pid++) {
		if (pid != 1004) {
			snprintf(name, sizeof(name), "worker-%d", (int)(pid - 1000));
			assert_int_equal(rasp_tally_set_process_name(t, pid, name), 0);
		}
		/* Offsets spread over the objects, as sampling spreads them. */
		for (int64_t i = 0; i < (pid == 1001 ? 40 : pid - 1000); i++)
			assert_int_equal(
			    rasp_tally_add_sample(t, pid == 1001 ? "Big" : "Small", 0, pid,
						  pid * 10, pid == 1001 ? 100000 : 64,
						  (uint64_t)i * (pid == 1001 ? 2500 : 9)),
			    0);
	}
	rasp_tally_note_time(t, 0);
	rasp_tally_note_time(t, 750000000000);
	return t;
}

struct rasp_tally *golden_unknown(unsigned group_by)
{
	static const struct smp s[] = {
	    {"A", 0, UNK, UNK, 128, 0},
	    {"A", 0, UNK, UNK, 128, 64},
	    {"B", 1, UNK, UNK, 90000, 7},
	};
	struct rasp_tally *t = create(group_by);

	add(t, s, sizeof(s) / sizeof(s[0]));
	return t;
}

const char *const golden_hostile_types[] = {
    "Clear\x1b[2J\x07"
    "Bell",
    "Rlo\xe2\x80\xae"
    "txt.exe",
    "Isolate\xe2\x81\xa6"
    "x\xe2\x81\xa9",
    "Csi\xc2\x9b"
    "31m",
    "=cmd|' /C calc'!A0",
    "+SUM(1,2)",
    "-1+2",
    "@SUM(A1)",
    "-42",
    "+1.5e3",
    NULL,
};
const char golden_hostile_proc300[] = "\x1b]0;pwned\x07\xe2\x80\xae"
				      "eman",
	   golden_hostile_proc301[] = "=HYPERLINK(\"http://x\")",
	   golden_hostile_method[] = "Ns.\x1b[2JAlloc\xe2\x80\xae",
	   golden_hostile_module[] = "/lib/\x1b]0;t\x07lib.so";

struct rasp_tally *golden_hostile(unsigned group_by)
{
	const uint64_t stack[] = {0x10000010, 0x20000010};
	struct rasp_tally *t = create(group_by);

	assert_int_equal(rasp_tally_add_input(t, "/traces/\x1b[31mred\x1b[0m"), 0);
	assert_int_equal(rasp_tally_add_warning(t, "stream %s is cut short",
						"\x1b[2J\x07"
						"ch0"),
			 0);
	assert_int_equal(rasp_tally_set_process_name(t, 300, golden_hostile_proc300), 0);
	assert_int_equal(rasp_tally_set_process_name(t, 301, golden_hostile_proc301), 0);
	for (int64_t pid = 300; pid <= 301; pid++) {
		assert_int_equal(rasp_tally_set_mean(t, pid, UNK, 4096), 0);
		assert_int_equal(rasp_modules_add_method(&t->modules, pid, 0x10000000, 0x100,
							 golden_hostile_method),
				 0);
		assert_int_equal(rasp_modules_add(&t->modules, pid, 0x20000000, 0x1000,
						  golden_hostile_module, true),
				 0);
	}
	for (size_t i = 0; golden_hostile_types[i]; i++)
		for (uint64_t k = 0; k < 3; k++)
			assert_int_equal(rasp_tally_add_sample_stack(t, golden_hostile_types[i], 0,
								     300 + (int64_t)(i % 2), 7,
								     64 + 8 * i, k, stack, 2),
					 0);
	rasp_tally_note_time(t, 0);
	rasp_tally_note_time(t, 2000000000);
	return t;
}

void golden_check_inert(const char *text, size_t len, bool tabs, const char *what)
{
	const unsigned char *p = (const unsigned char *)text;

	for (size_t i = 0; i < len; i++) {
		bool c1 = p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;
		bool bidi = p[i] == 0xe2 && i + 2 < len &&
			    ((p[i + 1] == 0x80 && p[i + 2] >= 0xaa && p[i + 2] <= 0xae) ||
			     (p[i + 1] == 0x81 && p[i + 2] >= 0xa6 && p[i + 2] <= 0xa9));

		if ((p[i] < 0x20 && p[i] != '\n' && !(tabs && p[i] == '\t')) || p[i] == 0x7f ||
		    c1 || bidi) {
			printf("%s: byte 0x%02x at offset %zu would act on a terminal\n", what,
			       p[i], i);
			fail();
		}
	}
}

void golden_render(struct rasp_tally *t, const struct rasp_report_options *opt,
		   struct golden_out *g)
{
	FILE *f, *errf = tmpfile();
	int saved, rc;
	long n;

	*g = (struct golden_out){0};
	assert_non_null(errf);
	f = open_memstream(&g->out, &g->len);
	assert_non_null(f);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(errf), STDERR_FILENO) >= 0);
	rc = rasp_report_render(t, opt, "--sampling-mean", f);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	assert_int_equal(fclose(f), 0);
	n = ftell(errf);
	g->err = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	assert_non_null(g->err);
	rewind(errf);
	if (n > 0)
		assert_int_equal(fread(g->err, 1, (size_t)n, errf), (size_t)n);
	fclose(errf);
	if (rc != 0) {
		printf("rasp_report_render (%s): %d\n", opt->format, rc);
		fail();
	}
}

void golden_out_free(struct golden_out *g)
{
	free(g->out);
	free(g->err);
	*g = (struct golden_out){0};
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)(n > 0 ? n : 0) + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = (size_t)n;
	}
	return buf;
}

void golden_check(const char *text, size_t len, const char *name)
{
	const char *update = getenv("RASP_UPDATE_EXPECT");
	char path[PATH_MAX];
	size_t elen = 0, line = 1, i;
	char *e;

	snprintf(path, sizeof(path), "%s/%s", RASP_TEST_EXPECT_DIR, name);
	if (update && strcmp(update, "1") == 0) {
		FILE *f = fopen(path, "wb");

		if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
			printf("golden: cannot write %s\n", path);
			fail();
		}
		printf("golden: updated expect/%s\n", name);
		return;
	}
	e = slurp(path, &elen);
	if (!e) {
		printf("golden: cannot read %s (RASP_UPDATE_EXPECT=1 creates it)\n", path);
		fail();
	}
	if (elen == len && memcmp(e, text, len) == 0) {
		free(e);
		return;
	}
	for (i = 0; i < len && i < elen && e[i] == text[i]; i++)
		line += text[i] == '\n';
	printf("golden: output differs from expect/%s from line %zu (byte %zu)\n--- expected\n%s"
	       "--- got\n%.*s--- end\n",
	       name, line, i, e, (int)len, text);
	free(e);
	fail();
}

/* Writes text into a new temporary file; its path in path. */
static void temp_file(const char *text, size_t len, char *path, size_t pathlen)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, pathlen, "%s/rasp-golden-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

/* Runs python with `args` (already quoted), stdout into out; the exit status. */
static int run_python(const char *args, char *out, size_t outlen)
{
	char cmd[3 * PATH_MAX];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s", RASP_TEST_PYTHON, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (out && outlen) {
		n = fread(out, 1, outlen - 1, p);
		out[n] = '\0';
	}
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int golden_python(const char *text, size_t len, const char *script, char *out, size_t outlen)
{
	char data[PATH_MAX], prog[PATH_MAX], args[3 * PATH_MAX];
	int st;

	temp_file(text, len, data, sizeof(data));
	temp_file(script, strlen(script), prog, sizeof(prog));
	snprintf(args, sizeof(args), "'%s' '%s'", prog, data);
	st = run_python(args, out, outlen);
	unlink(data);
	unlink(prog);
	return st;
}

void golden_check_json(const char *text, size_t len)
{
	/* json.tool, and a strict load: Python's json also takes NaN and Infinity, which
	 * RFC 8259 does not. */
	static const char strict[] =
	    "import json, sys\n"
	    "def bad(c):\n"
	    "    sys.exit('not JSON: ' + c)\n"
	    "json.load(open(sys.argv[1], encoding='utf-8'), parse_constant=bad)\n";
	char data[PATH_MAX], args[2 * PATH_MAX], out[256];
	int tool, st;

	temp_file(text, len, data, sizeof(data));
	snprintf(args, sizeof(args), "-m json.tool '%s' >/dev/null", data);
	tool = run_python(args, NULL, 0);
	unlink(data);
	st = golden_python(text, len, strict, out, sizeof(out));
	if (tool != 0 || st != 0) {
		printf("json.tool: %d, strict load: %d %s; the text:\n%.*s\n", tool, st, out,
		       (int)len, text);
		fail();
	}
}
