/* The diagnostic server's command thread and its queue (diag-commands.c). */
#ifndef RASP_DIAG_COMMANDS_H
#define RASP_DIAG_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long a client may take to send its whole command, then to read the whole reply. */
#define RASP__DIAG_IO_TIMEOUT_MS 2000

/* CLOCK_MONOTONIC in milliseconds: the deadlines' clock. */
int64_t rasp__diag_now_ms(void);
/* The command thread's body (pthread_create's): runs queued commands until the process ends. */
void *rasp__diag_command_main(void *arg);
/* The queue's lock, which also guards every client descriptor against a fork: taken around
 * accepting and closing a connection, and from a fork's prepare to its parent or child. */
void rasp__diag_lock(void);
void rasp__diag_unlock(void);
/* Under the lock: queues command id of connection fd with its malloc'd payload (the queue's
 * now, and the connection), unless `max` already wait or there is no memory: false, nothing
 * taken. */
bool rasp__diag_enqueue(int fd, uint8_t id, uint8_t *payload, size_t n, size_t max);
/* In a fork's child, under the lock: forgets the queue (the child runs no command), closing
 * the connections' descriptors when `close_fds` (they are the parent's; after the child's
 * first fork their numbers may be the child's own). */
void rasp__diag_commands_fork_child(bool close_fds);

#endif
