/* rasp record's malloc preload (preload.h): a program that does not link librasp gets
 * librasp-malloc.so, rasp's heap as its malloc, found beside the rasp command as installed or
 * in the build tree. Whether a program links librasp is read from its ELF dynamic section with
 * elfutils' libelf (its DT_NEEDED entries); what is not an ELF file (a script) links nothing.
 * One without a program interpreter (PT_INTERP) is static: no preload reaches it. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define MALLOC_LIB "librasp-malloc.so"

/* PROGRAM's path as execvp finds it; 0 or -ENOENT. */
static int program_path(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH");

	if (strchr(prog, '/'))
		return snprintf(out, len, "%s", prog) < (int)len ? 0 : -ENAMETOOLONG;
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", prog) < (int)len &&
		    access(out, X_OK) == 0)
			return 0;
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

/* Whether the ELF file at path needs librasp (a DT_NEEDED entry librasp.so*). Bounded by the
 * dynamic section's entries; anything unreadable needs nothing. */
static bool needs_librasp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool found = false;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && elf_kind(e) == ELF_K_ELF && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (name && strncmp(name, "librasp.so", 10) == 0) {
				found = true;
				break;
			}
		}
	}
	elf_end(e);
	close(fd);
	return found;
}

bool rasp_cli_program_is_static(const char *prog)
{
	char path[PATH_MAX];
	bool interp = false, elf;
	size_t n = 0;
	int fd;
	Elf *e;

	if (program_path(prog, path, sizeof(path)) != 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	elf = e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0;
	for (size_t i = 0; elf && !interp && i < n; i++) {
		GElf_Phdr ph;

		interp = gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP;
	}
	elf_end(e);
	close(fd);
	return elf && !interp;
}

/* A library of rasp's beside the command: the build tree's lib/, else the installed libdir. */
static int find_library(const char *name, char *out, size_t len)
{
	static const char *const rel[] = {"../lib", RASP_BIN_TO_LIB};
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char p[PATH_MAX], abs[PATH_MAX];

		if (snprintf(p, sizeof(p), "%s/%s/%s", exe, rel[i], name) >= (int)sizeof(p))
			continue;
		if (access(p, R_OK) == 0 && realpath(p, abs) && strlen(abs) < len) {
			memcpy(out, abs, strlen(abs) + 1);
			return 0;
		}
	}
	return -ENOENT;
}

int rasp_cli_malloc_library(char *out, size_t len)
{
#ifdef RASP_NO_MALLOC_PRELOAD
	(void)out, (void)len;
	return -ENOENT;
#else
	return find_library(MALLOC_LIB, out, len);
#endif
}

int rasp_cli_dl_library(char *out, size_t len)
{
#ifdef RASP_NO_MALLOC_PRELOAD
	(void)out, (void)len;
	return -ENOENT;
#else
	return find_library("librasp-dl.so", out, len);
#endif
}

int rasp_cli_malloc_preload(const char *cmd, const char *prog, char *out, size_t len)
{
	char path[PATH_MAX], lib[PATH_MAX];

#ifdef RASP_NO_MALLOC_PRELOAD
	/* A sanitized build has no librasp-malloc (malloc/CMakeLists.txt): programs as they
	 * are. */
	(void)cmd, (void)prog, (void)out, (void)len, (void)path, (void)lib;
	return 0;
#endif
	if (program_path(prog, path, sizeof(path)) == 0 && needs_librasp(path))
		return 0;
	if (find_library(MALLOC_LIB, lib, sizeof(lib)) != 0 || strlen(lib) >= len) {
		rasp_cli_error(cmd,
			       "%s does not link librasp and %s was not found beside rasp: "
			       "recording without it",
			       prog, MALLOC_LIB);
		return -ENOENT;
	}
	memcpy(out, lib, strlen(lib) + 1);
	return 1;
}
