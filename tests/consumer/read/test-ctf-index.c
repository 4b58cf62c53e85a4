/* Unit tests of consumer/read/ctf-index.c: LTTng packet index files built byte by byte here
 * (big-endian header: magic 0xC1F1DCC1, major 1, minor, entry length >= 56; entries of u64
 * offset, packet bits, content bits, two timestamps, events discarded, stream id), every
 * refusal with the offset it names, and the committed traces' own index files, whose last
 * packet must end exactly at the end of their stream file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "read/ctf-index.h"

#define TRACES RASP_TEST_SOURCE_DIR "/tests/consumer/traces"

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void be32(struct buf *b, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void be64(struct buf *b, uint64_t v)
{
	for (int i = 7; i >= 0; i--)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void header(struct buf *b, uint32_t magic, uint32_t major, uint32_t minor, uint32_t entry)
{
	b->n = 0;
	be32(b, magic);
	be32(b, major);
	be32(b, minor);
	be32(b, entry);
}

/* One entry of `len` bytes: the seven fields, then zero padding. */
static void entry(struct buf *b, size_t len, uint64_t offset, uint64_t bits, uint64_t content,
		  uint64_t discarded)
{
	size_t start = b->n;

	be64(b, offset);
	be64(b, bits);
	be64(b, content);
	be64(b, 1000 + offset); /* timestamp begin */
	be64(b, 2000 + offset); /* timestamp end */
	be64(b, discarded);
	be64(b, 7); /* stream id */
	while (b->n < start + len)
		b->b[b->n++] = 0;
}

/* A 72-byte entry of index 1.1, its stream instance id and packet sequence number included. */
static void entry_seq(struct buf *b, uint64_t offset, uint64_t seq)
{
	entry(b, 56, offset, 32768, 32768, 0);
	be64(b, 1); /* stream instance id */
	be64(b, seq);
}

static uint64_t packets_lost(const struct buf *b)
{
	struct rasp_ctf_index ix;
	char err[256] = "";

	assert_int_equal(rasp_ctf_index_parse(b->b, b->n, &ix, err, sizeof(err)), 0);
	return ix.packets_lost;
}

static void check_ok(const struct buf *b, uint64_t packets, uint64_t bytes, uint64_t discarded)
{
	struct rasp_ctf_index ix;
	char err[256] = "";
	int rc = rasp_ctf_index_parse(b->b, b->n, &ix, err, sizeof(err));

	if (rc || ix.packets != packets || ix.stream_bytes != bytes ||
	    ix.events_discarded != discarded) {
		printf("rc %d \"%s\": %" PRIu64 " packets, %" PRIu64 " bytes, %" PRIu64
		       " discarded; want %" PRIu64 ", %" PRIu64 ", %" PRIu64 "\n",
		       rc, err, ix.packets, ix.stream_bytes, ix.events_discarded, packets, bytes,
		       discarded);
		fail();
	}
}

/* -EINVAL with a message holding `want` (the reason and the offset). */
static void check_bad(const void *p, size_t len, const char *want)
{
	struct rasp_ctf_index ix;
	char err[256] = "";
	int rc = rasp_ctf_index_parse(p, len, &ix, err, sizeof(err));

	if (rc != -EINVAL || !strstr(err, want)) {
		printf("%zu bytes: rc %d \"%s\", want -EINVAL and \"%s\"\n", len, rc, err, want);
		fail();
	}
}

static void test_ctf_index_entries(void **state)
{
	(void)state;
	struct buf b;

	/* Header only: no packet, an empty stream. */
	header(&b, 0xC1F1DCC1u, 1, 0, 56);
	check_ok(&b, 0, 0, 0);
	/* Three packets of 4 KiB at 0, 4096, 8192 (lttng's 72-byte entries, minor 1). */
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry(&b, 72, 0, 32768, 32168, 0);
	entry(&b, 72, 4096, 32768, 32168, 0);
	entry(&b, 72, 8192, 32768, 32456, 257);
	check_ok(&b, 3, 12288, 257);
	/* Entries of exactly 56 bytes (the fields read) are enough. */
	header(&b, 0xC1F1DCC1u, 1, 0, 56);
	entry(&b, 56, 0, 65536, 100, 0);
	check_ok(&b, 1, 8192, 0);
	/* The end is the furthest packet end, whatever the entries' order; the discarded count
	 * is the last entry's (cumulative). */
	header(&b, 0xC1F1DCC1u, 1, 1, 64);
	entry(&b, 64, 8192, 8 * 4096, 0, 3);
	entry(&b, 64, 0, 8 * 8192, 8 * 8192, 5);
	entry(&b, 64, 4096, 8 * 100, 8, 9);
	check_ok(&b, 3, 12288, 9);
	/* The largest entry length accepted. */
	header(&b, 0xC1F1DCC1u, 1, 7, 4096 - 16);
	entry(&b, 4096 - 16, 100, 8, 8, 1);
	check_ok(&b, 1, 101, 1);
}

/* Lost packets: the jumps in the packets' sequence numbers, from 0, in index 1.1 entries;
 * not read from older entries, whose bytes there are something else or padding. */
static void test_ctf_index_packets_lost(void **state)
{
	(void)state;
	struct buf b;

	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry_seq(&b, 0, 0);
	entry_seq(&b, 4096, 1);
	entry_seq(&b, 8192, 2);
	assert_int_equal(packets_lost(&b), 0);
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry_seq(&b, 0, 0);
	entry_seq(&b, 4096, 3); /* 1 and 2 lost */
	entry_seq(&b, 8192, 4);
	assert_int_equal(packets_lost(&b), 2);
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry_seq(&b, 0, 2); /* 0 and 1 lost before the first listed */
	entry_seq(&b, 4096, 3);
	assert_int_equal(packets_lost(&b), 2);
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry_seq(&b, 0, 5); /* a number going back is no loss */
	entry_seq(&b, 4096, 1);
	entry_seq(&b, 8192, 6);
	assert_int_equal(packets_lost(&b), 5);
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry_seq(&b, 0, UINT64_MAX); /* a hostile number: counted, not wrapped */
	entry_seq(&b, 4096, 0);
	assert_int_equal(packets_lost(&b), UINT64_MAX);
	header(&b, 0xC1F1DCC1u, 1, 0, 72);
	entry_seq(&b, 0, 9);
	assert_int_equal(packets_lost(&b), 0);
}

static void test_ctf_index_bad_header(void **state)
{
	(void)state;
	struct buf b;

	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	check_bad(b.b, 0, "index header cut short at offset 0");
	check_bad(b.b, 15, "index header cut short at offset 15");
	check_bad(NULL, 0, "cut short");
	header(&b, 0xC1F1DCC2u, 1, 1, 72);
	check_bad(b.b, b.n, "bad magic 0xc1f1dcc2 at offset 0");
	/* Little-endian magic: the bytes reversed. */
	b.n = 0;
	be32(&b, 0xC1DCF1C1u);
	be32(&b, 0x01000000u);
	be32(&b, 0x01000000u);
	be32(&b, 0x48000000u);
	check_bad(b.b, b.n, "bad magic 0xc1dcf1c1 at offset 0");
	header(&b, 0xC1F1DCC1u, 2, 0, 72);
	check_bad(b.b, b.n, "unsupported index version 2.0 or entry length 72 at offset 4");
	header(&b, 0xC1F1DCC1u, 0, 1, 72);
	check_bad(b.b, b.n, "unsupported index version 0.1");
	header(&b, 0xC1F1DCC1u, 1, 1, 55);
	check_bad(b.b, b.n, "entry length 55 at offset 4");
	header(&b, 0xC1F1DCC1u, 1, 1, 0);
	check_bad(b.b, b.n, "entry length 0 at offset 4");
	header(&b, 0xC1F1DCC1u, 1, 1, 4097);
	check_bad(b.b, b.n, "entry length 4097 at offset 4");
}

static void test_ctf_index_bad_entries(void **state)
{
	(void)state;
	struct buf b;

	/* Sizes in bits that are not whole bytes; the second entry starts at 16 + 72 = 88. */
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry(&b, 72, 0, 32768, 100, 0);
	entry(&b, 72, 4096, 32767, 100, 0);
	check_bad(b.b, b.n,
		  "entry 1 at offset 88 is not a packet (offset 4096, 32767 bits, "
		  "content 100)");
	/* Content larger than the packet. */
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry(&b, 72, 0, 32768, 32776, 0);
	check_bad(b.b, b.n, "entry 0 at offset 16 is not a packet");
	/* A packet ending past 2^64 bytes. */
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry(&b, 72, UINT64_MAX - 10, 8 * 100, 8, 0);
	check_bad(b.b, b.n, "entry 0 at offset 16 is not a packet");
	/* The last entry cut short: 16 + 72 + 40 bytes. */
	header(&b, 0xC1F1DCC1u, 1, 1, 72);
	entry(&b, 72, 0, 32768, 100, 0);
	entry(&b, 72, 4096, 32768, 100, 0);
	check_bad(b.b, 16 + 72 + 40, "last entry cut short at offset 88");
	check_bad(b.b, 16 + 1, "last entry cut short at offset 16");
	check_bad(b.b, b.n - 1, "last entry cut short at offset 88");
	check_ok(&b, 2, 8192, 0);
}

/* Every committed trace's index files: parsed, and the last packet ends where the stream
 * file does (TRACE/index/NAME.idx describes TRACE/NAME). */
static int walk(const char *path, int *files)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char p[PATH_MAX];

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		struct stat st;
		size_t len = strlen(e->d_name);

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (stat(p, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			walk(p, files);
		} else if (len > 4 && strcmp(e->d_name + len - 4, ".idx") == 0 &&
			   strlen(path) > 6 && strcmp(path + strlen(path) - 6, "/index") == 0) {
			char stream[PATH_MAX];
			struct rasp_ctf_index ix;
			struct stat sst;
			char err[256] = "";
			uint8_t *buf = malloc((size_t)st.st_size + 1);
			FILE *f = fopen(p, "rb");

			assert_non_null(buf);
			assert_non_null(f);
			assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
			fclose(f);
			snprintf(stream, sizeof(stream), "%.*s/%.*s", (int)strlen(path) - 6, path,
				 (int)len - 4, e->d_name);
			assert_int_equal(stat(stream, &sst), 0);
			if (rasp_ctf_index_parse(buf, (size_t)st.st_size, &ix, err, sizeof(err)) ||
			    ix.packets == 0 || ix.stream_bytes != (uint64_t)sst.st_size) {
				printf("%s: \"%s\", %" PRIu64 " packets ending at %" PRIu64
				       ", stream file of %lld bytes\n",
				       p, err, ix.packets, ix.stream_bytes, (long long)sst.st_size);
				fail();
			}
			/* emit-discarded lost 257 events (docs/consumer.md). */
			if (strstr(p, "/emit-discarded/"))
				assert_int_equal(ix.events_discarded, 257);
			else
				assert_int_equal(ix.events_discarded, 0);
			printf("%s: %" PRIu64 " packets, %" PRIu64 " bytes\n",
			       p + strlen(TRACES) + 1, ix.packets, ix.stream_bytes);
			free(buf);
			(*files)++;
		}
	}
	closedir(d);
	return 0;
}

static void test_ctf_index_committed_traces(void **state)
{
	(void)state;
	int files = 0;

	assert_int_equal(walk(TRACES, &files), 0);
	/* docstore-small (2 streams), emit-two-procs, emit-none, emit-discarded. */
	assert_true(files >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ctf_index_entries),
	    cmocka_unit_test(test_ctf_index_packets_lost),
	    cmocka_unit_test(test_ctf_index_bad_header),
	    cmocka_unit_test(test_ctf_index_bad_entries),
	    cmocka_unit_test(test_ctf_index_committed_traces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
