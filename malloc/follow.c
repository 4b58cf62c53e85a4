/* Children under `rasp record`: the session tracks the program's pid only, so each new
 * process of the program announces its pid on the socket named by RASP_RECORD_FOLLOW
 * (cli/follow.c) and waits (at most 10 s) until rasp record has added it to the session's
 * tracker: a fork's parent announces its child as fork returns (so the pid is tracked before
 * the child is likely to have registered with the session daemon), a process announces itself
 * from its constructor after an exec (posix_spawn and vfork reach it this way). Without the
 * variable, fork is glibc's plus one test. Async-signal-safe calls only. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "heap.h"

/* glibc's fork under its other exported name (no dlsym: it allocates). */
extern pid_t __fork(void);

static struct sockaddr_un follow_addr = {.sun_family = AF_UNIX};
static bool following;

/* True once rasp record has answered that the pid is tracked (within 10 s: it answers in
 * milliseconds; past that it says so, as the process's allocations may then be missed). */
static bool announce(pid_t pid)
{
	static const char slow[] = "rasp record: no answer in 10 s to a new process's "
				   "announcement: its allocations may not all be recorded\n";
	bool answered = false;
	int saved = errno, fd;
	char msg[24], ack[4];
	int n = snprintf(msg, sizeof(msg), "%d\n", (int)pid);
	struct pollfd p;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out;
	if (connect(fd, (struct sockaddr *)&follow_addr, sizeof(follow_addr)) == 0 &&
	    send(fd, msg, (size_t)n, MSG_NOSIGNAL) == n) {
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, 10000) == 1)
			answered =
			    recv(fd, ack, sizeof(ack), 0) >= 2 && ack[0] == 'o' && ack[1] == 'k';
		else
			(void)!write(STDERR_FILENO, slow, sizeof(slow) - 1);
	}
	close(fd);
out:
	errno = saved;
	return answered;
}

/* In a fork's child (and after an exec, follow_init): LTTng-UST registered it again inside fork
 * (its child handler), maybe before the parent's announcement tracked it, and the session daemon
 * then sends it the session later: its first allocations' samples were lost (a fifth of a child's,
 * seed 11 of record-truth.py). It waits for the session (the runtime sees the event enabled), a few
 * milliseconds on an idle machine, at most 10 s: 1 s was too short on a loaded one (a child
 * lost most of its samples). Past that it says so on stderr, as its allocations until the
 * session arrives are not recorded. */
static void wait_for_session(void)
{
	static const char late[] = "rasp record: a new process got no session in 10 s: its "
				   "allocations until it does are not recorded\n";
	struct timespec ms = {0, 1000000};
	int i;

	if (!announce(getpid())) /* no rasp record (any more): no session to wait for */
		return;
	for (i = 0; i < 10000 && rasp__malloc_heap && !rasp_heap_sampling_active(rasp__malloc_heap);
	     i++)
		nanosleep(&ms, NULL);
	if (i == 10000)
		(void)!write(STDERR_FILENO, late, sizeof(late) - 1);
}

/* After the heap (heap.c's constructor, also 101, is earlier in the link order). */
__attribute__((constructor(102))) static void follow_init(void)
{
	const char *path = getenv("RASP_RECORD_FOLLOW");

	if (!path || !*path || strlen(path) >= sizeof(follow_addr.sun_path))
		return;
	memcpy(follow_addr.sun_path, path, strlen(path) + 1);
	following = true;
	/* After an exec LTTng-UST registered in its constructor, before this one: as a fork's
	 * child, the session reaches the process only once it is tracked. */
	wait_for_session();
}

RASP_MALLOC_API pid_t fork(void)
{
	pid_t pid;

	pid = __fork();
	if (pid > 0 && following)
		announce(pid);
	else if (pid == 0 && following)
		wait_for_session();
	return pid;
}
