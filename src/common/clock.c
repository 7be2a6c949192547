/*
 * Clocks (clock.h): a monotonic one for durations and deadlines, the wall
 * clock for records, a sleep, and durations formatted for people.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/clock.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

double svp_clock_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double svp_clock_wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void svp_clock_sleep(double seconds)
{
    struct timespec req, rem;

    if (seconds <= 0) {
        return;
    }
    req.tv_sec  = (time_t)seconds;
    req.tv_nsec = (long)((seconds - (double)req.tv_sec) * 1e9);
    while (nanosleep(&req, &rem) != 0 && errno == EINTR) {
        req = rem;
    }
}

const char *svp_clock_format_duration(double seconds, char *buf, int len)
{
    long s;

    if (seconds < 60.0) {
        snprintf(buf, len, "%.1fs", seconds);
    } else {
        s = (long)(seconds + 0.5);
        if (s < 3600) {
            snprintf(buf, len, "%ldm%02lds", s / 60, s % 60);
        } else {
            snprintf(buf, len, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
        }
    }
    return buf;
}
