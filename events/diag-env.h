/* The diagnostic server's view of its process (diag-env.c). */
#ifndef RASP_DIAG_ENV_H
#define RASP_DIAG_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* On: DOTNET_EnableDiagnostics=1 (or COMPlus_) or RASP_DIAGNOSTICS=1, which wins; off again
 * with DOTNET_EnableDiagnostics_IPC=0. A value that is not a number is said and ignored. */
bool rasp__diag_enabled(void);
/* The process's start time in clock ticks (field 22 of /proc/self/stat), .NET's socket key;
 * 0 when unreadable. */
unsigned long long rasp__diag_start_key(void);
/* The command line (arguments joined by spaces), the executable's base name (left as is when
 * it does not fit) and 16 random bytes. */
void rasp__diag_identity(char *cmdline, size_t cmdline_cap, char *assembly, size_t assembly_cap,
			 uint8_t cookie[16]);

#endif
