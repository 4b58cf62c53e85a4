/* The OS seam: the only functions through which the runtime maps, purges and unmaps memory,
 * reads clocks and draws entropy (os.c), and the test seam that replaces the memory calls and
 * the purge ticks' clock. Nothing here is installed or exported. */
#ifndef RASP_RUNTIME_OS_H
#define RASP_RUNTIME_OS_H

#include <stddef.h>
#include <stdint.h>

void *rasp__os_map(size_t size);
void rasp__os_unmap(void *addr, size_t size);
/* Gives the pages' memory back (the range reads as zeros afterwards); keeps the mapping. */
void rasp__os_purge(void *addr, size_t size);
/* The mapping at addr, old_size bytes, made new_size bytes at the same address (mremap without
 * moving): 0, or -1 where it cannot be (the addresses past it are taken), the mapping as it
 * was. A shrink gives the tail back. */
int rasp__os_resize(void *addr, size_t old_size, size_t new_size);
/* The mapping at addr, old_size bytes, moved to `to` (which must be mapped, new_size bytes: it
 * is replaced) and made new_size bytes there (mremap with MREMAP_FIXED): its pages go along,
 * resident ones without a fault, and addr is unmapped. 0, or -1 with nothing changed. */
int rasp__os_move(void *addr, size_t old_size, size_t new_size, void *to);
/* Asks the kernel not to back the range with transparent huge pages (MADV_NOHUGEPAGE). */
void rasp__os_no_huge(void *addr, size_t size);
void rasp__os_random(void *buf, size_t len);
/* A monotonic clock, in nanoseconds. */
uint64_t rasp__os_now_ns(void);
/* The purge ticks' clock (segment.c): monotonic, in nanoseconds, to the kernel's tick (a few
 * ms; a vDSO read, no system call). Through the seam, so tests can move time. */
uint64_t rasp__os_coarse_ns(void);
/* Test seam: replaces mmap/munmap/madvise (NULL restores them). map returns NULL on failure;
 * purge and no_huge may be NULL (then they are no-ops), resize and move NULL (then they always
 * fail). */
struct rasp__os_ops {
	void *(*map)(size_t size);
	void (*unmap)(void *addr, size_t size);
	void (*purge)(void *addr, size_t size);
	void (*no_huge)(void *addr, size_t size);		     /* NULL: no advice given */
	uint64_t (*coarse_ns)(void);				     /* NULL: the real clock */
	int (*resize)(void *addr, size_t old_size, size_t new_size); /* NULL: always fails */
	int (*move)(void *addr, size_t old_size, size_t new_size, void *to); /* NULL: fails */
};
void rasp__os_set_ops(const struct rasp__os_ops *ops);

#endif /* RASP_RUNTIME_OS_H */
