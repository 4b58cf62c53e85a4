/* rasp: the command-line entry point. `rasp record` runs a program under an LTTng session,
 * `rasp report` turns traces into per-type estimates, `rasp diff` compares two recordings,
 * `rasp convert` writes a recording as an EventPipe .nettrace file.
 * Exit status: 0 on success, the program's status for record, 1 on failure, 2 on bad usage. */
#define _GNU_SOURCE
#include "cli.h"
#include "primer.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: rasp COMMAND [options]\n"
    "  record [options] -- PROGRAM [ARGS...]   record a program's sampled allocations\n"
    "  record -p PID [--duration SECONDS]      record a running .NET or rasp program\n"
    "  ps                                      processes record -p can attach to\n"
    "  report [options] TRACE...               per-type estimates with confidence intervals\n"
    "  diff [options] BASE NEW                 significant per-type changes between two\n"
    "                                          recordings\n"
    "  convert -o OUT.nettrace TRACE...        write a recording as an EventPipe file that\n"
    "                                          .NET tools open\n"
    "  convert --to ctf -o DIR TRACE           write a trace (a .nettrace file) as CTF\n"
    "  rasp COMMAND --help shows a command's options; docs/usage.md is the tutorial.\n";

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("rasp %s\n", RASP_VERSION);
		return 0;
	}
	/* rasp record's metadata primer (cli/primer.c): its preloads' constructors did its work. */
	if (strcmp(argv[1], RASP_PRIMER_ARG) == 0)
		return 0;
	if (strcmp(argv[1], "record") == 0)
		return rasp_cli_record(argc - 1, argv + 1);
	if (strcmp(argv[1], "report") == 0)
		return rasp_cli_report(argc - 1, argv + 1);
	if (strcmp(argv[1], "diff") == 0)
		return rasp_cli_diff(argc - 1, argv + 1);
	if (strcmp(argv[1], "convert") == 0)
		return rasp_cli_convert(argc - 1, argv + 1);
	if (strcmp(argv[1], "ps") == 0)
		return rasp_cli_ps(argc - 1, argv + 1);
	fprintf(stderr,
		"rasp: unknown command '%s' (record, report, diff, convert, ps; see rasp --help)\n",
		argv[1]);
	return 2;
}
