/* The metadata primer (primer.h).
 *
 * Why: LTTng 2.13's session daemon pushes a session's new metadata to the consumer daemon when
 * an application unregisters (ust_app_unregister), and the consumer daemon acknowledges a push
 * only once its metadata thread has written it, checked every 200 ms
 * (DEFAULT_METADATA_AVAILABILITY_WAIT_TIME): the first check comes too early, so every push
 * costs 200 ms. The program's exit is such a push (its events' metadata is new then), and
 * rasp record's stop waits behind it: 0.2 s of every recording, half the time of a 0.5 s
 * program. With per-UID buffers the metadata is the session's, not the process's: a primer
 * that loads the same providers (rasp's preloads: librasp-malloc, hence librasp and its LTTng
 * provider, and the dlopen wrapper; not the user's own) registers the same events, and its own
 * exit, a few milliseconds after the program started, pushes them while the program runs. At
 * the program's exit nothing is new, no push is made (ust_app_push_metadata returns at once
 * when nothing is unsent), and the stop is immediate.
 *
 * When: forked before the program runs and held; released once the program's librasp-malloc
 * announces its pid on the follow socket (cli/follow.c), which it does from its constructor,
 * after LTTng-UST's has registered. The session daemon serves one registration at a time and
 * the first of a session is the slow one (it creates the per-UID buffers): a primer released
 * beside the program made the program's start wait for it, 15-20 ms of every recording on this
 * two-core machine. Without the follow socket (a program linking librasp, or -a) it is released
 * with the program.
 *
 * What it costs: one short process (rasp's own binary, linking nothing of the program's),
 * about 20 ms (9 million instructions under callgrind), mostly while the program runs. What it
 * leaves in the trace: LTTng-UST's state-dump start, procname and end events for its pid,
 * which the report does not read; its sampling is off (RASP_SAMPLING=off: no samples, no
 * sampling event) and so is its base-address state dump. A program that registers events the
 * primer does not have (another provider, a .NET runtime's) still pushes at its exit: the
 * stop then waits 0.2 s as without a primer. */
#define _GNU_SOURCE
#include "primer.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

int rasp_primer_start(const char *cmd, struct rasp_session *s, char **env, struct rasp_primer *p)
{
	char exe[PATH_MAX];
	char *argv[] = {exe, RASP_PRIMER_ARG, NULL};
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int rc;

	*p = (struct rasp_primer){0};
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	rc = rasp_child_fork(cmd, argv, env, &p->ch);
	if (rc)
		return rc;
	/* Tracked before it registers, or the session never reaches it. */
	if (!s->all_processes && rasp_session_track_pid(cmd, s, p->ch.pid) != 0) {
		rasp_child_abandon(&p->ch);
		return -EIO;
	}
	p->held = true;
	return 0;
}

void rasp_primer_release(void *primer)
{
	struct rasp_primer *p = primer;

	if (!p->held)
		return;
	p->held = false;
	/* Not rasp_child_release, which reaps a child whose exec failed by waiting for signals:
	 * this may run on the follow thread, and the program's SIGCHLD is the main thread's. An
	 * exec that fails here only leaves a process to reap at the end, as one that runs does. */
	(void)!write(p->ch.go_fd, "g", 1);
	close(p->ch.go_fd);
	close(p->ch.err_fd);
	p->running = true;
}

void rasp_primer_end(struct rasp_primer *p)
{
	pid_t r;

	if (p->held) { /* never released: it exits without running */
		rasp_child_abandon(&p->ch);
		p->held = false;
	}
	if (!p->running)
		return;
	do
		r = waitpid(p->ch.pid, NULL, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		kill(p->ch.pid, SIGKILL);
		while (waitpid(p->ch.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	p->running = false;
}
