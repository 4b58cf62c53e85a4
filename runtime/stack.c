/* Call stacks of sampled allocations, on the slow path only (the fast path never sees them).
 *
 * The unwinder is glibc's backtrace() (libgcc's DWARF unwinder, which reads .eh_frame), chosen
 * by measurement (docs/performance.md, bench/runtime/unwind.c): 0.34 us for 34 frames, the same
 * as libunwind's unw_backtrace, with no new dependency for librasp; walking frame pointers costs
 * 0.09 us but stops at the first function built without them (Debian's default -O2 omits them),
 * so it would cut most stacks short. libgcc is loaded at startup (the first backtrace() dlopens
 * it), never on an allocation path.
 *
 * The runtime's own frames (this function, the sample's emission, the slow path, rasp_alloc)
 * are dropped by address: the first frame kept is in the code that called the allocator. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>

#include "internal.h"

/* Frames above the caller's: at most this many of librasp's own. */
#define OWN_FRAMES 8

/* librasp's executable segments, found once. */
static struct {
	uintptr_t lo[4], hi[4];
	int n;
} self_text;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t me = (uintptr_t)arg;
	int n = 0;
	uintptr_t lo[4], hi[4];
	bool mine = false;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum && n < 4; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		lo[n] = info->dlpi_addr + ph->p_vaddr;
		hi[n] = lo[n] + ph->p_memsz;
		mine |= me >= lo[n] && me < hi[n];
		n++;
	}
	if (!mine)
		return 0;
	for (int i = 0; i < n; i++) {
		self_text.lo[i] = lo[i];
		self_text.hi[i] = hi[i];
	}
	self_text.n = n;
	return 1;
}

static bool own(uintptr_t ip)
{
	for (int i = 0; i < self_text.n; i++)
		if (ip >= self_text.lo[i] && ip < self_text.hi[i])
			return true;
	return false;
}

/* At load: librasp's text, and libgcc's unwinder loaded by one throwaway walk. */
__attribute__((constructor)) static void stack_init(void)
{
	void *warm[4];

	dl_iterate_phdr(find_self, (void *)(uintptr_t)rasp__stack_capture);
	backtrace(warm, 4);
}

RASP__NOINLINE size_t rasp__stack_capture(uintptr_t *frames, size_t max)
{
	void *buf[RASP_MAX_STACK_DEPTH + OWN_FRAMES];
	size_t skip = 0, n;
	int got;

	if (max > RASP_MAX_STACK_DEPTH)
		max = RASP_MAX_STACK_DEPTH;
	got = backtrace(buf, (int)(max + OWN_FRAMES));
	if (got <= 0)
		return 0;
	while (skip < (size_t)got && own((uintptr_t)buf[skip]))
		skip++;
	n = (size_t)got - skip;
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		frames[i] = (uintptr_t)buf[skip + i];
	return n;
}
