/* Command-line flags derived from a parameter table (consumer/report/params.h): the long options,
 * their parsing and their help all come from the table, so the command and the plugin accept
 * the same values with the same ranges and defaults. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long values: table entry i is BASE + i, its --no- form NEG + i, extra flag k is
 * EXTRA + k. */
#define BASE  0x1000
#define NEG   0x2000
#define EXTRA 0x3000

static size_t table_len(const struct rasp_param *t)
{
	size_t n = 0;

	while (t && t[n].name)
		n++;
	return n;
}

static void bad_option(const char *cmd, const char *arg, int opt)
{
	if (opt && opt < 0x100 && arg[0] == '-' && arg[1] != '-')
		rasp_cli_error(cmd,
			       "option '-%c' is unknown or lacks its value (see rasp %s --help)",
			       opt, cmd);
	else
		rasp_cli_error(cmd,
			       "option '%s' is unknown or lacks its value (see rasp %s --help)",
			       arg, cmd);
}

int rasp_cli_args_parse(const char *cmd, int argc, char **argv, const struct rasp_param *table,
			void *opts, const struct rasp_cli_flag *extra, size_t nextra,
			rasp_cli_flag_fn on_extra, void *ctx, bool stop_at_operand, int *operands)
{
	size_t n = table_len(table), k = 0;
	struct option *lo = calloc(2 * n + nextra + 2, sizeof(*lo));
	char *names = NULL, shorts[64] = "", *sp;
	int c, rc = RASP_CLI_ARGS_OK;

	if (!lo) {
		rasp_cli_error(cmd, "out of memory");
		return RASP_CLI_ARGS_USAGE;
	}
	/* Storage for the "no-NAME" spellings. */
	names = calloc(n + 1, 64);
	if (!names) {
		free(lo);
		rasp_cli_error(cmd, "out of memory");
		return RASP_CLI_ARGS_USAGE;
	}
	sp = shorts;
	*sp++ = stop_at_operand ? '+' : ':';
	if (stop_at_operand)
		*sp++ = ':';
	for (size_t i = 0; i < n; i++) {
		bool b = table[i].type == RASP_PARAM_BOOL;

		lo[k++] = (struct option){table[i].name, b ? no_argument : required_argument, NULL,
					  (int)(BASE + i)};
		if (b) {
			snprintf(names + 64 * i, 64, "no-%s", table[i].name);
			lo[k++] =
			    (struct option){names + 64 * i, no_argument, NULL, (int)(NEG + i)};
		}
		if (table[i].short_flag && sp < shorts + sizeof(shorts) - 3) {
			*sp++ = table[i].short_flag;
			if (!b)
				*sp++ = ':';
		}
	}
	for (size_t i = 0; i < nextra; i++) {
		lo[k++] = (struct option){extra[i].name,
					  extra[i].metavar ? required_argument : no_argument, NULL,
					  (int)(EXTRA + i)};
		if (extra[i].short_flag && sp < shorts + sizeof(shorts) - 3) {
			*sp++ = extra[i].short_flag;
			if (extra[i].metavar)
				*sp++ = ':';
		}
	}
	lo[k++] = (struct option){"help", no_argument, NULL, 'h'};
	*sp++ = 'h';
	*sp = '\0';

	/* 0, not 1: glibc then resets all of getopt's state, also the "+" mode of a previous
	 * call (the command parses once; tests and the fuzzer parse many times). */
	optind = 0;
	opterr = 0; /* our own one-line messages */
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		char err[512];
		size_t i;

		if (c == 'h') {
			rc = RASP_CLI_ARGS_HELP;
			break;
		}
		/* A short flag: find its table entry or extra flag. */
		if (c > 0 && c < 0x100) {
			for (i = 0; i < n && table[i].short_flag != c; i++)
				;
			if (i < n) {
				c = (int)(BASE + i);
			} else {
				for (i = 0; i < nextra && extra[i].short_flag != c; i++)
					;
				c = i < nextra ? (int)(EXTRA + i) : c;
			}
		}
		if (c >= BASE && c < BASE + (int)n) {
			const struct rasp_param *p = &table[c - BASE];
			const char *text = p->type == RASP_PARAM_BOOL ? "true" : optarg;

			if (rasp_param_set_text(table, opts, p->name, text, err, sizeof(err))) {
				rasp_cli_error(cmd, "--%s '%s' is not accepted: %s%s", p->name,
					       text, p->accepted,
					       p->suffixes ? " (K, M, G suffixes allowed)" : "");
				rc = RASP_CLI_ARGS_USAGE;
				break;
			}
		} else if (c >= NEG && c < NEG + (int)n) {
			rasp_param_set_text(table, opts, table[c - NEG].name, "false", err,
					    sizeof(err));
		} else if (c >= EXTRA && c < EXTRA + (int)nextra) {
			if (on_extra(ctx, (size_t)(c - EXTRA), optarg) < 0) {
				rc = RASP_CLI_ARGS_USAGE;
				break;
			}
		} else {
			bad_option(cmd, argv[optind - 1], optopt);
			rc = RASP_CLI_ARGS_USAGE;
			break;
		}
	}
	*operands = optind;
	free(names);
	free(lo);
	return rc;
}

static void help_line(const char *flag, const char *text, const char *def)
{
	int w = printf("  %s", flag);

	printf("%*s%s", w < 26 ? 26 - w : 1, "", text);
	if (def)
		printf(" (default %s)", def);
	putchar('\n');
}

void rasp_cli_args_help(const struct rasp_param *table, const struct rasp_cli_flag *extra,
			size_t nextra)
{
	char flag[96];

	for (size_t i = 0; table && table[i].name; i++) {
		const struct rasp_param *p = &table[i];
		char text[320];

		if (p->type == RASP_PARAM_BOOL) {
			snprintf(flag, sizeof(flag), "--%s, --no-%s", p->name, p->name);
			help_line(flag, p->help, p->def);
			continue;
		}
		if (p->short_flag)
			snprintf(flag, sizeof(flag), "-%c, --%s %s", p->short_flag, p->name,
				 p->metavar);
		else
			snprintf(flag, sizeof(flag), "--%s %s", p->name, p->metavar);
		if (p->type == RASP_PARAM_CHOICE || p->type == RASP_PARAM_KEYS)
			snprintf(text, sizeof(text), "%s: %s", p->help, p->accepted);
		else
			snprintf(text, sizeof(text), "%s", p->help);
		help_line(flag, text, p->def);
	}
	for (size_t i = 0; i < nextra; i++) {
		if (extra[i].short_flag)
			snprintf(flag, sizeof(flag), "-%c, --%s%s%s", extra[i].short_flag,
				 extra[i].name, extra[i].metavar ? " " : "",
				 extra[i].metavar ? extra[i].metavar : "");
		else
			snprintf(flag, sizeof(flag), "--%s%s%s", extra[i].name,
				 extra[i].metavar ? " " : "",
				 extra[i].metavar ? extra[i].metavar : "");
		help_line(flag, extra[i].help, NULL);
	}
	help_line("-h, --help", "show this help", NULL);
}
