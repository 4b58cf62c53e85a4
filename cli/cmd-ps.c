/* rasp ps: the processes rasp record -p can attach to, those with a diagnostic socket (.NET
 * programs, and rasp programs started with RASP_DIAGNOSTICS=1), with their command lines, as
 * dotnet-trace ps lists them. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "diag-client.h"

static void print_one(void *arg, pid_t pid, const char *socket)
{
	char path[64], line[4096] = "";
	ssize_t n;
	int fd;

	(void)arg;
	(void)socket;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
		if (n < 0)
			n = 0;
		while (n > 0 && line[n - 1] == '\0')
			n--;
		for (ssize_t i = 0; i < n; i++)
			if (line[i] == '\0')
				line[i] = ' ';
		line[n] = '\0';
	}
	printf("%8d  %s\n", (int)pid, line[0] ? line : "[command line not readable]");
}

int rasp_cli_ps(int argc, char **argv)
{
	int n;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs("usage: rasp ps\nLists the processes with a diagnostic socket in $TMPDIR "
		      "(or /tmp), which\nrasp record -p PID and rasp report --live -p PID can "
		      "attach to.\n",
		      stdout);
		return 0;
	}
	if (argc > 1) {
		rasp_cli_error("ps", "unexpected argument '%s' (rasp ps takes none)", argv[1]);
		return 2;
	}
	n = rasp_diag_list(NULL, print_one, NULL);
	if (n < 0) {
		rasp_cli_error("ps", "cannot list the diagnostic sockets: %s", strerror(-n));
		return 1;
	}
	if (n == 0)
		fprintf(stderr, "rasp ps: no process with a diagnostic socket\n");
	return 0;
}
