/* Text that fits a terminal (text-fit.h). The width of a character is wcwidth's in the
 * C.UTF-8 locale, used through a locale object of this file's own (uselocale), so the
 * program's locale is never changed; where C.UTF-8 is missing every character is one column. */
#define _GNU_SOURCE
#include "text-fit.h"

#include <errno.h>
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "sanitize.h"

/* One column for every character when no UTF-8 locale can be had. */
static int char_width(int32_t cp)
{
	static locale_t utf8;
	static bool tried;
	locale_t old;
	int w;

	if (cp < 0x7f)
		return 1;
	if (!tried) {
		tried = true;
		utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	}
	if (!utf8)
		return 1;
	old = uselocale(utf8);
	w = wcwidth((wchar_t)cp);
	uselocale(old);
	/* Not printable (unassigned code points): the terminal shows something, one column. */
	return w < 0 ? 1 : w;
}

/* The safe text of s in fresh memory (its length in *len); NULL without memory. */
static char *safe_copy(const char *s, size_t *len)
{
	size_t n = rasp_safe_text(NULL, 0, s);
	char *buf = malloc(n + 1);

	if (buf)
		rasp_safe_text(buf, n + 1, s);
	*len = n;
	return buf;
}

/* The width of the n bytes of safe text at s. */
static size_t width_of(const char *s, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n;) {
		int32_t cp;

		i += rasp_utf8_next(s + i, &cp);
		w += (size_t)char_width(cp);
	}
	return w;
}

size_t rasp_text_width(const char *s)
{
	size_t len, w;
	char *safe = safe_copy(s, &len);

	if (!safe)
		return rasp_safe_width(s); /* code points: near enough without memory */
	w = width_of(safe, len);
	free(safe);
	return w;
}

/* The start of the UTF-8 character before byte i of s (i > 0). */
static size_t back(const char *s, size_t i)
{
	do
		i--;
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80);
	return i;
}

int rasp_text_put_fit(FILE *out, const char *s, size_t cols, size_t *used)
{
	size_t len, total, head = 0, hw = 0, tail, tw = 0, keep;
	char *safe = safe_copy(s, &len);

	if (!safe)
		return -ENOMEM;
	total = width_of(safe, len);
	if (total <= cols) {
		fwrite(safe, 1, len, out);
		*used = total;
		free(safe);
		return 0;
	}
	if (cols == 0) {
		*used = 0;
		free(safe);
		return 0;
	}
	/* The start gets the odd column: more of a name is read from its start. */
	keep = cols - 1;
	while (head < len) {
		int32_t cp;
		size_t n = rasp_utf8_next(safe + head, &cp);
		size_t w = (size_t)char_width(cp);

		if (hw + w > keep - keep / 2)
			break;
		hw += w;
		head += n;
	}
	tail = len;
	while (tail > head) {
		size_t at = back(safe, tail);
		size_t w = width_of(safe + at, tail - at);

		if (tw + w > keep - hw)
			break;
		tw += w;
		tail = at;
	}
	fwrite(safe, 1, head, out);
	fputs("\u2026", out);
	fwrite(safe + tail, 1, len - tail, out);
	*used = hw + 1 + tw;
	free(safe);
	return 0;
}

/* The next line, indented. */
static void new_line(FILE *out, size_t indent, size_t *col, size_t *n)
{
	fprintf(out, "\n%*s", (int)indent, "");
	*col = indent;
	(*n)++;
}

int rasp_text_put_wrapped(FILE *out, const char *s, size_t width, size_t indent, size_t *lines)
{
	size_t len, col = 0, n = 1;
	char *safe = safe_copy(s, &len);

	if (!safe)
		return -ENOMEM;
	/* Narrower than the indent and a few columns: one line, as it is. */
	if (width <= indent + 8) {
		fwrite(safe, 1, len, out);
		fputc('\n', out);
		*lines += 1;
		free(safe);
		return 0;
	}
	for (size_t i = 0; i < len;) {
		size_t sp = i, we, ww;

		/* A word [sp, we) and the spaces [i, sp) before it. */
		while (sp < len && safe[sp] == ' ')
			sp++;
		we = sp;
		while (we < len && safe[we] != ' ')
			we++;
		ww = width_of(safe + sp, we - sp);
		if (col + (sp - i) + ww <= width) {
			fwrite(safe + i, 1, we - i, out);
			col += (sp - i) + ww;
		} else if (ww <= width - indent && col > indent) {
			/* On the next line, without the spaces that separated it. */
			new_line(out, indent, &col, &n);
			fwrite(safe + sp, 1, we - sp, out);
			col += ww;
		} else {
			/* Longer than a line: as much as fits here, the rest on the next. */
			for (size_t k = i; k < sp && col < width; k++, col++)
				fputc(' ', out);
			for (size_t k = sp; k < we;) {
				int32_t cp;
				size_t b = rasp_utf8_next(safe + k, &cp);
				size_t cw = (size_t)char_width(cp);

				if (col + cw > width && col > indent)
					new_line(out, indent, &col, &n);
				fwrite(safe + k, 1, b, out);
				col += cw;
				k += b;
			}
		}
		i = we;
	}
	fputc('\n', out);
	*lines += n;
	free(safe);
	return 0;
}

bool rasp_text_terminal(FILE *out, size_t *cols, size_t *rows)
{
	int fd = fileno(out);
	struct winsize ws = {0};
	const char *env;
	char *end;
	unsigned long v;

	if (fd < 0 || !isatty(fd))
		return false;
	if (ioctl(fd, TIOCGWINSZ, &ws) != 0)
		ws.ws_col = ws.ws_row = 0;
	*cols = ws.ws_col;
	*rows = ws.ws_row;
	if (!*cols && (env = getenv("COLUMNS")) && (v = strtoul(env, &end, 10)) > 0 && !*end &&
	    v <= 100000)
		*cols = v;
	if (!*rows && (env = getenv("LINES")) && (v = strtoul(env, &end, 10)) > 0 && !*end &&
	    v <= 100000)
		*rows = v;
	if (!*cols)
		*cols = 80;
	if (!*rows)
		*rows = 24;
	return true;
}
