/* libFuzzer target: .NET names as C# writes them (consumer/stacks/clr-names.c) and names
 * shortened to a width (consumer/write/text-fit.c), on any bytes. The conversions: the
 * length returned is what a large enough buffer receives, a smaller buffer gets its start,
 * terminated, for every namespace choice; the shortening: never more columns than asked. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stacks/clr-names.h"
#include "write/text-fit.h"

typedef size_t (*convert_fn)(const char *in, int ns, char *out, size_t cap);

static size_t type_name(const char *in, int ns, char *out, size_t cap)
{
	return rasp_clr_type_name(in, (enum rasp_clr_ns)ns, out, cap);
}

static size_t params(const char *in, int ns, char *out, size_t cap)
{
	return rasp_clr_signature_params(in, (enum rasp_clr_ns)ns, out, cap);
}

static size_t params_raw(const char *in, int ns, char *out, size_t cap)
{
	(void)ns;
	return rasp_clr_signature_params_raw(in, out, cap);
}

static void check_convert(convert_fn fn, const char *in, int ns)
{
	size_t n = fn(in, ns, NULL, 0), cut = n / 2;
	char *full = malloc(n + 1), *part = malloc(cut + 1);

	if (!full || !part)
		abort();
	if (fn(in, ns, full, n + 1) != n || strlen(full) != n)
		abort(); /* the length said is the length written */
	if (fn(in, ns, part, cut + 1) != n || strlen(part) != cut || memcmp(part, full, cut) != 0)
		abort(); /* a short buffer gets the start, terminated */
	free(full);
	free(part);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	for (int ns = RASP_CLR_NS_NONE; ns <= RASP_CLR_NS_ALL; ns++) {
		check_convert(type_name, s, ns);
		check_convert(params, s, ns);
	}
	check_convert(params_raw, s, 0);
	for (size_t cols = 0; cols < 48; cols += 7) {
		char *buf = NULL;
		size_t len = 0, used = 0;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			abort();
		if (rasp_text_put_fit(f, s, cols, &used) == 0) {
			fclose(f);
			if (used > cols || rasp_text_width(buf) != used)
				abort(); /* wider than asked, or not the columns it says */
		} else {
			fclose(f);
		}
		free(buf);
	}
	free(s);
	return 0;
}
