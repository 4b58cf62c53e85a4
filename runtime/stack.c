/* Call stacks of sampled allocations, on the slow path only (the fast path never sees them).
 *
 * The unwinder is libunwind's unw_backtrace() (Debian libunwind-dev, MIT), chosen by
 * measurement (docs/performance.md, bench/runtime/unwind.c, 36 frames): 0.29 us, against
 * 3.7 us for glibc's backtrace() (libgcc's DWARF unwinder interprets .eh_frame at every frame,
 * about 1,800 instructions each) and 0.03 us for walking frame pointers, which stops at the
 * first function built without them (Debian's default -O2 omits them) and so would cut most
 * stacks short. libunwind reads .eh_frame too, but keeps a per-thread cache of each return
 * address's frame layout, so a site met before costs a few instructions per frame.
 *
 * libunwind is loaded at the first stack a session asks for (dlopen, RTLD_LOCAL; librasp-malloc
 * loads it with its heap instead, rasp__stack_load, as its mallocs may hold the loader's locks),
 * not linked:
 * a process that records no stacks does not map it or the liblzma it needs (108 KiB of
 * resident memory in every process, more than a small program's whole heap), and its
 * _Unwind_* and backtrace symbols never enter the process's global scope, where they could
 * be taken for libgcc's and glibc's. If it cannot be loaded, stacks come from glibc's
 * backtrace(), with one line on stderr.
 *
 * The runtime's own frames (this function, the sample's emission, the slow path, rasp_alloc)
 * are dropped by address: the first frame kept is in the code that called the allocator. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "internal.h"

/* glibc's backtrace() where libunwind was not found at build time, and under
 * ThreadSanitizer: libunwind frees its per-thread cache from a thread-specific-data
 * destructor that takes a lock after TSan has let go of the exiting thread, and TSan's lock
 * interceptor then crashes (a fault of the pair, not of either). The TSan build tests the
 * runtime's threads, not the unwinder's speed. */
#if defined(RASP_HAVE_LIBUNWIND) && !defined(RASP__TSAN) /* (RASP__TSAN: internal.h) */
#ifndef RASP_LIBUNWIND_SONAME
#define RASP_LIBUNWIND_SONAME "libunwind.so.8"
#endif
typedef int (*unwind_fn)(void **buf, int n);
static unwind_fn unwind_impl;
static pthread_once_t unwind_once = PTHREAD_ONCE_INIT;

static void unwind_load(void)
{
	void *lib = dlopen(RASP_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
	unwind_fn f = lib ? (unwind_fn)dlsym(lib, "unw_backtrace") : NULL;

	if (!f) {
		fprintf(stderr,
			"rasp: %s: %s; the stacks of samples come from glibc's backtrace(), "
			"about 12 times slower\n",
			RASP_LIBUNWIND_SONAME, lib ? "no unw_backtrace" : dlerror());
		f = backtrace;
	}
	unwind_impl = f;
}

/* librasp-malloc's hook: the unwinder loaded now, outside any allocation. There a sample
 * can come from inside LTTng-UST's state dump (its listener thread allocates inside
 * dl_iterate_phdr, holding the loader's write lock): a first load there through LTTng-UST's
 * dlopen wrapper started a state dump inside the first (LTTng-UST's assertion !e->marked
 * ended the program), and one in another thread waited for that lock while the dump's
 * sample waited for the load (a deadlock). */
RASP_API void rasp__stack_load(void)
{
	pthread_once(&unwind_once, unwind_load);
}

static int unwind(void **buf, int n)
{
	pthread_once(&unwind_once, unwind_load);
	return unwind_impl(buf, n);
}
#define UNWIND unwind
#else
#define UNWIND backtrace
RASP_API void rasp__stack_load(void)
{
}
#endif

/* Frames above the caller's: at most this many of librasp's own (today at most 8: the
 * capture, the runtime frames' capture (native_frames), the stack's emission, the sample's,
 * the sampled block's miss or the generic slow path, the miss, a variant such as rasp_realloc
 * over rasp_alloc_aligned; the fast path reaches the miss by a tail call). */
#define OWN_FRAMES 10

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

/* At load: librasp's text. */
__attribute__((constructor)) static void stack_init(void)
{
	dl_iterate_phdr(find_self, (void *)(uintptr_t)rasp__stack_capture);
}

RASP__NOINLINE size_t rasp__stack_capture(uintptr_t *frames, size_t max)
{
	void *buf[RASP_MAX_STACK_DEPTH + OWN_FRAMES];
	size_t skip = 0, n;
	int got;

	if (max > RASP_MAX_STACK_DEPTH)
		max = RASP_MAX_STACK_DEPTH;
	got = UNWIND(buf, (int)(max + OWN_FRAMES));
	if (got <= 0)
		return 0;
	/* A sanitizer's backtrace interceptor may come first: look for librasp's frames among
	 * the first few, then keep what follows them. */
	while (skip < (size_t)got && skip < 2 && !own((uintptr_t)buf[skip]))
		skip++;
	if (skip == (size_t)got || !own((uintptr_t)buf[skip]))
		skip = 0;
	while (skip < (size_t)got && own((uintptr_t)buf[skip]))
		skip++;
	n = (size_t)got - skip;
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		frames[i] = (uintptr_t)buf[skip + i];
	return n;
}
