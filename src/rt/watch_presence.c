/*
 * The presence port (watch.h, svp_rt_watch_probe): a socket of its own,
 * answered by a thread with one byte saying where this rank is in its
 * start-up until the ring starts, and the probes that ask other ranks.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/watch_int.h"

#include "common/clock.h"
#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * Answers presence probes with one byte, where this rank is.  A thread of
 * its own, so that a rank waiting in a fence answers whatever its main
 * thread does, while one that never got there answers 'P' (stalled between
 * its address and the fence) or nothing (stopped: the kernel accepts the
 * connection, nobody writes).
 */
void *svp_rt_watch_presence_thread(void *ctx)
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

void svp_rt_watch_presence_stop(svp_rt_watch_t *watch)
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
