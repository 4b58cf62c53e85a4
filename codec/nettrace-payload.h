/* Decoding NetTrace event payloads: the fields of an event, by the descriptor generated from
 * the manifests (rasp-event-desc.h), into one value each; UTF-16 strings become UTF-8. Every
 * byte goes through the bounds-checked cursor. The reader (consumer/read/) and anything that
 * holds a payload (sink.rasp.report's ClrStackWalk blobs, tests) decode through it. */
#ifndef RASP_CODEC_NETTRACE_PAYLOAD_H
#define RASP_CODEC_NETTRACE_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "nettrace-format.h"
#include "rasp-event-desc.h"

/* Decodes a payload by its descriptor: one value per field, strings converted to UTF-8 into
 * strbuf (each NUL-terminated; invalid UTF-16 becomes U+FFFD). Bytes past the known fields
 * are ignored (later versions append fields). 0, or -1 when the payload is shorter than its
 * fields, a string lacks its terminator, or strbuf is too small. */
int rasp_nt_decode(const struct rasp_event_desc *d, const uint8_t *payload, size_t len,
		   uint32_t pointer_size, union rasp_nt_value *vals, char *strbuf, size_t strcap);

/* The descriptor of (provider, event id, version): exact, else the highest version below. */
const struct rasp_event_desc *rasp_nt_find_desc(const char *provider, uint32_t id,
						uint32_t version);

#endif /* RASP_CODEC_NETTRACE_PAYLOAD_H */
