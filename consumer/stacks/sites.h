/* A stack's site: the frame a report by site names, the innermost one of the program's own
 * code ("just my code"). The frames of the runtime and libraries a program calls into are not
 * the program's: their innermost one is a helper (List<T>.set_Capacity, string.Concat,
 * malloc) that every caller shares, and which of them is innermost depends on what the JIT or
 * the compiler inlined, so a run and the next would name different sites for the same code.
 * Not the program's: .NET's own namespaces (System, Microsoft, Internal, Interop and the
 * runtime's IL stubs), the C and C++ runtimes (libc, libstdc++, libgcc_s, the dynamic
 * loader, libc++), rasp (librasp-malloc, a process's malloc, included), .NET's native
 * runtime (libcoreclr, libclrjit, libSystem.*), frames in no recorded object, and what the
 * user's patterns name. A stack with no frame of the program's own keeps its innermost. No
 * babeltrace2 types. */
#ifndef RASP_CONSUMER_SITES_H
#define RASP_CONSUMER_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

struct rasp_site_rule {
	bool leaf; /* the innermost frame whatever its code (rasp report --site leaf) */
	/* More code that is not the program's: fnmatch(3) patterns matched against a frame's
	 * function (as the report names it, and for .NET in the runtime's form too) and its
	 * object's file name (libfoo.so.1). */
	char *const *exclude;
	size_t nexclude;
};

/* Whether frame f is not the program's own code under rule r (the leaf rule excludes only
 * what the patterns name). */
bool rasp_site_foreign(const struct rasp_site_rule *r, const struct rasp_sym_frame *f);

/* The site of the stack frames[0..n) (innermost first) of process pid: the innermost frame
 * the rule takes for the program's own, else frame 0, named by s; its index in *k. n > 0.
 * 0 or -ENOMEM. */
int rasp_site_of(const struct rasp_site_rule *r, struct rasp_symbols *s, int64_t pid,
		 const uint64_t *frames, size_t n, struct rasp_sym_frame *out, size_t *k);

#endif /* RASP_CONSUMER_SITES_H */
