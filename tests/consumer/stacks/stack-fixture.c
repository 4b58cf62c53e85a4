/* See stack-fixture.h. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "stack-fixture.h"

struct search {
	uint64_t want;
	struct rasp_test_object *o;
};

/* The GNU build id among the object's notes, if any. */
static void build_id_of(const struct dl_phdr_info *info, struct rasp_test_object *o)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr),
			   *end = p + ph->p_memsz;

		while (ph->p_type == PT_NOTE && p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*n);
			const char *desc = name + ((n->n_namesz + 3) & ~3u);

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && n->n_descsz <= RASP_BUILD_ID_MAX) {
				memcpy(o->build_id, desc, n->n_descsz);
				o->build_id_len = n->n_descsz;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
}

static int find(struct dl_phdr_info *info, size_t size, void *data)
{
	struct search *s = data;
	uint64_t lo = UINT64_MAX, hi = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		lo = ph->p_vaddr < lo ? ph->p_vaddr : lo;
		hi = ph->p_vaddr + ph->p_memsz > hi ? ph->p_vaddr + ph->p_memsz : hi;
	}
	if (lo >= hi || s->want < info->dlpi_addr + lo || s->want >= info->dlpi_addr + hi)
		return 0;
	s->o->base = info->dlpi_addr + lo;
	s->o->size = hi - lo;
	build_id_of(info, s->o);
	return 1;
}

struct rasp_test_object rasp_test_object_of(const void *code)
{
	struct rasp_test_object o = {0};
	struct search s = {(uint64_t)(uintptr_t)code, &o};
	ssize_t n = readlink("/proc/self/exe", o.path, sizeof(o.path) - 1);

	assert_true(n > 0);
	assert_int_equal(dl_iterate_phdr(find, &s), 1);
	return o;
}

void rasp_test_own_frames(const struct rasp_test_object *o, void *const *raw, int nraw,
			  uint64_t *pc, size_t want)
{
	size_t n = 0;

	for (int i = 0; i < nraw && n < want; i++) {
		uint64_t at = (uint64_t)(uintptr_t)raw[i];

		if (at - o->base < o->size)
			pc[n++] = at;
	}
	assert_int_equal(n, want);
}

void rasp_test_add_object(struct rasp_tally *t, const struct rasp_test_object *o, int64_t pid)
{
	assert_int_equal(rasp_modules_add(&t->modules, pid, o->base, o->size, o->path, true), 0);
	if (o->build_id_len)
		assert_int_equal(rasp_modules_set_build_id(&t->modules, pid, o->base, o->build_id,
							   o->build_id_len),
				 0);
}

/* Extern, not inlined and (GCC) not cloned, so the symbol table names each as written. */
#if defined(__clang__)
#define FIXTURE __attribute__((noinline))
#else
#define FIXTURE __attribute__((noinline, noclone))
#endif

/* The empty asm after each call keeps it from becoming a jump (a tail call leaves no frame). */
FIXTURE void fixture_alloc(struct stack *s)
{
	s->line[0] = __LINE__ + 1;
	s->nraw = backtrace(s->raw, 16);
	__asm__ volatile("" ::: "memory");
}

FIXTURE void fixture_mid_a(struct stack *s)
{
	s->line[1] = __LINE__ + 1;
	fixture_alloc(s);
	__asm__ volatile("" ::: "memory");
}

/* Two call sites: two stacks that differ in one return address only. */
FIXTURE void fixture_mid_b(struct stack *b1, struct stack *b2)
{
	b1->line[1] = __LINE__ + 1;
	fixture_alloc(b1);
	__asm__ volatile("" ::: "memory");
	b2->line[1] = __LINE__ + 1;
	fixture_alloc(b2);
	__asm__ volatile("" ::: "memory");
}

FIXTURE void fixture_root(struct stack *a, struct stack *b1, struct stack *b2)
{
	a->line[2] = __LINE__ + 1;
	fixture_mid_a(a);
	__asm__ volatile("" ::: "memory");
	b1->line[2] = b2->line[2] = __LINE__ + 1;
	fixture_mid_b(b1, b2);
	__asm__ volatile("" ::: "memory");
}

void fixture_own_frames(struct stack *s, const struct rasp_test_object *o)
{
	rasp_test_own_frames(o, s->raw, s->nraw, s->pc, 3);
}
