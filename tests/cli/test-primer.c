/* rasp record's metadata primer (cli/primer.c) through the real session daemon: the session's
 * metadata reaches the trace while the program still runs (without the primer, only at its
 * exit, which the stop then waited behind), the primer's own process leaves nothing but
 * LTTng-UST's state-dump markers (no sample, no sampling event, no loaded objects), and it
 * runs only once the program has registered (announced itself on the follow socket). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lttng-session.h"

#include "cmd-support.h"

static char out[1 << 20];

static int setup(void **state)
{
	(void)state;
	return cmd_work_setup("primer");
}

static int teardown(void **state)
{
	(void)state;
	cmd_work_remove();
	return 0;
}

/* A program without librasp (librasp-malloc is preloaded, and the primer runs) that starts no
 * other process (each one's exit would push the metadata too) reads the trace's metadata file
 * while it runs, up to 20 s, for the AllocationSampled event's declaration. */
static void test_metadata_is_written_while_the_program_runs(void **state)
{
	char metadata[4300];
	const char *dir = cmd_work("running");

	(void)state;
	snprintf(metadata, sizeof(metadata), "%s/ust/uid/%d/64-bit/metadata", dir, (int)getuid());
	const char *args[] = {"record",
			      "-o",
			      dir,
			      "--",
			      rasp_test_build_path("bin/rasp-test-metadata-watch"),
			      metadata,
			      "AllocationSampled",
			      NULL};
	int rc = cmd_rasp(out, sizeof(out), args, NULL);

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
	const char *dir = cmd_work("quiet");
	const char *args[] = {"record",	 "--mean", "4096",
			      "-o",	 dir,	   "--",
			      "/bin/sh", "-c",	   "seq 200000 | sort -r >/dev/null",
			      NULL};
	const char *bt[] = {"/usr/bin/babeltrace2", dir, NULL};
	const char *primer[] = {"--lttng-primer", NULL};
	int markers = 0, samples = 0;
	char *line, *save = NULL;

	(void)state;
	assert_int_equal(cmd_rasp(out, sizeof(out), primer, NULL), 0);
	assert_string_equal(out, "");
	if (cmd_rasp(out, sizeof(out), args, NULL) != 0)
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

/* A statically linked program never registers nor announces itself: the primer, held until
 * it does, never runs, and the trace holds no event of its process (nor any: no trace at all).
 * Released with the program instead, it registered and left its markers. rasp record says the
 * program is static (cli/preload.c), which is why nothing of it is recorded. */
static void test_the_primer_waits_for_the_program(void **state)
{
	const char *dir = cmd_work("static");
	const char *args[] = {
	    "record", "-o", dir, "--", rasp_test_build_path("bin/rasp-test-static-sleep"),
	    "1500",   NULL};
	const char *bt[] = {"/usr/bin/babeltrace2", dir, NULL};
	int rc;

	(void)state;
	if (cmd_rasp(out, sizeof(out), args, NULL) != 0)
		fail_msg("rasp record failed:\n%s", out);
	if (!strstr(out, "0 events"))
		fail_msg("the trace of a program that never registered holds events:\n%s", out);
	/* And rasp says why, before it runs and in its summary. */
	if (!strstr(out, "is statically linked: no preload reaches it") ||
	    !strstr(out, "emitted no allocation events: it is statically linked"))
		fail_msg("rasp record did not say the program is static:\n%s", out);
	rc = rasp_test_run(out, sizeof(out), bt, NULL);
	if (rc == 0 && strstr(out, "procname = \"rasp\""))
		fail_msg("the primer ran though the program never registered:\n%s", out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metadata_is_written_while_the_program_runs),
	    cmocka_unit_test(test_the_primer_leaves_only_markers),
	    cmocka_unit_test(test_the_primer_waits_for_the_program),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
