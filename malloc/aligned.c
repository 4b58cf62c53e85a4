/* The aligned allocation API of librasp-malloc: posix_memalign, aligned_alloc, memalign,
 * valloc and pvalloc, as glibc 2.36 takes their arguments. Alignments up to 16 are malloc's
 * own blocks; larger ones, up to 1 MiB, the runtime's aligned objects (a block of the size,
 * the alignment and 8 bytes); larger still, glibc's. All of the family aligned. */
#include <errno.h>
#include <unistd.h>

#include "heap.h"

static bool power_of_2(size_t a)
{
	return a && (a & (a - 1)) == 0;
}

static size_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

RASP_MALLOC_API int posix_memalign(void **out, size_t alignment, size_t n)
{
	void *p;
	int saved = errno;

	if (!power_of_2(alignment) || alignment % sizeof(void *) != 0)
		return EINVAL;
	p = rasp__malloc_aligned(RASP__FAM_ALIGNED, n, alignment);
	if (!p) {
		errno = saved; /* posix_memalign reports by its result, errno untouched */
		return ENOMEM;
	}
	*out = p;
	return 0;
}

RASP_MALLOC_API void *aligned_alloc(size_t alignment, size_t n)
{
	if (!power_of_2(alignment)) {
		errno = EINVAL;
		return NULL;
	}
	return rasp__malloc_aligned(RASP__FAM_ALIGNED, n, alignment);
}

/* glibc's memalign: an alignment that is not a power of 2 is rounded up to one. */
RASP_MALLOC_API void *memalign(size_t alignment, size_t n)
{
	size_t a = 1;

	if (alignment > (SIZE_MAX >> 1) + 1) {
		errno = EINVAL;
		return NULL;
	}
	while (a < alignment)
		a <<= 1;
	return rasp__malloc_aligned(RASP__FAM_ALIGNED, n, a);
}

RASP_MALLOC_API void *valloc(size_t n)
{
	return rasp__malloc_aligned(RASP__FAM_ALIGNED, n, page_size());
}

/* The size rounded up to whole pages (one page for 0). */
RASP_MALLOC_API void *pvalloc(size_t n)
{
	size_t pg = page_size(), r;

	if (__builtin_add_overflow(n, pg - 1, &r)) {
		errno = ENOMEM;
		return NULL;
	}
	r &= ~(pg - 1);
	return rasp__malloc_aligned(RASP__FAM_ALIGNED, r ? r : pg, pg);
}
