/* libFuzzer target: the command line and the environment as the rasp command and the
 * runtime parse them. The input is NUL-separated tokens; the first byte picks what parses
 * them: rasp report's flags (the parameter table), rasp record's flags, the runtime's RASP_*
 * variables, or parameter text through rasp_param_set_text. Nothing runs a program. Every bad
 * flag prints a line: run with -close_fd_mask=3 (scripts/fuzz.sh does). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rasp/rasp.h"
#include "record-args.h"
#include "report/params.h"

#define MAX_TOKENS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const env_names[] = {"RASP_SAMPLING", "RASP_SAMPLING_MEAN", "RASP_SEED",
						"RASP_ALLOC_QUANTUM"};
	char buf[4096], *argv[MAX_TOKENS + 2];
	int argc = 1, first;
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	size = size - 1 < sizeof(buf) - 1 ? size - 1 : sizeof(buf) - 1;
	memcpy(buf, data + 1, size);
	buf[size] = '\0';
	argv[0] = (char *)(mode & 1 ? "record" : "report");
	for (char *p = buf; p < buf + size && argc <= MAX_TOKENS; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;

	switch (mode % 4) {
	case 0: {
		struct rasp_report_options opt;

		rasp_report_options_init(&opt);
		rasp_cli_args_parse("report", argc, argv, rasp_report_params, &opt, NULL, 0, NULL,
				    NULL, false, &first);
		rasp_report_options_fini(&opt);
		break;
	}
	case 1: {
		struct rasp_record_args a;

		rasp_cli_record_parse(argc, argv, &a, &first);
		break;
	}
	case 2: {
		rasp_config_t cfg;

		for (int i = 1; i < argc && i <= 4; i++)
			setenv(env_names[i - 1], argv[i], 1);
		rasp_config_init(&cfg);
		if (rasp_config_from_env(&cfg) == 0 && rasp_config_validate(&cfg) != 0)
			abort(); /* what the environment accepts must be a valid configuration */
		for (int i = 0; i < 4; i++)
			unsetenv(env_names[i]);
		break;
	}
	default: {
		struct rasp_report_options opt;
		char err[512];

		rasp_report_options_init(&opt);
		for (int i = 1; i + 1 < argc; i += 2)
			if (rasp_param_set_text(rasp_report_params, &opt, argv[i], argv[i + 1], err,
						sizeof(err)) == 0 &&
			    !(opt.confidence > 0 && opt.confidence < 1 && opt.sampling_mean >= 1))
				abort(); /* accepted values stay in range */
		rasp_report_options_fini(&opt);
		break;
	}
	}
	return 0;
}
