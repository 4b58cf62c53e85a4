/* rasp record's malloc preload: whether PROGRAM links librasp, and where librasp-malloc.so is
 * (cli/preload.c). */
#ifndef RASP_CLI_PRELOAD_H
#define RASP_CLI_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>

/* For `rasp record -- PROGRAM`: 1 with the path of librasp-malloc.so in out when PROGRAM (found
 * as execvp would) does not name librasp among its needed libraries (a script, any ELF
 * without it), 0 when it does (and always in a sanitized build, which has no librasp-malloc),
 * negative when librasp-malloc.so is not found beside the rasp command (after one line on
 * stderr). */
int rasp_cli_malloc_preload(const char *cmd, const char *prog, char *out, size_t len);
/* Whether PROGRAM (found as execvp would) is a statically linked ELF file (no program
 * interpreter): the loader never runs in it, so no preload does. False for anything else. */
bool rasp_cli_program_is_static(const char *prog);
/* The path of librasp-malloc.so beside the rasp command in out: 0, or -ENOENT when there is
 * none (a sanitized build has none). */
int rasp_cli_malloc_library(char *out, size_t len);
/* The path of librasp-dl.so (rasp record's dlopen wrapper, malloc/dl-wrapper.c) beside the rasp
 * command in out: 0, or -ENOENT (a sanitized build has none: LTTng-UST's wrapper is preloaded
 * itself). */
int rasp_cli_dl_library(char *out, size_t len);

#endif /* RASP_CLI_PRELOAD_H */
