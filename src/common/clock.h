#ifndef SVP_COMMON_CLOCK_H
#define SVP_COMMON_CLOCK_H

#include <stdint.h>

/* Monotonic time in seconds (CLOCK_MONOTONIC). */
double svp_clock_now(void);

/* Wall-clock time in seconds since the epoch (for logs and metadata). */
double svp_clock_wall(void);

/* Sleeps for the given number of seconds, resuming after signals. */
void svp_clock_sleep(double seconds);

/* Formats a duration as "1h02m", "3m05s" or "4.2s" into buf. */
const char *svp_clock_format_duration(double seconds, char *buf, int len);

#endif
