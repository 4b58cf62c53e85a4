/* rasp record's metadata primer (cli/primer.c) through the real session daemon: the session's
 * metadata reaches the trace while the program still runs (without the primer, only at its
 * exit, which the stop then waited behind), and the primer's own process leaves nothing but
 * LTTng-UST's state-dump markers: no sample, no sampling event, no loaded objects. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lttng-session.h"

#define OUT (1 << 20)

static char work[4096];
static char out[OUT];

static const char *in_work(const char *name)
{
	static char paths[4][4200];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s", work, name);
	return p;
}

static int setup(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};
	const char *mk[] = {"/bin/mkdir", "-p", work, NULL};

	(void)state;
	snprintf(work, sizeof(work), "%s/test-traces/primer-%ld", RASP_TEST_BUILD_DIR,
		 (long)getpid());
	rasp_test_run(NULL, 0, rm, NULL);
	return rasp_test_run(NULL, 0, mk, NULL);
}

static int teardown(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};

	(void)state;
	rasp_test_run(NULL, 0, rm, NULL);
	return 0;
}

/* A program without librasp (librasp-malloc is preloaded, and the primer runs) that starts no
 * other process (each one's exit would push the metadata too) reads the trace's metadata file
 * while it runs, up to 20 s, for the AllocationSampled event's declaration. */
static void test_metadata_is_written_while_the_program_runs(void **state)
{
	char metadata[4300];
	const char *dir = in_work("running");

	(void)state;
	snprintf(metadata, sizeof(metadata), "%s/ust/uid/%d/64-bit/metadata", dir, (int)getuid());
	const char *argv[] = {rasp_test_build_path("bin/rasp"),
			      "record",
			      "-o",
			      dir,
			      "--",
			      rasp_test_build_path("bin/rasp-test-metadata-watch"),
			      metadata,
			      "AllocationSampled",
			      NULL};
	int rc = rasp_test_run(out, sizeof(out), argv, NULL);

	if (rc != 0)
		fail_msg(
		    "the program did not see the metadata on disk while it ran (status %d):\n%s",
		    rc, out);
}

/* Every event of a process named "rasp" (the primer: rasp's own binary) is one of LTTng-UST's
 * state-dump markers, and there is at least one: the primer ran and said nothing else. The
 * program, `sort` on 200,000 lines at a mean of 4 KiB, has its samples. */
static void test_the_primer_leaves_only_markers(void **state)
{
	const char *dir = in_work("quiet");
	const char *argv[] = {rasp_test_build_path("bin/rasp"),
			      "record",
			      "--mean",
			      "4096",
			      "-o",
			      dir,
			      "--",
			      "/bin/sh",
			      "-c",
			      "seq 200000 | sort -r >/dev/null",
			      NULL};
	const char *bt[] = {"/usr/bin/babeltrace2", dir, NULL};
	const char *primer[] = {rasp_test_build_path("bin/rasp"), "--lttng-primer", NULL};
	int markers = 0, samples = 0;
	char *line, *save = NULL;

	(void)state;
	assert_int_equal(rasp_test_run(out, sizeof(out), primer, NULL), 0);
	assert_string_equal(out, "");
	if (rasp_test_run(out, sizeof(out), argv, NULL) != 0)
		fail_msg("rasp record failed:\n%s", out);
	if (rasp_test_run(out, sizeof(out), bt, NULL) != 0)
		fail_msg("babeltrace2 failed:\n%s", out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "DotNETRuntime:AllocationSampled:"))
			samples++;
		if (!strstr(line, "procname = \"rasp\""))
			continue;
		if (!strstr(line, "lttng_ust_statedump:start:") &&
		    !strstr(line, "lttng_ust_statedump:end:") &&
		    !strstr(line, "lttng_ust_statedump:procname:"))
			fail_msg("the primer emitted more than markers:\n%s", line);
		markers++;
	}
	if (markers == 0)
		fail_msg("no event of the primer's process: did it run?");
	assert_true(samples > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metadata_is_written_while_the_program_runs),
	    cmocka_unit_test(test_the_primer_leaves_only_markers),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
