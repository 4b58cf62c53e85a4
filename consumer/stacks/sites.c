/* A stack's site (sites.h): the rule's built-in lists, the user's patterns, the walk from the
 * innermost frame out. */
#include "sites.h"

#include <fnmatch.h>
#include <string.h>

/* .NET's code by the declaring type's namespace (the runtime's form, as the method events
 * give it): the class libraries, CoreLib's internals, and the stubs the runtime generates. */
static const char *const clr_prefixes[] = {
    "System.", "Microsoft.", "Internal.", "Interop.", "Interop+", "ILStubClass.", "dynamicClass.",
};

/* Native objects by file name. */
static const char *const object_patterns[] = {
    "libc.so*",	      "libc-*.so",	    "libstdc++.so*",   "libgcc_s.so*",
    "ld-linux*.so*",  "ld-*.so*",	    "librasp.so*",     "librasp-lttng.so*",
    "libcoreclr.so*", "libclrjit.so*",	    "libSystem.*.so*", "libhostpolicy.so*",
    "libhostfxr.so*", "librasp-malloc.so*", "libc++.so*",      "libc++abi.so*",
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool any(const char *const *patterns, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (fnmatch(patterns[i], s, 0) == 0)
			return true;
	return false;
}

bool rasp_site_foreign(const struct rasp_site_rule *r, const struct rasp_sym_frame *f)
{
	const struct rasp_module *m = f->module;
	const char *const *user = (const char *const *)r->exclude;

	if (any(user, r->nexclude, f->function) ||
	    (m && any(user, r->nexclude, m->method ? m->path : base_name(m->path))))
		return true;
	if (r->leaf)
		return false;
	if (!m)
		return true; /* in no recorded object: a stub, or code the trace cannot name */
	if (m->method) {
		for (size_t i = 0; i < sizeof(clr_prefixes) / sizeof(clr_prefixes[0]); i++)
			if (strncmp(m->path, clr_prefixes[i], strlen(clr_prefixes[i])) == 0)
				return true;
		return false;
	}
	return any(object_patterns, sizeof(object_patterns) / sizeof(object_patterns[0]),
		   base_name(m->path));
}

int rasp_site_of(const struct rasp_site_rule *r, struct rasp_symbols *s, int64_t pid,
		 const uint64_t *frames, size_t n, struct rasp_sym_frame *out, size_t *k)
{
	int ret;

	for (size_t i = 0; i < n; i++) {
		ret = rasp_symbols_resolve(s, pid, frames[i], out);
		if (ret)
			return ret;
		if (!rasp_site_foreign(r, out)) {
			*k = i;
			return 0;
		}
	}
	*k = 0;
	return rasp_symbols_resolve(s, pid, frames[0], out);
}
