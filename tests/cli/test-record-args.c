/* rasp record's command line (cli/record-args.c): the default LTTng buffers hold about 3 MiB
 * in all at the default mean or a larger one, whatever the CPU count up to 24, more at a
 * smaller mean, within 128 KiB and 64 MiB per CPU; a user's sub-buffer count or size is kept;
 * the parse fills in only what the user left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "rasp/rasp.h"
#include "record-args.h"

static uint64_t per_cpu(uint64_t mean, long cpus, uint64_t *subbuf, uint64_t *num)
{
	*subbuf = 0;
	*num = 0;
	rasp_cli_record_default_buffers(mean, cpus, subbuf, num);
	return *subbuf * *num;
}

static int pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static void test_the_default_mean_fits_3_mib(void **state)
{
	uint64_t sb, n;

	(void)state;
	for (long cpus = 1; cpus <= 24; cpus++) {
		uint64_t b = per_cpu(0, cpus, &sb, &n);

		assert_int_equal(n, 4);
		assert_true(pow2(sb));
		assert_true(b * (uint64_t)cpus <= (UINT64_C(3) << 20));
		assert_true(b >= (UINT64_C(128) << 10));
		/* Not needlessly small: the next power of 2 would not fit. */
		assert_true(b == (UINT64_C(128) << 10) ||
			    2 * b * (uint64_t)cpus > (UINT64_C(3) << 20));
	}
	assert_int_equal(per_cpu(0, 2, &sb, &n), UINT64_C(1) << 20); /* 256 KiB x 4 */
	assert_int_equal(sb, UINT64_C(256) << 10);
	assert_int_equal(per_cpu(RASP_DEFAULT_SAMPLING_MEAN, 2, &sb, &n), UINT64_C(1) << 20);
	/* Past 24 CPUs the floor: 128 KiB each. */
	assert_int_equal(per_cpu(0, 256, &sb, &n), UINT64_C(128) << 10);
	assert_int_equal(per_cpu(0, 0, &sb, &n), UINT64_C(2) << 20); /* unknown: one CPU */
}

static void test_a_smaller_mean_gets_more(void **state)
{
	uint64_t sb, n;

	(void)state;
	/* 12.5x the events: 1.5 MiB x 12.5 per CPU on 2 CPUs, 16 MiB as a power of 2. */
	assert_int_equal(per_cpu(8192, 2, &sb, &n), UINT64_C(16) << 20);
	/* A mean of 1 byte: the ceiling. */
	assert_int_equal(per_cpu(1, 2, &sb, &n), UINT64_C(64) << 20);
	/* A larger mean: no smaller buffers (a fast program fills them as quickly). */
	assert_int_equal(per_cpu(UINT64_C(1) << 20, 2, &sb, &n), UINT64_C(1) << 20);
	assert_int_equal(per_cpu(UINT64_C(1) << 30, 2, &sb, &n), UINT64_C(1) << 20);
}

static void test_the_users_choice_is_kept(void **state)
{
	uint64_t sb = 0, n = 16;

	(void)state;
	rasp_cli_record_default_buffers(0, 2, &sb, &n);
	assert_int_equal(n, 16);
	assert_int_equal(sb * n, UINT64_C(1) << 20);
	sb = UINT64_C(1) << 20;
	n = 0;
	rasp_cli_record_default_buffers(0, 2, &sb, &n);
	assert_int_equal(sb, UINT64_C(1) << 20);
	assert_int_equal(n, 4);
}

static void test_the_parse_fills_what_is_left_out(void **state)
{
	char *both[] = {"record", "--subbuf-size", "8M", "--num-subbuf", "2", "--", "true", NULL};
	char *mean[] = {"record", "--mean", "8K", "--", "true", NULL};
	char *none[] = {"record", "--", "true", NULL};
	struct rasp_record_args a;
	uint64_t sb, n;
	int first;

	(void)state;
	assert_int_equal(rasp_cli_record_parse(7, both, &a, &first), 0);
	assert_int_equal(a.s.subbuf_size, UINT64_C(8) << 20);
	assert_int_equal(a.s.num_subbuf, 2);
	assert_int_equal(rasp_cli_record_parse(5, mean, &a, &first), 0);
	assert_int_equal(a.s.subbuf_size * a.s.num_subbuf,
			 per_cpu(8192, sysconf(_SC_NPROCESSORS_CONF), &sb, &n));
	unsetenv("RASP_SAMPLING_MEAN");
	assert_int_equal(rasp_cli_record_parse(3, none, &a, &first), 0);
	assert_int_equal(a.s.subbuf_size * a.s.num_subbuf,
			 per_cpu(0, sysconf(_SC_NPROCESSORS_CONF), &sb, &n));
	/* The program's own mean, from the environment rasp record passes on. */
	setenv("RASP_SAMPLING_MEAN", "8192", 1);
	assert_int_equal(rasp_cli_record_parse(3, none, &a, &first), 0);
	assert_int_equal(a.s.subbuf_size * a.s.num_subbuf,
			 per_cpu(8192, sysconf(_SC_NPROCESSORS_CONF), &sb, &n));
	unsetenv("RASP_SAMPLING_MEAN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_default_mean_fits_3_mib),
	    cmocka_unit_test(test_a_smaller_mean_gets_more),
	    cmocka_unit_test(test_the_users_choice_is_kept),
	    cmocka_unit_test(test_the_parse_fills_what_is_left_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
