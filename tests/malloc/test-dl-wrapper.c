/* librasp-dl.so, rasp record's dlopen wrapper (malloc/dl-wrapper.c), preloaded into this test
 * (CTest sets LD_PRELOAD): calls that load nothing new leave LTTng-UST's wrapper unloaded;
 * the first object of the program's own loads it, and the call still works; dlerror still
 * describes the caller's failed call. In this order: the wrapper, once loaded, stays. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int has_wrapper(struct dl_phdr_info *info, size_t size, void *found)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "liblttng-ust-dl.so"))
		*(bool *)found = true;
	return 0;
}

/* Whether LTTng-UST's wrapper is loaded, from the loader's list (no dlopen). */
static bool wrapper_loaded(void)
{
	bool found = false;

	dl_iterate_phdr(has_wrapper, &found);
	return found;
}

static void test_nothing_new_loads_no_wrapper(void **state)
{
	void *h;

	(void)state;
	assert_false(wrapper_loaded());
	h = dlopen(NULL, RTLD_NOW); /* the program itself */
	assert_non_null(h);
	assert_int_equal(dlclose(h), 0);
	h = dlopen("libc.so.6", RTLD_NOW); /* loaded already */
	assert_non_null(h);
	assert_int_equal(dlclose(h), 0);
	/* Not loaded, and not to be: RTLD_NOLOAD loads nothing. */
	assert_null(dlopen(RASP_TEST_MODULE, RTLD_NOW | RTLD_NOLOAD));
	assert_false(wrapper_loaded());
}

/* librasp's own loads (its provider and libunwind) leave it unloaded too. */
static void test_librasp_own_loads_load_no_wrapper(void **state)
{
	(void)state;
#ifdef RASP_TEST_LIBUNWIND
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);

	assert_non_null(h);
	assert_false(wrapper_loaded());
#else
	skip();
#endif
}

static void test_a_new_object_loads_the_wrapper(void **state)
{
	char *(*make)(const char *);
	char *s;
	void *h;

	(void)state;
	h = dlopen(RASP_TEST_MODULE, RTLD_NOW);
	if (!h)
		fail_msg("dlopen: %s", dlerror());
	assert_true(wrapper_loaded());
	make = (char *(*)(const char *))dlsym(h, "dl_module_make");
	assert_non_null(make);
	s = make("x");
	assert_string_equal(s, "x:module");
	free(s);
	assert_int_equal(dlclose(h), 0);
}

/* A failed call, before and after the wrapper is loaded: NULL and its own message, once. */
static void test_a_failed_dlopen_says_why(void **state)
{
	const char *err;

	(void)state;
	assert_null(dlopen("/nonexistent/librasp-test-missing.so", RTLD_NOW));
	err = dlerror();
	assert_non_null(err);
	assert_non_null(strstr(err, "librasp-test-missing.so"));
	assert_null(dlerror());
	assert_null(dlmopen(LM_ID_NEWLM, "/nonexistent/librasp-test-missing.so", RTLD_NOW));
	assert_non_null(dlerror());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nothing_new_loads_no_wrapper),
	    cmocka_unit_test(test_librasp_own_loads_load_no_wrapper),
	    cmocka_unit_test(test_a_new_object_loads_the_wrapper),
	    cmocka_unit_test(test_a_failed_dlopen_says_why),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
