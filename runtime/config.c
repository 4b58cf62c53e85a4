/* Configuration: defaults, the RASP_* environment variables, validation, and error texts.
 * Invalid values are refused with a message naming the variable and the accepted range;
 * nothing is clamped, so a typo never silently changes what a trace measures. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void rasp_config_init(rasp_config_t *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->sampling = RASP_SAMPLING_AUTO;
	cfg->sampling_mean = RASP_DEFAULT_SAMPLING_MEAN;
	cfg->alloc_quantum = RASP_DEFAULT_ALLOC_QUANTUM;
	cfg->clr_instance_id = RASP_DEFAULT_CLR_INSTANCE_ID;
	cfg->stack_depth = RASP_DEFAULT_STACK_DEPTH;
}

/* Strict unsigned parse: digits only (or 0x + hex digits when hex_ok), no sign, no spaces. */
static int parse_u64(const char *s, int hex_ok, uint64_t *out)
{
	int base = 10;
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return -1;
	if (hex_ok && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		if (!s[2])
			return -1;
	} else if (s[0] < '0' || s[0] > '9') {
		return -1;
	}
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int rasp_config_validate(const rasp_config_t *cfg)
{
	if (!cfg) {
		fprintf(stderr, "rasp: configuration is NULL\n");
		return -EINVAL;
	}
	if (cfg->sampling != RASP_SAMPLING_AUTO && cfg->sampling != RASP_SAMPLING_ON &&
	    cfg->sampling != RASP_SAMPLING_OFF) {
		fprintf(stderr, "rasp: sampling mode %d is not auto (0), on (1) or off (2)\n",
			cfg->sampling);
		return -EINVAL;
	}
	if (cfg->sampling_mean < 1 || cfg->sampling_mean > RASP_MAX_SAMPLING_MEAN) {
		fprintf(stderr,
			"rasp: sampling mean %" PRIu64 " is out of range: 1..%" PRIu64 " bytes\n",
			cfg->sampling_mean, (uint64_t)RASP_MAX_SAMPLING_MEAN);
		return -EINVAL;
	}
	if (cfg->alloc_quantum < RASP_MIN_ALLOC_QUANTUM ||
	    cfg->alloc_quantum > RASP_MAX_ALLOC_QUANTUM || cfg->alloc_quantum % 8) {
		fprintf(
		    stderr,
		    "rasp: allocation quantum %zu is invalid: a multiple of 8 in %u..%u bytes\n",
		    cfg->alloc_quantum, RASP_MIN_ALLOC_QUANTUM, RASP_MAX_ALLOC_QUANTUM);
		return -EINVAL;
	}
	if (cfg->native_frames != 0 && cfg->native_frames != 1) {
		fprintf(stderr, "rasp: native_frames %d is not 0 or 1\n", cfg->native_frames);
		return -EINVAL;
	}
	if (cfg->requested_sizes != 0 && cfg->requested_sizes != 1) {
		fprintf(stderr, "rasp: requested_sizes %d is not 0 or 1\n", cfg->requested_sizes);
		return -EINVAL;
	}
	if (cfg->request_pad > RASP_MAX_REQUEST_PAD ||
	    (cfg->request_pad && !cfg->requested_sizes)) {
		fprintf(stderr,
			"rasp: request_pad %zu is out of range: 0..%u bytes, and 0 without "
			"requested_sizes\n",
			cfg->request_pad, RASP_MAX_REQUEST_PAD);
		return -EINVAL;
	}
	if (cfg->stack_depth > RASP_MAX_STACK_DEPTH) {
		fprintf(stderr, "rasp: stack depth %u is out of range: 0..%u frames\n",
			cfg->stack_depth, RASP_MAX_STACK_DEPTH);
		return -EINVAL;
	}
	return 0;
}

int rasp_config_from_env(rasp_config_t *cfg)
{
	const char *v;
	uint64_t n;

	if (!cfg)
		return -EINVAL;
	v = getenv("RASP_SAMPLING");
	if (v) {
		if (strcmp(v, "auto") == 0) {
			cfg->sampling = RASP_SAMPLING_AUTO;
		} else if (strcmp(v, "on") == 0) {
			cfg->sampling = RASP_SAMPLING_ON;
		} else if (strcmp(v, "off") == 0) {
			cfg->sampling = RASP_SAMPLING_OFF;
		} else {
			fprintf(stderr, "rasp: RASP_SAMPLING='%s' is not auto, on or off\n", v);
			return -EINVAL;
		}
	}
	v = getenv("RASP_SAMPLING_MEAN");
	if (v) {
		if (parse_u64(v, 0, &n) || n < 1 || n > RASP_MAX_SAMPLING_MEAN) {
			fprintf(stderr,
				"rasp: RASP_SAMPLING_MEAN='%s' is not a number of bytes in "
				"1..%" PRIu64 "\n",
				v, (uint64_t)RASP_MAX_SAMPLING_MEAN);
			return -EINVAL;
		}
		cfg->sampling_mean = n;
	}
	v = getenv("RASP_SEED");
	if (v) {
		if (parse_u64(v, 1, &n)) {
			fprintf(stderr,
				"rasp: RASP_SEED='%s' is not an unsigned 64-bit integer "
				"(decimal or 0x hex)\n",
				v);
			return -EINVAL;
		}
		cfg->has_seed = 1;
		cfg->seed = n;
	}
	v = getenv("RASP_ALLOC_QUANTUM");
	if (v) {
		if (parse_u64(v, 0, &n) || n < RASP_MIN_ALLOC_QUANTUM ||
		    n > RASP_MAX_ALLOC_QUANTUM || n % 8) {
			fprintf(stderr,
				"rasp: RASP_ALLOC_QUANTUM='%s' is not a multiple of 8 in %u..%u "
				"bytes\n",
				v, RASP_MIN_ALLOC_QUANTUM, RASP_MAX_ALLOC_QUANTUM);
			return -EINVAL;
		}
		cfg->alloc_quantum = (size_t)n;
	}
	v = getenv("RASP_STACK_DEPTH");
	if (v) {
		if (parse_u64(v, 0, &n) || n > RASP_MAX_STACK_DEPTH) {
			fprintf(stderr,
				"rasp: RASP_STACK_DEPTH='%s' is not a number of frames in 0..%u\n",
				v, RASP_MAX_STACK_DEPTH);
			return -EINVAL;
		}
		cfg->stack_depth = (unsigned)n;
	}
	v = getenv("RASP_NATIVE_FRAMES");
	if (v) {
		if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
			fprintf(stderr, "rasp: RASP_NATIVE_FRAMES='%s' is not 0 or 1\n", v);
			return -EINVAL;
		}
		cfg->native_frames = *v == '1';
	}
	v = getenv("RASP_STACKS");
	if (v) {
		if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
			fprintf(stderr, "rasp: RASP_STACKS='%s' is not 0 or 1\n", v);
			return -EINVAL;
		}
		if (*v == '0')
			cfg->stack_depth = 0;
	}
	return 0;
}

const char *rasp_strerror(int err)
{
	/* -INT_MIN does not exist: every negative value but that one is an errno value. */
	if (err == INT_MIN)
		return "unknown error";
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case EINVAL:
		return "invalid argument";
	case ENOMEM:
		return "out of memory";
	case EOVERFLOW:
		return "size overflows";
	case EBUSY:
		return "resource busy";
	case ENOENT:
		return "not found";
	default:
		return "unknown error";
	}
}
