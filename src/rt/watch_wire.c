/*
 * The neighbour watch's messages as bytes (the format is in watch_int.h):
 * a goodbye's or notice's body written, a message's length read from its
 * first bytes, and the rest of a message read off its socket.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/watch_int.h"

#include "common/clock.h"
#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

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

/* Writes a body (see watch_int.h) into buf; returns its length. */
size_t svp_rt_watch_body(unsigned char *buf, int reason, int signo, const char *text)
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
size_t svp_rt_watch_msg_len(const unsigned char *msg, size_t have)
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
size_t svp_rt_watch_msg_rest(int fd, unsigned char *buf, size_t have)
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
