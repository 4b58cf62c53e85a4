/* rasp record's command line, parsed apart from running it (cmd-record.c), so that tests and
 * the fuzzer drive the parsing alone. */
#ifndef RASP_CLI_RECORD_ARGS_H
#define RASP_CLI_RECORD_ARGS_H

#include <stdbool.h>

#include "session.h"

struct rasp_record_args {
	const char *output;	 /* -o, NULL: a dated directory */
	struct rasp_session s;	 /* buffer sizes, -a, --all-users */
	char mean_env[64];	 /* RASP_SAMPLING_MEAN=... for the program, or "" */
	char seed_env[64];	 /* RASP_SEED=... for the program, or "" */
	long pid;		 /* -p: a running process (0: none) */
	double duration;	 /* --duration, seconds (0: none) */
	const char *launch_flag; /* a flag for a launched PROGRAM only, as given, or NULL */
	bool no_malloc;		 /* --no-malloc: never preload librasp-malloc.so */
};

/* Parses flags up to PROGRAM: RASP_CLI_ARGS_OK with *first the index of PROGRAM (argc with
 * -p), RASP_CLI_ARGS_HELP, or RASP_CLI_ARGS_USAGE after a message. */
int rasp_cli_record_parse(int argc, char **argv, struct rasp_record_args *a, int *first);

#endif /* RASP_CLI_RECORD_ARGS_H */
