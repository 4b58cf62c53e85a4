/* The loaded objects of the process (eventpipe-objects.h): dl_iterate_phdr, the build id from
 * each object's PT_NOTE segments as mapped. About 1 us per object, on the writer thread. */
#define _GNU_SOURCE
#include "eventpipe-objects.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Notes read per segment at most: a malformed segment cannot make the walk long. */
#define MAX_NOTES 256

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* The NT_GNU_BUILD_ID note of the object, if one of its PT_NOTE segments has it. */
static void build_id(const struct dl_phdr_info *info, struct rasp__ep_object *o)
{
	for (int j = 0; j < info->dlpi_phnum; j++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[j];
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		size_t left = ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		for (int k = 0; k < MAX_NOTES && left >= sizeof(ElfW(Nhdr)); k++) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name = align4(nh->n_namesz), desc = align4(nh->n_descsz);
			size_t whole = sizeof(*nh) + name + desc;

			if (name > left || desc > left || whole > left)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(p + sizeof(*nh), "GNU", 4) == 0 && nh->n_descsz > 0 &&
			    nh->n_descsz <= RASP__EP_BUILD_ID_MAX) {
				memcpy(o->build_id, p + sizeof(*nh) + name, nh->n_descsz);
				o->build_id_len = (uint16_t)nh->n_descsz;
				return;
			}
			p += whole;
			left -= whole;
		}
	}
}

static int grow(struct rasp__ep_objects *o)
{
	size_t cap = o->cap ? 2 * o->cap : 32;
	void *v;

	if (o->n < o->cap)
		return 0;
	v = realloc(o->v, cap * sizeof(*o->v));
	if (!v)
		return -ENOMEM;
	o->v = v;
	o->cap = cap;
	return 0;
}

struct walk {
	struct rasp__ep_objects *out;
	bool program_seen;
	int rc;
};

static int one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	struct rasp__ep_object o = {0};
	uint64_t lo = UINT64_MAX, hi = 0;
	char exe[4096];
	const char *path = info->dlpi_name;

	(void)size;
	for (int j = 0; j < info->dlpi_phnum; j++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[j];

		if (ph->p_type != PT_LOAD)
			continue;
		if (ph->p_vaddr < lo)
			lo = ph->p_vaddr;
		if (ph->p_vaddr + ph->p_memsz > hi)
			hi = ph->p_vaddr + ph->p_memsz;
	}
	if (hi <= lo)
		return 0;
	if (!path || !*path) {
		/* The first nameless object is the program; later ones (the vDSO on some
		 * systems) have no file. */
		ssize_t n;

		if (w->program_seen)
			return 0;
		w->program_seen = true;
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return 0;
		exe[n] = '\0';
		path = exe;
	}
	if (path[0] != '/')
		return 0; /* linux-vdso.so.1: no file to read symbols from */
	o.base = info->dlpi_addr + lo;
	o.size = hi - lo;
	/* A fixed-address program has no load bias and maps its first segment away from 0. */
	o.flags = info->dlpi_addr || lo == 0 ? RASP__EP_OBJECT_PIC : 0;
	build_id(info, &o);
	o.path = strdup(path);
	if (!o.path || grow(w->out)) {
		free(o.path);
		w->rc = -ENOMEM;
		return 1;
	}
	w->out->v[w->out->n++] = o;
	return 0;
}

int rasp__ep_objects_read(struct rasp__ep_objects *out)
{
	struct walk w = {.out = out};

	dl_iterate_phdr(one, &w);
	return w.rc;
}

bool rasp__ep_objects_has(const struct rasp__ep_objects *set, const struct rasp__ep_object *o)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].base == o->base && set->v[i].size == o->size &&
		    strcmp(set->v[i].path, o->path) == 0)
			return true;
	return false;
}

void rasp__ep_objects_free(struct rasp__ep_objects *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].path);
	free(o->v);
	*o = (struct rasp__ep_objects){0};
}
