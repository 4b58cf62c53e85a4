/* Test helper for the writers of stacks (folded, pprof): stacks of the test program's own
 * functions, captured with glibc's backtrace along a known call tree, and the program's
 * executable as the object a trace would record (address range, path, build id), so the
 * consumer's resolver names the frames from the program's own debug information. */
#ifndef RASP_TESTS_STACK_FIXTURE_H
#define RASP_TESTS_STACK_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "report/tally.h"
#include "stacks/modules.h"

struct rasp_test_object {
	uint64_t base, size; /* the loaded object's range */
	uint8_t build_id[RASP_BUILD_ID_MAX];
	size_t build_id_len;
	char path[4096];
};

/* The loaded object holding `code` (an address in this executable); fails the test when
 * none does. */
struct rasp_test_object rasp_test_object_of(const void *code);

/* The first `want` of raw[0 .. nraw) that lie in o, into pc; fails the test when fewer do
 * (under ASan, backtrace's interceptor adds a frame of its own first). */
void rasp_test_own_frames(const struct rasp_test_object *o, void *const *raw, int nraw,
			  uint64_t *pc, size_t want);

/* o as process pid's object in t, with its build id (the resolver checks it). */
void rasp_test_add_object(struct rasp_tally *t, const struct rasp_test_object *o, int64_t pid);

/* A captured stack: the return addresses into fixture_alloc, its caller and fixture_root, and
 * the source lines of those calls (in stack-fixture.c). */
struct stack {
	void *raw[16]; /* what backtrace gave */
	int nraw;
	uint64_t pc[3];
	int line[3];
};

/* The fixture's call tree, compiled with -g and no sibling calls (stacks.cmake): root calls
 * mid_a, which calls alloc (stack a), and mid_b, which calls alloc from two call sites
 * (stacks b1 and b2: they differ in one return address only). Extern, so the symbol table
 * names each as written. */
void fixture_alloc(struct stack *s);
void fixture_mid_a(struct stack *s);
void fixture_mid_b(struct stack *b1, struct stack *b2);
void fixture_root(struct stack *a, struct stack *b1, struct stack *b2);

/* The stack's first three frames in this executable (fixture_alloc, its caller,
 * fixture_root) into s->pc. */
void fixture_own_frames(struct stack *s, const struct rasp_test_object *o);

#endif
