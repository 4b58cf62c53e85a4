/* The program rasp record runs: forked, held before exec until the session tracks its pid,
 * then released; signals sent to rasp meanwhile are passed on. */
#ifndef RASP_CLI_CHILD_H
#define RASP_CLI_CHILD_H

#include <sys/types.h>

struct rasp_child {
	pid_t pid;
	int go_fd;  /* write a byte: exec; close: give up */
	int err_fd; /* exec's errno, or EOF when exec succeeded */
};

/* Blocks the signals rasp waits for (INT, QUIT, TERM, HUP, CHLD); the program gets the mask
 * rasp had before. */
void rasp_child_watch_signals(void);
void rasp_child_unwatch_signals(void);

/* Forks the program, held before exec. 0 or -errno with a message. */
int rasp_child_fork(const char *cmd, char **argv, char **env, struct rasp_child *ch);
/* Lets it exec; 0 once it did, else exec's errno (the child is then reaped). */
int rasp_child_release(struct rasp_child *ch);
/* Waits for it: its exit status, or 128 + the signal that ended it. */
int rasp_child_wait(struct rasp_child *ch);
/* The session could not be set up: the held program exits without running. */
void rasp_child_abandon(struct rasp_child *ch);

#endif /* RASP_CLI_CHILD_H */
