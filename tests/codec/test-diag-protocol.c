/* The diagnostic IPC protocol's messages (codec/diag-protocol.c), byte for byte: the 20-byte
 * header both ways, CollectTracing 1 to 5 parsed with .NET's defaults for what each version
 * lacks, the refusals of malformed payloads (every prefix of a valid one, counts past the end,
 * strings without their NUL, empty names, too many providers, a 0 MB buffer, no provider,
 * trailing bytes) each naming where, the OK and error replies, and ProcessInfo 1 to 3 written
 * and read back; listening sockets found in /proc/net/unix lines. The reference is the 119-byte
 * CollectTracing2 message dotnet-trace 10 sends for `--providers
 * Microsoft-Windows-DotNETRuntime:0x80000000000:4`, laid out in the NetTrace notes (section 11.4,
 * checked with strace against .NET 10), written here from that layout, not from the writer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diag-protocol.h"

#define DOTNET_RUNTIME "Microsoft-Windows-DotNETRuntime"

/* Appends hex text ("0a 1b ...", spaces and newlines ignored) to out. */
static size_t hex(uint8_t *out, const char *s)
{
	size_t n = 0;

	while (*s) {
		unsigned v;

		if (*s == ' ' || *s == '\n') {
			s++;
			continue;
		}
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

/* The 119 bytes of section 11.4: header (size 0x77, EventPipe/CollectTracing2), 256 MB, format
 * 1, requestRundown 1, one provider (keywords 0x80000000000, level 4, the runtime's name: 32
 * UTF-16 units with the NUL), arguments "" (count 1 and the NUL). */
static size_t vector(uint8_t *out)
{
	size_t n = 0;

	n += hex(out + n, "44 4f 54 4e 45 54 5f 49 50 43 5f 56 31 00 77 00"
			  "02 03 00 00  00 01 00 00  01 00 00 00  01"
			  "01 00 00 00  00 00 00 00 00 08 00 00  04 00 00 00"
			  "20 00 00 00"
			  "4d 00 69 00 63 00 72 00 6f 00 73 00 6f 00 66 00"
			  "74 00 2d 00 57 00 69 00 6e 00 64 00 6f 00 77 00"
			  "73 00 2d 00 44 00 6f 00 74 00 4e 00 45 00 54 00"
			  "52 00 75 00 6e 00 74 00 69 00 6d 00 65 00 00 00"
			  "01 00 00 00 00 00");
	assert_int_equal(n, 119);
	return n;
}

/* Offsets in the vector's payload (the message less its 20 header bytes). */
enum {
	V_COUNT = 9,	      /* the provider count */
	V_NAME = 25,	      /* the name's unit count */
	V_NAME_NUL = 29 + 62, /* the name's terminating unit */
	V_ARGS = 93,	      /* the arguments' unit count */
	V_ARGS_NUL = 97,      /* their terminating unit */
	V_PAYLOAD = 99,
};

/* A payload under construction. */
struct pl {
	uint8_t b[8192];
	size_t n;
};

static void le(struct pl *p, uint64_t v, size_t bytes)
{
	assert_true(p->n + bytes <= sizeof(p->b));
	for (size_t i = 0; i < bytes; i++)
		p->b[p->n++] = (uint8_t)(v >> (8 * i));
}

/* An ASCII string as the protocol's string: unit count with the NUL, UTF-16LE units; NULL is
 * the null string (count 0). */
static void str(struct pl *p, const char *s)
{
	if (!s) {
		le(p, 0, 4);
		return;
	}
	le(p, strlen(s) + 1, 4);
	for (; *s; s++)
		le(p, (uint8_t)*s, 2);
	le(p, 0, 2);
}

/* A provider_config: keywords, level, name, arguments (filter data). */
static void provider(struct pl *p, uint64_t keywords, uint32_t level, const char *name,
		     const char *args)
{
	le(p, keywords, 8);
	le(p, level, 4);
	str(p, name);
	str(p, args);
}

/* CollectTracing5's event filter after a provider: enable flag, array<uint> of event ids. */
static void filter(struct pl *p, bool enable, const uint32_t *ids, size_t n)
{
	le(p, enable, 1);
	le(p, n, 4);
	for (size_t i = 0; i < n; i++)
		le(p, ids[i], 4);
}

/* Parses p[0..n) from a copy of exactly n bytes (a sanitizer sees any read past it). */
static int parse(uint8_t id, const uint8_t *p, size_t n, struct rasp_diag_collect *c, char *why,
		 size_t cap)
{
	uint8_t *copy = malloc(n ? n : 1);
	int rc;

	assert_non_null(copy);
	if (n)
		memcpy(copy, p, n);
	rc = rasp_diag_collect_parse(id, copy, n, c, why, cap);
	free(copy);
	return rc;
}

/* Asserts that command id refuses p[0..n) as malformed, with a reason containing `says`. */
static void refused(uint8_t id, const uint8_t *p, size_t n, const char *says)
{
	static struct rasp_diag_collect c;
	char why[160];

	memset(why, 'x', sizeof(why));
	assert_int_equal(parse(id, p, n, &c, why, sizeof(why)), -EBADMSG);
	assert_non_null(memchr(why, '\0', sizeof(why)));
	if (!why[0] || !strstr(why, says))
		fail_msg("id %#x, %zu bytes: refused with \"%s\", expected it to say \"%s\"", id, n,
			 why, says);
}

/* ---- the header ---------------------------------------------------------------------------- */

static void parses_the_header(void **state)
{
	struct rasp_diag_header h;
	uint8_t m[128];

	(void)state;
	vector(m);
	assert_int_equal(rasp_diag_header_parse(m, &h), 0);
	assert_int_equal(h.size, 119);
	assert_int_equal(h.set, RASP_DIAG_SET_EVENTPIPE);
	assert_int_equal(h.id, RASP_DIAG_EP_COLLECT2);

	/* ResumeRuntime as dotnet-trace sends it: the header alone. */
	hex(m, "44 4f 54 4e 45 54 5f 49 50 43 5f 56 31 00 14 00 04 01 00 00");
	assert_int_equal(rasp_diag_header_parse(m, &h), 0);
	assert_int_equal(h.size, 20);
	assert_int_equal(h.set, RASP_DIAG_SET_PROCESS);
	assert_int_equal(h.id, RASP_DIAG_PROC_RESUME);

	/* The largest size: a u16, little-endian. */
	m[14] = 0xff;
	m[15] = 0xff;
	assert_int_equal(rasp_diag_header_parse(m, &h), 0);
	assert_int_equal(h.size, 65535);
}

static void refuses_a_bad_header(void **state)
{
	struct rasp_diag_header h;
	uint8_t m[128];

	(void)state;
	/* The magic the runtime answers with 0x80131386, its NUL included. */
	vector(m);
	m[12] = '2';
	assert_int_equal(rasp_diag_header_parse(m, &h), -EPROTO);
	vector(m);
	m[13] = ' ';
	assert_int_equal(rasp_diag_header_parse(m, &h), -EPROTO);
	vector(m);
	m[0] = 'd';
	assert_int_equal(rasp_diag_header_parse(m, &h), -EPROTO);
	memcpy(m, "ADVR_V1\0", 8); /* the reverse protocol's advertise message */
	assert_int_equal(rasp_diag_header_parse(m, &h), -EPROTO);

	/* A size smaller than the header itself. */
	vector(m);
	for (unsigned size = 0; size < 20; size++) {
		m[14] = (uint8_t)size;
		m[15] = 0;
		assert_int_equal(rasp_diag_header_parse(m, &h), -EBADMSG);
	}
	m[14] = 20;
	assert_int_equal(rasp_diag_header_parse(m, &h), 0);
	/* 0x0113 = 275: the high byte counts. */
	m[14] = 0x13;
	m[15] = 0x01;
	assert_int_equal(rasp_diag_header_parse(m, &h), 0);
	assert_int_equal(h.size, 275);
}

static void writes_the_header(void **state)
{
	static const struct {
		uint16_t size;
		uint8_t set, id;
		const char *tail; /* bytes 14..19 */
	} cases[] = {
	    {119, 0x02, 0x03, "77 00 02 03 00 00"},
	    {20, 0xff, 0x00, "14 00 ff 00 00 00"},
	    {0x1234, 0x04, 0x08, "34 12 04 08 00 00"},
	    {65535, 0xff, 0xff, "ff ff ff ff 00 00"},
	};
	uint8_t b[24], want[20];
	struct rasp_diag_header h;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(b, 0xa5, sizeof(b));
		memcpy(want, "DOTNET_IPC_V1", 14);
		assert_int_equal(hex(want + 14, cases[i].tail), 6);
		rasp_diag_header_write(b, cases[i].size, cases[i].set, cases[i].id);
		assert_memory_equal(b, want, 20);
		for (size_t k = 20; k < sizeof(b); k++)
			assert_int_equal(b[k], 0xa5);
		assert_int_equal(rasp_diag_header_parse(b, &h), 0);
		assert_int_equal(h.size, cases[i].size);
		assert_int_equal(h.set, cases[i].set);
		assert_int_equal(h.id, cases[i].id);
	}
}

/* ---- CollectTracing ------------------------------------------------------------------------ */

/* What dotnet-trace sends, read as the runtime reads it. */
static void parses_the_dotnet_trace_request(void **state)
{
	static struct rasp_diag_collect c;
	struct rasp_diag_header h;
	uint8_t m[128];
	char why[160];

	(void)state;
	vector(m);
	assert_int_equal(rasp_diag_header_parse(m, &h), 0);
	assert_int_equal(h.size - RASP_DIAG_HEADER_SIZE, V_PAYLOAD);
	assert_int_equal(parse(h.id, m + RASP_DIAG_HEADER_SIZE, V_PAYLOAD, &c, why, sizeof(why)),
			 0);
	assert_string_equal(why, "");
	assert_int_equal(c.session_type, 0);
	assert_int_equal(c.buffer_mb, 256);
	assert_int_equal(c.format, 1);
	assert_true(c.rundown);
	assert_int_equal(c.rundown_keyword, 0);
	assert_true(c.stackwalk); /* not in version 2: the runtime's default */
	assert_int_equal(c.nproviders, 1);
	assert_int_equal(c.providers[0].keywords, UINT64_C(0x80000000000));
	assert_int_equal(c.providers[0].level, 4);
	assert_string_equal(c.providers[0].name, DOTNET_RUNTIME);

	/* requestRundown 0. */
	m[RASP_DIAG_HEADER_SIZE + 8] = 0;
	assert_int_equal(parse(h.id, m + RASP_DIAG_HEADER_SIZE, V_PAYLOAD, &c, why, sizeof(why)),
			 0);
	assert_false(c.rundown);
	assert_true(c.stackwalk);
}

/* And written as dotnet-trace writes it, byte for byte. */
static void writes_the_dotnet_trace_request(void **state)
{
	struct rasp_diag_provider p = {
	    .keywords = UINT64_C(0x80000000000), .level = 4, .name = DOTNET_RUNTIME};
	uint8_t want[128], b[256];

	(void)state;
	vector(want);
	memset(b, 0xa5, sizeof(b));
	assert_int_equal(rasp_diag_collect2_write(b, sizeof(b), 256, true, &p, 1), 119);
	assert_memory_equal(b, want, 119);
	assert_int_equal(b[119], 0xa5);

	/* Exactly the room it needs; less is refused, nothing written past cap. */
	assert_int_equal(rasp_diag_collect2_write(b, 119, 256, true, &p, 1), 119);
	assert_memory_equal(b, want, 119);
	for (size_t cap = 0; cap < 119; cap++) {
		memset(b, 0xa5, sizeof(b));
		assert_int_equal(rasp_diag_collect2_write(b, cap, 256, true, &p, 1), 0);
		for (size_t k = cap; k < sizeof(b); k++)
			assert_int_equal(b[k], 0xa5);
	}
}

/* Written, then read back: two providers, a name outside ASCII, no rundown. */
static void writes_what_it_reads(void **state)
{
	static struct rasp_diag_provider p[RASP_DIAG_MAX_PROVIDERS + 1];
	static struct rasp_diag_collect c;
	static uint8_t b[70000];
	struct rasp_diag_header h;
	char why[160];
	size_t len;

	(void)state;
	p[0] = (struct rasp_diag_provider){.keywords = 1, .level = 5, .name = DOTNET_RUNTIME};
	p[1] = (struct rasp_diag_provider){
	    .keywords = UINT64_MAX, .level = 0, .name = "Caf\xc3\xa9-\xf0\x9f\x94\xa5"};
	len = rasp_diag_collect2_write(b, sizeof(b), 1, false, p, 2);
	/* 33 bytes before the providers, 12 + 4 + 64 + 6 and 12 + 4 + 16 + 6 for them. */
	assert_int_equal(len, 33 + 86 + 38);
	assert_int_equal(rasp_diag_header_parse(b, &h), 0);
	assert_int_equal(h.size, len);
	assert_int_equal(parse(h.id, b + 20, len - 20, &c, why, sizeof(why)), 0);
	assert_int_equal(c.buffer_mb, 1);
	assert_false(c.rundown);
	assert_int_equal(c.nproviders, 2);
	assert_int_equal(c.providers[1].keywords, UINT64_MAX);
	assert_int_equal(c.providers[1].level, 0);
	assert_string_equal(c.providers[1].name, p[1].name);

	/* More than a message holds (u16 size): refused. */
	for (size_t i = 0; i <= RASP_DIAG_MAX_PROVIDERS; i++) {
		memset(p[i].name, 'P', sizeof(p[i].name) - 1);
		p[i].name[sizeof(p[i].name) - 1] = '\0';
	}
	len = rasp_diag_collect2_write(b, sizeof(b), 1, true, p, RASP_DIAG_MAX_PROVIDERS);
	assert_true(len > 30000 && len <= RASP_DIAG_MAX_MESSAGE);
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT2, b + 20, len - 20, &c, why, sizeof(why)), 0);
	assert_int_equal(c.nproviders, RASP_DIAG_MAX_PROVIDERS);
	assert_int_equal(strlen(c.providers[63].name), RASP_DIAG_MAX_PROVIDER_NAME - 1);
	{
		static struct rasp_diag_provider many[130];

		for (size_t i = 0; i < 130; i++)
			many[i] = p[0];
		assert_int_equal(rasp_diag_collect2_write(b, sizeof(b), 1, true, many, 130), 0);
	}
}

/* CollectTracing (0x02): no requestRundown, no requestStackwalk; both default to true. */
static void parses_collect_tracing(void **state)
{
	static struct rasp_diag_collect c;
	static struct pl p;
	char why[160];

	(void)state;
	p.n = 0;
	le(&p, 10, 4);
	le(&p, 1, 4);
	le(&p, 2, 4);
	provider(&p, UINT64_C(0x80000000000), 4, DOTNET_RUNTIME, NULL);
	provider(&p, 0x3, 2, "MyEventSource", "key=value;other=2");
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_int_equal(c.buffer_mb, 10);
	assert_int_equal(c.format, 1);
	assert_true(c.rundown);
	assert_int_equal(c.rundown_keyword, 0);
	assert_true(c.stackwalk);
	assert_int_equal(c.nproviders, 2);
	assert_string_equal(c.providers[0].name, DOTNET_RUNTIME);
	assert_int_equal(c.providers[1].keywords, 3);
	assert_int_equal(c.providers[1].level, 2);
	assert_string_equal(c.providers[1].name, "MyEventSource");

	/* The format is reported, not judged here (the server refuses NetPerf). */
	p.b[4] = 0;
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_int_equal(c.format, 0);

	/* dotnet-trace's CollectTracing2 payload is not a CollectTracing one: its rundown byte
	 * becomes the low byte of a provider count of 257. */
	{
		uint8_t m[128];

		vector(m);
		refused(RASP_DIAG_EP_COLLECT, m + 20, V_PAYLOAD, "257 providers at byte 8");
	}
}

/* CollectTracing3 (0x04): both flags, each honoured. */
static void parses_collect_tracing3(void **state)
{
	static struct rasp_diag_collect c;
	static struct pl p;
	char why[160];

	(void)state;
	for (int rundown = 0; rundown < 2; rundown++)
		for (int stackwalk = 0; stackwalk < 2; stackwalk++) {
			p.n = 0;
			le(&p, 64, 4);
			le(&p, 1, 4);
			le(&p, rundown, 1);
			le(&p, stackwalk, 1);
			le(&p, 1, 4);
			provider(&p, 0x1, 5, DOTNET_RUNTIME, "");
			assert_int_equal(
			    parse(RASP_DIAG_EP_COLLECT3, p.b, p.n, &c, why, sizeof(why)), 0);
			assert_int_equal(c.rundown, rundown);
			assert_int_equal(c.stackwalk, stackwalk);
			assert_int_equal(c.buffer_mb, 64);
			assert_int_equal(c.nproviders, 1);
			assert_int_equal(c.providers[0].level, 5);
		}
	/* Any non-zero byte is true. */
	p.b[8] = 0x80;
	p.b[9] = 0xff;
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT3, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_true(c.rundown);
	assert_true(c.stackwalk);
}

/* CollectTracing4 (0x05): a rundown keyword instead of the flag; rundown when it is not 0. */
static void parses_collect_tracing4(void **state)
{
	static struct rasp_diag_collect c;
	static struct pl p;
	char why[160];

	(void)state;
	p.n = 0;
	le(&p, 256, 4);
	le(&p, 1, 4);
	le(&p, 0x80020139, 8); /* dotnet-trace's default */
	le(&p, 1, 1);
	le(&p, 1, 4);
	provider(&p, UINT64_C(0x80000000000), 4, DOTNET_RUNTIME, "");
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT4, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_int_equal(c.rundown_keyword, 0x80020139);
	assert_true(c.rundown);
	assert_true(c.stackwalk);
	assert_int_equal(c.nproviders, 1);
	assert_string_equal(c.providers[0].name, DOTNET_RUNTIME);

	memset(p.b + 8, 0, 8); /* keyword 0: no rundown */
	p.b[16] = 0;	       /* no stacks */
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT4, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_int_equal(c.rundown_keyword, 0);
	assert_false(c.rundown);
	assert_false(c.stackwalk);

	/* Only the high byte set: all eight bytes are read. */
	p.b[15] = 0x80;
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT4, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_int_equal(c.rundown_keyword, UINT64_C(0x8000000000000000));
	assert_true(c.rundown);
}

/* The CollectTracing5 payload of an IPC-stream session with two providers and event filters. */
static void collect5(struct pl *p)
{
	static const uint32_t ids[] = {10, 20, 30};

	p->n = 0;
	le(p, 0, 4); /* session type: IPC stream */
	le(p, 32, 4);
	le(p, 1, 4);
	le(p, 0x80020139, 8);
	le(p, 0, 1); /* requestStackwalk */
	le(p, 2, 4);
	provider(p, UINT64_C(0x80000000000), 4, DOTNET_RUNTIME, NULL);
	filter(p, true, ids, 3);
	provider(p, UINT64_MAX, 0, "MyEventSource", "key=value");
	filter(p, false, NULL, 0);
}

/* CollectTracing5 (0x06): session type first, an event filter after each provider. */
static void parses_collect_tracing5(void **state)
{
	static struct rasp_diag_collect c;
	static struct pl p;
	char why[160];

	(void)state;
	collect5(&p);
	assert_int_equal(p.n, 4 + 4 + 4 + 8 + 1 + 4 + (12 + 4 + 64 + 4 + 1 + 4 + 12) +
				  (12 + 4 + 28 + 4 + 20 + 1 + 4));
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT5, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_int_equal(c.session_type, 0);
	assert_int_equal(c.buffer_mb, 32);
	assert_int_equal(c.format, 1);
	assert_int_equal(c.rundown_keyword, 0x80020139);
	assert_true(c.rundown);
	assert_false(c.stackwalk);
	assert_int_equal(c.nproviders, 2);
	assert_int_equal(c.providers[0].keywords, UINT64_C(0x80000000000));
	assert_int_equal(c.providers[0].level, 4);
	assert_string_equal(c.providers[0].name, DOTNET_RUNTIME);
	assert_int_equal(c.providers[1].keywords, UINT64_MAX);
	assert_string_equal(c.providers[1].name, "MyEventSource");

	/* Read as CollectTracing4 (no session type, no filters), the filter bytes are misread as
	 * the next provider and the request is refused, not half accepted. */
	refused(RASP_DIAG_EP_COLLECT4, p.b + 4, p.n - 4, "byte");

	/* A user_events session (type 1), laid out as .NET 10 does (no stackwalk flag, a
	 * tracepoint configuration after each filter): reported by its type alone, for the
	 * server to refuse as not supported. */
	p.n = 0;
	le(&p, 1, 4);
	le(&p, 0x80020139, 8);
	le(&p, 1, 4);
	provider(&p, 0x80000000000, 4, DOTNET_RUNTIME, NULL);
	filter(&p, false, NULL, 0);
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT5, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_int_equal(c.session_type, 1);
	assert_int_equal(c.nproviders, 0);
}

/* ---- refusals ------------------------------------------------------------------------------ */

/* Every proper prefix of a valid payload is refused, saying where it ends; none crashes. */
static void refuses_every_truncation(void **state)
{
	static struct pl p;
	uint8_t m[128];

	(void)state;
	vector(m);
	for (size_t n = 0; n < V_PAYLOAD; n++)
		refused(RASP_DIAG_EP_COLLECT2, m + 20, n, "byte");
	collect5(&p);
	for (size_t n = 0; n < p.n; n++)
		refused(RASP_DIAG_EP_COLLECT5, p.b, n, "byte");
	/* The exact reason where the field is cut. */
	refused(RASP_DIAG_EP_COLLECT2, m + 20, 0, "ends at byte 0, inside the buffer size");
	refused(RASP_DIAG_EP_COLLECT2, m + 20, 6, "ends at byte 6, inside the format");
	refused(RASP_DIAG_EP_COLLECT2, m + 20, 8, "inside requestRundown");
	refused(RASP_DIAG_EP_COLLECT2, m + 20, 12, "inside the provider count");
	refused(RASP_DIAG_EP_COLLECT2, m + 20, 20, "inside a provider's keywords");
	refused(RASP_DIAG_EP_COLLECT2, m + 20, 24, "inside a provider's level");
	refused(RASP_DIAG_EP_COLLECT2, m + 20, V_NAME + 5, "a provider's name at byte 25");
	refused(RASP_DIAG_EP_COLLECT2, m + 20, V_ARGS + 5, "a provider's arguments at byte 93");
	refused(RASP_DIAG_EP_COLLECT5, p.b, 2, "inside the session type");
	refused(RASP_DIAG_EP_COLLECT5, p.b, 19, "inside the rundown keyword");
	refused(RASP_DIAG_EP_COLLECT5, p.b, 20, "inside requestStackwalk");
	refused(RASP_DIAG_EP_COLLECT5, p.b, 21, "inside the provider count");
	refused(RASP_DIAG_EP_COLLECT5, p.b, 109, "inside an event filter's flag");
	refused(RASP_DIAG_EP_COLLECT5, p.b, 112, "inside an event filter's id count");
	refused(RASP_DIAG_EP_COLLECT5, p.b, 125, "3 event ids at byte 110, past the payload's end");
	refused(RASP_DIAG_EP_COLLECT5, p.b, 194, "ends at byte 194, inside an event filter's flag");
}

static void refuses_bad_strings(void **state)
{
	static struct pl p;
	uint8_t m[128], *pl = m + 20;

	(void)state;
	/* A count past the end: 36 units (72 bytes) where 70 bytes are left. */
	vector(m);
	pl[V_NAME] = 36;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD,
		"a provider's name at byte 25: 36 UTF-16 units, past the payload's end (99 bytes)");
	pl[V_NAME] = 0xff;
	pl[V_NAME + 3] = 0xff;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD, "4278190335 UTF-16 units");
	vector(m);
	pl[V_ARGS] = 2;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD, "a provider's arguments at byte 93");

	/* No terminating NUL (either byte of the last unit). */
	vector(m);
	pl[V_NAME_NUL] = 'x';
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD,
		"a provider's name at byte 25: no terminating NUL");
	vector(m);
	pl[V_NAME_NUL + 1] = 0x01;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD,
		"a provider's name at byte 25: no terminating NUL");
	vector(m);
	pl[V_ARGS_NUL] = 'a';
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD,
		"a provider's arguments at byte 93: no terminating NUL");
	/* A name one unit short, so its NUL falls inside the arguments' count. */
	vector(m);
	pl[V_NAME] = 31;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD, "no terminating NUL");

	/* An empty name: null (count 0) or "" (count 1). */
	p.n = 0;
	le(&p, 1, 4);
	le(&p, 1, 4);
	le(&p, 1, 1);
	le(&p, 1, 4);
	provider(&p, 1, 4, NULL, "");
	refused(RASP_DIAG_EP_COLLECT2, p.b, p.n, "provider 0 at byte 25 has no name");
	p.n = 0;
	le(&p, 1, 4);
	le(&p, 1, 4);
	le(&p, 1, 1);
	le(&p, 2, 4);
	provider(&p, 1, 4, DOTNET_RUNTIME, "");
	provider(&p, 1, 4, "", "");
	refused(RASP_DIAG_EP_COLLECT2, p.b, p.n, "provider 1 at byte 111 has no name");

	/* The longest name that fits: 255 bytes of UTF-8; one more is refused. */
	{
		static struct rasp_diag_collect c;
		char name[RASP_DIAG_MAX_PROVIDER_NAME + 1], why[160];

		memset(name, 'N', sizeof(name) - 1);
		name[RASP_DIAG_MAX_PROVIDER_NAME - 1] = '\0';
		p.n = 0;
		le(&p, 1, 4);
		le(&p, 1, 4);
		le(&p, 1, 1);
		le(&p, 1, 4);
		provider(&p, 1, 4, name, "");
		assert_int_equal(parse(RASP_DIAG_EP_COLLECT2, p.b, p.n, &c, why, sizeof(why)), 0);
		assert_int_equal(strlen(c.providers[0].name), 255);
		name[RASP_DIAG_MAX_PROVIDER_NAME - 1] = 'N';
		name[RASP_DIAG_MAX_PROVIDER_NAME] = '\0';
		p.n = 13;
		provider(&p, 1, 4, name, "");
		refused(RASP_DIAG_EP_COLLECT2, p.b, p.n,
			"a provider's name at byte 25: 257 units, longer than 255 bytes");
	}
}

static void refuses_bad_counts_and_values(void **state)
{
	static struct rasp_diag_collect c;
	static struct pl p;
	uint8_t m[128], *pl = m + 20;
	char why[160];

	(void)state;
	/* More providers than RASP_DIAG_MAX_PROVIDERS; exactly as many is fine. */
	vector(m);
	pl[V_COUNT] = RASP_DIAG_MAX_PROVIDERS + 1;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD, "65 providers at byte 9 (at most 64)");
	pl[V_COUNT] = 0xff;
	pl[V_COUNT + 3] = 0xff;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD, "4278190335 providers at byte 9");
	p.n = 0;
	le(&p, 1, 4);
	le(&p, 1, 4);
	le(&p, 1, 1);
	le(&p, RASP_DIAG_MAX_PROVIDERS, 4);
	for (int i = 0; i < RASP_DIAG_MAX_PROVIDERS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "P%d", i);
		provider(&p, (uint64_t)i, 4, name, "");
	}
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT2, p.b, p.n, &c, why, sizeof(why)), 0);
	assert_int_equal(c.nproviders, RASP_DIAG_MAX_PROVIDERS);
	assert_string_equal(c.providers[63].name, "P63");
	assert_int_equal(c.providers[63].keywords, 63);

	/* A 0 MB circular buffer. */
	vector(m);
	memset(pl, 0, 4);
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD, "0 MB");

	/* No provider. */
	vector(m);
	pl[V_COUNT] = 0;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_COUNT + 4, "no provider");

	/* Bytes after the last provider. */
	vector(m);
	m[119] = 0;
	refused(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD + 1,
		"1 bytes after the last provider (payload of 100)");
	collect5(&p);
	le(&p, 0, 4);
	refused(RASP_DIAG_EP_COLLECT5, p.b, p.n, "4 bytes after the last provider");

	/* An event-id count past the end. */
	collect5(&p);
	p.b[p.n - 4] = 1;
	refused(RASP_DIAG_EP_COLLECT5, p.b, p.n, "1 event ids at byte 195, past the payload's end");
	collect5(&p);
	memset(p.b + p.n - 4, 0xff, 4);
	refused(RASP_DIAG_EP_COLLECT5, p.b, p.n, "4294967295 event ids at byte 195");

	/* The reason is cut to the caller's room, still a string; no room is no reason. */
	vector(m);
	memset(pl, 0, 4);
	memset(why, 'x', sizeof(why));
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD, &c, why, 5), -EBADMSG);
	assert_int_equal(strlen(why), 4);
	assert_int_equal(why[5], 'x');
	assert_int_equal(parse(RASP_DIAG_EP_COLLECT2, pl, V_PAYLOAD, &c, NULL, 0), -EBADMSG);
}

/* Commands other than CollectTracing 1 to 5: not supported, the result cleared. */
static void refuses_other_commands(void **state)
{
	static const uint8_t ids[] = {0x00, RASP_DIAG_EP_STOP, 0x07, 0x08, 0x80, 0xff};
	static struct rasp_diag_collect c;
	uint8_t m[128];
	char why[160];

	(void)state;
	vector(m);
	for (size_t i = 0; i < sizeof(ids); i++) {
		memset(&c, 0xa5, sizeof(c));
		strcpy(why, "stale");
		assert_int_equal(parse(ids[i], m + 20, V_PAYLOAD, &c, why, sizeof(why)), -ENOTSUP);
		assert_string_equal(why, "");
		assert_int_equal(c.nproviders, 0);
		assert_int_equal(c.buffer_mb, 0);
	}
}

/* ---- replies ------------------------------------------------------------------------------- */

static void writes_replies(void **state)
{
	uint8_t b[64], want[64];
	static const uint8_t sid[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	size_t n;

	(void)state;
	/* OK + the ResumeRuntime reply's 4 zero bytes, as .NET 10 answers. */
	memset(b, 0xa5, sizeof(b));
	n = hex(want, "44 4f 54 4e 45 54 5f 49 50 43 5f 56 31 00 18 00 ff 00 00 00 00 00 00 00");
	assert_int_equal(rasp_diag_ok_write(b, sizeof(b), "\0\0\0", 4), 24);
	assert_memory_equal(b, want, n);
	assert_int_equal(b[24], 0xa5);
	/* OK + a session id: 28 bytes. */
	assert_int_equal(rasp_diag_ok_write(b, 28, sid, 8), 28);
	assert_int_equal(b[14], 28);
	assert_memory_equal(b + 20, sid, 8);
	assert_int_equal(rasp_diag_ok_write(b, 27, sid, 8), 0);
	/* OK alone. */
	assert_int_equal(rasp_diag_ok_write(b, 20, NULL, 0), 20);
	assert_memory_equal(b, want, 14);
	assert_int_equal(b[14], 20);
	assert_int_equal(b[16], 0xff);
	assert_int_equal(b[17], 0x00);
	assert_int_equal(rasp_diag_ok_write(b, 19, NULL, 0), 0);
	/* A payload the u16 size cannot carry. */
	{
		static uint8_t big[70000], pay[70000];

		assert_int_equal(rasp_diag_ok_write(big, sizeof(big), pay, 65515), 65535);
		assert_int_equal(big[14], 0xff);
		assert_int_equal(big[15], 0xff);
		assert_int_equal(rasp_diag_ok_write(big, sizeof(big), pay, 65516), 0);
	}

	/* Error: FF FF + the HRESULT, little-endian; 24 bytes. */
	memset(b, 0xa5, sizeof(b));
	n = hex(want, "44 4f 54 4e 45 54 5f 49 50 43 5f 56 31 00 18 00 ff ff 00 00 85 13 13 80");
	assert_int_equal(rasp_diag_error_write(b, sizeof(b), RASP_DIAG_E_UNKNOWN_COMMAND), 24);
	assert_memory_equal(b, want, n);
	assert_int_equal(b[24], 0xa5);
	assert_int_equal(rasp_diag_error_write(b, 24, RASP_DIAG_E_UNKNOWN_MAGIC), 24);
	assert_memory_equal(b + 20, "\x86\x13\x13\x80", 4);
	assert_int_equal(rasp_diag_error_write(b, 24, RASP_DIAG_E_NOT_SUPPORTED), 24);
	assert_memory_equal(b + 20, "\x15\x15\x13\x80", 4);
	assert_int_equal(rasp_diag_error_write(b, 24, RASP_DIAG_E_BAD_ENCODING), 24);
	assert_memory_equal(b + 20, "\x84\x13\x13\x80", 4);
	assert_int_equal(rasp_diag_error_write(b, 24, RASP_DIAG_E_FAIL), 24);
	assert_memory_equal(b + 20, "\x05\x40\x00\x80", 4);
	memset(b, 0xa5, sizeof(b));
	assert_int_equal(rasp_diag_error_write(b, 23, RASP_DIAG_E_FAIL), 0);
	assert_int_equal(b[0], 0xa5);
}

/* ---- ProcessInfo --------------------------------------------------------------------------- */

/* Reads a protocol string at *off as ASCII (a unit above 0x7f fails the test) into out. */
static void read_str(const uint8_t *b, size_t n, size_t *off, char *out, size_t cap)
{
	uint32_t units;

	assert_true(n - *off >= 4);
	units = (uint32_t)b[*off] | (uint32_t)b[*off + 1] << 8 | (uint32_t)b[*off + 2] << 16 |
		(uint32_t)b[*off + 3] << 24;
	*off += 4;
	out[0] = '\0';
	if (units == 0)
		return;
	assert_true(units <= cap && (n - *off) / 2 >= units);
	for (uint32_t i = 0; i < units; i++) {
		assert_int_equal(b[*off + 2 * i + 1], 0);
		assert_true(b[*off + 2 * i] < 0x80);
		out[i] = (char)b[*off + 2 * i];
	}
	assert_int_equal(out[units - 1], '\0'); /* the count includes the NUL */
	*off += 2 * (size_t)units;
}

static const struct rasp_diag_process pinfo = {
    .pid = UINT64_C(0x0000123456789abc),
    .cookie = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
	       0xee, 0xff},
    .command_line = "/usr/share/dotnet/dotnet /path/Oracle.dll 2 100000",
    .os = "Linux",
    .arch = "x64",
    .assembly = "Oracle",
    .version = "10.0.12",
    .rid = "linux-x64",
};

/* ProcessInfo 1, 2 and 3, decoded field by field. */
static void writes_process_info(void **state)
{
	static const struct {
		uint8_t id;
		size_t len;
	} cases[] = {
	    /* pid, cookie; the strings: 51, 6, 4 units; 7, 8; 10. */
	    {RASP_DIAG_PROC_INFO, 8 + 16 + (4 + 102) + (4 + 12) + (4 + 8)},
	    {RASP_DIAG_PROC_INFO2, 8 + 16 + (4 + 102) + (4 + 12) + (4 + 8) + (4 + 14) + (4 + 16)},
	    {RASP_DIAG_PROC_INFO3,
	     4 + 8 + 16 + (4 + 102) + (4 + 12) + (4 + 8) + (4 + 14) + (4 + 16) + (4 + 20)},
	};
	uint8_t b[512];
	char s[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t id = cases[i].id;
		size_t n, off = 0;

		memset(b, 0xa5, sizeof(b));
		n = rasp_diag_process_write(id, &pinfo, b, sizeof(b));
		assert_int_equal(n, cases[i].len);
		assert_int_equal(b[n], 0xa5);
		if (id == RASP_DIAG_PROC_INFO3) {
			assert_memory_equal(b, "\x01\x00\x00\x00", 4); /* version 1 */
			off = 4;
		}
		assert_memory_equal(b + off, "\xbc\x9a\x78\x56\x34\x12\x00\x00", 8);
		off += 8;
		assert_memory_equal(b + off, pinfo.cookie, 16);
		off += 16;
		read_str(b, n, &off, s, sizeof(s));
		assert_string_equal(s, pinfo.command_line);
		read_str(b, n, &off, s, sizeof(s));
		assert_string_equal(s, "Linux");
		read_str(b, n, &off, s, sizeof(s));
		assert_string_equal(s, "x64");
		if (id != RASP_DIAG_PROC_INFO) {
			read_str(b, n, &off, s, sizeof(s));
			assert_string_equal(s, "Oracle");
			read_str(b, n, &off, s, sizeof(s));
			assert_string_equal(s, "10.0.12");
		}
		if (id == RASP_DIAG_PROC_INFO3) {
			read_str(b, n, &off, s, sizeof(s));
			assert_string_equal(s, "linux-x64");
		}
		assert_int_equal(off, n);

		/* Every smaller buffer: 0, nothing written past it. */
		for (size_t cap = 0; cap < n; cap++) {
			memset(b, 0xa5, sizeof(b));
			assert_int_equal(rasp_diag_process_write(id, &pinfo, b, cap), 0);
			for (size_t k = cap; k < sizeof(b); k++)
				assert_int_equal(b[k], 0xa5);
		}
		assert_int_equal(rasp_diag_process_write(id, &pinfo, b, n), n);
	}

	/* The first version, byte for byte, with a NULL string written as "". */
	{
		struct rasp_diag_process pi = {
		    .pid = 42, .command_line = "a", .os = NULL, .arch = "x64"};
		uint8_t want[64];
		size_t n = hex(want, "2a 00 00 00 00 00 00 00"
				     "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
				     "02 00 00 00 61 00 00 00"
				     "01 00 00 00 00 00"
				     "04 00 00 00 78 00 36 00 34 00 00 00");

		assert_int_equal(rasp_diag_process_write(RASP_DIAG_PROC_INFO, &pi, b, sizeof(b)),
				 n);
		assert_memory_equal(b, want, n);
	}
}

static void reads_process_info(void **state)
{
	uint8_t b[512];
	char cmdline[128];
	uint64_t pid = 0;
	size_t n;

	(void)state;
	for (uint8_t id = 0; id <= RASP_DIAG_PROC_INFO2; id += RASP_DIAG_PROC_INFO2) {
		n = rasp_diag_process_write(id, &pinfo, b, sizeof(b));
		assert_true(n > 0);
		memset(cmdline, 'x', sizeof(cmdline));
		assert_int_equal(rasp_diag_process_parse(b, n, &pid, cmdline, sizeof(cmdline)), 0);
		assert_int_equal(pid, pinfo.pid);
		assert_string_equal(cmdline, pinfo.command_line);
	}

	/* The command line needs 50 bytes and its NUL. */
	n = rasp_diag_process_write(RASP_DIAG_PROC_INFO, &pinfo, b, sizeof(b));
	assert_int_equal(rasp_diag_process_parse(b, n, &pid, cmdline, 51), 0);
	assert_string_equal(cmdline, pinfo.command_line);
	assert_int_equal(rasp_diag_process_parse(b, n, &pid, cmdline, 50), -EBADMSG);

	/* Cut anywhere up to the command line's end: refused. */
	for (size_t k = 0; k < 8 + 16 + 4 + 102; k++) {
		uint8_t *copy = malloc(k ? k : 1);

		assert_non_null(copy);
		memcpy(copy, b, k);
		assert_int_equal(rasp_diag_process_parse(copy, k, &pid, cmdline, sizeof(cmdline)),
				 -EBADMSG);
		free(copy);
	}
	/* A command line without its NUL. */
	b[8 + 16 + 4 + 100] = 'x';
	assert_int_equal(rasp_diag_process_parse(b, n, &pid, cmdline, sizeof(cmdline)), -EBADMSG);
	/* A null command line reads as "". */
	memset(b + 24, 0, 4);
	memset(cmdline, 'x', sizeof(cmdline));
	assert_int_equal(rasp_diag_process_parse(b, 28, &pid, cmdline, sizeof(cmdline)), 0);
	assert_string_equal(cmdline, "");
}

/* /proc/net/unix lines as Linux 6 prints them: a listening stream socket at the path is one;
 * the same path connected, a datagram socket, another path, a longer or shorter one, the
 * header line and malformed lines are not. Runs of '/' are one. */
static void finds_listeners_in_proc_net_unix(void **state)
{
	static const char *const path = "/tmp/dotnet-diagnostic-42-7-socket";
	static const char *const no[] = {
	    "Num       RefCount Protocol Flags    Type St Inode Path\n",
	    /* connected (a client's end, or the server's accepted one): no listen flag */
	    "0000000000000000: 00000003 00000000 00000000 0001 03 96957 "
	    "/tmp/dotnet-diagnostic-42-7-socket\n",
	    /* a datagram socket */
	    "0000000000000000: 00000002 00000000 00010000 0002 01 5 "
	    "/tmp/dotnet-diagnostic-42-7-socket\n",
	    /* other paths */
	    "0000000000000000: 00000002 00000000 00010000 0001 01 5 "
	    "/tmp/dotnet-diagnostic-42-7-socket2\n",
	    "0000000000000000: 00000002 00000000 00010000 0001 01 5 "
	    "/tmp/dotnet-diagnostic-42-7-socke\n",
	    "0000000000000000: 00000002 00000000 00010000 0001 01 5 "
	    "/var/tmp/dotnet-diagnostic-42-7-socket\n",
	    "0000000000000000: 00000002 00000000 00010000 0001 01 5 "
	    "@/tmp/dotnet-diagnostic-42-7-socket\n",
	    /* no path (unbound), or cut before it */
	    "0000000000000000: 00000002 00000000 00010000 0001 01 5\n",
	    "0000000000000000: 00000002 00000000 00010000 0001 01 5 ",
	    "0000000000000000: 00000002 00000000 00010000 0001 01",
	    "0000000000000000: 00000002 00000000 00010000",
	    "",
	    /* malformed: no colon, a field that is not a number, one longer than 20 digits */
	    "0000000000000000 00000002 00000000 00010000 0001 01 5 "
	    "/tmp/dotnet-diagnostic-42-7-socket\n",
	    "0000000000000000: 00000002 00000000 0001000g 0001 01 5 "
	    "/tmp/dotnet-diagnostic-42-7-socket\n",
	    "0000000000000000: 00000002 00000000 00010000 0001 01 123456789012345678901 "
	    "/tmp/dotnet-diagnostic-42-7-socket\n",
	};

	(void)state;
	assert_true(rasp_diag_unix_listens("0000000088ad4e3d: 00000002 00000000 00010000 0001 01 "
					   "107093 /tmp/dotnet-diagnostic-42-7-socket\n",
					   path));
	/* the last line may lack its newline; runs of '/' on either side */
	assert_true(rasp_diag_unix_listens("0000000000000000: 00000002 00000000 00010000 0001 01 "
					   "5 /tmp/dotnet-diagnostic-42-7-socket",
					   path));
	assert_true(rasp_diag_unix_listens("0000000000000000: 00000002 00000000 00010000 0001 01 "
					   "5 //tmp//dotnet-diagnostic-42-7-socket\n",
					   path));
	assert_true(rasp_diag_unix_listens("0000000000000000: 00000002 00000000 00010000 0001 01 "
					   "5 /tmp/dotnet-diagnostic-42-7-socket\n",
					   "/tmp///dotnet-diagnostic-42-7-socket"));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (rasp_diag_unix_listens(no[i], path))
			fail_msg("taken as a listener: '%s'", no[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parses_the_header),
	    cmocka_unit_test(refuses_a_bad_header),
	    cmocka_unit_test(writes_the_header),
	    cmocka_unit_test(parses_the_dotnet_trace_request),
	    cmocka_unit_test(writes_the_dotnet_trace_request),
	    cmocka_unit_test(writes_what_it_reads),
	    cmocka_unit_test(parses_collect_tracing),
	    cmocka_unit_test(parses_collect_tracing3),
	    cmocka_unit_test(parses_collect_tracing4),
	    cmocka_unit_test(parses_collect_tracing5),
	    cmocka_unit_test(refuses_every_truncation),
	    cmocka_unit_test(refuses_bad_strings),
	    cmocka_unit_test(refuses_bad_counts_and_values),
	    cmocka_unit_test(refuses_other_commands),
	    cmocka_unit_test(writes_replies),
	    cmocka_unit_test(writes_process_info),
	    cmocka_unit_test(reads_process_info),
	    cmocka_unit_test(finds_listeners_in_proc_net_unix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
