/* An embedding runtime's own frames on each sample (rasp_heap_set_frames): the runtime's
 * callback names them (function, file, line), and each distinct frame is interned once, in a
 * process-wide table, at a code address of its own: 16 bytes of a range reserved PROT_NONE, so
 * it can be no other code's. The stack event then carries those addresses as a native stack
 * carries return addresses (8 bytes a frame), and MethodLoadVerbose_V1 says once what code is
 * there, as .NET's JIT does for managed methods, so LTTng and EventPipe consumers (rasp
 * report, TraceEvent) name the frames as they name .NET's. Only on the slow path of a sample
 * whose stack a session wants: nothing here runs, and nothing is looked up, otherwise. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "rasp/events.h"

/* Distinct frames at most (a runtime's frames are its functions' lines that allocate: a few
 * thousand for large programs); those past it share the last entry, named for what it is. */
#define MAX_FRAMES   65536u
#define FRAME_BYTES  16u
#define NAME_MAX_LEN 240u /* bytes of a function's or file's name kept */
/* MethodFlags: .NET's "jitted" flag, under which TraceEvent's TraceLog maps a method's range
 * for the stacks that follow (without it the frames stay bare addresses). */
#define METHOD_JITTED 0x8u

struct entry {
	uint64_t hash;
	uint32_t line;
	uint32_t announced; /* rasp__frames_gen when its MethodLoadVerbose was last emitted */
	char *function, *file, *name;
};

static struct {
	pthread_mutex_t lock;
	uintptr_t base; /* the reserved range, MAX_FRAMES * FRAME_BYTES */
	struct entry *v;
	uint32_t n, cap;
	uint32_t *slots; /* open addressing: entry index + 1, 0 empty; twice the entries */
	uint32_t nslots;
} tab = {.lock = PTHREAD_MUTEX_INITIALIZER};

_Atomic uint32_t rasp__frames_gen = 1;

/* The range, once: 1 MiB of address space, no memory. */
static int reserve(void)
{
	void *p;

	if (tab.base)
		return 0;
	p = mmap(NULL, (size_t)MAX_FRAMES * FRAME_BYTES, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	tab.base = (uintptr_t)p;
	return 0;
}

int rasp_heap_set_frames(rasp_heap_t *h, rasp_frames_fn fn, void *arg)
{
	int ret = 0;

	if (!h)
		return -EINVAL;
	if (fn) {
		pthread_mutex_lock(&tab.lock);
		ret = reserve();
		pthread_mutex_unlock(&tab.lock);
		if (ret)
			return ret;
	}
	h->frames_arg = arg;
	h->frames_fn = fn;
	return 0;
}

/* FNV-1a over the (cut) function, file and line. */
static uint64_t hash_of(const char *fn, size_t fl, const char *file, size_t il, uint32_t line)
{
	uint64_t x = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < fl; i++)
		x = (x ^ (unsigned char)fn[i]) * UINT64_C(0x100000001b3);
	x = (x ^ 0xff) * UINT64_C(0x100000001b3);
	for (size_t i = 0; i < il; i++)
		x = (x ^ (unsigned char)file[i]) * UINT64_C(0x100000001b3);
	return (x ^ line) * UINT64_C(0x100000001b3);
}

static bool same(const char *kept, const char *s, size_t len)
{
	return strncmp(kept, s, len) == 0 && kept[len] == 0;
}

static int grow_slots(void)
{
	uint32_t n = tab.nslots ? tab.nslots * 2 : 256;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < tab.n; i++) {
		uint32_t j = (uint32_t)tab.v[i].hash & (n - 1);

		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = i + 1;
	}
	free(tab.slots);
	tab.slots = s;
	tab.nslots = n;
	return 0;
}

/* A new entry; its name as a report shows a frame: "function (file:line)". NULL when the
 * table or memory is exhausted. */
static struct entry *add(uint64_t hash, const char *fn, size_t fl, const char *file, size_t il,
			 uint32_t line)
{
	struct entry *e;
	size_t cap = (size_t)fl + il + 32;

	if (tab.n >= MAX_FRAMES - 1)
		return NULL;
	if (tab.n == tab.cap) {
		uint32_t c = tab.cap ? tab.cap * 2 : 64;
		struct entry *v = realloc(tab.v, (size_t)c * sizeof(*v));

		if (!v)
			return NULL;
		tab.v = v;
		tab.cap = c;
	}
	if ((tab.n + 1) * 2 > tab.nslots && grow_slots())
		return NULL;
	e = &tab.v[tab.n];
	e->function = strndup(fn, fl);
	e->file = strndup(file, il);
	e->name = malloc(cap);
	if (!e->function || !e->file || !e->name) {
		free(e->function);
		free(e->file);
		free(e->name);
		return NULL;
	}
	if (il && line)
		snprintf(e->name, cap, "%s (%s:%u)", e->function, e->file, line);
	else if (il)
		snprintf(e->name, cap, "%s (%s)", e->function, e->file);
	else
		snprintf(e->name, cap, "%s", e->function);
	e->hash = hash;
	e->line = line;
	e->announced = 0;
	tab.n++;
	return e;
}

/* The frames past the table: one entry, named as such. */
static struct entry *overflow(void)
{
	static struct entry e = {0,
				 0,
				 0,
				 "(frames past rasp's table)",
				 "",
				 "(frames past "
				 "rasp's table)"};

	return &e;
}

/* The entry of frame f, interned when new. Under the lock. */
static struct entry *intern(const rasp_frame_t *f, uint32_t *index)
{
	const char *fn = f->function ? f->function : "?", *file = f->file ? f->file : "";
	size_t fl = strnlen(fn, NAME_MAX_LEN), il = strnlen(file, NAME_MAX_LEN);
	uint64_t hash = hash_of(fn, fl, file, il, f->line);
	struct entry *e;
	uint32_t j;

	if (tab.nslots) {
		for (j = (uint32_t)hash & (tab.nslots - 1); tab.slots[j];
		     j = (j + 1) & (tab.nslots - 1)) {
			e = &tab.v[tab.slots[j] - 1];
			if (e->hash == hash && e->line == f->line && same(e->function, fn, fl) &&
			    same(e->file, file, il)) {
				*index = tab.slots[j] - 1;
				return e;
			}
		}
	}
	e = add(hash, fn, fl, file, il, f->line);
	if (!e) {
		*index = MAX_FRAMES - 1;
		return overflow();
	}
	*index = tab.n - 1;
	for (j = (uint32_t)hash & (tab.nslots - 1); tab.slots[j]; j = (j + 1) & (tab.nslots - 1))
		;
	tab.slots[j] = tab.n;
	return e;
}

size_t rasp__frames_capture(struct rasp_heap *h, uintptr_t *ips, size_t max)
{
	rasp_frame_t fr[RASP_MAX_STACK_DEPTH];
	rasp_frames_fn fn = h->frames_fn;
	uint32_t gen = atomic_load_explicit(&rasp__frames_gen, memory_order_relaxed);
	bool tell;
	unsigned n;

	if (max > RASP_MAX_STACK_DEPTH)
		max = RASP_MAX_STACK_DEPTH;
	if (!fn || !max)
		return 0;
	memset(fr, 0, sizeof(fr[0]) * max);
	n = fn(h->frames_arg, fr, (unsigned)max);
	if (n > max) /* a callback that says it wrote more than it was given room for */
		n = (unsigned)max;
	tell = rasp_event_method_load_verbose_v1_enabled();
	pthread_mutex_lock(&tab.lock);
	for (unsigned i = 0; i < n; i++) {
		uint32_t k;
		struct entry *e = intern(&fr[i], &k);
		uintptr_t start = tab.base + (uintptr_t)k * FRAME_BYTES;

		/* Its code's place, once per announcement of the sampling mean (a new listener
		 * may have missed the last), before the stack that holds it. */
		if (tell && e->announced != gen) {
			rasp_event_method_load_verbose_v1(start, 0, start, FRAME_BYTES, 0,
							  METHOD_JITTED, "", e->name, "",
							  h->cfg.clr_instance_id);
			e->announced = gen;
		}
		/* Inside the range, and so is the address before it (consumers resolve a
		 * return address at ip - 1). */
		ips[i] = start + FRAME_BYTES / 2;
	}
	pthread_mutex_unlock(&tab.lock);
	/* On request, the native frames after the runtime's (outer to them in the event). */
	if (h->cfg.native_frames && n < max)
		n += (unsigned)rasp__stack_capture(ips + n, max - n);
	return n;
}

const char *rasp__frames_name(uintptr_t ip)
{
	const char *name = NULL;
	uintptr_t k;

	pthread_mutex_lock(&tab.lock);
	if (tab.base && ip >= tab.base && ip < tab.base + (uintptr_t)MAX_FRAMES * FRAME_BYTES) {
		k = (ip - tab.base) / FRAME_BYTES;
		name = k < tab.n ? tab.v[k].name : k == MAX_FRAMES - 1 ? overflow()->name : NULL;
	}
	pthread_mutex_unlock(&tab.lock);
	return name;
}
