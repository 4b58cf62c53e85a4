/* Terminal-safe text (sanitize.c): names from a trace or from /proc (types, frames, modules,
 * process and thread names, paths, notes that quote them) written so that none of their
 * bytes can act on a terminal. Every writer that prints for a terminal (text, csv, rasp ps,
 * rasp record -p, error messages) goes through it; json escapes with the same decoder. */
#ifndef RASP_CONSUMER_SANITIZE_H
#define RASP_CONSUMER_SANITIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The UTF-8 character at s (s[0] != '\0'): its length in bytes and, in *cp, its code point;
 * *cp is -1 and the length 1 when s[0] begins no well-formed sequence (a stray continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, or cut short). Reads no byte past a
 * NUL. */
size_t rasp_utf8_next(const char *s, int32_t *cp);

/* Whether a terminal may act on the character: C0 controls (tab and line ends included),
 * DEL, C1 controls (U+0080..U+009F: CSI is U+009B), the bidirectional embeddings, overrides
 * and isolates (U+202A..U+202E, U+2066..U+2069: they reorder what follows on the line), and
 * -1 (not UTF-8). */
bool rasp_char_unsafe(int32_t cp);

/* The safe text of s: each byte of an unsafe character written as \xNN (two lowercase hex
 * digits), everything else as it is; a backslash stays one, so the safe text of a safe text
 * is itself. rasp_safe_put writes it to out. rasp_safe_text writes it into buf as snprintf
 * does: cut before a character or escape that does not fit, NUL-terminated when len > 0,
 * and returns the length of the whole safe text. rasp_safe_width is its display width in
 * code points. rasp_safe_in_place rewrites s, a buffer of cap bytes, as its safe text, cut to
 * fit, and returns s. */
void rasp_safe_put(FILE *out, const char *s);
size_t rasp_safe_text(char *buf, size_t len, const char *s);
size_t rasp_safe_width(const char *s);
char *rasp_safe_in_place(char *s, size_t cap);

#endif /* RASP_CONSUMER_SANITIZE_H */
