/* LTTng's CTF packet index files (TRACE/index/STREAM.idx): one entry per packet written to
 * the stream file, with its offset and size. Comparing them with the stream file tells a
 * trace cut short (a full disk, a copy that stopped, a file emptied) from a complete one, which
 * the trace's own packets cannot: a stream cut at a packet boundary still reads cleanly.
 * No babeltrace2 types; outside bytes go through the cursor. */
#ifndef RASP_CONSUMER_CTF_INDEX_H
#define RASP_CONSUMER_CTF_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct rasp_ctf_index {
	uint64_t packets;	   /* entries */
	uint64_t stream_bytes;	   /* end of the last packet: the stream file's expected size */
	uint64_t events_discarded; /* the last packet's cumulative count */
	/* Gaps in the packets' sequence numbers (index 1.1 and later; 0 before), the packets
	 * before the first one listed included: packets the stream lost. */
	uint64_t packets_lost;
};

/* Parses an index file's bytes. 0, or -EINVAL with the reason and the offset in err. */
int rasp_ctf_index_parse(const void *buf, size_t len, struct rasp_ctf_index *out, char *err,
			 size_t errlen);

#endif /* RASP_CONSUMER_CTF_INDEX_H */
