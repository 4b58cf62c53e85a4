/* What code was where in each recorded process, as the trace says: the objects loaded
 * (LTTng-UST's state dump and dlopen events: base address, size, path, build id, debug link)
 * and, for .NET, the methods its JIT compiled (start, size, name). Symbolization (symbols.c)
 * reads it; nothing here opens a file. No babeltrace2 types. */
#ifndef RASP_CONSUMER_MODULES_H
#define RASP_CONSUMER_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RASP_BUILD_ID_MAX 64

struct rasp_module {
	int64_t pid;
	uint64_t base, size; /* [base, base + size) in the process */
	char *path;	     /* as the process loaded it; a .NET method: its full name */
	bool method;	     /* JIT code of a .NET method, not a file */
	bool pic;	     /* position-independent (addresses are offsets from base) */
	uint8_t build_id[RASP_BUILD_ID_MAX];
	size_t build_id_len;
	char *debug_link; /* .gnu_debuglink file name, NULL if none */
	/* A .NET method from its events: path is "Namespace.Name", the name starting at
	 * path + name_at (0: no namespace known), and its ILAsm signature (NULL if none). */
	size_t name_at;
	char *signature;
	uint64_t order; /* when it was added: the latest covering an address wins */
};

struct rasp_modules {
	struct rasp_module *v;
	size_t n, cap;
	bool sorted; /* by (pid, base, order): lookups sort first */
	uint64_t next_order;
};

/* An object loaded at base (LTTng: bin_info, dlopen). 0, -EINVAL (no path or size 0),
 * -ENOMEM. */
int rasp_modules_add(struct rasp_modules *m, int64_t pid, uint64_t base, uint64_t size,
		     const char *path, bool pic);
/* Its build id (LTTng: build_id events, which follow bin_info) or debug link. */
int rasp_modules_set_build_id(struct rasp_modules *m, int64_t pid, uint64_t base, const uint8_t *id,
			      size_t len);
int rasp_modules_set_debug_link(struct rasp_modules *m, int64_t pid, uint64_t base,
				const char *name);
/* A .NET method compiled at [start, start + size), named by its full name. */
int rasp_modules_add_method(struct rasp_modules *m, int64_t pid, uint64_t start, uint64_t size,
			    const char *name);
/* The same from the fields of its event (MethodLoadVerbose, MethodDCEndVerbose): namespace
 * (the declaring type, in the runtime's form; NULL or "" for none), name and signature (NULL
 * for none), which symbols.c writes as the report's names say. */
int rasp_modules_add_clr_method(struct rasp_modules *m, int64_t pid, uint64_t start, uint64_t size,
				const char *ns, const char *name, const char *signature);
/* What holds address ip in process pid: the latest added of those covering it, NULL if none.
 * Sorts the table on first use after an add (n log n), then a binary search. */
const struct rasp_module *rasp_modules_find(struct rasp_modules *m, int64_t pid, uint64_t ip);
void rasp_modules_free(struct rasp_modules *m);

#endif /* RASP_CONSUMER_MODULES_H */
