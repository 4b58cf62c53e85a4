/* libFuzzer target: the allocator (runtime/) driven by any sequence of operations, checked
 * against a model. Each operation is 4 bytes: an opcode, a slot (of 32) and a 16-bit size
 * argument. Operations: allocate (plain, pinned, zeroed, aligned to 2^1..2^20) in four size
 * ranges (small, large in an arena, past an arena's most, and sizes around the boundaries),
 * free, realloc, refused frees (a pointer inside a live object, misaligned, of another heap's
 * memory), collect, walk, sampling switched. A live object keeps the bytes the model wrote
 * at its start, its end and its middle, and its usable size; a zeroed one reads zero there;
 * a refused free is counted and leaves the live bytes as they were; a walk visits exactly the
 * live objects, each at least its size. At the end every object is freed, and a collect
 * leaves the heap with no live byte, no mapping and nothing committed. Anything else aborts, as do
 * crashes and sanitizer reports. Sizes stay below 6 MiB and at most 32 objects live, so an input
 * costs at most ~200 MiB of address space and touches a few pages per object. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/rasp.h"

#define SLOTS 32

struct slot {
	unsigned char *p;
	size_t size;	   /* payload bytes asked */
	unsigned char tag; /* the byte written at the start, end and middle */
	int zeroed;	   /* written nothing: must read zero */
};

struct model {
	struct slot s[SLOTS];
	unsigned live;
};

static size_t pick_size(uint8_t range, uint16_t arg)
{
	switch (range & 3) {
	case 0: /* small: 1 B..64 KiB */
		return 1 + (size_t)arg;
	case 1: /* large, in an arena (payloads up to 16,744,432 bytes): 84 KB..16.73 MB */
		return 84000 + (size_t)arg * 254;
	case 2: /* past an arena's most: 16.75 MB..20 MB */
		return 16750000 + (size_t)arg * 50;
	default: /* around the boundaries: the LOH's and an arena's */
		return (arg & 1 ? 16744300 : 84900) + (arg >> 1) % 200;
	}
}

static size_t mid_of(size_t size)
{
	return size / 2;
}

static void mark(struct slot *sl)
{
	sl->p[0] = sl->tag;
	sl->p[sl->size - 1] = sl->tag;
	sl->p[mid_of(sl->size)] = sl->tag;
	sl->zeroed = 0;
}

static void check(const struct slot *sl)
{
	unsigned char want = sl->zeroed ? 0 : sl->tag;

	if (sl->p[0] != want || sl->p[sl->size - 1] != want || sl->p[mid_of(sl->size)] != want)
		abort();
	if (rasp_usable_size(sl->p) < sl->size)
		abort();
}

struct walk_state {
	const struct model *m;
	unsigned seen;
};

static int walk_one(void *obj, const rasp_type_t *type, size_t z, int kind, void *arg)
{
	struct walk_state *w = arg;
	int found = 0;

	(void)type, (void)kind;
	for (unsigned i = 0; i < SLOTS; i++)
		if (w->m->s[i].p == obj) {
			found = 1;
			if (z < w->m->s[i].size)
				abort();
		}
	if (!found)
		abort();
	w->seen++;
	return 0;
}

static void check_all(rasp_heap_t *h, const struct model *m)
{
	struct walk_state w = {m, 0};

	for (unsigned i = 0; i < SLOTS; i++)
		if (m->s[i].p)
			check(&m->s[i]);
	if (rasp_heap_walk(h, walk_one, &w) != 0 || w.seen != m->live)
		abort();
}

static void drop(rasp_heap_t *h, struct model *m, unsigned i)
{
	if (!m->s[i].p)
		return;
	check(&m->s[i]);
	rasp_free(h, m->s[i].p);
	m->s[i].p = NULL;
	m->live--;
}

/* A refused free: counted, and nothing else moves. */
static void refused(rasp_heap_t *h, struct model *m, void *bad)
{
	rasp_heap_stats_t a, b;

	rasp_heap_stats(h, &a);
	rasp_free(h, bad);
	rasp_heap_stats(h, &b);
	if (b.invalid_frees != a.invalid_frees + 1 || b.live_bytes != a.live_bytes)
		abort();
	(void)m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char other[64];
	rasp_config_t cfg;
	rasp_heap_t *h;
	const rasp_type_t *t;
	struct model m;
	rasp_heap_stats_t st;

	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_ON;
	cfg.sampling_mean = 4096;
	if (rasp_heap_create(&h, &cfg) != 0)
		abort();
	t = rasp_type_register(h, "T");
	if (!t)
		abort();
	memset(&m, 0, sizeof(m));
	for (size_t at = 0; at + 4 <= size; at += 4) {
		uint8_t op = data[at], i = data[at + 1] % SLOTS;
		uint16_t arg = (uint16_t)(data[at + 2] | data[at + 3] << 8);
		struct slot *sl = &m.s[i];
		size_t z = pick_size(op >> 4, arg);
		unsigned char *p;

		switch (op & 15) {
		case 0: /* allocate: plain, pinned, zeroed */
		case 1:
		case 2:
			drop(h, &m, i);
			if ((op & 15) == 2)
				p = rasp_alloc_zeroed(h, t, 1, z, 0);
			else
				p = rasp_alloc(h, t, z, (op & 15) == 1 ? RASP_ALLOC_PINNED : 0);
			if (!p)
				abort();
			*sl = (struct slot){p, z, (unsigned char)(at / 4 | 1), 0};
			m.live++;
			if ((op & 15) == 2)
				sl->zeroed = 1;
			else
				mark(sl);
			break;
		case 3: { /* aligned to 2^(1..20) */
			size_t a = (size_t)1 << (1 + arg % 20);

			drop(h, &m, i);
			p = rasp_alloc_aligned(h, t, z, a, 0);
			if (!p || (uintptr_t)p % a)
				abort();
			*sl = (struct slot){p, z, (unsigned char)(at / 4 | 1), 0};
			m.live++;
			mark(sl);
			break;
		}
		case 4:
		case 5:
			drop(h, &m, i);
			break;
		case 6: /* realloc: the smaller size's bytes kept */
			if (!sl->p)
				break;
			check(sl);
			p = rasp_realloc(h, sl->p, z);
			if (!p)
				abort();
			if (p[0] != (sl->zeroed ? 0 : sl->tag))
				abort();
			sl->p = p;
			sl->size = z;
			sl->tag = (unsigned char)(at / 4 | 1);
			mark(sl);
			break;
		case 7: /* a pointer inside a live object: refused */
			if (!sl->p || sl->size < 2)
				break;
			refused(h, &m, sl->p + 1 + arg % (sl->size - 1));
			break;
		case 8: /* misaligned, foreign */
			refused(h, &m, sl->p ? (void *)(sl->p + 4) : (void *)(other + 8));
			refused(h, &m, other + 16);
			break;
		case 9:
			if (rasp_heap_collect(h) != 0)
				abort();
			break;
		case 10:
			check_all(h, &m);
			break;
		case 11:
			rasp_heap_set_sampling(h, arg & 1 ? RASP_SAMPLING_ON : RASP_SAMPLING_OFF,
					       1 + arg);
			break;
		default: /* 12..15: free the slot and the next one */
			drop(h, &m, i);
			drop(h, &m, (i + 1) % SLOTS);
			break;
		}
	}
	check_all(h, &m);
	for (unsigned i = 0; i < SLOTS; i++)
		drop(h, &m, i);
	if (rasp_heap_collect(h) != 0 || rasp_heap_stats(h, &st) != 0)
		abort();
	if (st.live_bytes != 0 || st.regions != 0 || st.committed_bytes != 0)
		abort();
	rasp_heap_destroy(h);
	return 0;
}
