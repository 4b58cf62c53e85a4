/* The text report's header and its process labels (text-header.c). */
#ifndef RASP_TEXT_HEADER_H
#define RASP_TEXT_HEADER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "writer.h"

/* "PID NAME", "PID" when the name is unknown, "-" for an unknown pid, in buf (len bytes). */
void rasp__text_process(const struct rasp_tally *t, int64_t pid, char *buf, size_t len);
/* The header and its notes wrapped to width, then a blank line; adds the lines written to
 * *lines. 0 or -ENOMEM. */
int rasp__text_header(const struct rasp_report_view *v, FILE *out, size_t width, size_t *lines);

#endif
