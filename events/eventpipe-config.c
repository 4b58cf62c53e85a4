/* .NET's EventPipe startup variables (eventpipe-config.h). The parsing rules are .NET 10's
 * (src/native/eventpipe/ep.c, enable_default_session_via_env_variables): CLRConfig numbers
 * are hexadecimal, keywords hexadecimal, levels decimal, an empty field means "all" and an
 * omitted one keywords 0 / level 5. */
#include "eventpipe-config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rasp-event-desc.h"

#define DEFAULT_PATH	    "trace.nettrace"
#define DEFAULT_CIRCULAR_MB 1024
/* The pool is mapped at once (untouched pages cost nothing); past this the address space is
 * wasted, since per-thread buffers are written out every 100 ms. */
#define MAX_POOL_MB 256
/* The providers of .NET's default session, when EventPipeConfig is empty. */
#define DEFAULT_PROVIDERS                                                                          \
	"Microsoft-Windows-DotNETRuntime:0x4c14fccbd:5,"                                           \
	"Microsoft-Windows-DotNETRuntimePrivate:0x4002000b:5,"                                     \
	"Microsoft-DotNETCore-SampleProfiler:0:5"
#define RASP_PROVIDER "Rasp-Runtime"

__attribute__((format(printf, 3, 4))) static void warn(char *buf, size_t cap, const char *fmt, ...)
{
	size_t used = strnlen(buf, cap);
	va_list ap;

	if (used + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, cap - used, fmt, ap);
	va_end(ap);
}

/* DOTNET_name, else COMPlus_name (the order CLRConfig looks them up in). */
static const char *lookup(const char *(*get)(const char *), const char *name, char *which,
			  size_t cap)
{
	static const char *const prefixes[] = {"DOTNET_", "COMPlus_"};

	for (size_t i = 0; i < 2; i++) {
		const char *v;

		snprintf(which, cap, "%s%s", prefixes[i], name);
		v = get(which);
		if (v)
			return v;
	}
	return NULL;
}

/* A CLRConfig DWORD: hexadecimal, an optional 0x. */
static bool parse_dword(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 16);
	if (errno || end == s || *end || *s == '-' || v > UINT32_MAX)
		return false;
	*out = v;
	return true;
}

struct provider {
	const char *name;
	size_t len;
	uint64_t keywords;
	uint32_t level;
};

static bool event_on(const struct rasp_event_desc *d, const struct provider *p)
{
	return strlen(d->provider) == p->len && strncasecmp(d->provider, p->name, p->len) == 0 &&
	       (d->keywords == 0 || (d->keywords & p->keywords)) &&
	       (p->level == 0 || d->level <= p->level);
}

/* One entry, [s, e): Provider[:Keywords[:Level[:FilterArgs]]]. */
static bool parse_entry(const char *s, const char *e, struct provider *p, char *w, size_t cap)
{
	const char *c1 = memchr(s, ':', (size_t)(e - s)), *c2 = NULL, *lend;
	char num[32], *end;

	p->name = s;
	p->len = (size_t)((c1 ? c1 : e) - s);
	p->keywords = 0;
	p->level = 5;
	if (p->len == 0) {
		warn(w, cap, "EventPipeConfig entry '%.*s' has no provider name; ignored\n",
		     (int)(e - s), s);
		return false;
	}
	if (!c1)
		return true;
	c2 = memchr(c1 + 1, ':', (size_t)(e - c1 - 1));
	if (c2 == c1 + 1 || (!c2 && c1 + 1 == e)) {
		p->keywords = UINT64_MAX; /* an empty field: every keyword */
	} else {
		size_t n = (size_t)((c2 ? c2 : e) - c1 - 1);

		if (n >= sizeof(num))
			goto bad_keywords;
		memcpy(num, c1 + 1, n);
		num[n] = '\0';
		errno = 0;
		p->keywords = strtoull(num, &end, 16);
		if (errno || *end || num[0] == '-')
			goto bad_keywords;
	}
	if (!c2)
		return true;
	lend = memchr(c2 + 1, ':', (size_t)(e - c2 - 1));
	if (!lend)
		lend = e;
	if (lend == c2 + 1) {
		p->level = UINT32_MAX;
	} else {
		size_t n = (size_t)(lend - c2 - 1);
		unsigned long long v;

		if (n >= sizeof(num))
			goto bad_level;
		memcpy(num, c2 + 1, n);
		num[n] = '\0';
		errno = 0;
		v = strtoull(num, &end, 10);
		if (errno || *end || num[0] == '-' || v > UINT32_MAX)
			goto bad_level;
		p->level = (uint32_t)v;
	}
	return true; /* FilterArgs: for EventSources rasp does not emit */
bad_keywords:
	warn(w, cap,
	     "EventPipeConfig entry '%.*s': keywords '%.*s' are not a hexadecimal number; "
	     "entry ignored\n",
	     (int)(e - s), s, (int)((c2 ? c2 : e) - c1 - 1), c1 + 1);
	return false;
bad_level:
	warn(w, cap,
	     "EventPipeConfig entry '%.*s': level '%.*s' is not a decimal number; entry ignored\n",
	     (int)(e - s), s, (int)(lend - c2 - 1), c2 + 1);
	return false;
}

/* The descriptors provider p turns on; *rasp_listed set when it is rasp's own. */
static uint64_t provider_bits(const struct provider *p, bool *rasp_listed)
{
	uint64_t mask = 0;

	if (p->len == strlen(RASP_PROVIDER) && strncasecmp(p->name, RASP_PROVIDER, p->len) == 0)
		*rasp_listed = true;
	for (size_t i = 0; i < rasp_event_ndescs; i++)
		if (rasp_event_descs[i].emitted && event_on(&rasp_event_descs[i], p))
			mask |= UINT64_C(1) << i;
	return mask;
}

static uint64_t finish_mask(uint64_t mask, bool rasp_listed, bool stackwalk)
{
	/* A trace of samples needs the mean they were drawn with: rasp's announcements follow
	 * AllocationSampled unless the user chose for Rasp-Runtime. */
	if (!rasp_listed && (mask >> RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED & 1))
		for (size_t i = 0; i < rasp_event_ndescs; i++)
			if (rasp_event_descs[i].emitted &&
			    strcmp(rasp_event_descs[i].provider, RASP_PROVIDER) == 0)
				mask |= UINT64_C(1) << i;
	/* Stacks: .NET walks the stack of every event of a session unless the stackwalk switch
	 * is off, whatever the keywords; rasp's samples (the only events with stacks) likewise. */
	/* The names of an embedding runtime's frames (MethodLoadVerbose_V1, emitted only before a
	 * stack that holds a frame new since the last announcement) go with the stacks they
	 * name, whatever the keywords and level: a session at Informational, or without the JIT
	 * keyword, would have the frames and not their names. */
	/* So do the loaded objects (ObjectLoaded, the session's own rundown), which name the
	 * native frames. */
	mask &= ~(UINT64_C(1) << RASP_DESC_DOTNETRUNTIME_CLRSTACKWALK |
		  UINT64_C(1) << RASP_DESC_DOTNETRUNTIME_METHODLOADVERBOSE_V1 |
		  UINT64_C(1) << RASP_DESC_RASP_RUNTIME_OBJECTLOADED);
	if (stackwalk && (mask >> RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED & 1))
		mask |= UINT64_C(1) << RASP_DESC_DOTNETRUNTIME_CLRSTACKWALK |
			UINT64_C(1) << RASP_DESC_DOTNETRUNTIME_METHODLOADVERBOSE_V1 |
			UINT64_C(1) << RASP_DESC_RASP_RUNTIME_OBJECTLOADED;
	return mask;
}

uint64_t rasp__ep_config_mask(const char *spec, bool stackwalk, char *w, size_t cap)
{
	uint64_t mask = 0;
	bool rasp_listed = false;
	const char *s;

	_Static_assert(RASP_EVENT_NDESCS <= 64, "one mask bit per event descriptor");
	if (!spec || !*spec)
		spec = DEFAULT_PROVIDERS;
	for (s = spec; *s;) {
		const char *e = strchr(s, ',');
		struct provider p;

		if (!e)
			e = s + strlen(s);
		if (e > s && parse_entry(s, e, &p, w, cap))
			mask |= provider_bits(&p, &rasp_listed);
		s = *e ? e + 1 : e;
	}
	return finish_mask(mask, rasp_listed, stackwalk);
}

uint64_t rasp__ep_providers_mask(const struct rasp__ep_provider *ps, size_t n, bool stackwalk)
{
	uint64_t mask = 0;
	bool rasp_listed = false;

	for (size_t i = 0; i < n; i++) {
		struct provider p = {.name = ps[i].name,
				     .len = strlen(ps[i].name),
				     .keywords = ps[i].keywords,
				     .level = ps[i].level};

		mask |= provider_bits(&p, &rasp_listed);
	}
	return finish_mask(mask, rasp_listed, stackwalk);
}

/* Every {pid} in the path replaced by the process id, as .NET does. */
static bool expand_path(const char *in, long pid, char *out, size_t cap)
{
	size_t used = 0;

	while (*in) {
		int n;

		if (strncmp(in, "{pid}", 5) == 0) {
			n = snprintf(out + used, cap - used, "%ld", pid);
			in += 5;
		} else {
			n = snprintf(out + used, cap - used, "%c", *in);
			in++;
		}
		if (n < 0 || (size_t)n >= cap - used)
			return false;
		used += (size_t)n;
	}
	return used > 0;
}

void rasp__ep_config_read(struct rasp__ep_config *c, const char *(*get)(const char *name), long pid)
{
	char which[64];
	const char *v;
	uint64_t n, stackwalk;

	memset(c, 0, sizeof(*c));
	v = lookup(get, "EnableEventPipe", which, sizeof(which));
	if (!v)
		return;
	if (!parse_dword(v, &n)) {
		warn(c->warnings, sizeof(c->warnings),
		     "%s='%s' is not a hexadecimal number; EventPipe stays off\n", which, v);
		return;
	}
	if (n == 0)
		return;

	v = lookup(get, "EventPipeOutputPath", which, sizeof(which));
	if (!v || !*v)
		v = DEFAULT_PATH;
	if (!expand_path(v, pid, c->path, sizeof(c->path))) {
		warn(c->warnings, sizeof(c->warnings),
		     "%s is longer than %zu bytes once {pid} is replaced; EventPipe stays off\n",
		     which, sizeof(c->path) - 1);
		return;
	}

	c->buffer_bytes = (uint64_t)DEFAULT_CIRCULAR_MB << 20;
	v = lookup(get, "EventPipeCircularMB", which, sizeof(which));
	if (v) {
		if (!parse_dword(v, &n))
			warn(c->warnings, sizeof(c->warnings),
			     "%s='%s' is not a hexadecimal number; %d MB used\n", which, v,
			     DEFAULT_CIRCULAR_MB);
		else
			c->buffer_bytes = (n ? n : 1) << 20;
	}
	if (c->buffer_bytes > (uint64_t)MAX_POOL_MB << 20)
		c->buffer_bytes = (uint64_t)MAX_POOL_MB << 20;

	stackwalk = 1;
	v = lookup(get, "EventPipeEnableStackwalk", which, sizeof(which));
	if (v && !parse_dword(v, &stackwalk))
		warn(c->warnings, sizeof(c->warnings),
		     "%s='%s' is not a hexadecimal number; stacks stay on\n", which, v);
	v = lookup(get, "EventPipeConfig", which, sizeof(which));
	c->mask = rasp__ep_config_mask(v, stackwalk != 0, c->warnings, sizeof(c->warnings));
	c->enabled = true;
}
