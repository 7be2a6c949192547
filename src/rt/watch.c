/*
 * The neighbour watch (watch.h): a TCP ring of heartbeats, goodbyes and
 * notices that tells every rank within milliseconds which ranks are leaving
 * or gone, and the presence port that answers start-up probes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/watch.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/stop.h"
#include "common/util.h"

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * What travels on a connection, each message in one send():
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

static int   svp_rt_watch_listen_any(unsigned *port_p);
static void *svp_rt_watch_presence_thread(void *ctx);
static void  svp_rt_watch_presence_stop(svp_rt_watch_t *watch);

/*
 * The address peers connect to: "host port probe-port ip ip ...".  The host
 * name comes
 * first (what a cluster's nodes know each other by); the interface addresses
 * follow for machines whose name does not resolve (containers, CI runners),
 * where a job would otherwise fail at start.
 */
static void svp_rt_watch_format_addr(char *buf, size_t len, const char *host,
                                     unsigned port, unsigned probe_port)
{
    struct ifaddrs *ifs, *ifa;
    char            ip[INET_ADDRSTRLEN];
    size_t          n;

    n = snprintf(buf, len, "%s %u %u", host, port, probe_port);
    if (getifaddrs(&ifs) != 0) {
        return;
    }
    for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) || (ifa->ifa_addr->sa_family != AF_INET) ||
            (inet_ntop(AF_INET, &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr, ip,
                       sizeof(ip)) == NULL) ||
            (n + strlen(ip) + 2 > len)) {
            continue;
        }
        n += snprintf(buf + n, len - n, " %s", ip);
    }
    freeifaddrs(ifs);
}

svp_status_t svp_rt_watch_listen(svp_rt_watch_t **watch_p, const char **addr_p)
{
    svp_rt_watch_t *watch;
    char            host[NI_MAXHOST];
    unsigned        port, probe_port;

    watch = calloc(1, sizeof(*watch));
    if (watch == NULL) {
        svp_error("out of memory allocating the neighbour watch");
        return SVP_ERR_NO_MEMORY;
    }
    watch->fds[SVP_RT_WATCH_PREV] = watch->fds[SVP_RT_WATCH_NEXT] = -1;
    watch->stop_fd                                                = -1;
    watch->presence_stop_fd                                       = -1;
    atomic_init(&watch->presence, SVP_RT_PRESENCE_PUBLISHED);
    watch->listen_fd   = svp_rt_watch_listen_any(&port);
    watch->presence_fd = svp_rt_watch_listen_any(&probe_port);
    if ((watch->listen_fd < 0) || (watch->presence_fd < 0)) {
        svp_error("neighbour watch cannot listen: %m");
        goto err_close;
    }
    if (gethostname(host, sizeof(host)) != 0) {
        svp_error("gethostname failed: %m");
        goto err_close;
    }
    host[sizeof(host) - 1] = '\0';
    svp_rt_watch_format_addr(watch->addr, sizeof(watch->addr), host, port,
                             probe_port);
    watch->presence_stop_fd = eventfd(0, EFD_CLOEXEC);
    if ((watch->presence_stop_fd < 0) ||
        (pthread_create(&watch->presence_thread, NULL, svp_rt_watch_presence_thread,
                        watch) != 0)) {
        svp_error("cannot start the presence thread of the neighbour watch");
        goto err_close;
    }
    watch->presence_started = 1;
    *watch_p                = watch;
    *addr_p                 = watch->addr;
    return SVP_OK;

err_close:
    svp_rt_watch_presence_stop(watch);
    if (watch->listen_fd >= 0) {
        close(watch->listen_fd);
    }
    free(watch);
    return SVP_ERR_RUNTIME;
}

/* Waits for fd to become ready for events, until `until`; 0 when ready. */
static int svp_rt_watch_poll(int fd, short events, double until)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    double        left;
    int           rc;

    for (;;) {
        left = until - svp_clock_now();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        rc = poll(&pfd, 1, (int)(left * 1e3) + 1);
        if (rc > 0) {
            return 0;
        }
        if ((rc < 0) && (errno != EINTR)) {
            return -1;
        }
    }
}

/* Connects to host:port (name or numeric address); -1 if it cannot. */
static int svp_rt_watch_connect_one(const char *host, const char *port, double until)
{
    struct addrinfo hints, *res, *ai;
    int             fd  = -1, err;
    socklen_t       len = sizeof(err);

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        svp_debug("neighbour watch: cannot resolve '%s'", host);
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        if ((connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) ||
            ((errno == EINPROGRESS) &&
             (svp_rt_watch_poll(fd, POLLOUT, until) == 0) &&
             (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0) &&
             (err == 0))) {
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* Tries the host name, then each address, of a "host port probe-port ip
 * ..." string, at its port (probe 0) or its presence port (probe 1). */
static int svp_rt_watch_connect_to(const char *addr, int probe, double until)
{
    char buf[1024], *save = NULL, *host, *port, *pport, *ip;
    int  fd;

    snprintf(buf, sizeof(buf), "%s", addr);
    host  = strtok_r(buf, " ", &save);
    port  = strtok_r(NULL, " ", &save);
    pport = strtok_r(NULL, " ", &save);
    if (probe) {
        port = pport;
    }
    if ((host == NULL) || (port == NULL) || (pport == NULL)) {
        svp_error("malformed neighbour watch address '%s'", addr);
        return -1;
    }
    fd = svp_rt_watch_connect_one(host, port, until);
    while ((fd < 0) && ((ip = strtok_r(NULL, " ", &save)) != NULL)) {
        fd = svp_rt_watch_connect_one(ip, port, until);
    }
    if ((fd < 0) && !probe) {
        svp_error("cannot connect to the neighbour watch at '%s'", addr);
    }
    return fd;
}

static int svp_rt_watch_connect(const char *addr, double until)
{
    return svp_rt_watch_connect_to(addr, 0, until);
}

/* ---- presence -------------------------------------------------------- */

/* A listening socket on every interface; its port in *port_p; -1 if not. */
static int svp_rt_watch_listen_any(unsigned *port_p)
{
    struct sockaddr_in6 sa;
    socklen_t           len = sizeof(sa);
    int                 fd, off = 0;

    /* one IPv6 socket accepting IPv4 too, on every interface: the peers know
     * this node by its host name, whatever address that resolves to */
    fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    sa.sin6_addr   = in6addr_any;
    if ((bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) ||
        (listen(fd, 64) != 0) ||
        (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)) {
        close(fd);
        return -1;
    }
    *port_p = ntohs(sa.sin6_port);
    return fd;
}

/*
 * Answers presence probes with one byte, where this rank is.  A thread of
 * its own, so that a rank waiting in a fence answers whatever its main
 * thread does, while one that never got there answers 'P' (stalled between
 * its address and the fence) or nothing (stopped: the kernel accepts the
 * connection, nobody writes).
 */
static void *svp_rt_watch_presence_thread(void *ctx)
{
    svp_rt_watch_t *watch   = ctx;
    struct pollfd   pfds[2] = {{.fd = watch->presence_stop_fd, .events = POLLIN},
                               {.fd = watch->presence_fd, .events = POLLIN}};
    char            state;
    int             fd;

    for (;;) {
        if (poll(pfds, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return NULL;
        }
        if (pfds[0].revents != 0) {
            return NULL;
        }
        fd = accept4(watch->presence_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            continue;
        }
        state = (char)atomic_load(&watch->presence);
        (void)send(fd, &state, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
    }
}

static void svp_rt_watch_presence_stop(svp_rt_watch_t *watch)
{
    uint64_t one = 1;

    if (watch->presence_started) {
        if (write(watch->presence_stop_fd, &one, sizeof(one)) == sizeof(one)) {
            pthread_join(watch->presence_thread, NULL);
        }
        watch->presence_started = 0;
    }
    if (watch->presence_fd >= 0) {
        close(watch->presence_fd);
        watch->presence_fd = -1;
    }
    if (watch->presence_stop_fd >= 0) {
        close(watch->presence_stop_fd);
        watch->presence_stop_fd = -1;
    }
}

void svp_rt_watch_set_presence(svp_rt_watch_t *watch, svp_rt_presence_t state)
{
    if (watch != NULL) {
        atomic_store(&watch->presence, (int)state);
    }
}

void svp_rt_watch_probe(char *const *addrs, int n, double until, int *answers)
{
    struct pollfd *pfds;
    int           *idx, i, m = 0, left;
    char           state;

    for (i = 0; i < n; ++i) {
        answers[i] = 0;
    }
    pfds = calloc((size_t)SVP_MAX(n, 1), sizeof(*pfds));
    idx  = calloc((size_t)SVP_MAX(n, 1), sizeof(*idx));
    if ((pfds == NULL) || (idx == NULL)) {
        free(pfds);
        free(idx);
        return;
    }
    /* a stopped process's kernel still completes the connect: the answer,
     * not the connection, says the rank is there */
    for (i = 0; i < n; ++i) {
        if (addrs[i] == NULL) {
            continue;
        }
        pfds[m].fd     = svp_rt_watch_connect_to(addrs[i], 1,
                                                 SVP_MIN(until, svp_clock_now() + 0.2));
        pfds[m].events = POLLIN;
        idx[m]         = i;
        m += (pfds[m].fd >= 0);
    }
    for (left = m; (left > 0) && (svp_clock_now() < until);) {
        if (poll(pfds, m, (int)((until - svp_clock_now()) * 1e3) + 1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        for (i = 0; i < m; ++i) {
            if ((pfds[i].fd < 0) || (pfds[i].revents == 0)) {
                continue;
            }
            if (recv(pfds[i].fd, &state, 1, MSG_DONTWAIT) == 1) {
                answers[idx[i]] = (unsigned char)state;
            }
            close(pfds[i].fd);
            pfds[i].fd = -1; /* poll skips it */
            --left;
        }
    }
    for (i = 0; i < m; ++i) {
        if (pfds[i].fd >= 0) {
            close(pfds[i].fd);
        }
    }
    free(pfds);
    free(idx);
}

const char *svp_rt_watch_bye_string(svp_rt_watch_bye_t reason)
{
    switch (reason) {
    case SVP_RT_WATCH_BYE_DONE:
        return "done";
    case SVP_RT_WATCH_BYE_ERROR:
        return "failed";
    case SVP_RT_WATCH_BYE_SIGNAL:
        return "stopped by a signal";
    case SVP_RT_WATCH_BYE_ENDING:
        return "ending";
    case SVP_RT_WATCH_BYE_EARLY:
    default:
        return "left before its work was done";
    }
}

int svp_rt_watch_gone(const svp_rt_watch_t *watch, int rank)
{
    if ((watch == NULL) || (watch->gone == NULL) || (rank < 0) ||
        (rank >= watch->size)) {
        return 0;
    }
    return atomic_load(&watch->gone[rank]) != 0;
}

/* Writes a body (see the top of this file) into buf; returns its length. */
static size_t svp_rt_watch_body(unsigned char *buf, int reason, int signo,
                                const char *text)
{
    size_t len = 0, n;

    buf[len++] = (reason == SVP_RT_WATCH_BYE_NONE) ? SVP_RT_WATCH_WIRE_LOST
                                                   : (unsigned char)reason;
    if (reason == SVP_RT_WATCH_BYE_SIGNAL) {
        buf[len++] = (unsigned char)(((signo > 0) && (signo < 256)) ? signo : 0);
    } else if ((reason == SVP_RT_WATCH_BYE_ERROR) ||
               (reason == SVP_RT_WATCH_BYE_ENDING) ||
               (reason == SVP_RT_WATCH_BYE_NONE)) {
        n = (text != NULL) ? SVP_MIN(strlen(text), (size_t)SVP_RT_WATCH_BYE_TEXT_MAX)
                           : 0;
        buf[len++] = (unsigned char)n;
        if (n > 0) {
            memcpy(buf + len, text, n);
        }
        len += n;
    }
    return len;
}

/* Bytes a body takes, as far as the first have bytes of it tell. */
static size_t svp_rt_watch_body_len(const unsigned char *body, size_t have)
{
    if (have < 1) {
        return 1;
    }
    switch (body[0]) {
    case SVP_RT_WATCH_BYE_SIGNAL:
        return 2;
    case SVP_RT_WATCH_BYE_ERROR:
    case SVP_RT_WATCH_BYE_ENDING:
    case SVP_RT_WATCH_WIRE_LOST:
        return (have < 2) ? 2 : 2 + (size_t)body[1];
    default:
        return 1;
    }
}

/* Bytes the message at msg takes, as far as its first have bytes tell; 0
 * for a byte that starts no message. */
static size_t svp_rt_watch_msg_len(const unsigned char *msg, size_t have)
{
    switch (msg[0]) {
    case SVP_RT_WATCH_BEAT:
        return 1;
    case SVP_RT_WATCH_BYE:
        return 1 + svp_rt_watch_body_len(msg + 1, have - 1);
    case SVP_RT_WATCH_NOTICE:
        return 5 + svp_rt_watch_body_len(msg + 5, (have > 5) ? have - 5 : 0);
    default:
        return 0;
    }
}

/*
 * The rest of a message whose first have bytes are in buf: it was sent in
 * one send(), so it is there or about to be; 0.2 s is ample even on a loaded
 * node.  Returns the bytes held, fewer than needed when the peer sent less
 * (then it is read as far as it goes).
 */
static size_t svp_rt_watch_msg_rest(int fd, unsigned char *buf, size_t have)
{
    double  until = svp_clock_now() + 0.2;
    size_t  need;
    ssize_t got;

    while (have < (need = svp_rt_watch_msg_len(buf, have))) {
        if (svp_rt_watch_poll(fd, POLLIN, until) != 0) {
            break;
        }
        got = recv(fd, buf + have, need - have, MSG_DONTWAIT);
        if ((got < 0) && ((errno == EINTR) || (errno == EAGAIN))) {
            continue;
        }
        if (got <= 0) {
            break;
        }
        have += (size_t)got;
    }
    return have;
}

/* "stopped by SIGTERM" for a signal number. */
static void svp_rt_watch_signal_name(char *buf, size_t len, int signo)
{
    const char *abbrev = (signo > 0) ? sigabbrev_np(signo) : NULL;

    if (abbrev != NULL) {
        snprintf(buf, len, "SIG%s", abbrev);
    } else {
        snprintf(buf, len, "signal %d", signo);
    }
}

/* Sends a notice that rank left (body of blen bytes) on every open
 * connection but slot `except` (-1: all). */
static void svp_rt_watch_tell(svp_rt_watch_t *watch, int except, int rank,
                              const unsigned char *body, size_t blen)
{
    unsigned char msg[SVP_RT_WATCH_MSG_MAX];
    int           s;

    msg[0] = SVP_RT_WATCH_NOTICE;
    msg[1] = (unsigned char)((uint32_t)rank >> 24);
    msg[2] = (unsigned char)((uint32_t)rank >> 16);
    msg[3] = (unsigned char)((uint32_t)rank >> 8);
    msg[4] = (unsigned char)rank;
    memcpy(msg + 5, body, SVP_MIN(blen, sizeof(msg) - 5));
    for (s = 0; s < SVP_RT_WATCH_NUM; ++s) {
        if ((s != except) && (watch->fds[s] >= 0)) {
            /* never blocks: a stopped peer's full buffer drops it */
            (void)send(watch->fds[s], msg, 5 + SVP_MIN(blen, sizeof(msg) - 5),
                       MSG_NOSIGNAL | MSG_DONTWAIT);
        }
    }
}

/*
 * A rank left (reason and its body as it came, blen bytes), heard on slot
 * `from` (-1: found here): the first time, marks it gone, passes the notice
 * on and reports it (unless it left with "done").
 */
static void svp_rt_watch_learn(svp_rt_watch_t *watch, int from, int rank,
                               const unsigned char *body, size_t blen)
{
    char why[96 + SVP_RT_WATCH_BYE_TEXT_MAX], sig[32];
    int  reason;
    int  tlen = (blen > 2) ? (int)SVP_MIN(blen - 2, (size_t)body[1]) : 0;

    if ((rank < 0) || (rank >= watch->size) || (rank == watch->rank) ||
        (atomic_exchange(&watch->gone[rank], 1) != 0)) {
        return;
    }
    svp_rt_watch_tell(watch, from, rank, body, blen);
    reason = (blen >= 1) ? body[0] : SVP_RT_WATCH_BYE_DONE;
    switch (reason) {
    case SVP_RT_WATCH_BYE_DONE:
        svp_debug("rank %d finished normally", rank);
        return;
    case SVP_RT_WATCH_BYE_SIGNAL:
        svp_rt_watch_signal_name(sig, sizeof(sig), (blen >= 2) ? body[1] : 0);
        snprintf(why, sizeof(why), "stopped by %s", sig);
        break;
    case SVP_RT_WATCH_BYE_ERROR:
        snprintf(why, sizeof(why), "it said goodbye: failed: %.*s", tlen,
                 (const char *)body + 2);
        break;
    case SVP_RT_WATCH_BYE_ENDING:
        snprintf(why, sizeof(why), "%.*s", tlen, (const char *)body + 2);
        break;
    case SVP_RT_WATCH_WIRE_LOST:
        snprintf(why, sizeof(why), "%.*s", tlen, (const char *)body + 2);
        reason = SVP_RT_WATCH_BYE_NONE;
        break;
    default:
        snprintf(why, sizeof(why), "it said goodbye: %s",
                 svp_rt_watch_bye_string(reason));
        if (reason > SVP_RT_WATCH_BYE_ENDING) {
            reason = SVP_RT_WATCH_BYE_NONE;
        }
        break;
    }
    watch->cb(watch->arg, rank, (svp_rt_watch_bye_t)reason, why);
}

/* The neighbour in slot s is gone without a goodbye (closed, silent, or it
 * sent what no peer sends): learnt, passed on, and the slot closed. */
static void svp_rt_watch_lose(svp_rt_watch_t *watch, int s, const char *what)
{
    unsigned char body[2 + SVP_RT_WATCH_BYE_TEXT_MAX];
    char          text[SVP_RT_WATCH_BYE_TEXT_MAX + 1];
    int           rank = watch->ranks[s];

    close(watch->fds[s]);
    watch->fds[s] = -1;
    snprintf(text, sizeof(text), "%s (seen by rank %d)", what, watch->rank);
    svp_rt_watch_learn(watch, s, rank, body,
                       svp_rt_watch_body(body, SVP_RT_WATCH_BYE_NONE, 0, text));
}

/* Reads what slot s has: heartbeats, notices, a goodbye, or end-of-file. */
static void svp_rt_watch_read(svp_rt_watch_t *watch, int s, double now)
{
    unsigned char buf[256 + SVP_RT_WATCH_MSG_MAX], *msg;
    char          why[96];
    ssize_t       got;
    size_t        have, off = 0, need;
    int           rank;

    got = recv(watch->fds[s], buf, 256, MSG_DONTWAIT);
    if ((got < 0) && ((errno == EINTR) || (errno == EAGAIN))) {
        return;
    }
    if (got <= 0) {
        snprintf(why, sizeof(why), "its connection closed without a goodbye (%s)",
                 got == 0 ? "end of file" : strerror(errno));
        svp_rt_watch_lose(watch, s, why);
        return;
    }
    watch->last[s] = now;
    have           = (size_t)got;
    while (off < have) {
        msg  = buf + off;
        need = svp_rt_watch_msg_len(msg, have - off);
        if (need == 0) {
            snprintf(why, sizeof(why), "it sent 0x%02x on the neighbour watch",
                     msg[0]);
            svp_rt_watch_lose(watch, s, why);
            return;
        }
        if (need > have - off) {
            /* the rest of this message, and nothing after it: the buffer
             * holds a whole message past what was read */
            have = off + svp_rt_watch_msg_rest(watch->fds[s], msg, have - off);
            need = SVP_MIN(need, have - off);
        }
        if (msg[0] == SVP_RT_WATCH_BYE) {
            /* a goodbye cut short (an old peer) counts as done, as it did
             * before reasons were sent */
            rank = watch->ranks[s];
            close(watch->fds[s]);
            watch->fds[s] = -1;
            if (need >= 2) {
                svp_rt_watch_learn(watch, s, rank, msg + 1, need - 1);
            } else {
                svp_rt_watch_learn(watch, s, rank,
                                   (const unsigned char[]){SVP_RT_WATCH_BYE_DONE},
                                   1);
            }
            return;
        }
        if ((msg[0] == SVP_RT_WATCH_NOTICE) && (need >= 6)) {
            rank = (int)(((uint32_t)msg[1] << 24) | ((uint32_t)msg[2] << 16) |
                         ((uint32_t)msg[3] << 8) | (uint32_t)msg[4]);
            svp_rt_watch_learn(watch, s, rank, msg + 5, need - 5);
        }
        off += SVP_MAX(need, (size_t)1);
    }
}

void svp_rt_watch_tell_self(svp_rt_watch_t *watch, svp_rt_watch_bye_t reason,
                            const char *text)
{
    unsigned char body[2 + SVP_RT_WATCH_BYE_TEXT_MAX];

    if ((watch == NULL) || watch->told_stop) {
        return;
    }
    watch->told_stop = 1;
    svp_rt_watch_tell(watch, -1, watch->rank, body,
                      svp_rt_watch_body(body, reason, svp_stop_signal(), text));
    svp_debug("told the ring this rank is leaving: %s",
              svp_rt_watch_bye_string(reason));
}

/* This rank got a stop signal, or ends on a stop request (stop.h): both
 * neighbours hear it now, before the teardown (which may take most of a
 * second) begins; a request's cause is passed on as the cause others end
 * for. */
static void svp_rt_watch_tell_stop(svp_rt_watch_t *watch)
{
    if (svp_stop_signal() != 0) {
        svp_rt_watch_tell_self(watch, SVP_RT_WATCH_BYE_SIGNAL, NULL);
    } else {
        svp_rt_watch_tell_self(watch, SVP_RT_WATCH_BYE_ENDING,
                               svp_stop_request_why());
    }
}

static void *svp_rt_watch_thread(void *ctx)
{
    svp_rt_watch_t *watch = ctx;
    struct pollfd   pfds[SVP_RT_WATCH_NUM + 2];
    int             slot[SVP_RT_WATCH_NUM + 2];
    int             n, i, s;
    char            beat = SVP_RT_WATCH_BEAT, why[128];
    double          now, next_beat;

    now       = svp_clock_now();
    next_beat = now;
    for (s = 0; s < SVP_RT_WATCH_NUM; ++s) {
        watch->last[s] = now;
    }
    for (;;) {
        now = svp_clock_now();
        if (!watch->told_stop && svp_stop_pending()) {
            svp_rt_watch_tell_stop(watch);
        }
        if (now >= next_beat) {
            for (s = 0; s < SVP_RT_WATCH_NUM; ++s) {
                if (watch->fds[s] >= 0) {
                    /* never blocks: a stopped peer's full buffer drops beats */
                    (void)send(watch->fds[s], &beat, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                }
            }
            next_beat = now + SVP_RT_WATCH_BEAT_S;
        }
        for (s = 0; s < SVP_RT_WATCH_NUM; ++s) {
            if ((watch->fds[s] >= 0) &&
                (now - watch->last[s] > SVP_RT_WATCH_SILENT_S)) {
                snprintf(why, sizeof(why),
                         "it sent no heartbeat for %.1f s (stopped or hung)",
                         now - watch->last[s]);
                svp_rt_watch_lose(watch, s, why);
            }
        }

        n              = 0;
        pfds[n].fd     = watch->stop_fd;
        pfds[n].events = POLLIN;
        slot[n++]      = -1;
        if (!watch->told_stop && (svp_stop_fd() >= 0)) {
            pfds[n].fd     = svp_stop_fd();
            pfds[n].events = POLLIN;
            slot[n++]      = -2;
        }
        for (s = 0; s < SVP_RT_WATCH_NUM; ++s) {
            if (watch->fds[s] >= 0) {
                pfds[n].fd     = watch->fds[s];
                pfds[n].events = POLLIN;
                slot[n++]      = s;
            }
        }
        if (poll(pfds, n, (int)((next_beat - now) * 1e3) + 1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            svp_warn("neighbour watch poll failed: %m");
            return NULL;
        }
        if (pfds[0].revents != 0) {
            return NULL;
        }
        now = svp_clock_now();
        for (i = 1; i < n; ++i) {
            if ((slot[i] >= 0) && (pfds[i].revents != 0) &&
                (watch->fds[slot[i]] >= 0)) {
                svp_rt_watch_read(watch, slot[i], now);
            }
        }
    }
}

svp_status_t svp_rt_watch_start(svp_rt_watch_t *watch, int rank, int size, int prev,
                                int next, const char *next_addr, double timeout,
                                svp_rt_watch_lost_cb_t cb, void *arg)
{
    double  until = svp_clock_now() + timeout;
    int32_t id = rank, peer_id = -1;
    int     fd, r;

    watch->ranks[SVP_RT_WATCH_PREV] = prev;
    watch->ranks[SVP_RT_WATCH_NEXT] = next;
    watch->rank                     = rank;
    watch->cb                       = cb;
    watch->arg                      = arg;
    watch->gone = malloc(sizeof(*watch->gone) * (size_t)SVP_MAX(size, 1));
    if (watch->gone == NULL) {
        svp_error("out of memory allocating the neighbour watch");
        goto err_stop;
    }
    watch->size = size;
    for (r = 0; r < size; ++r) {
        atomic_init(&watch->gone[r], 0);
    }

    /* Connect first, accept second: the kernel completes a connect from the
     * listen backlog before the peer calls accept, so no rank waits on
     * another here. */
    fd = svp_rt_watch_connect(next_addr, until);
    if (fd < 0) {
        goto err_stop;
    }
    watch->fds[SVP_RT_WATCH_NEXT] = fd;
    if (send(fd, &id, sizeof(id), MSG_NOSIGNAL) != sizeof(id)) {
        svp_error("cannot greet rank %d's neighbour watch: %m", next);
        goto err_stop;
    }

    if (svp_rt_watch_poll(watch->listen_fd, POLLIN, until) != 0) {
        svp_debug("rank %d did not connect to the neighbour watch within %.0f s",
                  prev, timeout);
        svp_rt_watch_stop(watch, SVP_RT_WATCH_BYE_ERROR, 0,
                          "its neighbour watch could not start");
        return SVP_ERR_TIMED_OUT;
    }
    fd = accept4(watch->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        svp_error("neighbour watch accept failed: %m");
        goto err_stop;
    }
    watch->fds[SVP_RT_WATCH_PREV] = fd;
    if ((svp_rt_watch_poll(fd, POLLIN, until) != 0) ||
        (recv(fd, &peer_id, sizeof(peer_id), MSG_WAITALL) != sizeof(peer_id)) ||
        (peer_id != prev)) {
        svp_error("neighbour watch: expected rank %d to connect, got rank %d", prev,
                  (int)peer_id);
        goto err_stop;
    }
    close(watch->listen_fd);
    watch->listen_fd = -1;
    svp_rt_watch_presence_stop(watch);

    watch->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (watch->stop_fd < 0) {
        svp_error("eventfd failed: %m");
        goto err_stop;
    }
    if (pthread_create(&watch->thread, NULL, svp_rt_watch_thread, watch) != 0) {
        svp_error("cannot start the neighbour watch thread");
        goto err_stop;
    }
    watch->thread_started = 1;
    return SVP_OK;

err_stop:
    svp_rt_watch_stop(watch, SVP_RT_WATCH_BYE_ERROR, 0,
                      "its neighbour watch could not start");
    return SVP_ERR_RUNTIME;
}

/*
 * Closes a connection after the last send, so that what was sent arrives:
 * a socket closed with unread bytes (the neighbour's heartbeats) makes the
 * kernel reset the connection and drop what it had not sent yet, and the
 * neighbour then read "connection reset" instead of the goodbye (3 of 30
 * runs of a four-rank ring).  So: end the sending side, read what is
 * there, then close.
 */
static void svp_rt_watch_close(int fd)
{
    char    buf[256];
    ssize_t got;

    (void)shutdown(fd, SHUT_WR);
    do {
        got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    } while ((got > 0) || ((got < 0) && (errno == EINTR)));
    close(fd);
}

void svp_rt_watch_stop(svp_rt_watch_t *watch, svp_rt_watch_bye_t reason, int signo,
                       const char *text)
{
    uint64_t      one                                = 1;
    unsigned char bye[3 + SVP_RT_WATCH_BYE_TEXT_MAX] = {SVP_RT_WATCH_BYE};
    size_t        len;
    int           s;

    if (watch == NULL) {
        return;
    }
    len = 1 + svp_rt_watch_body(bye + 1,
                                (reason == SVP_RT_WATCH_BYE_NONE)
                                    ? SVP_RT_WATCH_BYE_EARLY
                                    : reason,
                                signo, text);
    if (watch->thread_started) {
        if (write(watch->stop_fd, &one, sizeof(one)) != sizeof(one)) {
            svp_warn("cannot stop the neighbour watch thread: %m");
        } else {
            pthread_join(watch->thread, NULL);
        }
    }
    for (s = 0; s < SVP_RT_WATCH_NUM; ++s) {
        if (watch->fds[s] >= 0) {
            /* MSG_NOSIGNAL: a neighbour already gone must not SIGPIPE us */
            (void)send(watch->fds[s], bye, len, MSG_NOSIGNAL | MSG_DONTWAIT);
            svp_rt_watch_close(watch->fds[s]);
        }
    }
    if (watch->stop_fd >= 0) {
        close(watch->stop_fd);
    }
    if (watch->listen_fd >= 0) {
        close(watch->listen_fd);
    }
    svp_rt_watch_presence_stop(watch);
    free(watch->gone);
    free(watch);
}
