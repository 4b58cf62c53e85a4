/* Mappings (runtime/mapping.c), white-box through the OS seam: every new small-object segment
 * and arena, and no large object's own mapping, is advised against transparent huge pages
 * unless RASP_THP=1, and the kernel records the advice on the mapping. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "internal.h"
#include "counting-os.h"

static uint64_t stats_regions(rasp_heap_t *h)
{
	rasp_heap_stats_t st;

	assert_int_equal(rasp_heap_stats(h, &st), 0);
	return st.regions;
}

/* Small-object segments are advised against transparent huge pages (where the system's
 * policy is `always`, a first touch faulted in 2 MiB and the resident set stopped following
 * use): each new segment gets the advice over its whole range, unless RASP_THP=1; a value
 * other than 0 or 1 is taken as 0. Large objects' mappings keep the system's policy. */
static void test_segments_advised_against_huge_pages(void **state)
{
	const struct {
		const char *env;
		bool advised;
	} cases[] = {{NULL, true}, {"0", true}, {"1", false}, {"yes", true}};
	static void *more[5120];

	(void)state;
	rasp__os_set_ops(&counting);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		rasp_heap_t *h;
		const rasp_type_t *t;
		void *small, *large;

		if (cases[i].env)
			setenv("RASP_THP", cases[i].env, 1);
		else
			unsetenv("RASP_THP");
		atomic_store(&no_huge_calls, 0);
		h = make_heap();
		t = rasp_type_register(h, "t");
		assert_non_null(small = rasp_alloc(h, t, 100, 0));
		assert_int_equal(atomic_load(&no_huge_calls), cases[i].advised);
		if (cases[i].advised) {
			assert_int_equal(atomic_load(&no_huge_addr),
					 (uintptr_t)rasp__segment_of(small));
			assert_int_equal(atomic_load(&no_huge_size), RASP__SEGMENT_SIZE);
		}
		assert_non_null(large = rasp_alloc(h, t, 17u << 20, 0)); /* past the arenas */
		assert_int_equal(atomic_load(&no_huge_calls), cases[i].advised);
		rasp_free(h, large);
		/* The heap keeps the value it was created with: a second segment after the
		 * variable changed (5 MiB of 1000-byte objects) gets the same treatment. */
		setenv("RASP_THP", cases[i].advised ? "1" : "0", 1);
		for (int j = 0; j < 5120; j++)
			assert_non_null(more[j] = rasp_alloc(h, t, 1000, 0));
		assert_true(stats_regions(h) >= 2);
		assert_int_equal(atomic_load(&no_huge_calls) > 1, cases[i].advised);
		assert_int_equal(atomic_load(&no_huge_calls) == 0, !cases[i].advised);
		for (int j = 0; j < 5120; j++)
			rasp_free(h, more[j]);
		rasp_free(h, small);
		rasp_heap_destroy(h);
	}
	unsetenv("RASP_THP");
	rasp__os_set_ops(NULL);
}

/* The same through the real OS: the kernel records the advice on the segment's mapping
 * (VmFlags "nh" in /proc/self/smaps), and not with RASP_THP=1. */
static bool mapping_has_flag(uintptr_t addr, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false, found = false, seen = false;

	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = addr >= lo && addr < hi;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			char *tok = strtok(line + 8, " \n");

			seen = true;
			for (; tok; tok = strtok(NULL, " \n"))
				found |= strcmp(tok, flag) == 0;
		}
	}
	fclose(f);
	assert_true(seen || !found); /* found implies seen; a kernel without VmFlags shows none */
	return found;
}

/* Whether this kernel takes the advice and shows it: a probe mapping advised by hand. */
static const char *kernel_refuses_advice(void)
{
	size_t z = 4u << 20;
	void *p = mmap(NULL, z, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const char *why = NULL;

	assert_true(p != MAP_FAILED);
	if (madvise(p, z, MADV_NOHUGEPAGE) != 0)
		why = "madvise(MADV_NOHUGEPAGE) refused (a kernel without transparent huge pages)";
	else if (!mapping_has_flag((uintptr_t)p, "nh"))
		why = "the kernel shows no VmFlags nh for an advised mapping";
	munmap(p, z);
	return why;
}

static void test_segment_mapping_carries_the_advice(void **state)
{
	const char *why = kernel_refuses_advice();

	(void)state;
	if (why) {
		printf("skipped: %s\n", why);
		skip();
	}
	for (int allow = 0; allow < 2; allow++) {
		rasp_heap_t *h;
		void *small;

		/* Before Linux 5.0 a process with THP disabled by prctl had nh on every mapping. */
		if (allow && prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1) {
			printf("RASP_THP=1 half skipped: THP disabled for this process (prctl)\n");
			break;
		}
		setenv("RASP_THP", allow ? "1" : "0", 1);
		h = make_heap();
		assert_non_null(small = rasp_alloc(h, rasp_type_register(h, "t"), 100, 0));
		assert_int_equal(mapping_has_flag((uintptr_t)small, "nh"), !allow);
		rasp_free(h, small);
		rasp_heap_destroy(h);
	}
	unsetenv("RASP_THP");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_segments_advised_against_huge_pages),
	    cmocka_unit_test(test_segment_mapping_carries_the_advice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
