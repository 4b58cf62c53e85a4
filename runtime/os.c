/* The OS seam: every mmap/munmap/madvise and every read of OS entropy goes through here, so tests
 * can make the OS fail (rasp__os_set_ops) without touching the code under test. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static void *os_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void os_unmap(void *addr, size_t size)
{
	munmap(addr, size);
}

/* MADV_DONTNEED, not MADV_FREE: the pages leave the resident set at once (MADV_FREE leaves them
 * counted until the kernel is short of memory, so RSS would not show the purge), and a later
 * touch gets zero pages, which costs a fault either way. */
static void os_purge(void *addr, size_t size)
{
	madvise(addr, size, MADV_DONTNEED);
}

/* Small-object segments only (segment.c, RASP_THP): a failure (a kernel without THP) leaves
 * the range as it was, which is what the advice asks for anyway. */
static void os_no_huge(void *addr, size_t size)
{
	madvise(addr, size, MADV_NOHUGEPAGE);
}

/* CLOCK_MONOTONIC_COARSE: the purge ticks are tens of milliseconds apart, and read at page
 * operations; the coarse clock is the kernel's last tick, read without a system call. */
static uint64_t os_coarse_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* mremap without MREMAP_MAYMOVE: the mapping keeps its address (a large object's must stay
 * aligned, segment.c), so growing fails where the address space past it is taken. Resident
 * pages stay where they are; a shrink unmaps the tail. */
static int os_resize(void *addr, size_t old_size, size_t new_size)
{
	return mremap(addr, old_size, new_size, 0) == MAP_FAILED ? -1 : 0;
}

static int os_move(void *addr, size_t old_size, size_t new_size, void *to)
{
	return mremap(addr, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, to) == MAP_FAILED
		   ? -1
		   : 0;
}

static const struct rasp__os_ops default_ops = {os_map,	      os_unmap,	 os_purge, os_no_huge,
						os_coarse_ns, os_resize, os_move};
static _Atomic(const struct rasp__os_ops *) ops = &default_ops;

void rasp__os_set_ops(const struct rasp__os_ops *o)
{
	atomic_store(&ops, o ? o : &default_ops);
}

void *rasp__os_map(size_t size)
{
	void *p = atomic_load_explicit(&ops, memory_order_acquire)->map(size);

	if (!p)
		errno = ENOMEM;
	return p;
}

void rasp__os_unmap(void *addr, size_t size)
{
	atomic_load_explicit(&ops, memory_order_acquire)->unmap(addr, size);
}

void rasp__os_purge(void *addr, size_t size)
{
	const struct rasp__os_ops *o = atomic_load_explicit(&ops, memory_order_acquire);

	if (o->purge)
		o->purge(addr, size);
}

void rasp__os_no_huge(void *addr, size_t size)
{
	const struct rasp__os_ops *o = atomic_load_explicit(&ops, memory_order_acquire);

	if (o->no_huge)
		o->no_huge(addr, size);
}

int rasp__os_resize(void *addr, size_t old_size, size_t new_size)
{
	const struct rasp__os_ops *o = atomic_load_explicit(&ops, memory_order_acquire);

	return o->resize ? o->resize(addr, old_size, new_size) : -1;
}

int rasp__os_move(void *addr, size_t old_size, size_t new_size, void *to)
{
	const struct rasp__os_ops *o = atomic_load_explicit(&ops, memory_order_acquire);

	return o->move ? o->move(addr, old_size, new_size, to) : -1;
}

uint64_t rasp__os_coarse_ns(void)
{
	const struct rasp__os_ops *o = atomic_load_explicit(&ops, memory_order_acquire);

	return o->coarse_ns ? o->coarse_ns() : os_coarse_ns();
}

/* Seeds only: a failing getrandom falls back to the clock and addresses, which is weak but
 * still gives threads different streams; sampling stays unbiased either way. */
void rasp__os_random(void *buf, size_t len)
{
	unsigned char *b = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(b + got, len - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		got += (size_t)n;
	}
	if (got < len) {
		struct timespec ts;
		uint64_t x;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)buf;
		for (; got < len; got++) {
			x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
			b[got] = (unsigned char)(x >> 56);
		}
	}
}

uint64_t rasp__os_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
