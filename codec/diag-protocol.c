/* The diagnostic IPC protocol's messages (diag-protocol.h). Layouts: docs/diagnostics.md, after
 * .NET's IPC protocol description and what .NET 10 and dotnet-trace 10 were seen to send.
 * Payloads are read through the bounds-checked cursor (cursor.h), like all outside bytes. */
#include "diag-protocol.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cursor.h"
#include "utf.h"

int rasp_diag_header_parse(const uint8_t *b, struct rasp_diag_header *h)
{
	if (memcmp(b, RASP_DIAG_MAGIC, sizeof(RASP_DIAG_MAGIC)) != 0)
		return -EPROTO;
	h->size = (uint16_t)(b[14] | b[15] << 8);
	h->set = b[16];
	h->id = b[17];
	return h->size < RASP_DIAG_HEADER_SIZE ? -EBADMSG : 0;
}

void rasp_diag_header_write(uint8_t *b, uint16_t size, uint8_t set, uint8_t id)
{
	memcpy(b, RASP_DIAG_MAGIC, sizeof(RASP_DIAG_MAGIC));
	b[14] = (uint8_t)size;
	b[15] = (uint8_t)(size >> 8);
	b[16] = set;
	b[17] = id;
	b[18] = b[19] = 0;
}

/* ---- reading a payload --------------------------------------------------------------------- */

/* A payload read through the cursor, and the first reason it is refused. */
struct rd {
	struct rasp_cursor c;
	char *why;
	size_t cap;
	bool bad;
};

__attribute__((format(printf, 2, 3))) static void bad(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	if (r->bad)
		return;
	r->bad = true;
	va_start(ap, fmt);
	if (r->cap)
		vsnprintf(r->why, r->cap, fmt, ap);
	va_end(ap);
}

static uint64_t get(struct rd *r, size_t bytes, const char *what)
{
	uint64_t v = 0;

	if (!r->bad && !rasp_cursor_uint_le(&r->c, bytes, &v))
		bad(r, "the payload ends at byte %zu, inside %s", r->c.len, what);
	return r->bad ? 0 : v;
}

/* A string into out (UTF-8, cap bytes; cap 0: checked and skipped); a null one is "". */
static void get_string(struct rd *r, char *out, size_t cap, const char *what)
{
	size_t at = r->c.pos;
	uint32_t units = (uint32_t)get(r, 4, what);
	const uint8_t *s;

	if (cap)
		out[0] = '\0';
	if (r->bad || units == 0)
		return;
	s = rasp_cursor_peek(&r->c, 2 * (size_t)units);
	if (!s) {
		bad(r, "%s at byte %zu: %u UTF-16 units, past the payload's end (%zu bytes)", what,
		    at, units, r->c.len);
		return;
	}
	if (s[2 * (size_t)units - 2] || s[2 * (size_t)units - 1]) {
		bad(r, "%s at byte %zu: no terminating NUL", what, at);
		return;
	}
	if (cap && rasp_utf16le_to_utf8(s, units - 1, out, cap) == (size_t)-1) {
		bad(r, "%s at byte %zu: %u units, longer than %zu bytes", what, at, units, cap - 1);
		return;
	}
	rasp_cursor_skip(&r->c, 2 * (size_t)units);
}

int rasp_diag_collect_parse(uint8_t id, const uint8_t *p, size_t n, struct rasp_diag_collect *c,
			    char *why, size_t cap)
{
	struct rd r = {.c = rasp_cursor_make(p, n, 0), .why = why, .cap = cap};
	uint32_t count;
	size_t at;

	if (cap)
		why[0] = '\0';
	memset(c, 0, sizeof(*c));
	if (id < RASP_DIAG_EP_COLLECT || id > RASP_DIAG_EP_COLLECT5)
		return -ENOTSUP;
	/* .NET's defaults for what older versions do not carry. */
	c->rundown = true;
	c->stackwalk = true;
	if (id == RASP_DIAG_EP_COLLECT5) {
		c->session_type = (uint32_t)get(&r, 4, "the session type");
		/* Another session type (1: user_events) has its own layout, and rasp runs none:
		 * returned without the rest, for the server to refuse as not supported. */
		if (!r.bad && c->session_type != 0)
			return 0;
	}
	c->buffer_mb = (uint32_t)get(&r, 4, "the buffer size");
	c->format = (uint32_t)get(&r, 4, "the format");
	if (id == RASP_DIAG_EP_COLLECT2 || id == RASP_DIAG_EP_COLLECT3)
		c->rundown = get(&r, 1, "requestRundown") != 0;
	if (id >= RASP_DIAG_EP_COLLECT4) {
		c->rundown_keyword = get(&r, 8, "the rundown keyword");
		c->rundown = c->rundown_keyword != 0;
	}
	if (id >= RASP_DIAG_EP_COLLECT3)
		c->stackwalk = get(&r, 1, "requestStackwalk") != 0;
	at = r.c.pos;
	count = (uint32_t)get(&r, 4, "the provider count");
	if (!r.bad && count > RASP_DIAG_MAX_PROVIDERS)
		bad(&r, "%u providers at byte %zu (at most %d)", count, at,
		    RASP_DIAG_MAX_PROVIDERS);
	for (uint32_t i = 0; i < count && !r.bad; i++) {
		struct rasp_diag_provider *pv = &c->providers[i];
		pv->keywords = get(&r, 8, "a provider's keywords");
		pv->level = (uint32_t)get(&r, 4, "a provider's level");
		at = r.c.pos;
		get_string(&r, pv->name, sizeof(pv->name), "a provider's name");
		if (!r.bad && !pv->name[0])
			bad(&r, "provider %u at byte %zu has no name", i, at);
		/* FilterData (key=value;...): for EventSources rasp does not emit; checked only. */
		get_string(&r, NULL, 0, "a provider's arguments");
		if (id == RASP_DIAG_EP_COLLECT5 && !r.bad) {
			/* The event filter: enable flag and event ids (not applied: rasp's event
			 * ids are few and each session filters by keyword and level). */
			uint32_t ids;

			get(&r, 1, "an event filter's flag");
			at = r.c.pos;
			ids = (uint32_t)get(&r, 4, "an event filter's id count");
			if (!r.bad && !rasp_cursor_skip(&r.c, 4 * (size_t)ids))
				bad(&r, "%u event ids at byte %zu, past the payload's end", ids,
				    at);
		}
		c->nproviders++;
	}
	if (!r.bad && c->buffer_mb == 0)
		bad(&r, "a circular buffer of 0 MB");
	if (!r.bad && count == 0)
		bad(&r, "no provider");
	if (!r.bad && rasp_cursor_left(&r.c))
		bad(&r, "%zu bytes after the last provider (payload of %zu)",
		    rasp_cursor_left(&r.c), n);
	return r.bad ? -EBADMSG : 0;
}

/* ---- writing ------------------------------------------------------------------------------- */

struct wr {
	uint8_t *b;
	size_t cap, off;
	bool full;
};

static void put(struct wr *w, uint64_t v, size_t bytes)
{
	if (w->full || w->cap - w->off < bytes) {
		w->full = true;
		return;
	}
	for (size_t i = 0; i < bytes; i++)
		w->b[w->off++] = (uint8_t)(v >> (8 * i));
}

static void put_string(struct wr *w, const char *s)
{
	size_t at = w->off, n;

	put(w, 0, 4);
	if (w->full)
		return;
	n = rasp_utf8_to_utf16le(s ? s : "", w->b + w->off, w->cap - w->off);
	if (n == (size_t)-1) {
		w->full = true;
		return;
	}
	w->off += n;
	for (int i = 0; i < 4; i++)
		w->b[at + i] = (uint8_t)((n / 2) >> (8 * i));
}

size_t rasp_diag_collect2_write(uint8_t *b, size_t cap, uint32_t buffer_mb, bool rundown,
				const struct rasp_diag_provider *p, size_t n)
{
	struct wr w = {.b = b, .cap = cap, .off = RASP_DIAG_HEADER_SIZE};

	if (cap < RASP_DIAG_HEADER_SIZE)
		return 0;
	put(&w, buffer_mb, 4);
	put(&w, 1, 4); /* NetTrace */
	put(&w, rundown, 1);
	put(&w, n, 4);
	for (size_t i = 0; i < n; i++) {
		put(&w, p[i].keywords, 8);
		put(&w, p[i].level, 4);
		put_string(&w, p[i].name);
		put_string(&w, "");
	}
	if (w.full || w.off > RASP_DIAG_MAX_MESSAGE)
		return 0;
	rasp_diag_header_write(b, (uint16_t)w.off, RASP_DIAG_SET_EVENTPIPE, RASP_DIAG_EP_COLLECT2);
	return w.off;
}

size_t rasp_diag_ok_write(uint8_t *b, size_t cap, const void *payload, size_t n)
{
	if (cap < RASP_DIAG_HEADER_SIZE || cap - RASP_DIAG_HEADER_SIZE < n ||
	    n > RASP_DIAG_MAX_MESSAGE - RASP_DIAG_HEADER_SIZE)
		return 0;
	rasp_diag_header_write(b, (uint16_t)(RASP_DIAG_HEADER_SIZE + n), RASP_DIAG_SET_SERVER,
			       RASP_DIAG_SERVER_OK);
	if (n)
		memcpy(b + RASP_DIAG_HEADER_SIZE, payload, n);
	return RASP_DIAG_HEADER_SIZE + n;
}

size_t rasp_diag_error_write(uint8_t *b, size_t cap, uint32_t hresult)
{
	if (cap < RASP_DIAG_HEADER_SIZE + 4)
		return 0;
	rasp_diag_header_write(b, RASP_DIAG_HEADER_SIZE + 4, RASP_DIAG_SET_SERVER,
			       RASP_DIAG_SERVER_ERROR);
	for (int i = 0; i < 4; i++)
		b[RASP_DIAG_HEADER_SIZE + i] = (uint8_t)(hresult >> (8 * i));
	return RASP_DIAG_HEADER_SIZE + 4;
}

size_t rasp_diag_process_write(uint8_t id, const struct rasp_diag_process *pi, uint8_t *b,
			       size_t cap)
{
	struct wr w = {.b = b, .cap = cap};

	if (id == RASP_DIAG_PROC_INFO3)
		put(&w, 1, 4); /* the reply's version */
	put(&w, pi->pid, 8);
	if (!w.full && w.cap - w.off >= 16) {
		memcpy(w.b + w.off, pi->cookie, 16);
		w.off += 16;
	} else {
		w.full = true;
	}
	put_string(&w, pi->command_line);
	put_string(&w, pi->os);
	put_string(&w, pi->arch);
	if (id == RASP_DIAG_PROC_INFO2 || id == RASP_DIAG_PROC_INFO3) {
		put_string(&w, pi->assembly);
		put_string(&w, pi->version);
	}
	if (id == RASP_DIAG_PROC_INFO3)
		put_string(&w, pi->rid);
	return w.full ? 0 : w.off;
}

int rasp_diag_process_parse(const uint8_t *p, size_t n, uint64_t *pid, char *cmdline, size_t cap)
{
	struct rd r = {.c = rasp_cursor_make(p, n, 0)};

	*pid = get(&r, 8, "the pid");
	if (!r.bad && !rasp_cursor_skip(&r.c, 16))
		bad(&r, "short cookie");
	get_string(&r, cmdline, cap, "the command line");
	return r.bad ? -EBADMSG : 0;
}

/* ---- /proc/net/unix ------------------------------------------------------------------------ */

/* The kernel's flag of a listening socket (__SO_ACCEPTCON), and SOCK_STREAM as it prints it. */
#define UNIX_ACCEPTCON 0x10000UL
#define UNIX_STREAM    1UL

/* The hexadecimal field at *p (after blanks): its value (wrapped past 16 digits), *p past it;
 * false when none. */
static bool hex_field(const char **p, unsigned long *v)
{
	const char *s = *p;
	unsigned long x = 0;
	int digits = 0;

	while (*s == ' ')
		s++;
	for (; digits < 20; s++, digits++) {
		int d = *s >= '0' && *s <= '9'	 ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;

		if (d < 0)
			break;
		x = x << 4 | (unsigned long)d;
	}
	if (!digits || (*s != ' ' && *s != ':'))
		return false;
	*p = s;
	*v = x;
	return true;
}

bool rasp_diag_unix_listens(const char *line, const char *path)
{
	const char *p = line;
	unsigned long v[7];

	/* Num (then ':'), RefCount, Protocol, Flags, Type, St, Inode: Inode is decimal, but
	 * read as hexadecimal digits it still ends where it ends. */
	for (int i = 0; i < 7; i++) {
		if (!hex_field(&p, &v[i]))
			return false;
		if (i == 0 && *p++ != ':')
			return false;
	}
	if (!(v[3] & UNIX_ACCEPTCON) || v[4] != UNIX_STREAM || *p != ' ')
		return false;
	p++;
	/* The path to the line's end, against path, a run of '/' in either as one. */
	while (*path) {
		if (*p != *path)
			return false;
		if (*p == '/') {
			while (*p == '/')
				p++;
			while (*path == '/')
				path++;
		} else {
			p++;
			path++;
		}
	}
	return *p == '\0' || *p == '\n';
}
