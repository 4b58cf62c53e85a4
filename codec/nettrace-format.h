/* The NetTrace (EventPipe .nettrace) format as both ends of rasp use it: the writer
 * (nettrace-write.c: the runtime's EventPipe output and sink.rasp.nettrace), the payload
 * decoder (nettrace-payload.c) and the reader (consumer/read/nettrace-read.c). Byte-level
 * description: docs/eventpipe.md. */
#ifndef RASP_CODEC_NETTRACE_FORMAT_H
#define RASP_CODEC_NETTRACE_FORMAT_H

#define RASP_NT_MAGIC	      "Nettrace"
#define RASP_NT_MAGIC_LEN     8
#define RASP_NT_FS_HEADER     "!FastSerialization.1" /* preceded by its int32 length, 20 */
#define RASP_NT_FS_HEADER_LEN 20

/* FastSerialization tags (V4/V5). */
#define RASP_NT_TAG_NULL	  1
#define RASP_NT_TAG_BEGIN_PRIVATE 5
#define RASP_NT_TAG_END		  6

/* Compressed event header flags. */
#define RASP_NT_F_METADATA_ID  0x01
#define RASP_NT_F_CAPTURE_SEQ  0x02 /* sequence delta, capture thread, processor */
#define RASP_NT_F_THREAD_ID    0x04
#define RASP_NT_F_STACK_ID     0x08
#define RASP_NT_F_ACTIVITY_ID  0x10 /* V6: label list id */
#define RASP_NT_F_RELATED_ID   0x20
#define RASP_NT_F_SORTED       0x40
#define RASP_NT_F_PAYLOAD_SIZE 0x80

/* V6 block kinds. */
enum {
	RASP_NT6_END = 0,
	RASP_NT6_TRACE = 1,
	RASP_NT6_EVENT = 2,
	RASP_NT6_METADATA = 3,
	RASP_NT6_SP = 4,
	RASP_NT6_STACK = 5,
	RASP_NT6_THREAD = 6,
	RASP_NT6_REMOVE_THREAD = 7,
	RASP_NT6_LABEL_LIST = 8,
};

/* Block headers written by rasp (and the runtime): 20 bytes, header compression on. */
#define RASP_NT_BLOCK_HEADER_SIZE 20
/* The EventBlock size .NET's runtime writes, and rasp's writers with it. */
#define RASP_NT_BLOCK_SIZE (100u << 10)

#include <stddef.h>
#include <stdint.h>

#include "rasp-event-desc.h"

/* The bytes a fixed-size field takes in a payload (strings excepted: they end with their
 * terminator); pointer-sized fields take the trace's pointer size. */
static inline size_t rasp_nt_field_size(enum rasp_field_type t, uint32_t pointer_size)
{
	switch (t) {
	case RASP_FT_I8:
	case RASP_FT_U8:
		return 1;
	case RASP_FT_I16:
	case RASP_FT_U16:
		return 2;
	case RASP_FT_I32:
	case RASP_FT_U32:
	case RASP_FT_BOOL32:
	case RASP_FT_F32:
		return 4;
	case RASP_FT_PTR:
		return pointer_size;
	default:
		return 8;
	}
}

/* One payload field's value, by the descriptor's field type: integers in u (or i), reals in
 * f, strings (UTF-8, NUL-terminated) in s. */
union rasp_nt_value {
	uint64_t u;
	int64_t i;
	double f;
	const char *s;
	/* An array field (rasp_field_desc.count >= 0), as many elements as its count field
	 * says: encoding reads them from memory in their C type (uintptr_t for pointers);
	 * decoding points into the payload (little-endian, the trace's pointer size). */
	const void *p;
};

/* Element i of a decoded array field (a pointer into the payload). */
static inline uint64_t rasp_nt_array_get(const union rasp_nt_value *v, enum rasp_field_type t,
					 uint32_t pointer_size, size_t i)
{
	size_t n = rasp_nt_field_size(t, pointer_size);
	const uint8_t *b = (const uint8_t *)v->p + i * n;
	uint64_t x = 0;

	for (size_t k = 0; k < n; k++)
		x |= (uint64_t)b[k] << (8 * k);
	return x;
}

#endif /* RASP_CODEC_NETTRACE_FORMAT_H */
