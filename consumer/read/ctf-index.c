/* CTF index files (ctf-index.h). Layout (lttng-tools' ctf-index.h, all big-endian): a
 * 16-byte header (magic 0xC1F1DCC1, major, minor, entry length) then fixed-length entries
 * whose first fields are the packet's offset in bytes, its size and its content size in bits,
 * its begin and end timestamps and the events discarded so far. */
#include "ctf-index.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "cursor.h"

#define CTF_INDEX_MAGIC 0xC1F1DCC1u
/* offset, packet size, content size, two timestamps, events discarded, stream id */
#define ENTRY_MIN 56u
/* and, from version 1.1: stream instance id, packet sequence number */
#define ENTRY_SEQ 72u

int rasp_ctf_index_parse(const void *buf, size_t len, struct rasp_ctf_index *out, char *err,
			 size_t errlen)
{
	struct rasp_cursor c = rasp_cursor_make(buf, len, 0);
	uint32_t magic = 0, major = 0, minor = 0, entry = 0;
	uint64_t next_seq = 0;

	*out = (struct rasp_ctf_index){0};
	if (!rasp_cursor_u32be(&c, &magic) || !rasp_cursor_u32be(&c, &major) ||
	    !rasp_cursor_u32be(&c, &minor) || !rasp_cursor_u32be(&c, &entry)) {
		snprintf(err, errlen, "index header cut short at offset %zu", len);
		return -EINVAL;
	}
	if (magic != CTF_INDEX_MAGIC) {
		snprintf(err, errlen, "bad magic 0x%08" PRIx32 " at offset 0", magic);
		return -EINVAL;
	}
	if (major != 1 || entry < ENTRY_MIN || entry > 4096) {
		snprintf(err, errlen,
			 "unsupported index version %" PRIu32 ".%" PRIu32
			 " or entry length %" PRIu32 " at offset 4",
			 major, minor, entry);
		return -EINVAL;
	}
	while (rasp_cursor_left(&c) >= entry) {
		uint64_t at = rasp_cursor_offset(&c), offset, bits, content, tb, te, discarded;
		uint64_t stream_id, instance, seq;
		struct rasp_cursor e = rasp_cursor_make(rasp_cursor_take(&c, entry), entry, at);

		rasp_cursor_u64be(&e, &offset);
		rasp_cursor_u64be(&e, &bits);
		rasp_cursor_u64be(&e, &content);
		rasp_cursor_u64be(&e, &tb);
		rasp_cursor_u64be(&e, &te);
		rasp_cursor_u64be(&e, &discarded);
		if (bits % 8 || content > bits || offset > UINT64_MAX - bits / 8) {
			snprintf(err, errlen,
				 "entry %" PRIu64 " at offset %" PRIu64 " is not a packet "
				 "(offset %" PRIu64 ", %" PRIu64 " bits, content %" PRIu64 ")",
				 out->packets, e.origin, offset, bits, content);
			return -EINVAL;
		}
		if (offset + bits / 8 > out->stream_bytes)
			out->stream_bytes = offset + bits / 8;
		out->events_discarded = discarded;
		/* Each packet's number is the one before's plus one, from 0: a jump is packets
		 * lost (a number going back is no loss, and is not counted as one). */
		if ((major > 1 || minor >= 1) && entry >= ENTRY_SEQ) {
			rasp_cursor_u64be(&e, &stream_id);
			rasp_cursor_u64be(&e, &instance);
			rasp_cursor_u64be(&e, &seq);
			if (seq > next_seq)
				out->packets_lost += seq - next_seq;
			if (seq >= next_seq && seq < UINT64_MAX)
				next_seq = seq + 1;
		}
		out->packets++;
	}
	if (rasp_cursor_left(&c)) {
		snprintf(err, errlen, "last entry cut short at offset %" PRIu64,
			 rasp_cursor_offset(&c));
		return -EINVAL;
	}
	return 0;
}
