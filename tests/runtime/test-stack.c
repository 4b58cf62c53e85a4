/* Stacks end to end: stack-prog allocates known amounts along known paths (a recursion, a
 * library loaded with dlopen, one type from two sites), rasp record records it through a real
 * lttng-sessiond with stacks, and rasp report --by site / --by stack (read through the real
 * babeltrace2, symbolized with libdw) must name every site and hold every path's truth in its
 * interval, for three fixed seeds. The runtime's own frames must not appear.
 *   test-stack RASP STACK-PROG PLUGIN.so WORKDIR */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *rasp, *prog, *plugin, *work;

/* Runs argv; its standard output in out (NUL-terminated); its exit status. stderr passes. */
static int run(const char *const *argv, char *out, size_t cap)
{
	int fd[2], status;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	close(fd[1]);
	while (n + 1 < cap && (r = read(fd[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* rasp record of stack-prog with seed; the truth it printed. */
static json_object *record(const char *dir, const char *seed, bool stacks)
{
	static char out[65536];
	const char *with[] = {rasp, "record", "-o", dir,    "--mean", "4096", "--seed",
			      seed, "--",     prog, plugin, "1500",   NULL};
	const char *without[] = {rasp, "record",      "-o", dir,  "--mean", "4096", "--seed",
				 seed, "--no-stacks", "--", prog, plugin,   "1500", NULL};
	const char *const *argv = stacks ? with : without;
	json_object *truth;

	if (run(argv, out, sizeof(out)) != 0)
		fail_msg("rasp record failed:\n%s", out);
	truth = json_tokener_parse(out);
	if (!truth)
		fail_msg("stack-prog printed no truth:\n%s", out);
	return truth;
}

static json_object *report(const char *dir, const char *by)
{
	static char out[1 << 20];
	const char *argv[] = {rasp, "report",	    "--format", "json", "--by",
			      by,   "--confidence", "0.999",	dir,	NULL};
	json_object *j;

	if (run(argv, out, sizeof(out)) != 0)
		fail_msg("rasp report --by %s failed:\n%s", by, out);
	j = json_tokener_parse(out);
	if (!j)
		fail_msg("rasp report printed no JSON:\n%s", out);
	return j;
}

static double num(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("no '%s' in %s", k, json_object_to_json_string(o));
	return json_object_get_double(v);
}

static const char *str(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("no '%s' in %s", k, json_object_to_json_string(o));
	return json_object_get_string(v);
}

/* The row of `type` whose site is function `fn` ("fn (file:line)"). */
static json_object *site_row(json_object *rep, const char *type, const char *fn)
{
	json_object *rows;
	size_t n = strlen(fn);

	json_object_object_get_ex(rep, "rows", &rows);
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i);
		const char *site = str(r, "site");

		if (!strcmp(str(r, "type"), type) && !strncmp(site, fn, n) &&
		    (site[n] == ' ' || site[n] == '\0'))
			return r;
	}
	fail_msg("no row of %s at %s in %s", type, fn, json_object_to_json_string(rows));
	return NULL;
}

/* Every site named, every path's truth in its 99.9% interval, for three seeds. */
static void sites_hold_their_truth(void **state)
{
	static const char *const sites[] = {"descend", "site_a", "site_b", "plugin_alloc"};
	static const char *const seeds[] = {"1", "2", "3"};

	(void)state;
	for (size_t s = 0; s < 3; s++) {
		char dir[4096];
		json_object *truth, *rep;

		snprintf(dir, sizeof(dir), "%s/stacks-%s", work, seeds[s]);
		truth = record(dir, seeds[s], true);
		rep = report(dir, "type,site");
		for (size_t k = 0; k < 4; k++) {
			json_object *t, *row;
			double bytes, objects;

			json_object_object_get_ex(truth, sites[k], &t);
			row = site_row(rep, str(t, "type"), sites[k]);
			bytes = num(t, "bytes");
			objects = num(t, "objects");
			print_message(
			    "seed %s %-13s true %8.0f B  estimate %8.0f [%8.0f, %8.0f]  %s\n",
			    seeds[s], sites[k], bytes, num(row, "bytes"), num(row, "bytes_low"),
			    num(row, "bytes_high"), str(row, "site"));
			assert_true(num(row, "bytes_low") <= bytes &&
				    bytes <= num(row, "bytes_high"));
			assert_true(num(row, "objects_low") <= objects &&
				    objects <= num(row, "objects_high"));
		}
		/* The library loaded after start is named with its source (its dlopen event). */
		assert_non_null(strstr(str(site_row(rep, "Path.Plugin", "plugin_alloc"), "site"),
				       "stack-plugin.c:"));
		json_object_put(truth);
		json_object_put(rep);
	}
}

/* rasp convert of the recording: its ObjectLoaded events (from the state dump and dlopen
 * events) name every site of the .nettrace as the trace's own report names it, with the same
 * figures, and no frame is left in no object. */
static void converted_names_the_sites(void **state)
{
	static const char *const sites[] = {"descend", "site_a", "site_b", "plugin_alloc"};
	static char out[65536];
	char dir[4096], file[4200];
	json_object *truth, *lt, *nt;
	const char *convert[] = {rasp, "convert", "-o", file, dir, NULL};

	(void)state;
	snprintf(dir, sizeof(dir), "%s/convert-1", work);
	snprintf(file, sizeof(file), "%s/convert-1.nettrace", work);
	truth = record(dir, "1", true);
	if (run(convert, out, sizeof(out)) != 0)
		fail_msg("rasp convert failed:\n%s", out);
	lt = report(dir, "type,site");
	nt = report(file, "type,site");
	for (size_t k = 0; k < 4; k++) {
		json_object *t, *a, *b;

		json_object_object_get_ex(truth, sites[k], &t);
		a = site_row(lt, str(t, "type"), sites[k]);
		b = site_row(nt, str(t, "type"), sites[k]);
		print_message("%-13s trace: %s  .nettrace: %s\n", sites[k], str(a, "site"),
			      str(b, "site"));
		assert_string_equal(str(a, "site"), str(b, "site"));
		assert_true(num(a, "samples") == num(b, "samples"));
		assert_non_null(strchr(str(b, "site"), ':')); /* file:line from DWARF */
	}
	if (strstr(json_object_to_json_string(nt), "[no object]"))
		fail_msg("a frame in no object: %s", json_object_to_json_string(nt));
	json_object_put(truth);
	json_object_put(lt);
	json_object_put(nt);
}

/* By stack: the recursion shows all its frames, innermost first, and no frame of the runtime. */
static void stacks_show_the_whole_path(void **state)
{
	json_object *rep, *rows;
	bool found = false;

	(void)state;
	rep = report(getenv("STACK_DIR") ? getenv("STACK_DIR") : "", "type,stack");
	json_object_object_get_ex(rep, "rows", &rows);
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *st;
		size_t depth, descends = 0;

		json_object_object_get_ex(r, "stack", &st);
		depth = json_object_array_length(st);
		for (size_t k = 0; k < depth; k++) {
			const char *fn = str(json_object_array_get_idx(st, k), "name");

			if (!strncmp(fn, "descend ", 8))
				descends++;
			if (strstr(fn, "rasp_alloc") || strstr(fn, "rasp__"))
				fail_msg("a frame of the runtime: %s", fn);
		}
		if (!strcmp(str(r, "type"), "Path.Recursive")) {
			assert_int_equal(descends, 13); /* descend(12) .. descend(0) */
			assert_int_equal(
			    strncmp(str(json_object_array_get_idx(st, 0), "name"), "descend ", 8),
			    0);
			found = true;
		}
	}
	assert_true(found);
	json_object_put(rep);
}

/* rasp diff --by site between a run and one where site_b runs three times as often: site_b's
 * change is significant, near +200%; no other site's is. */
static void diff_by_site(void **state)
{
	static char out[1 << 18];
	char base[4096], changed[4096];
	const char *rec[] = {rasp, "record", "-o", changed, "--mean", "4096",	"--seed",
			     "4",  "--",     prog, plugin,  "1500",   "more-b", NULL};
	const char *diff[] = {rasp,   "diff", "--by",  "site", "--format",
			      "json", base,   changed, NULL};
	json_object *d, *rows;
	size_t significant = 0;

	(void)state;
	snprintf(base, sizeof(base), "%s/stacks-1", work);
	snprintf(changed, sizeof(changed), "%s/more-b", work);
	if (run(rec, out, sizeof(out)) != 0)
		fail_msg("rasp record (more-b) failed:\n%s", out);
	if (run(diff, out, sizeof(out)) != 0)
		fail_msg("rasp diff --by site failed:\n%s", out);
	d = json_tokener_parse(out);
	assert_non_null(d);
	json_object_object_get_ex(d, "rows", &rows);
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *sig;
		const char *site = str(r, "site");

		json_object_object_get_ex(r, "significant", &sig);
		print_message("%-36s %10.0f -> %10.0f %s\n", site, num(r, "bytes_base"),
			      num(r, "bytes_new"), json_object_get_boolean(sig) ? "*" : "");
		if (!strncmp(site, "site_b ", 7)) {
			double ratio = num(r, "bytes_new") / num(r, "bytes_base");

			assert_true(json_object_get_boolean(sig));
			assert_true(ratio > 2.0 && ratio < 4.5);
		}
		significant += json_object_get_boolean(sig);
	}
	assert_int_equal(significant, 1);
	json_object_put(d);
}

/* --no-stacks: samples without stacks, one "(no stack)" site. */
static void no_stacks(void **state)
{
	char dir[4096];
	json_object *truth, *rep, *rows;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/nostacks", work);
	truth = record(dir, "1", false);
	rep = report(dir, "site");
	json_object_object_get_ex(rep, "rows", &rows);
	assert_int_equal(json_object_array_length(rows), 1);
	assert_string_equal(str(json_object_array_get_idx(rows, 0), "site"), "(no stack)");
	json_object_put(truth);
	json_object_put(rep);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sites_hold_their_truth),
	    cmocka_unit_test(stacks_show_the_whole_path),
	    cmocka_unit_test(diff_by_site),
	    cmocka_unit_test(converted_names_the_sites),
	    cmocka_unit_test(no_stacks),
	};
	static char stack_dir[4200];

	if (argc != 5) {
		fprintf(stderr, "usage: test-stack RASP STACK-PROG PLUGIN.so WORKDIR\n");
		return 2;
	}
	rasp = argv[1];
	prog = argv[2];
	plugin = argv[3];
	work = argv[4];
	snprintf(stack_dir, sizeof(stack_dir), "STACK_DIR=%s/stacks-1", work);
	putenv(stack_dir);
	{
		char cmd[4300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", work, work);
		if (system(cmd) != 0)
			return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
