/* rasp record's metadata primer (cli/primer.c): a short process that registers rasp's events
 * with the session before the program ends, so the program's exit has no metadata left for the
 * LTTng session daemon to push. */
#ifndef RASP_CLI_PRIMER_H
#define RASP_CLI_PRIMER_H

#include <stdbool.h>
#include <sys/types.h>

#include "child.h"
#include "session.h"

/* The hidden command the primer runs: `rasp --lttng-primer` returns 0 and does nothing else;
 * its preloads did the work in their constructors. */
#define RASP_PRIMER_ARG "--lttng-primer"

struct rasp_primer {
	struct rasp_child ch;
	bool held;    /* forked, waiting for rasp_primer_release */
	bool running; /* released and exec'd: to be reaped */
};

/* Forks the primer with env (the program's environment without the follow socket, with
 * sampling and LTTng-UST's state dumps off), tracked by session s unless s records every
 * process, and holds it before exec. 0, or -errno when it cannot (recording goes on; the stop
 * then waits behind the program's own metadata push, as without it). */
int rasp_primer_start(const char *cmd, struct rasp_session *s, char **env, struct rasp_primer *p);
/* Lets a held primer exec; nothing otherwise. Best called once the program has registered with
 * the session daemon: the two registrations are then not served at once. A void pointer to the
 * primer, so that rasp_follow_when_announced can call it from its thread; only one thread may
 * use the primer at a time. */
void rasp_primer_release(void *primer);
/* Reaps it: never run if still held, killed if still running (its work is done or no longer
 * useful). */
void rasp_primer_end(struct rasp_primer *p);

#endif /* RASP_CLI_PRIMER_H */
