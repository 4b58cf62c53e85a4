/* Text that fits a terminal (text-fit.c): the display width of a name, a name shortened in the
 * middle to a number of columns ("System.Collections.Gen…Int32>"), a paragraph wrapped at
 * word boundaries, and the size of the terminal a stream writes to. Everything written is the
 * safe text of its input (sanitize.h), so nothing from a trace acts on the terminal; widths
 * count the columns a terminal gives each character (wcwidth(3) in a UTF-8 locale: two for
 * East Asian wide ones, none for combining marks; one each for the \xNN of an escape). */
#ifndef RASP_CONSUMER_TEXT_FIT_H
#define RASP_CONSUMER_TEXT_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The columns the safe text of s takes. */
size_t rasp_text_width(const char *s);

/* Writes the safe text of s in at most cols columns: whole when it fits, else its start and
 * its end with '…' (U+2026, one column) between them, the start getting the odd column; the
 * columns written in *used. 0 or -ENOMEM (nothing written). */
int rasp_text_put_fit(FILE *out, const char *s, size_t cols, size_t *used);

/* Writes the safe text of s wrapped at spaces to lines of at most width columns (0: one line
 * whatever its length), each line after the first indented by indent spaces, a word longer
 * than a line cut where the line ends; ends with a newline. Adds the lines written to *lines.
 * 0 or -ENOMEM (nothing written). */
int rasp_text_put_wrapped(FILE *out, const char *s, size_t width, size_t indent, size_t *lines);

/* Whether out writes to a terminal and, when it does, its size: columns from the terminal
 * (TIOCGWINSZ), else $COLUMNS, else 80; rows from the terminal, else $LINES, else 24. */
bool rasp_text_terminal(FILE *out, size_t *cols, size_t *rows);

#endif /* RASP_CONSUMER_TEXT_FIT_H */
