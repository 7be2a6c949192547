/*
 * The neighbour watch (watch.h): a TCP ring of heartbeats, goodbyes and
 * notices that tells every rank within milliseconds which ranks are leaving
 * or gone, and the presence port that answers start-up probes.  This file
 * holds its lifecycle (listen, start, stop) and who is gone; the ring's
 * thread, the wire format, the sockets and the presence port have a file
 * each (watch_int.h lists them).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/watch_int.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"

#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

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

int svp_rt_watch_gone(const svp_rt_watch_t *watch, int rank)
{
    if ((watch == NULL) || (watch->gone == NULL) || (rank < 0) ||
        (rank >= watch->size)) {
        return 0;
    }
    return atomic_load(&watch->gone[rank]) != 0;
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
