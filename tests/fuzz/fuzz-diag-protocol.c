/* libFuzzer target: the diagnostic IPC protocol's parsers (codec/diag-protocol.c) as the
 * diagnostic server drives them. The first byte picks the EventPipe command id (0x01..0x07,
 * so both sides of the CollectTracing range), the rest is its payload; the first 20 bytes,
 * when there are 20, are also read as a message header. Any bytes: a request whose providers
 * are at most RASP_DIAG_MAX_PROVIDERS, each named (non-empty, NUL-terminated in its array),
 * that rasp_diag_collect2_write writes back and reads again the same; or -EBADMSG with a
 * reason; or -ENOTSUP outside CollectTracing 1 to 5. The same bytes, as text, are a line of
 * /proc/net/unix: a listener at the socket path only when the line holds that path. Anything
 * else aborts, as do crashes and sanitizer reports. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag-protocol.h"

/* The header: its fields are bytes 14..17 whatever the verdict, and written back they read the
 * same. */
static void check_header(const uint8_t *data)
{
	struct rasp_diag_header h;
	uint8_t again[RASP_DIAG_HEADER_SIZE];
	int rc = rasp_diag_header_parse(data, &h);

	if (rc == -EPROTO) {
		if (memcmp(data, RASP_DIAG_MAGIC, sizeof(RASP_DIAG_MAGIC)) == 0)
			abort();
		return;
	}
	if (rc != 0 && rc != -EBADMSG)
		abort();
	if ((rc == 0) != (h.size >= RASP_DIAG_HEADER_SIZE))
		abort();
	rasp_diag_header_write(again, h.size, h.set, h.id);
	if (memcmp(again, data, 18) != 0 || again[18] || again[19])
		abort();
}

/* A parsed request's invariants, and its providers through the CollectTracing2 writer. */
static void check_request(const struct rasp_diag_collect *c)
{
	static uint8_t msg[RASP_DIAG_MAX_MESSAGE];
	static struct rasp_diag_collect again;
	struct rasp_diag_header h;
	char why[160];
	size_t len;

	if (c->session_type != 0) {
		if (c->nproviders != 0)
			abort();
		return;
	}
	if (c->nproviders == 0 || c->nproviders > RASP_DIAG_MAX_PROVIDERS)
		abort();
	for (size_t i = 0; i < c->nproviders; i++) {
		const char *name = c->providers[i].name;

		if (!name[0] || !memchr(name, '\0', sizeof(c->providers[i].name)))
			abort();
	}
	if (c->session_type == 0 && c->buffer_mb == 0)
		abort();
	if (c->rundown_keyword && !c->rundown)
		abort();

	len = rasp_diag_collect2_write(msg, sizeof(msg), c->buffer_mb ? c->buffer_mb : 1,
				       c->rundown, c->providers, c->nproviders);
	if (len < RASP_DIAG_HEADER_SIZE || rasp_diag_header_parse(msg, &h) != 0 || h.size != len ||
	    h.set != RASP_DIAG_SET_EVENTPIPE || h.id != RASP_DIAG_EP_COLLECT2)
		abort();
	if (rasp_diag_collect_parse(h.id, msg + RASP_DIAG_HEADER_SIZE, len - RASP_DIAG_HEADER_SIZE,
				    &again, why, sizeof(why)) != 0)
		abort();
	if (again.format != 1 || again.rundown != c->rundown || !again.stackwalk ||
	    again.nproviders != c->nproviders)
		abort();
	for (size_t i = 0; i < c->nproviders; i++)
		if (again.providers[i].keywords != c->providers[i].keywords ||
		    again.providers[i].level != c->providers[i].level ||
		    strcmp(again.providers[i].name, c->providers[i].name) != 0)
			abort();
}

/* The bytes as a /proc/net/unix line (NUL-terminated, in a buffer of their size). */
static void check_unix_line(const uint8_t *data, size_t size)
{
	static const char *const path = "/tmp/dotnet-diagnostic-42-7-socket";
	char *line = malloc(size + 1);

	if (!line)
		abort();
	memcpy(line, data, size);
	line[size] = '\0';
	if (rasp_diag_unix_listens(line, path) && !strstr(line, "dotnet-diagnostic-42-7-socket"))
		abort();
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rasp_diag_collect c;
	uint8_t id, *payload;
	char why[160];
	size_t n;
	int rc;

	check_unix_line(data, size);
	if (size == 0)
		return 0;
	if (size >= RASP_DIAG_HEADER_SIZE)
		check_header(data);
	id = (uint8_t)(1 + (data[0] + 6) % 7); /* 0x01..0x07 are themselves */
	/* The payload in a buffer of its own size, so that a read past it is a report. */
	n = size - 1;
	payload = malloc(n ? n : 1);
	if (!payload)
		abort();
	memcpy(payload, data + 1, n);
	memset(why, 0, sizeof(why));
	rc = rasp_diag_collect_parse(id, payload, n, &c, why, sizeof(why));
	free(payload);
	if (rc == 0) {
		if (id < RASP_DIAG_EP_COLLECT || id > RASP_DIAG_EP_COLLECT5)
			abort();
		check_request(&c);
	} else if (rc == -EBADMSG) {
		if (!why[0] || !memchr(why, '\0', sizeof(why)))
			abort(); /* every refusal says why */
	} else if (rc == -ENOTSUP) {
		if (id >= RASP_DIAG_EP_COLLECT && id <= RASP_DIAG_EP_COLLECT5)
			abort();
	} else {
		abort();
	}
	return 0;
}
