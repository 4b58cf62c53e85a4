/* rasp diff's writers: text (human units, one line per type, '*' on significant changes;
 * within the view's width, names shortened in the middle) and json (exact numbers,
 * machine-stable keys: docs/usage.md). Both print each side's notes, so a side that lost
 * events says so here as in rasp report. */
#define _GNU_SOURCE /* asprintf */
#include "write-diff.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sanitize.h"
#include "text-fit.h"

/* Names and notes print as their safe text (sanitize.h): nothing of a trace acts on the
 * terminal. */
static size_t width_of(const char *s)
{
	return rasp_text_width(s);
}

static void change_text(const struct rasp_diff_change *c, char *buf, size_t len)
{
	double b = c->base.bytes, n = c->new_.bytes;

	if (!c->in_base)
		snprintf(buf, len, "new");
	else if (!c->in_new)
		snprintf(buf, len, "gone");
	else if (b > 0 && fabs((n - b) / b) < 1e6)
		snprintf(buf, len, "%+.1f%%", 100 * (n - b) / b);
	else if (b > 0)
		snprintf(buf, len, "%+.3g%%", 100 * (n - b) / b);
	else
		snprintf(buf, len, "-");
}

/* Each note on its own lines, wrapped to width. 0 or -ENOMEM. */
static int notes_text(FILE *out, const char *side, const struct rasp_notes *n, size_t width)
{
	size_t lines = 0;
	int ret = 0;

	for (size_t i = 0; i < n->n && !ret; i++) {
		char *text = NULL;

		if (asprintf(&text, "%s (%s): %s",
			     strcmp(n->v[i].code, "no-samples") == 0 ? "NOTE" : "WARNING", side,
			     n->v[i].text) < 0)
			return -ENOMEM;
		ret = rasp_text_put_wrapped(out, text, width, 2, &lines);
		free(text);
	}
	return ret;
}

/* The numbers' columns with the objects' ("  %11s  %11s  %8s  %12s  %12s  %8s  %s", SIG 3
 * wide), and what the objects take of them. */
#define DIFF_NUMBERS 79
#define DIFF_OBJECTS 28

int rasp_diff_write_text(FILE *out, const struct rasp_diff_view *v)
{
	const char *key = v->by_site ? "SITE" : "TYPE";
	size_t w = strlen(key), lines = 0, used;
	char a[48], b[48], ch[64], oa[48], ob[48], *title = NULL;
	bool objects = true;
	int ret;

	for (size_t i = 0; i < v->n; i++)
		if (width_of(v->changes[i].type) > w)
			w = width_of(v->changes[i].type);
	/* A limit: names get what the numbers leave, the objects going first if names would
	 * get fewer than 24 columns; 8 at least. */
	if (v->width && w + DIFF_NUMBERS > v->width) {
		size_t room = v->width > DIFF_NUMBERS ? v->width - DIFF_NUMBERS : 0;

		if (room < (w < 24 ? w : 24)) {
			objects = false;
			room += DIFF_OBJECTS;
		}
		w = room < w ? (room < 8 ? 8 : room) : w;
	}
	if (asprintf(&title,
		     "rasp diff: %s -> %s, estimated bytes per %s; '*' marks a significant change "
		     "(false discovery rate %g%%)",
		     v->base_name, v->new_name, v->by_site ? "site" : "type",
		     (1 - v->confidence) * 100) < 0)
		return -ENOMEM;
	ret = rasp_text_put_wrapped(out, title, v->width, 2, &lines);
	free(title);
	ret = ret ? ret : notes_text(out, "base", v->base_notes, v->width);
	ret = ret ? ret : notes_text(out, "new", v->new_notes, v->width);
	if (ret)
		return ret;
	fputc('\n', out);
	fputs(key, out);
	for (size_t i = strlen(key); i < w; i++)
		fputc(' ', out);
	fprintf(out, "  %11s  %11s  %8s", "BASE BYTES", "NEW BYTES", "CHANGE");
	if (objects)
		fprintf(out, "  %12s  %12s", "BASE OBJECTS", "NEW OBJECTS");
	fprintf(out, "  %8s  %s\n", "P-VALUE", "SIG");
	for (size_t i = 0; i < v->n; i++) {
		const struct rasp_diff_change *c = &v->changes[i];

		rasp_format_bytes(c->base.bytes, a, sizeof(a));
		rasp_format_bytes(c->new_.bytes, b, sizeof(b));
		rasp_format_count(c->base.objects, oa, sizeof(oa));
		rasp_format_count(c->new_.objects, ob, sizeof(ob));
		change_text(c, ch, sizeof(ch));
		ret = rasp_text_put_fit(out, c->type, w, &used);
		if (ret)
			return ret;
		for (size_t k = used; k < w; k++)
			fputc(' ', out);
		fprintf(out, "  %11s  %11s  %8s", a, b, ch);
		if (objects)
			fprintf(out, "  %12s  %12s", oa, ob);
		fprintf(out, "  %8.2g  %s\n", c->p_value, c->significant ? "*" : "");
	}
	if (!objects)
		ret = rasp_text_put_wrapped(
		    out, "(the objects columns are left out to fit the width: --wide shows them)",
		    v->width, 2, &lines);
	return ret;
}

static void notes_json(FILE *out, const struct rasp_notes *n)
{
	fputc('[', out);
	for (size_t i = 0; i < n->n; i++) {
		fprintf(out, "%s{\"code\": \"%s\", \"text\": ", i ? ", " : "", n->v[i].code);
		rasp_json_string(out, n->v[i].text);
		fputc('}', out);
	}
	fputc(']', out);
}

int rasp_diff_write_json(FILE *out, const struct rasp_diff_view *v)
{
	fprintf(out, "{\"confidence\": %.10g, \"base\": ", v->confidence);
	rasp_json_string(out, v->base_name);
	fputs(", \"new\": ", out);
	rasp_json_string(out, v->new_name);
	fprintf(out, ", \"base_estimates_too_low\": %s, \"new_estimates_too_low\": %s",
		v->base_notes->lost_data ? "true" : "false",
		v->new_notes->lost_data ? "true" : "false");
	fputs(", \"base_notes\": ", out);
	notes_json(out, v->base_notes);
	fputs(", \"new_notes\": ", out);
	notes_json(out, v->new_notes);
	fputs(", \"rows\": [", out);
	for (size_t i = 0; i < v->n; i++) {
		const struct rasp_diff_change *c = &v->changes[i];

		fprintf(out, "%s\n  {\"%s\": ", i ? "," : "", v->by_site ? "site" : "type");
		rasp_json_string(out, c->type);
		const struct {
			const char *key;
			double v;
		} nums[] = {
		    {"bytes_base", c->base.bytes},
		    {"bytes_new", c->new_.bytes},
		    {"bytes_change", c->new_.bytes - c->base.bytes},
		    {"bytes_base_low", c->base.bytes_low},
		    {"bytes_base_high", c->base.bytes_high},
		    {"bytes_new_low", c->new_.bytes_low},
		    {"bytes_new_high", c->new_.bytes_high},
		    {"objects_base", c->base.objects},
		    {"objects_new", c->new_.objects},
		};

		for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
			fprintf(out, ", \"%s\": ", nums[k].key);
			rasp_json_number(out, nums[k].v, "%.17g"); /* null, never NaN */
		}
		fprintf(out,
			", \"samples_base\": %" PRIu64 ", \"samples_new\": %" PRIu64
			", \"p_value\": ",
			c->base.samples, c->new_.samples);
		rasp_json_number(out, c->p_value, "%.6g");
		fprintf(out, ", \"significant\": %s}", c->significant ? "true" : "false");
	}
	fputs("\n]}\n", out);
	return 0;
}
