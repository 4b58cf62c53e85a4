/* Text conversions for trace formats: UTF-16LE (EventPipe, ETW) to UTF-8 and back, and
 * arbitrary bytes to valid UTF-8. Malformed input becomes U+FFFD, never an error: a type name
 * with a lone surrogate still gets a row. No allocation; sizes are checked. */
#ifndef RASP_CODEC_UTF_H
#define RASP_CODEC_UTF_H

#include <stddef.h>
#include <stdint.h>

/* n UTF-16LE code units at src to NUL-terminated UTF-8 in dst (cap bytes): the length written
 * without the NUL, or (size_t)-1 when dst is too small. At most 3 bytes per unit. */
size_t rasp_utf16le_to_utf8(const uint8_t *src, size_t n, char *dst, size_t cap);

/* n bytes to NUL-terminated valid UTF-8 (a bad byte becomes U+FFFD); as above. */
size_t rasp_bytes_to_utf8(const uint8_t *src, size_t n, char *dst, size_t cap);

/* NUL-terminated UTF-8 to UTF-16LE code units with a terminating 0 unit, into dst (cap
 * bytes): the bytes written, terminator included, or (size_t)-1 when dst is too small. */
size_t rasp_utf8_to_utf16le(const char *src, uint8_t *dst, size_t cap);

#endif /* RASP_CODEC_UTF_H */
