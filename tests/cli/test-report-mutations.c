/* rasp report on mutated .nettrace files: every run ends with exit status 0, 1 or 2, never a
 * signal, a hang or a sanitizer report. A fixed-seed generator mutates copies of three sets of
 * seeds: the files the scripts of tests/consumer/read/nettrace write (always), the .NET 10 files
 * the tests/dotnet oracles leave in the build tree (skipped, with a line saying so, when dotnet or
 * those tests have not made them) and the real .NET files of ../shared/data/dotnet (skipped
 * when absent). Mutations: 1 to 6 bytes overwritten (half of them in the first 64 KiB, where
 * headers and metadata are), a cut, a 32-bit word set to an edge value, a chunk removed or
 * doubled. Each run has 120 s (a hang guard); a failing input is kept beside its log line.
 *   test-report-mutations GENERATED_DIR DOTNET_BUILD_DIR SHARED_DIR WORK_DIR */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lttng-session.h"

static const char *generated, *dotnet, *shared, *work;
static char out[1 << 16];

/* splitmix64: the same mutations on every run. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

struct seed {
	char *path;
	uint8_t *data;
	size_t size;
};

struct seeds {
	struct seed v[64];
	size_t n;
};

static void seeds_add(struct seeds *s, const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	struct seed *e;

	if (!f || s->n == 64 || fstat(fileno(f), &st) != 0 || st.st_size <= 0) {
		if (f)
			fclose(f);
		return;
	}
	e = &s->v[s->n];
	e->size = (size_t)st.st_size;
	e->data = malloc(e->size);
	e->path = strdup(path);
	assert_non_null(e->data);
	assert_non_null(e->path);
	assert_int_equal(fread(e->data, 1, e->size, f), e->size);
	fclose(f);
	s->n++;
}

/* Every file matching pattern, in name order. */
static void seeds_glob(struct seeds *s, const char *pattern)
{
	glob_t g;

	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		seeds_add(s, g.gl_pathv[i]);
	globfree(&g);
}

static void seeds_free(struct seeds *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].path);
		free(s->v[i].data);
	}
	s->n = 0;
}

/* A mutated copy of seed into *buf (size in *n; the buffer holds 2 * size + 64), and what was
 * done in what (for the log). */
static void mutate(const struct seed *sd, uint8_t *buf, size_t *n, char *what, size_t whatlen)
{
	static const uint32_t edges[] = {0,	 1,	     0x7F,	 0x80,	     0xFF,
					 0xFFFF, 0x00FFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF};
	size_t size = sd->size, head = size < 65536 ? size : 65536;
	unsigned op = (unsigned)below(8);
	size_t at, len, k = 0;

	memcpy(buf, sd->data, size);
	*n = size;
	switch (op) {
	case 5: /* cut */
		*n = below(size);
		snprintf(what, whatlen, "cut at %zu", *n);
		return;
	case 6: /* a word set to an edge value */
		at = below(size >= 4 ? size - 3 : 1);
		{
			uint32_t v = edges[below(sizeof(edges) / sizeof(edges[0]))];

			for (size_t b = 0; b < 4 && at + b < size; b++)
				buf[at + b] = (uint8_t)(v >> (8 * b));
			snprintf(what, whatlen, "32-bit word at %zu set to 0x%x", at, v);
		}
		return;
	case 7: /* a chunk removed or doubled */
		at = below(head);
		len = 1 + below(64);
		if (at + len > size)
			len = size - at;
		if (below(2)) {
			memmove(buf + at, buf + at + len, size - at - len);
			*n = size - len;
			snprintf(what, whatlen, "%zu bytes at %zu removed", len, at);
		} else {
			memmove(buf + at + len, buf + at, size - at);
			*n = size + len;
			snprintf(what, whatlen, "%zu bytes at %zu doubled", len, at);
		}
		return;
	default: /* 1 to 6 bytes overwritten */
		len = 1 + below(6);
		k = (size_t)snprintf(what, whatlen, "bytes overwritten:");
		for (size_t i = 0; i < len; i++) {
			at = below(2) ? below(head) : below(size);
			buf[at] = (uint8_t)rnd();
			if (k < whatlen)
				k += (size_t)snprintf(what + k, whatlen - k, " %zu=0x%02x", at,
						      buf[at]);
		}
	}
}

/* count mutations of the seeds, in turn; each through `rasp report`. Fails the test, naming
 * every failing input (kept in work/), when one ends otherwise than with 0, 1 or 2. */
static void run_mutations(const char *part, const struct seeds *s, unsigned count, uint64_t seed)
{
	char input[4200], report[4200], kept[4300], what[512], failures[8192] = "";
	size_t nfail = 0, statuses[3] = {0};
	uint8_t *buf = NULL;

	rng_state = seed;
	snprintf(input, sizeof(input), "%s/%s-mutant.nettrace", work, part);
	snprintf(report, sizeof(report), "%s/%s-mutant.txt", work, part);
	for (unsigned i = 0; i < count; i++) {
		const struct seed *sd = &s->v[i % s->n];
		const char *argv[] = {
		    RASP_TEST_TIMEOUT, "-k", "10",   "120", rasp_test_build_path("bin/rasp"),
		    "report",	       "-o", report, input, NULL};
		size_t n;
		FILE *f;
		int rc;

		buf = realloc(buf, 2 * sd->size + 64);
		assert_non_null(buf);
		mutate(sd, buf, &n, what, sizeof(what));
		f = fopen(input, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(buf, 1, n, f), n);
		assert_int_equal(fclose(f), 0);
		rc = rasp_test_run(out, sizeof(out), argv, NULL);
		if (rc >= 0 && rc <= 2) {
			statuses[rc]++;
			continue;
		}
		/* Kept for the reader of the log. */
		snprintf(kept, sizeof(kept), "%s/%s-failed-%u.nettrace", work, part, i);
		rename(input, kept);
		nfail++;
		if (strlen(failures) < sizeof(failures) - 600)
			snprintf(failures + strlen(failures), sizeof(failures) - strlen(failures),
				 "  #%u of %s (%s): exit %d%s; kept as %s\n", i, sd->path, what, rc,
				 rc == 124 || rc == 137 ? " (a hang)"
				 : rc > 128		? " (a signal)"
				 : rc == 99		? " (a sanitizer report)"
							: "",
				 kept);
		fprintf(stderr, "%s: #%u: exit %d:\n%s\n", part, i, rc, out);
	}
	free(buf);
	unlink(input);
	unlink(report);
	printf("%s: %u mutations of %zu seed file(s): %zu exit 0, %zu exit 1, %zu exit 2, %zu "
	       "otherwise\n",
	       part, count, s->n, statuses[0], statuses[1], statuses[2], nfail);
	if (nfail)
		fail_msg("%s: %zu of %u mutated files did not end with 0, 1 or 2:\n%s", part, nfail,
			 count, failures);
}

/* The files of make-nettrace.py and make-source-cases.py: always there (fixture). */
static void test_report_mutations_generated(void **state)
{
	static const char *const names[] = {
	    "v4",
	    "v5",
	    "v6",
	    "vector",
	    "v6-gap",
	    "v4-drop-tail",
	    "v4-truncated",
	    "v6-truncated",
	    "v6-redefined-metadata",
	    "v6-redefined-many",
	    "v4-late-corrupt",
	    "v4-bad-utf16",
	};
	struct seeds s = {0};
	char path[4200];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.nettrace", generated, names[i]);
		seeds_add(&s, path);
	}
	if (s.n != sizeof(names) / sizeof(names[0]))
		fail_msg("the generated files are not all in %s (fixture nettrace-files)",
			 generated);
	run_mutations("generated", &s, 240, 39);
	seeds_free(&s);
}

/* The .NET 10 files tests/dotnet makes (dotnet-eventpipe-oracle: the runtime's own file;
 * dotnet-attach: dotnet-trace's and rasp record -p's). */
static void test_report_mutations_dotnet10(void **state)
{
	struct seeds s = {0};
	char pattern[4200];

	(void)state;
	snprintf(pattern, sizeof(pattern), "%s/eventpipe-oracle/*.nettrace", dotnet);
	seeds_glob(&s, pattern);
	snprintf(pattern, sizeof(pattern), "%s/attach/*.nettrace", dotnet);
	seeds_glob(&s, pattern);
	if (!s.n) {
		printf("skip: no .NET 10 .nettrace file in %s (dotnet absent, or the tests "
		       "dotnet-eventpipe-oracle and dotnet-attach have not run)\n",
		       dotnet);
		skip();
	}
	run_mutations("dotnet10", &s, 180, 3910);
	seeds_free(&s);
}

/* The real .NET files of ../shared/data/dotnet (zipped there), unzipped into work/. */
static void test_report_mutations_shared(void **state)
{
	struct seeds s = {0};
	char pattern[4400], dir[4200];
	glob_t g;

	(void)state;
	snprintf(pattern, sizeof(pattern), "%s/*.nettrace.zip", shared);
	if (glob(pattern, 0, NULL, &g) != 0) {
		printf("skip: %s not present (no *.nettrace.zip there)\n", shared);
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/shared", work);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *argv[] = {RASP_TEST_PYTHON, "-m", "zipfile", "-e",
				      g.gl_pathv[i],	dir,  NULL};

		if (rasp_test_run(out, sizeof(out), argv, NULL) != 0)
			fail_msg("cannot unzip %s:\n%s", g.gl_pathv[i], out);
	}
	globfree(&g);
	snprintf(pattern, sizeof(pattern), "%s/*.nettrace", dir);
	seeds_glob(&s, pattern);
	assert_true(s.n > 0);
	run_mutations("shared", &s, 60, 391);
	seeds_free(&s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report_mutations_generated),
	    cmocka_unit_test(test_report_mutations_dotnet10),
	    cmocka_unit_test(test_report_mutations_shared),
	};

	if (argc != 5) {
		fprintf(stderr, "usage: %s GENERATED_DIR DOTNET_BUILD_DIR SHARED_DIR WORK_DIR\n",
			argv[0]);
		return 2;
	}
	generated = argv[1];
	dotnet = argv[2];
	shared = argv[3];
	work = argv[4];
	if (mkdir(work, 0755) != 0 && access(work, W_OK) != 0) {
		perror(work);
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
