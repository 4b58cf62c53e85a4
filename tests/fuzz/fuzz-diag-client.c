/* libFuzzer target: the diagnostic client (cli/diag-client.c) against a server whose bytes are
 * the input. The input is what the server sends before it closes the connection; the client
 * sends StopTracing over a socket pair and reads the reply as rasp record -p does. It must
 * take an OK reply (header "DOTNET_IPC_V1", size 28, FF 00, then 8 bytes) and nothing else,
 * returning its 8 bytes; anything else is -EPROTO (malformed, or an error reply) or
 * -ECONNRESET (the bytes end early), never a wait (the deadline is 10 s: libFuzzer's -timeout
 * catches a hang). The input read as a file name (up to its first NUL) also goes through the
 * socket name parser: a name it takes prints back to the same pid and key. Anything else
 * aborts, as do crashes and sanitizer reports. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "diag-client.h"
#include "diag-protocol.h"

/* Fits a socket pair's buffer, so the server side is written whole before the client reads. */
#define MAX_INPUT 65536

static void check_name(const uint8_t *data, size_t size)
{
	char name[300], again[300];
	unsigned long long key, key2;
	long pid, pid2;
	size_t n = size < sizeof(name) - 1 ? size : sizeof(name) - 1;

	memcpy(name, data, n);
	name[n] = '\0';
	if (rasp__diag_socket_name(name, &pid, &key) != 0)
		return;
	if (pid <= 0 || pid > INT32_MAX)
		abort();
	snprintf(again, sizeof(again), "dotnet-diagnostic-%ld-%llu-socket", pid, key);
	if (rasp__diag_socket_name(again, &pid2, &key2) != 0 || pid2 != pid || key2 != key)
		abort();
}

static bool is_ok_reply(const uint8_t *d, size_t n, uint64_t *v)
{
	if (n < RASP_DIAG_HEADER_SIZE + 8 || memcmp(d, RASP_DIAG_MAGIC, 14) != 0 ||
	    d[14] != RASP_DIAG_HEADER_SIZE + 8 || d[15] != 0 || d[16] != RASP_DIAG_SET_SERVER ||
	    d[17] != RASP_DIAG_SERVER_OK)
		return false;
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v |= (uint64_t)d[RASP_DIAG_HEADER_SIZE + i] << (8 * i);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rasp_diag_wait w = {.timeout_s = 10};
	uint8_t msg[RASP_DIAG_HEADER_SIZE + 8] = {0};
	uint64_t got = 0, want = 0;
	int sv[2], rc;

	check_name(data, size);
	if (size > MAX_INPUT)
		size = MAX_INPUT;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
	if (size && send(sv[1], data, size, MSG_NOSIGNAL) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	rasp_diag_header_write(msg, sizeof(msg), RASP_DIAG_SET_EVENTPIPE, RASP_DIAG_EP_STOP);
	rc = rasp__diag_exchange("fuzz", sv[0], msg, sizeof(msg), "StopTracing", &w, &got);
	close(sv[0]);
	close(sv[1]);
	if (is_ok_reply(data, size, &want)) {
		if (rc != 0 || got != want)
			abort();
	} else if (rc != -EPROTO && rc != -ECONNRESET) {
		abort();
	}
	return 0;
}
