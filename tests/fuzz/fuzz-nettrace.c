/* libFuzzer target: EventPipe .nettrace files through the reader (consumer/read/nettrace-*.c) as
 * rasp report and source.rasp.nettrace drive it: open, every item to the end, every payload
 * of a known layout decoded, every stack read. The reader takes a path (it has no memory
 * entry point), so each input is written to one unlinked temporary file, reopened through
 * /proc/self/fd. Any bytes: events and the end, or a refusal naming the offset; a refusal
 * without "at offset" aborts, as do crashes, hangs and sanitizer reports. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read/nettrace-read.h"

static char path[64];
static int fd = -1;

/* The input as the file at `path`. */
static void put_input(const uint8_t *data, size_t size)
{
	if (fd < 0) {
		const char *dir = getenv("TMPDIR");
		char tmpl[4096];

		snprintf(tmpl, sizeof(tmpl), "%s/fuzz-nettrace-XXXXXX", dir && *dir ? dir : "/tmp");
		fd = mkstemp(tmpl);
		if (fd < 0 || unlink(tmpl) != 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char strs[1 << 16];
	char err[512] = "";
	struct rasp_nt_reader *r;
	struct rasp_nt_item it;
	volatile uint64_t sink = 0;
	int rc;

	put_input(data, size);
	r = rasp_nt_open(path, err, sizeof(err));
	if (!r) {
		if (!strstr(err, "at offset"))
			abort(); /* every refusal names where */
		return 0;
	}
	sink += rasp_nt_info(r)->pointer_size;
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		const struct rasp_nt_event *e = &it.event;
		union rasp_nt_value v[64];

		if (it.kind != RASP_NT_ITEM_EVENT) {
			sink += it.lost;
			continue;
		}
		for (size_t i = 0; i < e->stack_len; i++)
			sink += e->stack[i];
		for (size_t i = 0; i < e->payload_len; i++)
			sink += e->payload[i];
		sink += strlen(e->meta->provider) + strlen(e->meta->name);
		if (e->meta->desc && e->meta->desc->nfields <= 64 &&
		    rasp_nt_decode(e->meta->desc, e->payload, e->payload_len,
				   rasp_nt_info(r)->pointer_size, v, strs, sizeof(strs)) == 0)
			for (size_t i = 0; i < e->meta->desc->nfields; i++)
				if (e->meta->desc->fields[i].type == RASP_FT_UTF16Z ||
				    e->meta->desc->fields[i].type == RASP_FT_ANSIZ)
					sink += strlen(v[i].s);
	}
	if (rc < 0 && !strstr(rasp_nt_error(r), "at offset"))
		abort();
	/* The end is sticky; a complete file ends where its marker does, within the input. */
	if (rasp_nt_next(r, &it) != rc || rasp_nt_end_offset(r) > size)
		abort();
	sink += rasp_nt_events(r) + rasp_nt_complete(r);
	rasp_nt_close(r);
	(void)sink;
	return 0;
}
