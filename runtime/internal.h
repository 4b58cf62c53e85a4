/* Declarations of the runtime, shared by its sources and the white-box tests: each file's
 * functions with the inline helpers that go with them, grouped by the file that defines them
 * (the data model's inline helpers are in model.h, the OS seam's in os.h, the build's flavours
 * and the owner's words in platform.h). Nothing here is installed or exported. */
#ifndef RASP_RUNTIME_INTERNAL_H
#define RASP_RUNTIME_INTERNAL_H

#include "model.h"
#include "os.h"
#include "platform.h"
#include "rasp-events-inline.h"
#include "types.h"

/* ---- sizeclass.c ----------------------------------------------------------------------------- */

/* The class tables the fast path reads (filled once, before any heap exists). */
extern uintptr_t rasp__class_size[RASP__NCLASS];
extern uint8_t rasp__table_class[RASP__TABLE_MAX / 8 + 1];
/* The same lookup as byte offsets into a context's hot array (class x 32): the fast path's. */
extern uint16_t rasp__table_hot[RASP__TABLE_MAX / 8 + 1];
extern uint8_t rasp__class_span[RASP__NCLASS];
/* ceil(2^64 / block size) per class: n is a multiple of the block size, for n < 2^32, exactly
 * when n * it (mod 2^64) is below it (Lemire, Kaser and Kurz, "Faster remainder by direct
 * computation", 2019): a free's check that it was given a block's start, without a division. */
extern uint64_t rasp__class_div[RASP__NCLASS];
void rasp__classes_init(void);
/* Class of object size z (multiple of 8, <= RASP__SMALL_MAX_Z); 0 if z < 16. */
unsigned rasp__class_of(size_t z);

/* Object size (header included) rounded to 8 after checking overflow; 0 if too large. */
static inline size_t rasp__object_size_raw(size_t payload)
{
	if (payload > RASP__MAX_PAYLOAD)
		return 0;
	return (payload + RASP_OBJECT_HEADER_SIZE + 7) & ~(size_t)7;
}

/* The ObjectSize an object of this payload gets: its size class when small, its size rounded
 * to 8 when large. 0 if too large. */
static inline size_t rasp__object_size_for(size_t payload)
{
	size_t z = rasp__object_size_raw(payload);

	return z && z <= RASP__SMALL_MAX_Z ? rasp__class_size[rasp__class_of(z)] : z;
}

/* ---- mapping.c ------------------------------------------------------------------------------- */

/* Which 4 MiB-aligned addresses start a rasp mapping (a segment or a large object) of any
 * heap in the process: a byte each over the 47-bit user address space (mapping.c). rasp_free
 * reads it before any word at a pointer, so a pointer whose 4 MiB block starts no mapping
 * (memory rasp never mapped, or gave back to the OS: a double free after an unmap) is refused
 * instead of read. 32 MiB of .bss, untouched but for one 4 KiB page per 16 GiB of addresses
 * that hold mappings; costs a free five instructions and a load that stays in cache.
 * RASP__MAP_START marks a mapping's first unit; unit k of an arena (k >= 1, RASP__ARENA_UNITS)
 * holds RASP__MAP_START + k, so its header is found k units back (rasp__mapping_of). A large
 * object's own mapping marks its first unit only: a pointer past it is no object's start. */
#define RASP__MAP_SIZE	((uintptr_t)1 << (47 - RASP__SEGMENT_SHIFT))
#define RASP__MAP_START 1u
extern _Atomic uint8_t rasp__segment_map[RASP__MAP_SIZE];

static inline unsigned rasp__map_at(uintptr_t p)
{
	uintptr_t i = p >> RASP__SEGMENT_SHIFT;

	return i < RASP__MAP_SIZE
		   ? atomic_load_explicit(&rasp__segment_map[i], memory_order_relaxed)
		   : 0;
}

/* Whether s (4 MiB-aligned) starts a mapping, so that its header may be read. */
static inline bool rasp__segment_mapped(const struct rasp__segment *s)
{
	return rasp__map_at((uintptr_t)s) == RASP__MAP_START;
}

/* The mapping holding p, for the slow paths: p's unit, or for a unit inside an arena the
 * arena's first. Unchecked: rasp__segment_mapped says whether it starts a mapping. */
static inline struct rasp__segment *rasp__mapping_of(const void *p)
{
	struct rasp__segment *s = rasp__segment_of(p);
	unsigned v = rasp__map_at((uintptr_t)s);

	if (v > RASP__MAP_START)
		s = (struct rasp__segment *)((uintptr_t)s - ((uintptr_t)(v - RASP__MAP_START)
							     << RASP__SEGMENT_SHIFT));
	return s;
}

/* RASP_THP: may small-object segments get transparent huge pages (else they are advised against
 * them)? Any thread, no lock (rasp_heap_create). */
bool rasp__segment_thp_allowed(void);
/* A mapping of `size` bytes aligned to RASP__SEGMENT_SIZE (over-mapped by one segment, both ends
 * trimmed), or 0 (no lock); rasp__mapping_new also writes its header as kind (an arena marks
 * itself in the segment map once its own header is whole), counts it, and advises a small
 * segment or an arena against huge pages unless h->thp. */
uintptr_t rasp__mapping_reserve(size_t size);
struct rasp__segment *rasp__mapping_new(struct rasp_heap *h, size_t size, int kind);
/* Any mapping back to the OS, its mark in the segment map cleared first. */
void rasp__mapping_unmap(struct rasp_heap *h, struct rasp__segment *s);
/* Whether p's unit is marked in the segment map: librasp-malloc's hook (exported). */
RASP_API bool rasp__mapped(const void *p);
/* The segment map's first byte: librasp-malloc's other hook (exported), for its inline free. */
RASP_API const _Atomic uint8_t *rasp__segment_map_base(void);

/* ---- segment.c ------------------------------------------------------------------------------- */

/* What an empty slot's entry points to: a page record that holds no block (its bytes are 0,
 * so every block check fails on it, and its slot is none), so that the owner's free reads an
 * entry without a NULL test (2 instructions fewer a free, callgrind). */
extern struct rasp__page rasp__no_page;

/* The page record of the slot holding p: rasp__no_page for an empty slot. */
static inline struct rasp__page *rasp__page_at(const struct rasp__segment *s, const void *p)
{
	return s->slot_page[((uintptr_t)p - (uintptr_t)s) >> RASP__SLOT_SHIFT];
}

/* The page holding p, or NULL. */
static inline struct rasp__page *rasp__page_of(const struct rasp__segment *s, const void *p)
{
	struct rasp__page *pg = rasp__page_at(s, p);

	return pg == &rasp__no_page ? NULL : pg;
}

/* Written under the owning heap's lock; heaps never share a byte (a mapping's units are its
 * own). Set once the header is written (an arena's maps and tags too: arena.c, arena_new), cleared
 * before the unmap: the first unit RASP__MAP_START, an arena's unit k RASP__MAP_START + k. A large
 * object's mapping marks its first unit only, whatever its size (a mapping grown in place was never
 * checked against the map's end: rasp__mapping_reserve). */
static inline void rasp__mapping_mark(const struct rasp__segment *s, bool on)
{
	uintptr_t i = (uintptr_t)s >> RASP__SEGMENT_SHIFT;
	uintptr_t n = s->kind == RASP__SEG_ARENA ? RASP__ARENA_UNITS : 1;

	for (uintptr_t k = n; k-- > 0;) /* the first unit last: mapped once all are */
		atomic_store_explicit(&rasp__segment_map[i + k],
				      on ? (uint8_t)(RASP__MAP_START + k) : 0,
				      memory_order_relaxed);
}

/* x rounded up to a multiple of a (a power of 2). */
static inline size_t rasp__round_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* Mappings' lists (a heap's segments, arenas, large objects and cache): s pushed, s out. */
static inline void rasp__mapping_link(struct rasp__segment **head, struct rasp__segment *s)
{
	s->prev = NULL;
	s->next = *head;
	if (*head)
		(*head)->prev = s;
	*head = s;
}

static inline void rasp__mapping_unlink(struct rasp__segment **head, struct rasp__segment *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		*head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
}

/* Small pages' blocks of h start `offset` bytes (0 or 8) past a 16-aligned address: at 8, an
 * object whose block is a multiple of 16 bytes (every class but 24, 40, 56, 72, 88, 104 and
 * 120) has a 16-aligned payload, malloc's alignment (librasp-malloc, exported; no field of
 * rasp_config_t, whose size is the ABI's). A page whose blocks filled its slots to the byte
 * holds one fewer. Before h has a segment: 0, -EBUSY after, -EINVAL for another offset. */
RASP_API int rasp__heap_block_offset(struct rasp_heap *h, size_t offset);
/* A run of `span` free slots formatted as an empty page of class cls, or NULL. */
struct rasp__page *rasp__segment_page_new(struct rasp_heap *h, unsigned cls);
/* An empty page back to its segment (purged past RASP__RETAIN_SLOTS, and an empty segment
 * unmapped when the heap has another with free slots, once they stayed empty from one purge
 * tick to the next; the ticks run here and at rasp__segment_page_new). */
void rasp__segment_page_free(struct rasp_heap *h, struct rasp__page *pg);
/* heap->lock held: is a cross-thread free still reading a page record of s? */
bool rasp__segment_pinned(struct rasp_heap *h, struct rasp__segment *s);
/* Notes that something may wait for a purge tick (`freed`: a segment that has just emptied, or
 * NULL) and runs the tick if one is due (the file comment says what a tick does). */
void rasp__purge_check(struct rasp_heap *h, struct rasp__segment *freed);
/* Purges every empty committed slot and unmaps every empty segment (collect, after
 * rasp__large_trim and rasp__arena_tick's whole purge). */
void rasp__segments_trim(struct rasp_heap *h);
/* heap->lock held: fn for every live object in small pages (rasp_heap_walk walks large.c's and
 * arena.c's after); every small segment unmapped (heap destroy). */
int rasp__segments_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg);
void rasp__segments_unmap_all(struct rasp_heap *h);
/* Bytes of blocks out in pages (used x block size) of every page, relaxed reads. */
uint64_t rasp__segments_used_bytes(struct rasp_heap *h);

/* ---- arena.c --------------------------------------------------------------------------------- */

/* Free committed arena pages the heap keeps past two purge ticks: the live large bytes, at most
 * RASP__LARGE_CACHE_BYTES, less what the large-object cache holds (one budget for the two), at
 * least RASP__LARGE_CACHE_MIN. With a budget each, 8 live buffers of 85 KB..16 MB peaked at
 * 126.7 MiB against 119.5 (docs/performance.md, "Large objects in arenas"). */
static inline uint64_t rasp__arena_bound(struct rasp_heap *h)
{
	uint64_t b = atomic_load_explicit(&h->large_live_bytes, memory_order_relaxed);

	b = b > RASP__LARGE_CACHE_BYTES ? RASP__LARGE_CACHE_BYTES : b;
	b = b > h->large_cache_bytes + RASP__LARGE_CACHE_MIN ? b - h->large_cache_bytes
							     : RASP__LARGE_CACHE_MIN;
	return b >> RASP__ARENA_PAGE_SHIFT;
}
/* A large object of object size z (at most h->arena_max_z) in an arena, its header written
 * with kind and type; takes heap->lock. NULL: no memory. */
void *rasp__arena_alloc(struct rasp_heap *h, size_t z, int kind, const rasp_type_t *type);
/* The block header of arena s's span holding hdr, and its object size; NULL (and *why) if hdr
 * is in no live object's span. No lock: for a live object's pointer, or under heap->lock. */
struct rasp__header *rasp__arena_block(struct rasp__segment *s, const void *hdr, size_t *z,
				       const char **why);
/* The live object whose block header is hdr, in arena s, freed; takes heap->lock. -EINVAL
 * (nothing changed) if its span is no longer live under the lock (a racing second free). */
int rasp__arena_free(struct rasp_heap *h, struct rasp__segment *s, struct rasp__header *hdr);
/* Arenas at a purge tick (all: at rasp_heap_collect): while the heap holds more free committed
 * arena pages than rasp__arena_bound, those free since the last tick (all of them) are purged;
 * an arena empty and purged whole goes back to the OS. True if still over the bound. */
bool rasp__arena_tick(struct rasp_heap *h, bool all);
int rasp__arenas_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg);
void rasp__arenas_unmap_all(struct rasp_heap *h);

/* ---- large.c --------------------------------------------------------------------------------- */

/* A large object of object size z, its header written with kind: in an arena up to
 * h->arena_max_z, else in a mapping of its own; takes heap->lock. NULL: no memory. */
void *rasp__large_alloc(struct rasp_heap *h, size_t z, int kind, const rasp_type_t *type);
/* The header of the large object of mapping s. */
struct rasp__header *rasp__large_header(struct rasp__segment *s);
/* Takes heap->lock. */
void rasp__large_free(struct rasp_heap *h, struct rasp__segment *s);
/* At a purge tick: tails marked two ticks ago purged, mappings cached since the last tick
 * unmapped. */
void rasp__large_tick(struct rasp_heap *h);
/* At a collect: the cache unmapped, every marked tail purged. */
void rasp__large_trim(struct rasp_heap *h);
int rasp__large_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg);
/* Every large object's mapping and every cached one unmapped (heap destroy). */
void rasp__large_unmap_all(struct rasp_heap *h);

/* ---- page.c ---------------------------------------------------------------------------------- */

/* A context's pages. Owner thread (or quiescent owner) unless said. */
/* Bytes of never-used blocks formatted at a time (at least one block): one OS page, so that
 * the resident set follows what each class has used. Formatting writes every block's link,
 * so what is formatted is resident: at 16 KiB, `mixed`'s 55 classes each held up to 16 KiB
 * touched and unused, and its peak RSS was 0.38 MiB higher (13.28 against 12.90 MiB; the
 * `request` loop, which formats the most, 1.6% faster; docs/performance.md). */
#define RASP__EXTEND_BYTES ((size_t)4096)
/* ...or, where the class grows (no free of it came back to the thread since its last miss),
 * as many bytes as the page has formatted, up to this: a page filled in order is formatted 4,
 * 4, 8, 16, 16... KiB at a time. Each format is a refill (a miss, a page search, the list
 * taken: ~500 instructions), at 4 KiB one every 3 blocks of 1 KiB (pair.sh at 1024 B: 177
 * instructions a malloc + free, 136 so). What is formatted and unused stays under what the
 * page has shown it uses and 16 KiB a class. Only while growing: the same at every refill
 * held 0.5 MiB more of `mixed` (frees coming back between misses), growing only, none. */
#define RASP__EXTEND_MAX ((size_t)16384)
/* Formats never-used blocks into local_free: RASP__EXTEND_BYTES, or (`grow`) the page's
 * formatted bytes up to RASP__EXTEND_MAX; at least one block. */
void rasp__page_extend(struct rasp__page *pg, bool grow);
/* Moves the blocks other threads freed into local_free. Returns how many. */
uint32_t rasp__page_collect(struct rasp__page *pg);
/* A page of class cls with free blocks for context c, its free blocks in local_free: the
 * class queue, pages freed into while full, abandoned pages, a new page; `grow` as
 * rasp__page_extend's. NULL: no memory. */
struct rasp__page *rasp__page_find(struct rasp_context *c, unsigned cls, bool grow);
/* Takes pg's local list (pg from rasp__page_find), and short ones of the next pages, in front
 * of the list at *list (a top-up keeps the blocks it had); returns the blocks taken. */
uint32_t rasp__page_take_list(struct rasp_context *c, struct rasp__page *pg,
			      struct rasp__header **list);
/* The owner freed the last block out: release the page unless it is current. */
void rasp__page_empty(struct rasp_context *c, struct rasp__page *pg);
/* The owner's free found class k's list at its bound (free.c): the whole list goes back to
 * its pages, pages that empty go as rasp__page_empty lets them, the window ends, and the
 * cache is off until the class's next refill, which turns it on at half its bound (down to
 * RASP__CACHE_MIN). Takes heap->lock. */
void rasp__list_flush(struct rasp_context *c, unsigned k);
/* The least bound of the owner's free cache, in blocks (context.c, cache_blocks). */
#define RASP__CACHE_MIN 8u
/* Every page of c to the heap's abandoned lists (or freed, if empty); heap->lock NOT held. */
void rasp__pages_abandon(struct rasp_context *c);
/* heap->lock held: empty pages of c that are not current go back to their segments. */
void rasp__pages_release_empty(struct rasp_context *c);
/* heap->lock held: collects abandoned pages' cross-thread frees, frees the empty ones. */
void rasp__abandoned_trim(struct rasp_heap *h);

/* A page's pg->div for blocks of b bytes: floor(2^64 / b) + 1 (rasp__class_div's but for
 * powers of 2, one more, so that b * div mod 2^64 is never 0). */
static inline uint64_t rasp__page_div(uint64_t b)
{
	return UINT64_MAX / b + 1 + !(b & (b - 1));
}

/* Is hdr the header of one of pg's blocks (formatted or not)? hdr is in one of pg's slots,
 * so n = hdr - pg->start is below 1 MiB or, before pg->start, wraps to near 2^64. With
 * e = b * div mod 2^64 (0 < e <= b), n * div mod 2^64 is k * e for a block's start k blocks
 * in, and at least 2^64 / b for any other such n (Lemire, Kaser and Kurz's remainder test,
 * exact below 2^32): below pg->lim = blocks * e exactly for the page's blocks
 * (test-sizeclass.c checks every offset of every class against `%` and the bound). */
static inline bool rasp__page_has_block(const struct rasp__page *pg, const struct rasp__header *hdr)
{
	return ((uintptr_t)hdr - pg->start) * pg->div < pg->lim;
}

/* Blocks the page holds. */
static inline uint32_t rasp__page_capacity(const struct rasp__page *pg)
{
	return (uint32_t)(pg->bytes / pg->bsize);
}

/* The block of pg holding hdr (hdr in the page's blocks). */
static inline struct rasp__header *rasp__page_block_at(const struct rasp__page *pg, const void *hdr)
{
	return (struct rasp__header *)(pg->start +
				       ((uintptr_t)hdr - pg->start) / pg->bsize * pg->bsize);
}

/* Every block of pg formatted. */
static inline bool rasp__page_all_formatted(const struct rasp__page *pg)
{
	return pg->formatted == pg->bytes;
}

/* ---- remote.c -------------------------------------------------------------------------------- */

/* Pushes a chain of blocks of pg (first..last) freed by a thread that does not own pg; c is
 * that thread's context of pg's heap (NULL if it could not have one): rasp__page_push_begin
 * (the segment pinned, the blocks published), then rasp__page_push_end (the owner told if
 * the page is on its full list, the pin dropped). Two steps so that tests can stop between
 * them. */
void rasp__page_push_remote(struct rasp_context *c, struct rasp__page *pg,
			    struct rasp__header *first, struct rasp__header *last);
void rasp__page_push_begin(struct rasp_context *c, struct rasp__page *pg,
			   struct rasp__header *first, struct rasp__header *last);
void rasp__page_push_end(struct rasp_context *c, struct rasp__page *pg);
/* Pushes the calling thread's queued cross-thread frees (c is its context). */
void rasp__batch_flush(struct rasp_context *c);

/* ---- free.c ---------------------------------------------------------------------------------- */

/* The object's block header and its page (NULL for a large object), after the checks every
 * build makes; NULL header (errno EINVAL, reported) when obj is not one of h's objects. */
struct rasp__header *rasp__block_of(struct rasp_heap *h, void *obj, const char *op,
				    struct rasp__segment **seg);
/* At rasp_heap_destroy, under the default action: each kind's count of refused pointers not
 * yet logged. */
void rasp__invalid_summary(struct rasp_heap *h);

/* ---- frames.c -------------------------------------------------------------------------------- */

/* Bumped at each announcement of the sampling mean: frames are told again (MethodLoadVerbose)
 * under a new value, so a listener that came since has their names. */
extern _Atomic uint32_t rasp__frames_gen;
/* The heap's runtime frames (rasp_heap_set_frames), innermost first, as code addresses in
 * frames.c's range, each told first where new since the last announcement; at most max. */
size_t rasp__frames_capture(struct rasp_heap *h, uintptr_t *ips, size_t max);
/* The name of the runtime frame at ip ("function (file:line)"), NULL if ip is none. */
const char *rasp__frames_name(uintptr_t ip);

/* ---- stack.c --------------------------------------------------------------------------------- */

/* The caller's call stack, innermost first, the runtime's own frames left out; up to
 * max (<= RASP_MAX_STACK_DEPTH) frames. Slow path only. */
size_t rasp__stack_capture(uintptr_t *frames, size_t max);
/* Loads the unwinder now (librasp-malloc's constructor; exported). */
RASP_API void rasp__stack_load(void);

/* ---- logarithm.c ----------------------------------------------------------------------------- */

/* log within 1.3 ulp and log1p within 1.6 ulp (measured), without libm. */
double rasp__log(double x);
/* log x for a positive, finite, normal x only (the draw's V), without rasp__log's checks. */
double rasp__log_normal(double x);
double rasp__log1p(double x);

/* ---- sample.c -------------------------------------------------------------------------------- */

void rasp__rng_seed(struct rasp_context *c, const rasp_config_t *cfg);
/* xoshiro256++ (Blackman and Vigna): inline, as every draw takes one or more. */
static inline uint64_t rasp__rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rasp__rng_next(uint64_t s[4])
{
	uint64_t result = rasp__rotl(s[0] + s[3], 23) + s[0], t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rasp__rotl(s[3], 45);
	return result;
}

/* Sets the mean a context draws with (and the constant its draws need). */
void rasp__context_set_mean(struct rasp_context *c, uint64_t mean);
/* Adopts the heap's sampling state (mode, mean, listener) for the calling thread's next
 * trials, announcing a change for this thread. Returns true if sampling or the mean changed:
 * the caller redraws then, and only then (an announcement of an unchanged state to a new
 * listener keeps the draws, so a seeded thread's samples never depend on the clock). */
bool rasp__sampling_update_full(struct rasp_context *c);
/* The same, inline where nothing it follows changed since the thread's last update: the
 * heap's generation, the EventPipe session epoch and events (one word), and the LTTng states
 * of AllocationSampled and SamplingConfigured, compared as words. The lean miss runs it at
 * every entry (four compares, 12 instructions), the generic path when due: no call, against
 * three calls and 62 instructions when it always ran the full update. */
static inline bool rasp__sampling_unchanged(const struct rasp_context *c)
{
	return atomic_load_explicit(&c->heap->state_gen, memory_order_acquire) == c->state_gen &&
	       rasp__events_state_peek() == c->seen_ep_state &&
	       rasp__event_allocation_sampled_word() == c->seen_sampled &&
	       rasp__event_sampling_configured_word() == c->seen_configured;
}
static inline bool rasp__sampling_update(struct rasp_context *c)
{
	if (rasp__sampling_unchanged(c)) {
		c->unchecked = 0;
		return false;
	}
	return rasp__sampling_update_full(c);
}
/* Whether the generic path's check of the thread's sampling state is due: a quantum of the
 * window bytes the generic path handed out since the last one (the lean miss checks at every
 * entry and counts none; it sets a quantum here when its check found a change), or a
 * rasp_heap_set_sampling since (seen at once). Two loads. */
static inline bool rasp__state_check_due(const struct rasp_context *c)
{
	return c->unchecked >= c->heap->cfg.alloc_quantum ||
	       atomic_load_explicit(&c->heap->state_gen, memory_order_relaxed) != c->state_gen;
}
/* The sample's announcement if due, hook, stack and event (sample.c), under the mean the
 * thread drew it with, c->mean (a thread adopts a new one only after its sample is out).
 * Returns obj, so that a caller returning the object calls it last: six arguments and a tail
 * call, nothing of the caller's lives across it. */
void *rasp__emit_listened(struct rasp_context *c, uint32_t kind, const rasp_type_t *type, void *obj,
			  uint64_t z, uint64_t offset);
/* The free of a sampled object (free.c's slow path, any thread), before its block can be
 * handed out again (freed.c): its mark cleared (own: the object's own header), the hook, then
 * SampledObjectFreed with the sample's Address (the block's object, blk + 1) and ObjectSize z,
 * or the free kept for the thread's next SampledObjectsFreed. True: the block is kept (or
 * already freed with its batch); false: the caller frees it (rasp__free_block). */
bool rasp__emit_freed(struct rasp_heap *h, struct rasp__header *own, struct rasp__header *blk,
		      struct rasp__segment *s, uint64_t z);
/* Test seam: keep frees as if an LTTng session enabled SampledObjectsFreed (false in programs). */
extern bool rasp__freed_keep_always;
/* The age past which a thread's next kept free sends its batch (tests: never). */
extern uint64_t rasp__freed_age_ns;
/* The free of a sampled object resized in place, which keeps its block (alloc.c): told now,
 * never kept. */
void rasp__emit_freed_in_place(struct rasp_heap *h, struct rasp__header *own, void *addr,
			       uint64_t z);
/* The kept frees of c: one SampledObjectsFreed (if LTTng still listens), then their blocks
 * go back (c's thread, or any thread while c's is quiescent). */
void rasp__freed_flush(struct rasp_heap *h, struct rasp_context *c);
/* The event alone, the blocks left where they are (a heap's destruction, the process's exit). */
void rasp__freed_tell(struct rasp_heap *h, struct rasp_context *c);
/* A fork's child: what c kept is its parent's to tell. */
static inline void rasp__freed_forked(struct rasp_context *c)
{
	c->freed.skip = c->freed.n;
}
/* The checked block blk of mapping s, marked free or not, goes back (free.c). */
void rasp__free_block(struct rasp_heap *h, struct rasp__segment *s, struct rasp__header *blk);

/* Counts a sample; true when someone may take it (then rasp__emit_listened goes on): a
 * session as of the thread's last state update (`listened`), or a hook. Nobody to tell
 * (sampling forced on with no session: a benchmark's, or a program that reads its counts
 * through rasp_heap_stats): the count only, in a few loads and no call. */
static inline bool rasp__sample_counted_listened(struct rasp_context *c)
{
	/* One instruction: a relaxed load and store took 3. */
	rasp__owner_add64(&c->n_samples, 1);
	return c->listened || c->heap->sample_hook;
}
/* Counts a sample and fires AllocationSampled. */
static inline void rasp__emit_sample(struct rasp_context *c, uint32_t kind, const rasp_type_t *type,
				     void *obj, uint64_t z, uint64_t offset)
{
	if (rasp__sample_counted_listened(c))
		rasp__emit_listened(c, kind, type, obj, z, offset);
}

/* The bytes a sample of an allocation given `size` bytes counts (its ObjectSize, over which
 * its trials run), its block being block_z bytes: the block's, or on a heap of requested sizes
 * (rasp_config_t.requested_sizes) the size less the heap's pad, 0 at or below it (such an
 * allocation is never sampled). Slow paths only: two loads. */
static inline uint64_t rasp__asked_z(const struct rasp_heap *h, size_t size, uint64_t block_z)
{
	if (!h->cfg.requested_sizes)
		return block_z;
	return size > h->cfg.request_pad ? size - h->cfg.request_pad : 0;
}
/* A heap of requested sizes: the ObjectSize of each sampled object still live, by its
 * sample's Address (a block's size does not tell it), for its SampledObjectFreed (sample.c).
 * Put at its sample (0, or -ENOMEM: its free then says the block's size, which a consumer
 * counts as a mismatch); taken, and forgotten, at its free: the size put for addr, or z if
 * none was (or the heap counts blocks). Any thread; the heap's lock inside. */
int rasp__sample_size_put(struct rasp_heap *h, const void *addr, uint64_t z);
uint64_t rasp__sample_size_take(struct rasp_heap *h, const void *addr, uint64_t z);
/* The table's memory back (rasp_heap_destroy). */
void rasp__sample_sizes_drop(struct rasp_heap *h);
/* As rasp__emit_listened, the mark put on `own` (an aligned object's own header, inside the
 * block whose object addr is): a resize in place's sample (alloc.c). */
void rasp__emit_listened_at(struct rasp_context *c, uint32_t kind, const rasp_type_t *type,
			    void *addr, struct rasp__header *own, uint64_t z, uint64_t offset);

/* ---- thread.c -------------------------------------------------------------------------------- */

/* The calling thread's context on h, if it has one (no attach). */
struct rasp_context *rasp__context_peek(struct rasp_heap *h);
/* The thread's one-entry cache of its last heap and that heap's context (thread.c), exported
 * as rasp_inline_cache_v1 for rasp/inline.h except in AddressSanitizer builds. */
#ifdef RASP__ASAN /* GCC's or clang's: freed blocks are poisoned, no caller may pop them */
extern __thread struct rasp_inline_cache rasp__tcache
    __attribute__((visibility("hidden"), tls_model("initial-exec")));
#else
/* Declared here as well: rasp/inline.h declares it only where callers may inline, and
 * librasp defines it in every build but AddressSanitizer's. */
RASP_API extern __thread struct rasp_inline_cache rasp_inline_cache_v1
    __attribute__((tls_model("initial-exec")));
#define rasp__tcache rasp_inline_cache_v1
#endif
/* Whether the thread's cache names h (a load and a compare, no call); then
 * rasp__context_cache_ctx() is the thread's context on h (never NULL). */
static inline bool rasp__context_cache_is(const struct rasp_heap *h)
{
	return __atomic_load_n(&rasp__tcache.heap, __ATOMIC_RELAXED) == h;
}
static inline struct rasp_context *rasp__context_cache_ctx(void)
{
	return (struct rasp_context *)(void *)rasp__tcache.ctx;
}
/* The thread's token (page ownership): unique among live threads. The thread pointer where
 * the compiler gives it (gcc 11 on: %fs:0 on x86-64, which the owner's free compares in one
 * instruction; a thread-local byte's address, which is the thread pointer plus a constant,
 * took a GOT load and an add more, every free); else that byte's address. */
extern __thread char rasp__tls_anchor __attribute__((tls_model("initial-exec")));
static inline uintptr_t rasp__thread_token(void)
{
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
	return (uintptr_t)__builtin_thread_pointer();
#endif
#endif
	return (uintptr_t)&rasp__tls_anchor;
}
void rasp__heap_unregister(struct rasp_heap *h);
int rasp__heap_register(struct rasp_heap *h);
void rasp__thread_forget_heap(struct rasp_heap *h);
/* fn on each of the calling thread's contexts, with its heap (registry_lock held). */
void rasp__thread_each_context(void (*fn)(struct rasp_heap *h, struct rasp_context *c));
/* The calling thread's entries (one per heap it attached to and that is alive, give or take
 * the heaps destroyed since its last attach): for tests. */
size_t rasp__thread_entries(void);
/* The calling thread's context on h: its entry's, else a new one (rasp__context_new), with
 * the cache set where heap destroy can clear it. NULL (errno ENOMEM): no memory. */
struct rasp_context *rasp__context_attach(struct rasp_heap *h);

/* ---- context.c ------------------------------------------------------------------------------- */

typedef void (*rasp__context_fn)(struct rasp_context *c, void *arg);
/* Calls fn for every context of the heap with heap->lock held. The owners must be quiescent
 * (debug builds abort if one is not). */
void rasp__contexts_enumerate(struct rasp_heap *h, rasp__context_fn fn, void *arg);
/* Ends every window of c: its unused blocks stay on its lists (counted in `retired`, not in
 * `rest`, which the owner's frees may be raising), and its next allocation of every class
 * takes the slow path. The one way another thread changes c's windows. */
void rasp__context_retire(struct rasp_context *c, void *arg);
/* A context for the calling thread on h: a spare one of an exited thread, or a new one;
 * its windows sized, linked into h->contexts. NULL: no memory. */
struct rasp_context *rasp__context_new(struct rasp_heap *h);
/* The calling thread exits: its queued frees pushed, its pages abandoned, c kept for the
 * next thread (h->spare_contexts). */
void rasp__context_exit(struct rasp_context *c);

/* ---- alloc.c --------------------------------------------------------------------------------- */

/* The fast path's miss (flags 0, a type; hc: the size's class's hot entry). */
void *rasp__alloc_miss(struct rasp_context *c, const rasp_type_t *type, size_t size,
		       struct rasp__hot *hc);
void *rasp__alloc_slow(struct rasp_context *c, const rasp_type_t *type, size_t size,
		       unsigned flags);
/* Requested sizes (rasp_config_t.requested_sizes): rasp_alloc of `size` bytes whose sample
 * counts `asked` less the heap's pad (rasp_alloc_aligned's block; librasp-malloc's, of a class
 * it chose: exported); as rasp_alloc otherwise. */
RASP_API void *rasp__alloc_asked(rasp_heap_t *h, const rasp_type_t *type, size_t size,
				 unsigned flags, size_t asked);
/* Requested sizes: obj (a live object of h, its owner calling) resized in place to `size`
 * bytes (its pad included): the old allocation freed (SampledObjectFreed if it was sampled)
 * and a new one of `type` drawn, with its own trials, sampled at the same Address. Nothing on
 * a heap that counts blocks (a resize in place allocates no block). librasp-malloc's realloc
 * (exported). */
RASP_API void rasp__resized(rasp_heap_t *h, void *obj, size_t size, const rasp_type_t *type);

/* The one append to a thread's batch of frees (freed.c): blk's free of z bytes, of segment s,
 * kept in c's batch and marked free (a second free is refused until rasp__free_block takes the
 * block back); the batch goes out when it is full, holds RASP__FREED_HOLD_MAX bytes, its first
 * free is rasp__freed_age_ns old, or `send` (a large object's free). */
static inline void rasp__freed_append(struct rasp_heap *h, struct rasp_context *c,
				      struct rasp__header *blk, struct rasp__segment *s, uint64_t z,
				      bool send)
{
	struct rasp__freed *f = &c->freed;
	uint64_t now = rasp__os_now_ns();

	blk->word |= RASP__HDR_FREE;
	f->blk[f->n] = blk;
	f->seg[f->n] = s;
	f->size[f->n] = z;
	f->ns[f->n] = now;
	f->n++;
	f->bytes += z;
	if (send || f->n == RASP__FREED_MAX || f->bytes >= RASP__FREED_HOLD_MAX ||
	    now - f->ns[0] >= rasp__freed_age_ns)
		rasp__freed_flush(h, c);
}

/* A sampled small block's free kept for the thread's next SampledObjectsFreed (freed.c), inline
 * in free.c's quick route for the common case (release builds: debug builds check every free
 * the general way): an LTTng session wants batches (or the seam rasp__freed_keep_always), no
 * hook, no EventPipe session wants the free, the thread's
 * cached context is on h and already keeps frees (so its exit handler is in place). Saves
 * rasp__emit_freed's call and frame, about 20 instructions a sampled free. False: the caller
 * goes the general way (rasp__emit_freed). */
static inline bool rasp__freed_keep_small(struct rasp_heap *h, struct rasp__header *blk,
					  struct rasp__segment *s, uint64_t z)
{
	struct rasp_context *c;

	if (!(rasp__event_sampled_objects_freed_word() || rasp__freed_keep_always) ||
	    h->free_hook || !rasp__context_cache_is(h) ||
	    ((rasp__events_mask_peek() >> RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED) & 1))
		return false;
	c = rasp__context_cache_ctx();
	if (!c->freed.n)
		return false;
	blk->word &= ~(uintptr_t)RASP__HDR_SAMPLED;
	rasp__freed_append(h, c, blk, s, z, false);
	return true;
}

#endif /* RASP_RUNTIME_INTERNAL_H */
