/* runtime/stack.c's unwinder, white box: libunwind is not in the process until the first
 * stack is captured, and is after it (loaded with dlopen, so a program that records no stacks
 * never maps it); the capture walks out of the runtime's own frames. The runtime is linked
 * into this test, so its "own frames" are the test's too: the first frame kept is cmocka's,
 * which called the test. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#if defined(__SANITIZE_THREAD__)
#define EXPECT_LIBUNWIND 0 /* stack.c uses glibc's backtrace() under TSan */
#elif defined(RASP_HAVE_LIBUNWIND)
#define EXPECT_LIBUNWIND 1
#else
#define EXPECT_LIBUNWIND 0
#endif

static bool libunwind_loaded(void)
{
#ifdef RASP_LIBUNWIND_SONAME
	void *h = dlopen(RASP_LIBUNWIND_SONAME, RTLD_NOW | RTLD_NOLOAD);

	if (h)
		dlclose(h);
	return h != NULL;
#else
	return false;
#endif
}

static void test_loaded_at_the_first_stack(void **state)
{
	uintptr_t frames[16];
	size_t n;
	Dl_info info;

	(void)state;
	assert_false(libunwind_loaded());
	n = rasp__stack_capture(frames, 16);
	printf("%zu frames past the executable's; libunwind %s\n", n,
	       libunwind_loaded() ? "loaded" : "not loaded");
	assert_true(n >= 1 && n <= 16);
	assert_true(dladdr((void *)frames[0], &info) != 0);
	assert_non_null(info.dli_fname);
	assert_non_null(strstr(info.dli_fname, "libcmocka"));
	if (!EXPECT_LIBUNWIND) {
		printf("test-unwinder: libunwind not expected in this build: its loading not "
		       "checked\n");
		return;
	}
	assert_true(libunwind_loaded());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loaded_at_the_first_stack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
