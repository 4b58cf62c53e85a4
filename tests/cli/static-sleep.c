/* A program for test-primer.c, linked statically: no preload reaches it, so it never registers
 * with the session daemon nor announces itself on rasp record's follow socket. Sleeps the
 * milliseconds given (default 1000), then exits 0. */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
	struct timespec ts;

	if (ms < 0 || ms > 60000)
		return 2;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	return 0;
}
