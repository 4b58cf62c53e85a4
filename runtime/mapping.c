/* Mappings: every mapping of the runtime (a small-object segment, an arena, a large object's
 * own) is reserved aligned to 4 MiB here, gets its header and its marks in the process-wide
 * segment map, is advised against transparent huge pages where it should be, and is unmapped
 * here. Run with heap->lock held, but rasp__segment_thp_allowed and rasp__mapping_reserve. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_Atomic uint8_t rasp__segment_map[RASP__MAP_SIZE];

/* Whether small-object segments may be backed by transparent huge pages: RASP_THP=1 leaves
 * them to the system's policy; unset or 0 (the default) advises against huge pages. Where the
 * policy is `always` (the kernel's own default), a segment's first touch in each 2 MiB faulted
 * in the whole 2 MiB, and pages formatted as they are reached (page.c) no longer kept the
 * resident set to what is used: peak RSS `mixed` 15.1 against 13.5 MiB, `prodcons` 4.6
 * against 3.3 (docs/performance.md, "Transparent huge pages"). Where it is `madvise` or
 * `never` and no huge-page size is enabled `always` (6.8+ kernels), the advice changes nothing.
 * Large objects keep the system's policy, as glibc's mapped chunks do: their pages are the
 * program's, touched as it uses them. Read by rasp_heap_create, for the heap's life; another value
 * is reported once and taken as 0. */
bool rasp__segment_thp_allowed(void)
{
	static atomic_bool reported;
	const char *v = getenv("RASP_THP");

	if (!v || strcmp(v, "0") == 0)
		return false;
	if (strcmp(v, "1") == 0)
		return true;
	if (!atomic_exchange(&reported, true))
		fprintf(stderr,
			"rasp: RASP_THP=%s is not 0 or 1; small-object segments are advised "
			"against transparent huge pages (0)\n",
			v);
	return false;
}

/* Maps `size` bytes aligned to RASP__SEGMENT_SIZE: over-map by one segment, trim both ends
 * (three system calls, once per segment or large object; a small segment's advice makes four).
 * rasp__mapping_reserve maps them; rasp__mapping_new also writes the header and counts them. */
uintptr_t rasp__mapping_reserve(size_t size)
{
	size_t total = size + RASP__SEGMENT_SIZE;
	uintptr_t raw, a, lead, trail;

	if (total < size)
		return 0;
	raw = (uintptr_t)rasp__os_map(total);
	if (!raw)
		return 0;
	a = rasp__round_up(raw, RASP__SEGMENT_SIZE);
	lead = a - raw;
	trail = total - lead - size;
	if (lead)
		rasp__os_unmap((void *)raw, lead);
	if (trail)
		rasp__os_unmap((void *)(a + size), trail);
	/* Past the map (Linux maps above 47 bits only when asked to): its objects' frees would
	 * be refused. */
	if (((a + size - 1) >> RASP__SEGMENT_SHIFT) >= RASP__MAP_SIZE) {
		rasp__os_unmap((void *)a, size);
		return 0;
	}
	return a;
}

struct rasp__segment *rasp__mapping_new(struct rasp_heap *h, size_t size, int kind)
{
	uintptr_t a = rasp__mapping_reserve(size);
	struct rasp__segment *s;

	if (!a)
		return NULL;
	if (kind != RASP__SEG_LARGE && !h->thp)
		rasp__os_no_huge((void *)a, size);
	s = (struct rasp__segment *)a;
	s->magic = RASP__SEGMENT_MAGIC;
	s->heap = h;
	s->small_heap = kind == RASP__SEG_SMALL ? h : RASP__NOT_SMALL;
	s->kind = kind;
	s->map_size = size;
	s->prev = NULL;
	if (kind == RASP__SEG_LARGE) {
		s->large_purged = 0;
		s->large_tail = 0;
	}
	if (kind != RASP__SEG_ARENA) /* arena_new marks it once its header is whole */
		rasp__mapping_mark(s, true);
	atomic_fetch_add(&h->regions_n, 1);
	atomic_fetch_add(&h->reserved_bytes, size);
	return s;
}

void rasp__mapping_unmap(struct rasp_heap *h, struct rasp__segment *s)
{
	atomic_fetch_sub(&h->regions_n, 1);
	atomic_fetch_sub(&h->reserved_bytes, s->map_size);
	rasp__mapping_mark(s, false);
	s->magic = 0;
	RASP__UNPOISON((void *)s, s->map_size);
	rasp__os_unmap(s, s->map_size);
}

/* For librasp-malloc's free and realloc (malloc/block.c): whether p's 4 MiB unit is marked in
 * the segment map (a segment, a unit of an arena, a large object's first unit), of any heap,
 * so that a pointer of glibc's (from before the preload took over) goes back to glibc unread.
 * One load. */
RASP_API bool rasp__mapped(const void *p)
{
	return rasp__map_at((uintptr_t)p) != 0;
}

/* The map itself, for librasp-malloc's inline free (malloc/block.c keeps its address), which
 * reads it as rasp_free does. A function, not an exported alias of the array: a white-box
 * test links the runtime's sources beside librasp, and AddressSanitizer refuses two
 * definitions of one exported array. */
RASP_API const _Atomic uint8_t *rasp__segment_map_base(void)
{
	return rasp__segment_map;
}
