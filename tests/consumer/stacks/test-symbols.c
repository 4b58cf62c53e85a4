/* Unit tests of consumer/stacks/symbols.c: frames of this test program named from its own debug
 * information (it is built with -g), and every way a frame can fail to be named: no object
 * covers it, the object's file is missing, rebuilt (another build id) or not a regular file
 * (a FIFO, whose open would never end), and a .NET method named by the trace. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stack-fixture.h"
#include "stacks/symbols.h"

#define PID 77

/* A function of this program whose name the resolver must find. */
__attribute__((noinline)) int symbols_probe(int x);
__attribute__((noinline)) int symbols_probe(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* A "return address" inside symbols_probe (resolved at ip - 1). */
static uint64_t inside_probe(void)
{
	return (uint64_t)(uintptr_t)symbols_probe + 2;
}

static void test_symbols_own_function(void **state)
{
	struct rasp_test_object self = rasp_test_object_of((const void *)symbols_probe);
	struct rasp_modules m = {0};
	struct rasp_symbols *s;
	struct rasp_sym_frame f;

	(void)state;
	assert_int_equal(rasp_modules_add(&m, PID, self.base, self.size, self.path, true), 0);
	assert_int_equal(
	    rasp_modules_set_build_id(&m, PID, self.base, self.build_id, self.build_id_len), 0);
	s = rasp_symbols_create(&m);
	assert_non_null(s);
	assert_int_equal(rasp_symbols_resolve(s, PID, inside_probe(), &f), 0);
	assert_non_null(f.function);
	assert_string_equal(f.function, "symbols_probe");
	assert_non_null(f.file);
	assert_true(strstr(f.file, "test-symbols.c") != NULL);
	assert_true(f.line > 0);
	assert_true(strncmp(f.name, "symbols_probe (test-symbols.c:", 30) == 0);
	assert_ptr_equal(f.module, rasp_modules_find(&m, PID, inside_probe() - 1));
	/* Another process has no objects: the same address is in none there. */
	assert_int_equal(rasp_symbols_resolve(s, PID + 1, inside_probe(), &f), 0);
	assert_null(f.module);
	assert_true(strncmp(f.name, "[no object] 0x", 14) == 0);
	rasp_symbols_destroy(s);
	rasp_modules_free(&m);
}

/* A rebuilt object (the recorded build id is not the file's) is not trusted. */
static void test_symbols_build_id_mismatch(void **state)
{
	struct rasp_test_object self = rasp_test_object_of((const void *)symbols_probe);
	struct rasp_modules m = {0};
	struct rasp_symbols *s;
	struct rasp_sym_frame f;
	uint8_t other[RASP_BUILD_ID_MAX];
	char want[4200];
	const char *base = strrchr(self.path, '/');

	(void)state;
	assert_true(self.build_id_len > 0);
	memcpy(other, self.build_id, self.build_id_len);
	other[0] ^= 0xff;
	assert_int_equal(rasp_modules_add(&m, PID, self.base, self.size, self.path, true), 0);
	assert_int_equal(rasp_modules_set_build_id(&m, PID, self.base, other, self.build_id_len),
			 0);
	s = rasp_symbols_create(&m);
	assert_non_null(s);
	assert_int_equal(rasp_symbols_resolve(s, PID, inside_probe(), &f), 0);
	assert_null(f.function);
	snprintf(want, sizeof(want), "%s+0x%" PRIx64, base ? base + 1 : self.path, f.offset);
	assert_string_equal(f.name, want);
	rasp_symbols_destroy(s);
	rasp_modules_free(&m);
}

/* Objects that cannot be read: a missing file, and a FIFO (opening it to read would wait
 * for a writer forever; CTest's timeout fails the test if it does). Both are named by object
 * and offset. */
static void test_symbols_unreadable_objects(void **state)
{
	char dir[] = "/tmp/rasp-symbols-XXXXXX", fifo[64];
	struct rasp_modules m = {0};
	struct rasp_symbols *s;
	struct rasp_sym_frame f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/libfifo.so", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(rasp_modules_add(&m, PID, 0x10000, 0x1000, fifo, true), 0);
	assert_int_equal(
	    rasp_modules_add(&m, PID, 0x20000, 0x1000, "/nonexistent/libgone.so", true), 0);
	s = rasp_symbols_create(&m);
	assert_non_null(s);
	assert_int_equal(rasp_symbols_resolve(s, PID, 0x10101, &f), 0);
	assert_string_equal(f.name, "libfifo.so+0x100");
	assert_int_equal(rasp_symbols_resolve(s, PID, 0x20011, &f), 0);
	assert_string_equal(f.name, "libgone.so+0x10");
	rasp_symbols_destroy(s);
	rasp_modules_free(&m);
	unlink(fifo);
	rmdir(dir);
}

/* A .NET method is named by the trace: the name its MethodLoadVerbose gave. */
static void test_symbols_dotnet_method(void **state)
{
	struct rasp_modules m = {0};
	struct rasp_symbols *s;
	struct rasp_sym_frame f;

	(void)state;
	assert_int_equal(
	    rasp_modules_add_method(&m, PID, 0x7f0000100000, 0x80, "Demo.Program.Work"), 0);
	s = rasp_symbols_create(&m);
	assert_non_null(s);
	assert_int_equal(rasp_symbols_resolve(s, PID, 0x7f0000100010, &f), 0);
	assert_string_equal(f.name, "Demo.Program.Work");
	assert_string_equal(f.function, "Demo.Program.Work");
	/* Just past its code: no longer the method. */
	assert_int_equal(rasp_symbols_resolve(s, PID, 0x7f0000100081, &f), 0);
	assert_null(f.module);
	rasp_symbols_destroy(s);
	rasp_modules_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symbols_own_function),
	    cmocka_unit_test(test_symbols_build_id_mismatch),
	    cmocka_unit_test(test_symbols_unreadable_objects),
	    cmocka_unit_test(test_symbols_dotnet_method),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
