/* Code locations of recorded processes (modules.h). */
#include "modules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* Entries looked at below the binary search's hit, for objects mapped over one another (a
 * dlclose then a dlopen at the same address): bounded, a hang is no answer. */
#define MAX_OVERLAP 64

static int add(struct rasp_modules *m, const struct rasp_module *e)
{
	if (rasp_array_grow((void **)&m->v, &m->cap, m->n, sizeof(*m->v)))
		return -ENOMEM;
	m->v[m->n] = *e;
	m->v[m->n].order = m->next_order++;
	m->n++;
	m->sorted = false;
	return 0;
}

/* e with its own copy of name (an object's path or a method's name). */
static int add_named(struct rasp_modules *m, struct rasp_module e, const char *name)
{
	if (!name || !*name || e.size == 0)
		return -EINVAL;
	e.path = strdup(name);
	if (!e.path)
		return -ENOMEM;
	if (add(m, &e)) {
		free(e.path);
		return -ENOMEM;
	}
	return 0;
}

int rasp_modules_add(struct rasp_modules *m, int64_t pid, uint64_t base, uint64_t size,
		     const char *path, bool pic)
{
	return add_named(
	    m, (struct rasp_module){.pid = pid, .base = base, .size = size, .pic = pic}, path);
}

int rasp_modules_add_method(struct rasp_modules *m, int64_t pid, uint64_t start, uint64_t size,
			    const char *name)
{
	return add_named(
	    m, (struct rasp_module){.pid = pid, .base = start, .size = size, .method = true}, name);
}

int rasp_modules_add_clr_method(struct rasp_modules *m, int64_t pid, uint64_t start, uint64_t size,
				const char *ns, const char *name, const char *signature)
{
	struct rasp_module e = {.pid = pid, .base = start, .size = size, .method = true};
	char *sig = NULL;
	int ret;

	if (!name || !*name || !size)
		return -EINVAL;
	if (!ns)
		ns = "";
	e.path = malloc(strlen(ns) + strlen(name) + 2);
	if (e.path)
		sprintf(e.path, "%s%s%s", ns, *ns ? "." : "", name);
	if (signature && *signature && !(sig = strdup(signature))) {
		free(e.path);
		return -ENOMEM;
	}
	if (!e.path) {
		free(sig);
		return -ENOMEM;
	}
	e.name_at = *ns ? strlen(ns) + 1 : 0;
	e.signature = sig;
	ret = add(m, &e);
	if (ret) {
		free(e.path);
		free(sig);
	}
	return ret;
}

/* The latest entry loaded at exactly (pid, base), NULL if none. */
static struct rasp_module *at_base(struct rasp_modules *m, int64_t pid, uint64_t base)
{
	struct rasp_module *best = NULL;

	for (size_t i = m->n; i-- > 0;)
		if (m->v[i].pid == pid && m->v[i].base == base && !m->v[i].method &&
		    (!best || m->v[i].order > best->order))
			best = &m->v[i];
	return best;
}

int rasp_modules_set_build_id(struct rasp_modules *m, int64_t pid, uint64_t base, const uint8_t *id,
			      size_t len)
{
	struct rasp_module *e = at_base(m, pid, base);

	if (!e || !id || len == 0 || len > RASP_BUILD_ID_MAX)
		return -EINVAL;
	memcpy(e->build_id, id, len);
	e->build_id_len = len;
	return 0;
}

int rasp_modules_set_debug_link(struct rasp_modules *m, int64_t pid, uint64_t base,
				const char *name)
{
	struct rasp_module *e = at_base(m, pid, base);
	char *copy;

	if (!e || !name || !*name)
		return -EINVAL;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	free(e->debug_link);
	e->debug_link = copy;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	const struct rasp_module *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->base != y->base)
		return x->base < y->base ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

const struct rasp_module *rasp_modules_find(struct rasp_modules *m, int64_t pid, uint64_t ip)
{
	const struct rasp_module *best = NULL;
	size_t lo = 0, hi;

	if (!m->sorted && m->n) { /* qsort must not get v NULL, even for 0 entries */
		qsort(m->v, m->n, sizeof(*m->v), cmp);
		m->sorted = true;
	}
	/* The first entry after (pid, ip): everything before it starts at or below ip. */
	hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rasp_module *e = &m->v[mid];

		if (e->pid < pid || (e->pid == pid && e->base <= ip))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = 0; k < MAX_OVERLAP && lo > 0; k++) {
		const struct rasp_module *e = &m->v[--lo];

		if (e->pid != pid)
			break;
		if (ip - e->base < e->size && (!best || e->order > best->order))
			best = e;
	}
	return best;
}

void rasp_modules_free(struct rasp_modules *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].path);
		free(m->v[i].debug_link);
		free(m->v[i].signature);
	}
	free(m->v);
	memset(m, 0, sizeof(*m));
}
