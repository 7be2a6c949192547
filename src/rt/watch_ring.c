/*
 * The ring (watch.h): the thread that sends heartbeats to both neighbours,
 * reads what they send, tells a silent or closed neighbour's loss, and
 * passes every departure it learns on to the other side.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/watch_int.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/stop.h"
#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

void *svp_rt_watch_thread(void *ctx)
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
