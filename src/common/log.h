/*
 * svdpipe logging: every line says who (host, rank) and what.
 *
 *   2026-11-22T06:31:14.123Z node01:r3 info  pipe: sample 4 step 12 ...
 *
 * The identity is host:rRANK from the first line on: before the runtime is
 * up, the rank the launcher exported (PMIX_RANK, else SLURM_PROCID); after
 * svp_log_set_rank(), the runtime's.  Only a process started by hand, with
 * neither set, says host:pid until then.  Messages are lowercase, give the exact
 * cause, and are logged once where the failure is first detected.
 *
 * The macros test the level before formatting anything; SVP_LOG_MAX_LEVEL
 * removes levels above it at compile time.
 */
#ifndef SVP_COMMON_LOG_H
#define SVP_COMMON_LOG_H

#include <stdarg.h>

typedef enum {
    SVP_LOG_LEVEL_ERROR = 0,
    SVP_LOG_LEVEL_WARN,
    SVP_LOG_LEVEL_INFO,
    SVP_LOG_LEVEL_DEBUG,
    SVP_LOG_LEVEL_TRACE,
    SVP_LOG_LEVEL_LAST
} svp_log_level_t;

#ifndef SVP_LOG_MAX_LEVEL
#define SVP_LOG_MAX_LEVEL SVP_LOG_LEVEL_TRACE
#endif

extern svp_log_level_t svp_log_current_level;

#define svp_log_enabled(_level) \
    (((_level) <= SVP_LOG_MAX_LEVEL) && ((_level) <= svp_log_current_level))

#define svp_log(_level, _fmt, ...) \
    do { \
        if (svp_log_enabled(_level)) { \
            svp_log_write((_level), __FILE__, __LINE__, _fmt, ##__VA_ARGS__); \
        } \
    } while (0)

#define svp_error(_fmt, ...) svp_log(SVP_LOG_LEVEL_ERROR, _fmt, ##__VA_ARGS__)
#define svp_warn(_fmt, ...)  svp_log(SVP_LOG_LEVEL_WARN, _fmt, ##__VA_ARGS__)
#define svp_info(_fmt, ...)  svp_log(SVP_LOG_LEVEL_INFO, _fmt, ##__VA_ARGS__)
#define svp_debug(_fmt, ...) svp_log(SVP_LOG_LEVEL_DEBUG, _fmt, ##__VA_ARGS__)
#define svp_trace(_fmt, ...) svp_log(SVP_LOG_LEVEL_TRACE, _fmt, ##__VA_ARGS__)

/*
 * A failure with status _status (common/status.h): an error, but at debug
 * level when it is the consequence of a stop, this rank's own
 * (SVP_ERR_CANCELED) or another rank's (SVP_ERR_PEER_STOPPED): the stop is
 * reported once, by the worker, and the lines on the way out are detail.
 */
#define svp_log_failure(_status, _fmt, ...) \
    svp_log((((_status) == SVP_ERR_PEER_STOPPED) || \
             ((_status) == SVP_ERR_CANCELED)) \
                ? SVP_LOG_LEVEL_DEBUG \
                : SVP_LOG_LEVEL_ERROR, \
            _fmt, ##__VA_ARGS__)

/* Sets the level; messages above it are dropped before formatting. */
void svp_log_set_level(svp_log_level_t level);

/* Parses "error|warn|info|debug|trace"; returns -1 for anything else. */
int svp_log_level_parse(const char *name);

/* Identity in every line: host:rRANK (see above). */
void svp_log_set_rank(int rank);

/* The host name used in log lines (short form). */
const char *svp_log_hostname(void);

/* Redirect output (default stderr).  The stream is not closed by the logger. */
#include <stdio.h>
void svp_log_set_stream(FILE *stream);

/* The message of the first error this process logged, into buf (cut to
 * len); 0 when none was (the goodbye a failed rank sends carries it). */
int svp_log_first_error(char *buf, size_t len);

void svp_log_write(svp_log_level_t level, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
