/* The EventPipe writer's state, shared by its thread (eventpipe.c) and what starts and stops
 * it and its sessions (eventpipe-control.c). Internal to those two files. */
#ifndef RASP_EVENTPIPE_WRITER_H
#define RASP_EVENTPIPE_WRITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eventpipe-buffers.h"
#include "eventpipe-session.h"

#define MAX_SESSIONS 16
_Static_assert(MAX_SESSIONS <= RASP__EP_DRAIN_MAX, "the exit drains every session at once");
#define P rasp__ep_pool

struct item {
	const struct rasp__ep_rec *r;
	uint64_t tid;
};

/* A request to the writer: a session to start or to stop. The caller waits for done. */
struct request {
	struct request *next;
	bool start;
	int fd;		  /* start: the client's socket, or the file */
	bool stream;	  /* start: fd is a client's socket */
	uint64_t mask;	  /* start */
	size_t queue_max; /* start */
	const void *pre;  /* start: bytes the client gets before the stream */
	size_t npre;
	uint64_t id; /* the session */
	bool done;
	int rc;
};

struct rasp__ep_writer {
	bool started; /* the writer thread runs (this process, not a forked child) */
	char path[4096];
	uint64_t file_id; /* the startup file session, 0 when none runs */
	pthread_t writer;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	/* Under lock. */
	bool stop;
	int file_err;	    /* the write error that ended the file session */
	int64_t want;	    /* latest time a flush was asked to reach */
	int64_t flushed_to; /* every record older than this is written */
	struct request *requests;
	size_t nsessions;
	/* The writer thread's. */
	struct rasp__ep_session *sessions[MAX_SESSIONS];
	struct item *items;
	size_t cap_items;
};
extern struct rasp__ep_writer rasp__ep_w;
#define S rasp__ep_w

/* The writer thread's body: flushes every period until S.stop, then ends every session. */
void *rasp__ep_writer_main(void *arg);

#endif
