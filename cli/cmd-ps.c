/* rasp ps: the processes rasp record -p can attach to, those with a diagnostic socket (.NET
 * programs, and rasp programs started with RASP_DIAGNOSTICS=1), with their names and command
 * lines, as dotnet-trace ps lists them. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag-client.h"
#include "diag-protocol.h"
#include "write/sanitize.h"

/* Whether anyone listens on the socket: after an exec its file stays, under the same pid and
 * start key, but the listening descriptor is gone (close-on-exec) and the program that runs
 * now may be no rasp or .NET program at all (docs/diagnostics.md). Unknown (no /proc/net/unix):
 * true. */
static bool listening(const char *socket)
{
	FILE *f = fopen("/proc/net/unix", "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (!f)
		return true;
	while (!found && getline(&line, &cap, f) > 0)
		found = rasp_diag_unix_listens(line, socket);
	free(line);
	fclose(f);
	return found;
}

/* /proc/PID/<what>, read whole (up to cap - 1 bytes), NULs between arguments made spaces,
 * trailing NULs (and comm's line end) dropped; "" when unreadable. */
static void proc_text(pid_t pid, const char *what, char *out, size_t cap)
{
	char path[64];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, out, cap - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	while (n > 0 && out[n - 1] == '\0')
		n--;
	if (n > 0 && out[n - 1] == '\n' && strcmp(what, "comm") == 0)
		n--; /* the kernel's line end */
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0')
			out[i] = ' ';
	out[n] = '\0';
}

/* One line, as dotnet-trace ps prints them: pid, name (comm, the thread name prctl sets),
 * command line. Both are the program's to choose: printed as their safe text (sanitize.h), so
 * no escape sequence in them reaches the terminal. */
static void print_one(void *arg, pid_t pid, const char *socket)
{
	char name[64], line[4096];

	if (!listening(socket))
		return;
	++*(int *)arg;
	proc_text(pid, "comm", name, sizeof(name));
	proc_text(pid, "cmdline", line, sizeof(line));
	printf("%8d  ", (int)pid);
	rasp_safe_put(stdout, name[0] ? name : "?");
	for (size_t w = rasp_safe_width(name[0] ? name : "?"); w < 15; w++)
		putchar(' ');
	fputs("  ", stdout);
	rasp_safe_put(stdout, line[0] ? line : "[command line not readable]");
	putchar('\n');
}

int rasp_cli_ps(int argc, char **argv)
{
	int n, shown = 0;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs("usage: rasp ps\nLists the processes with a diagnostic socket in $TMPDIR "
		      "(or /tmp), which\nrasp record -p PID and rasp report --live -p PID can "
		      "attach to: PID, name, command line.\n",
		      stdout);
		return 0;
	}
	if (argc > 1) {
		rasp_cli_error("ps", "unexpected argument '%s' (rasp ps takes none)", argv[1]);
		return 2;
	}
	n = rasp_diag_list(NULL, print_one, &shown);
	if (n < 0) {
		rasp_cli_error("ps", "cannot list the diagnostic sockets: %s", strerror(-n));
		return 1;
	}
	if (shown == 0)
		fprintf(stderr, "rasp ps: no process with a diagnostic socket\n");
	return 0;
}
