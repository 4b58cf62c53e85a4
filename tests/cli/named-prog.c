/* Test program for rasp ps and rasp record -p (test-cmd-ps.c): a rasp program with a
 * diagnostic socket (run it with RASP_DIAGNOSTICS=1) whose thread name, set with
 * prctl(PR_SET_NAME), and command line hold whatever the test gives, escape sequences
 * included. Names itself, then waits until SIGTERM or SIGINT (at most 60 s) and exits 0.
 *   named-prog NAME [ARG...] */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>

#include "rasp/rasp.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	rasp_config_t cfg;

	if (argc < 2) {
		fprintf(stderr, "usage: named-prog NAME [ARG...]\n");
		return 2;
	}
	/* A call into librasp: the library, and with it its diagnostic server, is loaded. */
	rasp_config_init(&cfg);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (prctl(PR_SET_NAME, argv[1]) != 0) {
		perror("named-prog: prctl");
		return 1;
	}
	for (int i = 0; i < 6000 && !stop; i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	return 0;
}
