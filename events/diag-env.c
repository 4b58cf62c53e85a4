/* What the diagnostic server takes from its process's environment: whether it runs (.NET's
 * DOTNET_EnableDiagnostics family and RASP_DIAGNOSTICS), the start-time key in its socket's
 * name, and the command line, program name and cookie ProcessInfo answers with. Read once, at
 * load, by diag-server.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "diag-env.h"

/* 1, 0, or -1 when unset; a value that is not a number is said and taken as unset. */
static int flag(const char *name)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v)
		return -1;
	errno = 0;
	n = strtoul(v, &end, 16); /* CLRConfig numbers are hexadecimal */
	if (errno || end == v || *end) {
		fprintf(stderr, "rasp: diagnostics: %s='%s' is not a number; ignored\n", name, v);
		return -1;
	}
	return n != 0;
}

static int dotnet_flag(const char *name)
{
	char buf[64];
	int v;

	snprintf(buf, sizeof(buf), "DOTNET_%s", name);
	v = flag(buf);
	if (v < 0) {
		snprintf(buf, sizeof(buf), "COMPlus_%s", name);
		v = flag(buf);
	}
	return v;
}

bool rasp__diag_enabled(void)
{
	int rasp = flag("RASP_DIAGNOSTICS"), dotnet = dotnet_flag("EnableDiagnostics");

	if (dotnet_flag("EnableDiagnostics_IPC") == 0)
		return false;
	if (rasp >= 0)
		return rasp == 1;
	return dotnet == 1;
}

/* The process's start time in clock ticks (field 22 of /proc/self/stat), .NET's key. */
unsigned long long rasp__diag_start_key(void)
{
	char buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p)
		return 0;
	/* After ") ": field 3 onwards; field 22 is the 20th of them. */
	for (int field = 3; field <= 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

void rasp__diag_identity(char *cmdline, size_t cmdline_cap, char *assembly, size_t assembly_cap,
			 uint8_t cookie[16])
{
	char exe[PATH_MAX];
	ssize_t n;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, cmdline, cmdline_cap - 1);
		close(fd);
		if (n > 0) {
			/* Arguments are NUL-separated: spaces, as .NET shows them. */
			while (n > 0 && cmdline[n - 1] == '\0')
				n--;
			for (ssize_t i = 0; i < n; i++)
				if (cmdline[i] == '\0')
					cmdline[i] = ' ';
			cmdline[n] = '\0';
		}
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		const char *base;

		exe[n] = '\0';
		base = strrchr(exe, '/');
		base = base ? base + 1 : exe;
		if (strlen(base) < assembly_cap)
			memcpy(assembly, base, strlen(base) + 1);
	}
	if (getrandom(cookie, 16, GRND_NONBLOCK) != 16) {
		uint64_t t = (uint64_t)getpid() * 0x9e3779b97f4a7c15u ^ (uint64_t)time(NULL);

		memcpy(cookie, &t, sizeof(t));
	}
}
