/* The bounds-checked cursor every parser of outside bytes reads through (NetTrace files and
 * payloads, diagnostic IPC messages, CTF index files): a read past the end fails instead of
 * touching memory, and the offset of the failure is kept for the error message. Header-only:
 * a few compares per read. */
#ifndef RASP_CODEC_CURSOR_H
#define RASP_CODEC_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct rasp_cursor {
	const uint8_t *base;
	size_t len;	 /* bytes from base */
	size_t pos;	 /* next byte to read */
	uint64_t origin; /* file offset of base, for messages */
	bool failed;	 /* a read went past the end; every later read fails too */
};

static inline struct rasp_cursor rasp_cursor_make(const void *base, size_t len, uint64_t origin)
{
	return (struct rasp_cursor){(const uint8_t *)base, len, 0, origin, false};
}

static inline size_t rasp_cursor_left(const struct rasp_cursor *c)
{
	return c->failed ? 0 : c->len - c->pos;
}

/* File offset of the next byte. */
static inline uint64_t rasp_cursor_offset(const struct rasp_cursor *c)
{
	return c->origin + c->pos;
}

/* n bytes, or NULL (and the cursor failed) when fewer are left. */
static inline const uint8_t *rasp_cursor_take(struct rasp_cursor *c, size_t n)
{
	const uint8_t *p;

	if (c->failed || n > c->len - c->pos) {
		c->failed = true;
		return NULL;
	}
	p = c->base + c->pos;
	c->pos += n;
	return p;
}

static inline bool rasp_cursor_skip(struct rasp_cursor *c, size_t n)
{
	return rasp_cursor_take(c, n) != NULL;
}

/* The next n bytes without moving past them, or NULL (the cursor unchanged) when fewer are
 * left. */
static inline const uint8_t *rasp_cursor_peek(const struct rasp_cursor *c, size_t n)
{
	return c->failed || n > c->len - c->pos ? NULL : c->base + c->pos;
}

/* An n-byte little-endian unsigned integer, n in 1..8. */
static inline bool rasp_cursor_uint_le(struct rasp_cursor *c, size_t n, uint64_t *v)
{
	const uint8_t *p = n <= 8 ? rasp_cursor_take(c, n) : NULL;
	uint64_t x = 0;

	if (!p)
		return false;
	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)p[i] << (8 * i);
	*v = x;
	return true;
}

static inline bool rasp_cursor_u8(struct rasp_cursor *c, uint8_t *v)
{
	const uint8_t *p = rasp_cursor_take(c, 1);

	if (p)
		*v = p[0];
	return p != NULL;
}

static inline bool rasp_cursor_u16le(struct rasp_cursor *c, uint16_t *v)
{
	const uint8_t *p = rasp_cursor_take(c, 2);

	if (p)
		*v = (uint16_t)(p[0] | p[1] << 8);
	return p != NULL;
}

static inline bool rasp_cursor_u32le(struct rasp_cursor *c, uint32_t *v)
{
	const uint8_t *p = rasp_cursor_take(c, 4);

	if (p)
		*v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		     (uint32_t)p[3] << 24;
	return p != NULL;
}

static inline bool rasp_cursor_u64le(struct rasp_cursor *c, uint64_t *v)
{
	uint32_t lo, hi;

	if (!rasp_cursor_u32le(c, &lo) || !rasp_cursor_u32le(c, &hi))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

static inline bool rasp_cursor_u32be(struct rasp_cursor *c, uint32_t *v)
{
	const uint8_t *p = rasp_cursor_take(c, 4);

	if (p)
		*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
		     (uint32_t)p[3];
	return p != NULL;
}

static inline bool rasp_cursor_u64be(struct rasp_cursor *c, uint64_t *v)
{
	uint32_t hi, lo;

	if (!rasp_cursor_u32be(c, &hi) || !rasp_cursor_u32be(c, &lo))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

/* LEB128 unsigned (NetTrace varuint): at most 10 bytes for 64 bits, 5 for 32. */
static inline bool rasp_cursor_varuint(struct rasp_cursor *c, unsigned maxbytes, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned i = 0; i < maxbytes; i++) {
		uint8_t b;

		if (!rasp_cursor_u8(c, &b))
			return false;
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	c->failed = true; /* too long */
	return false;
}

static inline bool rasp_cursor_varuint32(struct rasp_cursor *c, uint32_t *v)
{
	uint64_t x;

	if (!rasp_cursor_varuint(c, 5, &x))
		return false;
	*v = (uint32_t)x; /* as the runtime and TraceEvent do: the high bits wrap */
	return true;
}

static inline bool rasp_cursor_varuint64(struct rasp_cursor *c, uint64_t *v)
{
	return rasp_cursor_varuint(c, 10, v);
}

#endif /* RASP_CODEC_CURSOR_H */
