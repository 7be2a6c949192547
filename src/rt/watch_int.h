/*
 * The neighbour watch's own parts (watch.h is its interface): the state
 * its files share, the wire format, and what each file offers the others.
 * Private to the watch's files in src/rt.
 *
 *   watch.c           the lifecycle: listen, start, stop; who is gone
 *   watch_ring.c      the ring's thread: heartbeats, goodbyes, notices
 *   watch_wire.c      the messages' bytes
 *   watch_sock.c      sockets: listening, connecting, polling, closing
 *   watch_presence.c  the presence port and its probes
 */
#ifndef SVP_RT_WATCH_INT_H
#define SVP_RT_WATCH_INT_H

#include "rt/watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/*
 * What travels on a connection (watch_wire.c), each message in one send():
 *   'H'                      a heartbeat
 *   'B' body                 the sender's goodbye
 *   'N' rank(4, big-endian) body
 *                            a notice: that rank is leaving or gone
 * body: a svp_rt_watch_bye_t byte (255: lost without a goodbye); "stopped
 * by a signal" adds the signal number (one byte); "failed", "ending" and
 * "lost" add a length byte and that many bytes of text.  A message is at
 * most 5 + 2 + 255 bytes.
 */
#define SVP_RT_WATCH_BYE       'B'
#define SVP_RT_WATCH_BEAT      'H'
#define SVP_RT_WATCH_NOTICE    'N'
#define SVP_RT_WATCH_WIRE_LOST 255
#define SVP_RT_WATCH_MSG_MAX   (5 + 2 + 255)

enum { SVP_RT_WATCH_PREV = 0, SVP_RT_WATCH_NEXT, SVP_RT_WATCH_NUM };

struct svp_rt_watch {
    int           listen_fd;
    int           fds[SVP_RT_WATCH_NUM]; /* -1 when closed */
    int           ranks[SVP_RT_WATCH_NUM];
    double        last[SVP_RT_WATCH_NUM]; /* when a byte last came */
    int           stop_fd;                /* eventfd: stop thread */
    pthread_t     thread;
    int           thread_started;
    int           rank, size;
    atomic_uchar *gone;      /* size entries */
    int           told_stop; /* own stop announced */
    /* presence: a socket answered by a thread until the watch starts */
    int                    presence_fd;
    int                    presence_stop_fd; /* eventfd: stop it */
    pthread_t              presence_thread;
    int                    presence_started;
    atomic_int             presence; /* svp_rt_presence_t */
    svp_rt_watch_lost_cb_t cb;
    void                  *arg;
    char                   addr[1024];
};

/* ---- watch_sock.c ---------------------------------------------------- */

/*
 * The address peers connect to: "host port probe-port ip ip ...".  The host
 * name comes first (what a cluster's nodes know each other by); the
 * interface addresses follow for machines whose name does not resolve
 * (containers, CI runners), where a job would otherwise fail at start.
 */
void svp_rt_watch_format_addr(char *buf, size_t len, const char *host, unsigned port,
                              unsigned probe_port);

/* A listening socket on every interface; its port in *port_p; -1 if not. */
int svp_rt_watch_listen_any(unsigned *port_p);

/* Waits for fd to become ready for events, until `until`; 0 when ready. */
int svp_rt_watch_poll(int fd, short events, double until);

/* Tries the host name, then each address, of a "host port probe-port ip
 * ..." string, at its port (probe 0) or its presence port (probe 1); the
 * connected socket, or -1 (logged unless probe). */
int svp_rt_watch_connect_to(const char *addr, int probe, double until);

/* svp_rt_watch_connect_to at the ring's port. */
int svp_rt_watch_connect(const char *addr, double until);

/* Closes a connection after the last send, so that what was sent arrives. */
void svp_rt_watch_close(int fd);

/* ---- watch_presence.c ------------------------------------------------ */

/* The presence thread's body (ctx: the watch): answers probes until
 * svp_rt_watch_presence_stop. */
void *svp_rt_watch_presence_thread(void *ctx);

/* Stops the presence thread, if started, and closes its sockets; safe to
 * call more than once. */
void svp_rt_watch_presence_stop(svp_rt_watch_t *watch);

/* ---- watch_wire.c ---------------------------------------------------- */

/* Writes a body into buf (2 + SVP_RT_WATCH_BYE_TEXT_MAX bytes); returns
 * its length. */
size_t svp_rt_watch_body(unsigned char *buf, int reason, int signo,
                         const char *text);

/* Bytes the message at msg takes, as far as its first have bytes tell; 0
 * for a byte that starts no message. */
size_t svp_rt_watch_msg_len(const unsigned char *msg, size_t have);

/* Reads the rest of a message whose first have bytes are in buf (which
 * holds SVP_RT_WATCH_MSG_MAX); returns the bytes held. */
size_t svp_rt_watch_msg_rest(int fd, unsigned char *buf, size_t have);

/* ---- watch_ring.c ---------------------------------------------------- */

/* The ring's thread (ctx: the watch), from svp_rt_watch_start until
 * svp_rt_watch_stop writes its stop_fd. */
void *svp_rt_watch_thread(void *ctx);

#endif
