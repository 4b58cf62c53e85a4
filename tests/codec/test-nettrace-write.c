/* The NetTrace writer (codec/nettrace-write.c), byte for byte: the container, block padding
 * counted from the stream start, compressed headers decided as the .NET runtime decides them,
 * payloads and metadata through the generated descriptors, and refusals of what does not fit.
 * The reference is the 618-byte V4 file laid out field by field in docs/eventpipe.md (three
 * AllocationSampled events on two threads, a sequence point), written here from the format's
 * description, not from the writer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nettrace-write.h"
#include "rasp-event-desc.h"

struct mem {
	uint8_t buf[4096];
	size_t len;
	int fail_at; /* fail the nth write (1-based); 0: never */
	int writes;
};

static int mem_write(void *ctx, const void *p, size_t n)
{
	struct mem *m = ctx;

	if (++m->writes == m->fail_at)
		return -EIO;
	assert_true(m->len + n <= sizeof(m->buf));
	memcpy(m->buf + m->len, p, n);
	m->len += n;
	return 0;
}

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

/* ASCII to UTF-16LE with its terminator. */
static size_t u16(uint8_t *out, const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		out[n++] = (uint8_t)*s;
		out[n++] = 0;
	}
	out[n++] = 0;
	out[n++] = 0;
	return n;
}

static const struct rasp_event_desc *sampled(void)
{
	return &rasp_event_descs[RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED];
}

static size_t sample_payload(uint32_t kind, uint64_t type_id, const char *name, uint64_t addr,
			     uint64_t size, uint64_t offset, uint8_t *out, size_t cap)
{
	union rasp_nt_value v[7] = {{.u = kind}, {.u = 0},    {.u = type_id}, {.s = name},
				    {.u = addr}, {.u = size}, {.u = offset}};

	return rasp_nt_encode_payload(sampled(), v, 8, out, cap);
}

/* 2026-08-07 12:00:00 UTC, in ns since the epoch. */
#define SYNC_UTC_NS (INT64_C(1786104000) * 1000000000)

static void writes_the_reference_file(void **state)
{
	struct mem m = {0};
	struct rasp_nt_out o = {.write = mem_write, .ctx = &m};
	struct rasp_nt_trace_header h = {.sync_utc_ns = SYNC_UTC_NS,
					 .sync_ticks = 1000000000,
					 .frequency = 1000000000,
					 .pointer_size = 8,
					 .pid = 4242,
					 .processors = 8};
	uint8_t want[1024], blk[512], pl[256], rec[256];
	struct rasp_nt_block b;
	size_t n = 0, len;
	uint64_t tids[2] = {4242, 4243};
	uint32_t seqs[2] = {2, 1};

	(void)state;
	/* The expected bytes, from the format's description. */
	n += hex(want + n, "4e 65 74 74 72 61 63 65 14 00 00 00");
	memcpy(want + n, "!FastSerialization.1", 20);
	n += 20;
	n += hex(want + n, "05 05 01 04 00 00 00 04 00 00 00 05 00 00 00");
	memcpy(want + n, "Trace", 5);
	n += 5;
	n += hex(want + n, "06 ea 07 08 00 05 00 07 00 0c 00 00 00 00 00 00 00"
			   "00 ca 9a 3b 00 00 00 00  00 ca 9a 3b 00 00 00 00"
			   "08 00 00 00 92 10 00 00 08 00 00 00 40 42 0f 00 06");
	assert_int_equal(n, 0x66);
	n += hex(want + n, "05 05 01 02 00 00 00 02 00 00 00 0d 00 00 00");
	memcpy(want + n, "MetadataBlock", 13);
	n += 13;
	n += hex(want + n, "06 7b 00 00 00 00"
			   "14 00 01 00 60 ad b1 3b 00 00 00 00 60 ad b1 3b 00 00 00 00"
			   "c4 92 21 e0 da c6 dd 03 5e 01 00 00 00");
	n += u16(want + n, "Microsoft-Windows-DotNETRuntime");
	n += hex(want + n, "2f 01 00 00 00 00 00 00 00 00 00 08 00 00 00 00 00 00"
			   "04 00 00 00 00 00 00 00 06");
	assert_int_equal(n, 0x104);
	n += hex(want + n, "05 05 01 02 00 00 00 02 00 00 00 0a 00 00 00");
	memcpy(want + n, "EventBlock", 10);
	n += 10;
	n += hex(want + n, "06 04 01 00 00 00 00"
			   "14 00 01 00 60 ad b1 3b 00 00 00 00 a0 ef c0 3b 00 00 00 00"
			   "c7 01 00 92 21 00 92 21 e0 da c6 dd 03 46"
			   "00 00 00 00 00 00 00 10 00 00 00 7f 00 00");
	n += u16(want + n, "System.Object[]");
	n += hex(want + n, "00 00 ad de 00 7f 00 00 68 00 00 00 00 00 00 00"
			   "11 00 00 00 00 00 00 00"
			   "80 a0 c2 1e 42 01 00 00 00 00 00 00 20 00 00 00 7f 00 00");
	n += u16(want + n, "System.Byte[]");
	n += hex(want + n, "00 00 ef be 00 7f 00 00 90 5f 01 00 00 00 00 00"
			   "00 10 00 00 00 00 00 00"
			   "c6 fe ff ff ff 0f 93 21 00 93 21 a0 c2 1e 46"
			   "00 00 00 00 00 00 00 10 00 00 00 7f 00 00");
	n += u16(want + n, "System.Object[]");
	n += hex(want + n, "00 01 ad de 00 7f 00 00 68 00 00 00 00 00 00 00"
			   "03 00 00 00 00 00 00 00 06");
	assert_int_equal(n, 0x229);
	n += hex(want + n, "05 05 01 02 00 00 00 02 00 00 00 07 00 00 00");
	memcpy(want + n, "SPBlock", 7);
	n += 7;
	n += hex(want + n, "06 24 00 00 00 a1 ef c0 3b 00 00 00 00 02 00 00 00"
			   "92 10 00 00 00 00 00 00 02 00 00 00 93 10 00 00 00 00 00 00"
			   "01 00 00 00 06 01");
	assert_int_equal(n, 618);

	assert_int_equal(rasp_nt_write_header(&o, &h), 0);
	assert_int_equal(o.off, 0x66);

	rasp_nt_block_init(&b, blk, sizeof(blk));
	len = rasp_nt_encode_metadata(1, sampled(), false, rec, sizeof(rec));
	assert_int_equal(len, 94);
	assert_int_equal(
	    rasp_nt_block_add(
		&b, &(struct rasp_nt_hdr){.tid = 4242, .ts = 1001500000, .sorted = true}, rec, len),
	    0);
	rasp_nt_block_finish(&b);
	assert_int_equal(rasp_nt_write_block(&o, "MetadataBlock", b.buf, b.len), 0);

	rasp_nt_block_init(&b, blk, sizeof(blk));
	len = sample_payload(0, 0x7f0000001000, "System.Object[]", 0x7f00dead0000, 104, 17, pl,
			     sizeof(pl));
	assert_int_equal(len, 70);
	assert_int_equal(rasp_nt_block_add(&b,
					   &(struct rasp_nt_hdr){.meta = 1,
								 .seq = 1,
								 .tid = 4242,
								 .capture = 4242,
								 .ts = 1001500000,
								 .sorted = true},
					   pl, len),
			 0);
	len = sample_payload(1, 0x7f0000002000, "System.Byte[]", 0x7f00beef0000, 90000, 4096, pl,
			     sizeof(pl));
	assert_int_equal(
	    rasp_nt_block_add(
		&b,
		&(struct rasp_nt_hdr){
		    .meta = 1, .seq = 2, .tid = 4242, .capture = 4242, .ts = 1002000000},
		pl, len),
	    0);
	len = sample_payload(0, 0x7f0000001000, "System.Object[]", 0x7f00dead0100, 104, 3, pl,
			     sizeof(pl));
	assert_int_equal(rasp_nt_block_add(&b,
					   &(struct rasp_nt_hdr){.meta = 1,
								 .seq = 1,
								 .tid = 4243,
								 .capture = 4243,
								 .ts = 1002500000,
								 .sorted = true},
					   pl, len),
			 0);
	rasp_nt_block_finish(&b);
	assert_int_equal(b.events, 3);
	assert_int_equal(rasp_nt_write_block(&o, "EventBlock", b.buf, b.len), 0);

	len = rasp_nt_encode_sp(1002500001, tids, seqs, 2, rec, sizeof(rec));
	assert_int_equal(len, 36);
	assert_int_equal(rasp_nt_write_block(&o, "SPBlock", rec, len), 0);
	assert_int_equal(rasp_nt_write_end(&o), 0);

	assert_int_equal(m.len, 618);
	assert_int_equal(o.off, 618);
	for (size_t i = 0; i < 618; i++)
		if (m.buf[i] != want[i])
			fail_msg("byte 0x%zx: wrote %02x, expected %02x", i, m.buf[i], want[i]);
}

/* Every padding length occurs, and padding is counted from the stream's first byte. */
static void pads_from_the_stream_start(void **state)
{
	(void)state;
	for (size_t start = 0; start < 4; start++) {
		struct mem m = {0};
		struct rasp_nt_out o = {.write = mem_write, .ctx = &m};
		uint8_t content[3] = {1, 2, 3};
		size_t before, pad;

		for (size_t i = 0; i < start; i++)
			assert_int_equal(rasp_nt_write_end(&o), 0); /* filler bytes */
		assert_int_equal(rasp_nt_write_block(&o, "EventBlock", content, 3), 0);
		before = start + 3 + 8 + 4 + 10 + 1 + 4; /* tags, versions, name, BlockSize */
		pad = (4 - before % 4) % 4;
		assert_int_equal(m.len, before + pad + 3 + 1);
		assert_int_equal((before + pad) % 4, 0);
		assert_memory_equal(m.buf + before + pad, content, 3);
		for (size_t i = 0; i < pad; i++)
			assert_int_equal(m.buf[before + i], 0);
		assert_int_equal(m.buf[m.len - 1], RASP_NT_TAG_END);
	}
}

/* A timestamp older than the previous one wraps (a 10-byte varint), a sequence jump is
 * written as its delta, metadata headers (id 0) do not advance the sequence. */
static void compresses_as_the_runtime(void **state)
{
	uint8_t buf[256];
	struct rasp_nt_block b;
	static const uint8_t one = 0x42;

	(void)state;
	rasp_nt_block_init(&b, buf, sizeof(buf));
	assert_int_equal(
	    rasp_nt_block_add(
		&b, &(struct rasp_nt_hdr){.meta = 3, .seq = 1, .tid = 7, .capture = 7, .ts = 1000},
		&one, 1),
	    0);
	/* Same thread, sequence 5 (3 lost), earlier timestamp, same payload size. */
	assert_int_equal(
	    rasp_nt_block_add(
		&b, &(struct rasp_nt_hdr){.meta = 3, .seq = 5, .tid = 7, .capture = 7, .ts = 999},
		&one, 1),
	    0);
	{
		uint8_t want[64];
		size_t n = hex(want, "87 03 00 07 00 07 e8 07 01 42"
				     "02 03 07 00 ff ff ff ff ff ff ff ff ff 01 42");

		assert_int_equal(b.len, RASP_NT_BLOCK_HEADER_SIZE + n);
		assert_memory_equal(buf + RASP_NT_BLOCK_HEADER_SIZE, want, n);
	}
	rasp_nt_block_finish(&b);
	assert_int_equal(b.min_ts, 999);
	assert_int_equal(b.max_ts, 1000);
	assert_int_equal(buf[4], 0xe7);	 /* 999 */
	assert_int_equal(buf[12], 0xe8); /* 1000 */

	/* Metadata headers: id 0, sequence 0 twice in a row needs no sequence field. */
	rasp_nt_block_init(&b, buf, sizeof(buf));
	assert_int_equal(rasp_nt_block_add(&b, &(struct rasp_nt_hdr){.ts = 5}, &one, 1), 0);
	assert_int_equal(rasp_nt_block_add(&b, &(struct rasp_nt_hdr){.ts = 5}, &one, 1), 0);
	{
		uint8_t want[16];
		size_t n = hex(want, "80 05 01 42 00 00 42");

		assert_int_equal(b.len, RASP_NT_BLOCK_HEADER_SIZE + n);
		assert_memory_equal(buf + RASP_NT_BLOCK_HEADER_SIZE, want, n);
	}
}

/* What does not fit is refused whole: nothing half-written. */
static void refuses_what_does_not_fit(void **state)
{
	uint8_t buf[128], pl[200] = {0}, out[64];
	struct rasp_nt_block b;
	size_t before;
	union rasp_nt_value v[7] = {{.u = 0}, {.u = 0}, {.u = 1}, {.s = "A.Rather.Long.Type.Name"}};

	(void)state;
	rasp_nt_block_init(&b, buf, sizeof(buf));
	assert_int_equal(rasp_nt_block_add(&b, &(struct rasp_nt_hdr){.meta = 1, .seq = 1}, pl, 40),
			 0);
	before = b.len;
	assert_int_equal(rasp_nt_block_add(&b, &(struct rasp_nt_hdr){.meta = 1, .seq = 2}, pl, 60),
			 -ENOSPC);
	assert_int_equal(b.len, before);
	assert_int_equal(b.events, 1);

	assert_int_equal(rasp_nt_encode_payload(sampled(), v, 8, out, sizeof(out)), 0);
	assert_int_equal(rasp_nt_encode_payload(sampled(), v, 3, out, sizeof(out)), 0);
	assert_int_equal(rasp_nt_encode_metadata(1, sampled(), true, out, sizeof(out)), 0);
	assert_int_equal(rasp_nt_encode_metadata(0, sampled(), false, pl, sizeof(pl)), 0);
	assert_int_equal(rasp_nt_encode_sp(0, NULL, NULL, 1, out, sizeof(out)), 0);
	assert_int_equal(rasp_nt_encode_sp(0, (uint64_t[]){1, 2, 3, 4, 5},
					   (uint32_t[]){1, 2, 3, 4, 5}, 5, out, sizeof(out)),
			 0);
}

/* A 4-byte pointer trace writes pointers in 4 bytes; a described record lists every field
 * with its type code, after the event's name. */
static void encodes_by_descriptor(void **state)
{
	const struct rasp_event_desc *cfg =
	    &rasp_event_descs[RASP_DESC_RASP_RUNTIME_SAMPLINGCONFIGURED];
	uint8_t out[512], want[512];
	size_t n = 0, len;
	union rasp_nt_value v[7] = {
	    {.u = 2},	       {.u = 9}, {.u = 0x11223344}, {.s = "T\xc3\xa9"},
	    {.u = 0x55667788}, {.u = 1}, {.u = 2}};

	(void)state;
	len = rasp_nt_encode_payload(sampled(), v, 4, out, sizeof(out));
	n += hex(want, "02 00 00 00 09 00 44 33 22 11 54 00 e9 00 00 00 88 77 66 55"
		       "01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00");
	assert_int_equal(len, n);
	assert_memory_equal(out, want, n);

	len = rasp_nt_encode_metadata(7, cfg, true, out, sizeof(out));
	n = hex(want, "07 00 00 00");
	n += u16(want + n, "Rasp-Runtime");
	n += hex(want + n, "01 00 00 00");
	n += u16(want + n, "SamplingConfigured");
	n += hex(want + n, "01 00 00 00 00 00 00 00 00 00 00 00 04 00 00 00 04 00 00 00");
	n += hex(want + n, "08 00 00 00");
	n += u16(want + n, "ClrInstanceID");
	n += hex(want + n, "0c 00 00 00");
	n += u16(want + n, "SamplingMean");
	n += hex(want + n, "0c 00 00 00");
	n += u16(want + n, "AllocationQuantum");
	n += hex(want + n, "0a 00 00 00");
	n += u16(want + n, "Trigger");
	assert_int_equal(len, n);
	assert_memory_equal(out, want, n);
}

/* The first failed write sticks: nothing after it is written, every call reports it. */
static void write_errors_stick(void **state)
{
	struct mem m = {.fail_at = 3};
	struct rasp_nt_out o = {.write = mem_write, .ctx = &m};
	struct rasp_nt_trace_header h = {
	    .sync_utc_ns = SYNC_UTC_NS, .frequency = 1000000000, .pointer_size = 8};

	(void)state;
	assert_int_equal(rasp_nt_write_header(&o, &h), -EIO);
	assert_int_equal(o.err, -EIO);
	assert_int_equal(m.len, 8 + 4);
	assert_int_equal(rasp_nt_write_end(&o), -EIO);
	assert_int_equal(m.len, 8 + 4);

	h.pointer_size = 5;
	o = (struct rasp_nt_out){.write = mem_write, .ctx = &m};
	assert_int_equal(rasp_nt_write_header(&o, &h), -EINVAL);
	h.pointer_size = 8;
	h.frequency = 0;
	assert_int_equal(rasp_nt_write_header(&o, &h), -EINVAL);
	assert_int_equal(rasp_nt_write_block(&o, "EventBlock", NULL, 4), -EINVAL);
	assert_int_equal(o.off, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(writes_the_reference_file),
	    cmocka_unit_test(pads_from_the_stream_start),
	    cmocka_unit_test(compresses_as_the_runtime),
	    cmocka_unit_test(refuses_what_does_not_fit),
	    cmocka_unit_test(encodes_by_descriptor),
	    cmocka_unit_test(write_errors_stick),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
