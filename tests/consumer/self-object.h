/* Test helper for the writers of stacks: the test program's own executable as the object a
 * trace would record (address range, path, build id), so stacks of its own return addresses
 * can be named by the consumer's resolver from its own debug information. */
#ifndef RASP_TESTS_SELF_OBJECT_H
#define RASP_TESTS_SELF_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "modules.h"
#include "tally.h"

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

#endif
