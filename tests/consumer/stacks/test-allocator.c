/* stacks/allocator.c: which objects are the allocator's, by file name up to a version
 * suffix, and never a .NET method or a name that only starts like one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stacks/allocator.h"

static bool is_allocator(const char *path, bool method)
{
	struct rasp_module m = {.path = (char *)path, .method = method};

	return rasp_module_is_allocator(&m);
}

static void test_allocator_libraries(void **state)
{
	(void)state;
	assert_true(is_allocator("/usr/lib/librasp-malloc.so", false));
	assert_true(is_allocator("/lib/x86_64-linux-gnu/libc.so.6", false));
	assert_true(is_allocator("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", false));
	assert_true(is_allocator("libc++abi.so.1", false));
	assert_true(is_allocator("/opt/rasp/lib/librasp.so.0", false));
}

static void test_other_objects(void **state)
{
	struct rasp_module none = {0};

	(void)state;
	assert_false(is_allocator("/usr/bin/python3.11", false));
	assert_false(is_allocator("/lib/x86_64-linux-gnu/libcrypt.so.1", false)); /* libc prefix */
	assert_false(is_allocator("/lib/x86_64-linux-gnu/libc.so-like", false));
	assert_false(is_allocator("/home/u/libc.so.6/app", false)); /* a directory of that name */
	assert_false(is_allocator("libc.so.6", true));		    /* a .NET method's name */
	assert_false(rasp_module_is_allocator(&none));
	assert_false(rasp_module_is_allocator(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allocator_libraries),
	    cmocka_unit_test(test_other_objects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
