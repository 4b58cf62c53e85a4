/* Symbolization with elfutils' libdwfl (symbols.h). One Dwfl per process, holding the objects
 * the trace says it had loaded, each placed at its recorded address; an object whose file is
 * gone or whose build id differs from the recorded one (rebuilt since) is not trusted: its
 * frames are named by object and offset. Frames are cached per (process, address). */
#include "symbols.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clr-names.h"
#include "index.h"

struct proc {
	int64_t pid;
	Dwfl *dwfl;
};

struct entry {
	int64_t pid;
	uint64_t ip;
	struct rasp_sym_frame f;
};

struct rasp_symbols {
	struct rasp_modules *m;
	struct proc *procs;
	size_t nprocs, capprocs;
	struct entry *v;
	size_t n, cap;
	struct rasp_index index;
	char **strings; /* every string handed out, freed at the end */
	size_t nstrings, capstrings;
	bool raw_names; /* .NET methods in the runtime's form, not C#'s */
};

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

struct rasp_symbols *rasp_symbols_create(struct rasp_modules *m)
{
	struct rasp_symbols *s = calloc(1, sizeof(*s));

	if (s)
		s->m = m;
	return s;
}

void rasp_symbols_raw_names(struct rasp_symbols *s, bool raw)
{
	s->raw_names = raw;
}

void rasp_symbols_destroy(struct rasp_symbols *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].dwfl)
			dwfl_end(s->procs[i].dwfl);
	for (size_t i = 0; i < s->nstrings; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->procs);
	free(s->v);
	rasp_index_free(&s->index);
	free(s);
}

/* A string kept until the resolver goes; NULL without memory. */
static const char *keep(struct rasp_symbols *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *keep(struct rasp_symbols *s, const char *fmt, ...)
{
	va_list ap;
	char *str;

	if (rasp_array_grow((void **)&s->strings, &s->capstrings, s->nstrings, sizeof(*s->strings)))
		return NULL;
	va_start(ap, fmt);
	str = rasp_vstrdupf(fmt, ap);
	va_end(ap);
	if (str)
		s->strings[s->nstrings++] = str;
	return str;
}

/* A .NET method's name: its declaring type and name, and its parameters so that overloads
 * differ. C#'s form: System.Collections.Generic.List<__Canon>.set_Capacity(int), the
 * declaring type with its namespace, the parameters' types without; the runtime's:
 * System.Collections.Generic.List`1[System.__Canon].set_Capacity(int32). */
static const char *method_name(struct rasp_symbols *s, const struct rasp_module *mod)
{
	const char *name = mod->path + mod->name_at;
	size_t nslen = mod->name_at ? mod->name_at - 1 : 0, tlen = 0, plen;
	char *ns = NULL, *type = NULL, *params;
	const char *ret;

	if (!mod->name_at && !mod->signature)
		return keep(s, "%s", mod->path);
	if (s->raw_names) {
		plen = rasp_clr_signature_params_raw(mod->signature, NULL, 0);
		params = malloc(plen + 1);
		if (!params)
			return NULL;
		rasp_clr_signature_params_raw(mod->signature, params, plen + 1);
		ret = keep(s, "%s%s", mod->path, mod->signature ? params : "");
		free(params);
		return ret;
	}
	plen = rasp_clr_signature_params(mod->signature, RASP_CLR_NS_NONE, NULL, 0);
	params = malloc(plen + 1);
	if (nslen && params && (ns = strndup(mod->path, nslen)) != NULL) {
		tlen = rasp_clr_type_name(ns, RASP_CLR_NS_OUTER, NULL, 0);
		if ((type = malloc(tlen + 1)) != NULL)
			rasp_clr_type_name(ns, RASP_CLR_NS_OUTER, type, tlen + 1);
	}
	if (!params || (nslen && !type)) {
		free(params);
		free(ns);
		free(type);
		return NULL;
	}
	rasp_clr_signature_params(mod->signature, RASP_CLR_NS_NONE, params, plen + 1);
	ret = keep(s, "%s%s%s%s", type ? type : "", type ? "." : "", name,
		   mod->signature ? params : "");
	free(params);
	free(ns);
	free(type);
	return ret;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The process's Dwfl, with every object the trace says it loaded; NULL when libdwfl cannot
 * start (then frames are named by object and offset). */
static Dwfl *dwfl_of(struct rasp_symbols *s, int64_t pid)
{
	struct proc *p = NULL;

	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return s->procs[i].dwfl;
	if (rasp_array_grow((void **)&s->procs, &s->capprocs, s->nprocs, sizeof(*s->procs)))
		return NULL;
	p = &s->procs[s->nprocs++];
	*p = (struct proc){.pid = pid, .dwfl = dwfl_begin(&callbacks)};
	if (!p->dwfl)
		return NULL;
	dwfl_report_begin(p->dwfl);
	for (size_t i = 0; i < s->m->n; i++) {
		const struct rasp_module *mod = &s->m->v[i];

		struct stat st;
		int fd;

		if (mod->pid != pid || mod->method)
			continue;
		/* An object that cannot be opened is left out: its frames keep its name. Only a
		 * regular file is read: a trace may name a FIFO or a device, whose open or read
		 * would never end (O_NONBLOCK: not even the open waits). On success libdwfl owns
		 * the descriptor. */
		fd = open(mod->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		    !dwfl_report_elf(p->dwfl, base_name(mod->path), mod->path, fd, mod->base,
				     false))
			close(fd);
	}
	dwfl_report_end(p->dwfl, NULL, NULL);
	return p->dwfl;
}

/* The Dwfl module of ip, if it is the recorded object (same build id when one was recorded). */
static Dwfl_Module *trusted(Dwfl *d, const struct rasp_module *mod, uint64_t ip)
{
	Dwfl_Module *dm = d ? dwfl_addrmodule(d, ip) : NULL;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len;

	if (!dm || !mod->build_id_len)
		return dm;
	len = dwfl_module_build_id(dm, &bits, &vaddr);
	if (len != (int)mod->build_id_len || memcmp(bits, mod->build_id, (size_t)len) != 0)
		return NULL;
	return dm;
}

static int resolve(struct rasp_symbols *s, int64_t pid, uint64_t ip, struct rasp_sym_frame *f)
{
	/* A return address: the call is the instruction before it. */
	uint64_t at = ip ? ip - 1 : 0;
	const struct rasp_module *mod = rasp_modules_find(s->m, pid, at);
	Dwfl_Module *dm;

	*f = (struct rasp_sym_frame){.module = mod};
	if (!mod) {
		/* Never a bare address: say why it has no name (the trace recorded no object
		 * there: its state dump or dlopen events are missing). */
		f->name = keep(s, "[no object] 0x%" PRIx64, ip);
		return f->name ? 0 : -ENOMEM;
	}
	f->offset = at - mod->base;
	if (mod->method) {
		f->function = f->name = method_name(s, mod);
		return f->name ? 0 : -ENOMEM;
	}
	dm = trusted(dwfl_of(s, pid), mod, at);
	if (dm) {
		const char *fn = dwfl_module_addrname(dm, at);
		Dwfl_Line *line = dwfl_module_getsrc(dm, at);
		int lineno = 0;
		const char *file =
		    line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;

		if (fn && !(f->function = keep(s, "%s", fn)))
			return -ENOMEM;
		if (file && lineno > 0) {
			if (!(f->file = keep(s, "%s", file)))
				return -ENOMEM;
			f->line = (unsigned)lineno;
		}
	}
	if (f->function && f->file)
		f->name = keep(s, "%s (%s:%u)", f->function, base_name(f->file), f->line);
	else if (f->function)
		f->name = keep(s, "%s", f->function);
	else
		f->name = keep(s, "%s+0x%" PRIx64, base_name(mod->path), f->offset);
	return f->name ? 0 : -ENOMEM;
}

static uint64_t entry_hash(int64_t pid, uint64_t ip)
{
	return rasp_hash_mix64(rasp_hash_mix64((uint64_t)pid) ^ ip);
}

static uint64_t hash_of(const void *ctx, size_t i)
{
	const struct entry *e = &((const struct rasp_symbols *)ctx)->v[i];

	return entry_hash(e->pid, e->ip);
}

static int eq(const void *ctx, size_t i, const void *key)
{
	const struct entry *e = &((const struct rasp_symbols *)ctx)->v[i], *k = key;

	return e->pid == k->pid && e->ip == k->ip;
}

int rasp_symbols_resolve(struct rasp_symbols *s, int64_t pid, uint64_t ip,
			 struct rasp_sym_frame *out)
{
	struct entry key = {.pid = pid, .ip = ip};
	size_t slot, i;
	int rc;

	if (rasp_index_reserve(&s->index, s->n, hash_of, s))
		return -ENOMEM;
	i = rasp_index_find(&s->index, entry_hash(pid, ip), eq, s, &key, &slot);
	if (i != SIZE_MAX) {
		*out = s->v[i].f;
		return 0;
	}
	rc = resolve(s, pid, ip, &key.f);
	if (rc)
		return rc;
	if (rasp_array_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v)))
		return -ENOMEM;
	s->v[s->n] = key;
	rasp_index_put(&s->index, slot, s->n++);
	*out = key.f;
	return 0;
}
