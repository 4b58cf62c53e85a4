/* The .NET diagnostic IPC protocol (docs/diagnostics.md): the 20-byte message header, the
 * EventPipe and Process commands rasp answers as a server (diag-server.c) and sends as a
 * client (`rasp record -p`), the replies, and whether a socket file has a listener. Pure
 * functions of their bytes: no I/O, no allocation, every length checked, so the fuzzer drives
 * them directly. */
#ifndef RASP_CODEC_DIAG_PROTOCOL_H
#define RASP_CODEC_DIAG_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RASP_DIAG_MAGIC	      "DOTNET_IPC_V1"
#define RASP_DIAG_HEADER_SIZE 20
#define RASP_DIAG_MAX_MESSAGE 65535

/* Command sets and commands. */
enum {
	RASP_DIAG_SET_EVENTPIPE = 0x02,
	RASP_DIAG_SET_PROCESS = 0x04,
	RASP_DIAG_SET_SERVER = 0xFF,
};
enum {
	RASP_DIAG_EP_STOP = 0x01,
	RASP_DIAG_EP_COLLECT = 0x02,  /* CollectTracing */
	RASP_DIAG_EP_COLLECT2 = 0x03, /* + requestRundown */
	RASP_DIAG_EP_COLLECT3 = 0x04, /* + requestStackwalk */
	RASP_DIAG_EP_COLLECT4 = 0x05, /* rundown keyword instead of the flag (.NET 9) */
	RASP_DIAG_EP_COLLECT5 = 0x06, /* session type first, event filters (.NET 10) */
	RASP_DIAG_PROC_INFO = 0x00,
	RASP_DIAG_PROC_RESUME = 0x01,
	RASP_DIAG_PROC_INFO2 = 0x04,
	RASP_DIAG_PROC_INFO3 = 0x08,
	RASP_DIAG_SERVER_OK = 0x00,
	RASP_DIAG_SERVER_ERROR = 0xFF,
};

/* The HRESULTs of error replies. */
#define RASP_DIAG_E_BAD_ENCODING    0x80131384u
#define RASP_DIAG_E_UNKNOWN_COMMAND 0x80131385u
#define RASP_DIAG_E_UNKNOWN_MAGIC   0x80131386u
#define RASP_DIAG_E_NOT_SUPPORTED   0x80131515u
#define RASP_DIAG_E_FAIL	    0x80004005u

struct rasp_diag_header {
	uint16_t size; /* header and payload */
	uint8_t set, id;
};

/* The 20 header bytes at b. 0; -EPROTO when the magic is not DOTNET_IPC_V1; -EBADMSG when
 * size is below 20. */
int rasp_diag_header_parse(const uint8_t *b, struct rasp_diag_header *h);
/* Writes a header (size: header and payload) into b (20 bytes). */
void rasp_diag_header_write(uint8_t *b, uint16_t size, uint8_t set, uint8_t id);

#define RASP_DIAG_MAX_PROVIDERS	    64
#define RASP_DIAG_MAX_PROVIDER_NAME 256

struct rasp_diag_provider {
	uint64_t keywords;
	uint32_t level;
	char name[RASP_DIAG_MAX_PROVIDER_NAME]; /* UTF-8 */
};

/* A CollectTracing request, any version. */
struct rasp_diag_collect {
	uint32_t session_type; /* 0: IPC stream (the only one before version 5) */
	uint32_t buffer_mb;
	uint32_t format; /* 0 NetPerf, 1 NetTrace */
	bool rundown;
	uint64_t rundown_keyword;
	bool stackwalk;
	size_t nproviders;
	struct rasp_diag_provider providers[RASP_DIAG_MAX_PROVIDERS];
};

/* The payload of EventPipe command id (COLLECT..COLLECT5): 0 (a COLLECT5 of a session type
 * other than 0 stops there: session_type set, no providers), or -EBADMSG with the reason in
 * why (cap bytes): a short or overlong payload, a count past what is left, a string without
 * its terminator, an empty provider name, more than RASP_DIAG_MAX_PROVIDERS providers, a
 * buffer size of 0. -ENOTSUP for another command. */
int rasp_diag_collect_parse(uint8_t id, const uint8_t *p, size_t n, struct rasp_diag_collect *c,
			    char *why, size_t cap);

/* The message of a CollectTracing2 request (what dotnet-trace sends for explicit providers)
 * into b (cap bytes): its length, or 0 when it does not fit. */
size_t rasp_diag_collect2_write(uint8_t *b, size_t cap, uint32_t buffer_mb, bool rundown,
				const struct rasp_diag_provider *p, size_t n);

/* Reply messages into b (cap bytes): their length, or 0 when they do not fit. */
size_t rasp_diag_ok_write(uint8_t *b, size_t cap, const void *payload, size_t n);
size_t rasp_diag_error_write(uint8_t *b, size_t cap, uint32_t hresult);

/* What ProcessInfo replies carry. */
struct rasp_diag_process {
	uint64_t pid;
	uint8_t cookie[16];
	const char *command_line, *os, *arch;
	const char *assembly, *version; /* ProcessInfo2 and 3 */
	const char *rid;		/* ProcessInfo3 */
};

/* The payload of ProcessInfo (id RASP_DIAG_PROC_INFO, INFO2 or INFO3) into b: its length, or
 * 0 when it does not fit. */
size_t rasp_diag_process_write(uint8_t id, const struct rasp_diag_process *pi, uint8_t *b,
			       size_t cap);
/* The strings of a ProcessInfo payload (the first version), as UTF-8 into the caller's
 * buffers: 0 or -EBADMSG. */
int rasp_diag_process_parse(const uint8_t *p, size_t n, uint64_t *pid, char *cmdline, size_t cap);

/* One line of /proc/net/unix, the kernel's table of Unix sockets ("Num: RefCount Protocol Flags
 * Type St Inode Path"): true when it is a stream socket listening at path (runs of '/' count
 * as one, so "/tmp//x" is "/tmp/x"). A diagnostic socket file whose process has exec'd stays,
 * under the same pid and start key, with nobody listening (diag-server.c): clients skip it by
 * this. Any other line, a malformed one included: false. */
bool rasp_diag_unix_listens(const char *line, const char *path);

#endif /* RASP_CODEC_DIAG_PROTOCOL_H */
