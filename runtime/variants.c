/* Allocation variants built on rasp_alloc and rasp_free: arrays, zeroed, aligned, resized.
 * Their sampling needs nothing of their own: every block they take is allocated by rasp_alloc,
 * whose trials cover it once, and a resize in place allocates no byte, so it draws no trial.
 * An estimate therefore counts the bytes of every block handed out, a moved resize included
 * (as a growing .NET List allocates a new array), and never bytes that were already counted.
 * A heap of requested sizes (rasp_config_t.requested_sizes) counts the sizes asked instead:
 * an aligned object's sample its size, not its block's, and a resize in place is an
 * allocation of the new size (alloc.c, rasp__resized). */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* Largest alignment rasp_alloc_aligned accepts: a quarter of a segment, so an aligned small
 * object still fits the small classes' pages in most cases and a large one wastes little. */
#define MAX_ALIGNMENT ((size_t)1 << 20)

void *rasp_alloc_array(rasp_heap_t *h, const rasp_type_t *type, size_t count, size_t size,
		       unsigned flags)
{
	size_t n;

	if (__builtin_mul_overflow(count, size, &n)) {
		errno = EOVERFLOW;
		return NULL;
	}
	return rasp_alloc(h, type, n, flags);
}

void *rasp_alloc_zeroed(rasp_heap_t *h, const rasp_type_t *type, size_t count, size_t size,
			unsigned flags)
{
	void *p = rasp_alloc_array(h, type, count, size, flags);

	if (p)
		memset(p, 0, count * size);
	return p;
}

void *rasp_alloc_aligned(rasp_heap_t *h, const rasp_type_t *type, size_t size, size_t alignment,
			 unsigned flags)
{
	struct rasp__header *blk, *in;
	uintptr_t p, q, off;
	size_t need;
	void *obj;

	if (alignment == 0 || (alignment & (alignment - 1)) || alignment > MAX_ALIGNMENT) {
		errno = EINVAL;
		return NULL;
	}
	if (alignment <= 8)
		return rasp_alloc(h, type, size, flags);
	/* Room for the aligned start and, before it, a header of its own. */
	if (size == 0 || __builtin_add_overflow(size, alignment + RASP_OBJECT_HEADER_SIZE, &need)) {
		errno = size ? ENOMEM : EINVAL;
		return NULL;
	}
	obj = h && h->cfg.requested_sizes ? rasp__alloc_asked(h, type, need, flags, size)
					  : rasp_alloc(h, type, need, flags);
	if (!obj)
		return NULL;
	/* Placed inside its block even where the block's start is aligned already (then one
	 * alignment on, within what `need` reserved): the block's header then records the
	 * alignment, which a move by rasp_realloc must keep (a block aligned by chance, sent out
	 * as a plain object, would be moved aligned to 8 only). */
	p = (uintptr_t)obj;
	q = (p + RASP_OBJECT_HEADER_SIZE + alignment - 1) & ~(uintptr_t)(alignment - 1);
	off = q - p;
	blk = rasp__header_of(obj);
	in = rasp__header_of((void *)q);
	in->word = blk->word; /* the type and kind: the object's own header */
	blk->word = rasp__hdr_aligned(off, (unsigned)__builtin_ctzll(alignment));
	return (void *)q;
}

void *rasp_realloc(rasp_heap_t *h, void *obj, size_t size)
{
	struct rasp__segment *s;
	struct rasp__header *blk;
	const rasp_type_t *type;
	size_t usable, z, old_z;
	unsigned flags;
	void *n;

	if (!h) {
		errno = EINVAL;
		return NULL;
	}
	/* C's realloc: NULL allocates (the heap's default type), 0 frees (the NULL returned is
	 * no error: errno untouched). */
	if (!obj) {
		if (size == 0)
			return NULL;
		type = rasp_heap_default_type(h);
		return type ? rasp_alloc(h, type, size, 0) : NULL;
	}
	if (size == 0) {
		rasp_free(h, obj);
		return NULL;
	}
	blk = rasp__block_of(h, obj, "rasp_realloc", &s);
	if (!blk)
		return NULL;
	z = rasp__object_size_raw(size);
	if (!z) {
		errno = ENOMEM;
		return NULL;
	}
	usable = rasp_usable_size(obj);
	type = rasp_object_type(obj);
	flags = rasp_object_kind(obj) == RASP_KIND_PINNED ? RASP_ALLOC_PINNED : 0;
	old_z = rasp_object_size(obj);
	if (blk == rasp__header_of(obj)) {
		/* In place: the same size class, or a large object shrinking by at most half
		 * (its ObjectSize stays what its trials covered). */
		if ((s->kind == RASP__SEG_SMALL && z <= RASP__SMALL_MAX_Z &&
		     rasp__class_size[rasp__class_of(z)] == old_z) ||
		    (s->kind != RASP__SEG_SMALL && z <= old_z && z > RASP__SMALL_MAX_Z &&
		     z >= old_z / 2)) {
			rasp__resized(h, obj, size, type);
			return obj;
		}
		n = rasp_alloc(h, type, size, flags);
	} else {
		if (size <= usable && size >= usable / 2) {
			rasp__resized(h, obj, size, type);
			return obj;
		}
		/* The alignment asked, as recorded: not the pointer's, which may be far more by
		 * chance (a 64-aligned object at a 32 KiB boundary, shrunk, would take a block of
		 * 36864 bytes instead of 192, and its trials with it). */
		n = rasp_alloc_aligned(h, type, size, rasp__hdr_aligned_alignment(blk), flags);
	}
	if (!n)
		return NULL;
	memcpy(n, obj, size < usable ? size : usable);
	rasp_free(h, obj);
	return n;
}
