/* The recorded program (child.h). Signals are waited for synchronously (sigwaitinfo, no
 * handler): no async-signal-safety or errno hazards, and sanitizers that defer handlers see
 * them at once. */
#define _GNU_SOURCE
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static sigset_t watched, saved_mask;

void rasp_child_watch_signals(void)
{
	sigemptyset(&watched);
	sigaddset(&watched, SIGINT);
	sigaddset(&watched, SIGQUIT);
	sigaddset(&watched, SIGTERM);
	sigaddset(&watched, SIGHUP);
	sigaddset(&watched, SIGCHLD);
	sigprocmask(SIG_BLOCK, &watched, &saved_mask);
}

void rasp_child_unwatch_signals(void)
{
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
}

int rasp_child_fork(const char *cmd, char **argv, char **env, struct rasp_child *ch)
{
	int go[2], err[2], e;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) != 0) {
		e = errno;
		rasp_cli_error(cmd, "cannot create a pipe: %s", strerror(e));
		return -e;
	}
	if (pipe2(err, O_CLOEXEC) != 0) {
		e = errno;
		rasp_cli_error(cmd, "cannot create a pipe: %s", strerror(e));
		close(go[0]);
		close(go[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		rasp_cli_error(cmd, "cannot fork: %s", strerror(e));
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return -e;
	}
	if (pid == 0) {
		char go_byte;

		/* Only async-signal-safe calls from here to exec. The parent's ends are closed
		 * first: a child holding the write end of `go` would never see it close, and
		 * would wait forever when rasp gives up. */
		close(go[1]);
		close(err[0]);
		sigprocmask(SIG_SETMASK, &saved_mask, NULL);
		if (read(go[0], &go_byte, 1) != 1)
			_exit(127);
		execvpe(argv[0], argv, env);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	ch->pid = pid;
	ch->go_fd = go[1];
	ch->err_fd = err[0];
	return 0;
}

int rasp_child_release(struct rasp_child *ch)
{
	int e = 0;
	ssize_t n;

	if (write(ch->go_fd, "g", 1) != 1)
		e = errno;
	close(ch->go_fd);
	do
		n = read(ch->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(ch->err_fd);
	if (e)
		rasp_child_wait(ch);
	return n > 0 || e ? (e ? e : EIO) : 0;
}

/* A signal a process sends rasp goes on to the program; one the kernel sent the whole
 * foreground group (Ctrl-C, hangup: si_code > 0) already reached it. Either way rasp stays
 * to save the trace. */
int rasp_child_wait(struct rasp_child *ch)
{
	siginfo_t info;
	int status, sig;
	pid_t r;

	for (;;) {
		r = waitpid(ch->pid, &status, WNOHANG);
		if (r == ch->pid)
			break;
		if (r < 0 && errno != EINTR)
			return 127;
		sig = sigwaitinfo(&watched, &info);
		if (sig > 0 && sig != SIGCHLD && info.si_code <= 0)
			kill(ch->pid, sig);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void rasp_child_abandon(struct rasp_child *ch)
{
	close(ch->go_fd);
	close(ch->err_fd);
	rasp_child_wait(ch);
}
