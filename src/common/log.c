/*
 * Logging (log.h): the level, the stream, the identity every line carries
 * (host:rRANK, looked up once) and the first error kept for the tools'
 * exit message.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/log.h"
#include "common/str.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

svp_log_level_t svp_log_current_level = SVP_LOG_LEVEL_INFO;

static const char *svp_log_level_names[] = {
    [SVP_LOG_LEVEL_ERROR] = "error", [SVP_LOG_LEVEL_WARN] = "warn",
    [SVP_LOG_LEVEL_INFO] = "info",   [SVP_LOG_LEVEL_DEBUG] = "debug",
    [SVP_LOG_LEVEL_TRACE] = "trace",
};

static char            svp_log_host[64];
static int             svp_log_rank = -1; /* -1 not looked up, -2 none */
static FILE           *svp_log_stream;
static char            svp_log_first[256]; /* the first error's message */
static pthread_mutex_t svp_log_lock = PTHREAD_MUTEX_INITIALIZER;

void svp_log_set_level(svp_log_level_t level)
{
    svp_log_current_level = level;
}

int svp_log_level_parse(const char *name)
{
    int i;

    for (i = 0; i < SVP_LOG_LEVEL_LAST; ++i) {
        if (strcmp(name, svp_log_level_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

const char *svp_log_hostname(void)
{
    char *dot;

    if (svp_log_host[0] == '\0') {
        if (gethostname(svp_log_host, sizeof(svp_log_host) - 1) != 0) {
            strcpy(svp_log_host, "unknown");
        }
        svp_log_host[sizeof(svp_log_host) - 1] = '\0';
        dot                                    = strchr(svp_log_host, '.');
        if (dot != NULL) {
            *dot = '\0';
        }
    }
    return svp_log_host;
}

/*
 * The rank the launcher gave this process, before PMIx is up: srun and
 * mpirun both export PMIX_RANK to the process (SLURM_PROCID under srun
 * without --mpi=pmix).  -2 when neither is set (a plain start: host:pid).
 */
static int svp_log_launcher_rank(void)
{
    const char *names[] = {"PMIX_RANK", "SLURM_PROCID"};
    const char *val;
    char       *end;
    long        r;
    size_t      i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        val = getenv(names[i]);
        if ((val != NULL) && (val[0] != '\0')) {
            r = strtol(val, &end, 10);
            if ((*end == '\0') && (r >= 0) && (r < (1L << 30))) {
                return (int)r;
            }
        }
    }
    return -2;
}

void svp_log_set_rank(int rank)
{
    svp_log_rank = rank;
}

void svp_log_set_stream(FILE *stream)
{
    svp_log_stream = stream;
}

void svp_log_write(svp_log_level_t level, const char *file, int line,
                   const char *fmt, ...)
{
    char           stamp[32], who[96], raw[2048], msg[4096];
    struct timeval tv;
    struct tm      tm;
    FILE          *out = (svp_log_stream != NULL) ? svp_log_stream : stderr;
    va_list        ap;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);

    if (svp_log_rank == -1) {
        svp_log_rank = svp_log_launcher_rank();
    }
    if (svp_log_rank >= 0) {
        snprintf(who, sizeof(who), "%s:r%d", svp_log_hostname(), svp_log_rank);
    } else {
        snprintf(who, sizeof(who), "%s:%d", svp_log_hostname(), (int)getpid());
    }

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* a message quotes specs, manifests and peers: one safe line */
    svp_str_escape(raw, strlen(raw), msg, sizeof(msg), SVP_STR_ESCAPE_TERMINAL);

    pthread_mutex_lock(&svp_log_lock);
    if (level == SVP_LOG_LEVEL_ERROR && svp_log_first[0] == '\0') {
        size_t n = strnlen(msg, sizeof(svp_log_first) - 1);

        memcpy(svp_log_first, msg, n);
        svp_log_first[n] = '\0';
    }
    if (svp_log_current_level >= SVP_LOG_LEVEL_DEBUG) {
        fprintf(out, "%s.%03dZ %s %-5s %s [%s:%d]\n", stamp,
                (int)(tv.tv_usec / 1000), who, svp_log_level_names[level], msg, file,
                line);
    } else {
        fprintf(out, "%s.%03dZ %s %-5s %s\n", stamp, (int)(tv.tv_usec / 1000), who,
                svp_log_level_names[level], msg);
    }
    fflush(out);
    pthread_mutex_unlock(&svp_log_lock);
}

int svp_log_first_error(char *buf, size_t len)
{
    int have;

    pthread_mutex_lock(&svp_log_lock);
    have = (svp_log_first[0] != '\0');
    if (have && len > 0) {
        snprintf(buf, len, "%s", svp_log_first);
    }
    pthread_mutex_unlock(&svp_log_lock);
    return have;
}
