/*
 * The launcher's shared helpers: whether a value holds a control
 * character, the effective values of the cluster keys (defaults applied),
 * Slurm's time limits and cluster.array read, for the validation, the
 * script, the planner and the tool alike.  Values quoted in a message are
 * escaped by svp_str_escape (common/str.h, SVP_STR_ESCAPE_QUOTED).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"
#include "common/util.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int svp_launch_has_control(const char *s)
{
    for (; *s != '\0'; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) {
            return 1;
        }
        /* C1 (U+0080 to U+009F): U+009B is CSI on a terminal that
         * honours C1, and the script is printed (render to stdout) */
        if (c == 0xc2 && (unsigned char)s[1] >= 0x80 &&
            (unsigned char)s[1] <= 0x9f) {
            return 1;
        }
    }
    return 0;
}
int svp_launch_is_set(const char *s)
{
    return s != NULL && *s != '\0';
}
const char *svp_launch_job_name(const svp_spec_t *spec)
{
    return svp_launch_is_set(spec->cluster.job_name) ? spec->cluster.job_name
           : svp_launch_is_set(spec->name)           ? spec->name
                                                     : "svdpipe";
}

const char *svp_launch_mpi(const svp_spec_t *spec)
{
    return svp_launch_is_set(spec->cluster.mpi) ? spec->cluster.mpi : "pmix";
}

const char *svp_launch_worker(const svp_spec_t *spec)
{
    return svp_launch_is_set(spec->cluster.worker) ? spec->cluster.worker
                                                   : "svdworker";
}

int svp_launch_gpus_per_task(const svp_spec_t *spec)
{
    if (spec->device != SVP_OPS_BACKEND_CUDA) {
        return 0;
    }
    return spec->cluster.gpus_per_task > 0 ? spec->cluster.gpus_per_task : 1;
}

long svp_launch_exit_wait(const svp_spec_t *spec)
{
    return (long)ceil(spec->comm.deadline) + SVP_LAUNCH_EXIT_GRACE_S;
}

/* Reads digits into *v; returns the end, or NULL for no digits/overflow. */
const char *svp_launch_digits(const char *s, long *v)
{
    long n = 0;

    if (!isdigit((unsigned char)*s)) {
        return NULL;
    }
    for (; isdigit((unsigned char)*s); ++s) {
        if (n > (LONG_MAX - 9) / 10) {
            return NULL;
        }
        n = n * 10 + (*s - '0');
    }
    *v = n;
    return s;
}

svp_status_t svp_launch_time_parse(const char *text, long *seconds_p)
{
    long        f[4], days = 0, secs;
    int         nf = 0, has_days = 0;
    const char *p = text;

    if (text == NULL) {
        return SVP_ERR_INVALID_PARAM;
    }
    if (!strcmp(text, "UNLIMITED") || !strcmp(text, "INFINITE")) {
        *seconds_p = -1;
        return SVP_OK;
    }

    p = svp_launch_digits(p, &f[0]);
    if (p == NULL) {
        return SVP_ERR_INVALID_PARAM;
    }
    if (*p == '-') {
        has_days = 1;
        days     = f[0];
        p        = svp_launch_digits(p + 1, &f[0]);
        if (p == NULL) {
            return SVP_ERR_INVALID_PARAM;
        }
    }
    nf = 1;
    while (*p == ':' && nf < 3) {
        p = svp_launch_digits(p + 1, &f[nf]);
        if (p == NULL) {
            return SVP_ERR_INVALID_PARAM;
        }
        ++nf;
    }
    if (*p != '\0') {
        return SVP_ERR_INVALID_PARAM;
    }

    /* the fields after the first are minutes/seconds: below 60 */
    for (int i = 1; i < nf; ++i) {
        if (f[i] >= 60) {
            return SVP_ERR_INVALID_PARAM;
        }
    }
    if (has_days) {
        /* days-hours[:minutes[:seconds]] */
        if (f[0] >= 24) {
            return SVP_ERR_INVALID_PARAM;
        }
        secs = f[0] * 3600 + (nf > 1 ? f[1] * 60 : 0) + (nf > 2 ? f[2] : 0);
    } else if (nf == 1) {
        secs = f[0] * 60; /* minutes */
    } else if (nf == 2) {
        secs = f[0] * 60 + f[1]; /* minutes:seconds */
    } else {
        secs = f[0] * 3600 + f[1] * 60 + f[2]; /* hours:minutes:seconds */
    }
    /* Slurm keeps limits in minutes in 32 bits; a year is plenty */
    if (days > 365 || secs > 366L * 86400) {
        return SVP_ERR_INVALID_PARAM;
    }
    *seconds_p = days * 86400 + secs;
    return SVP_OK;
}
int svp_launch_array_tasks(const svp_spec_t *spec)
{
    const char *p = spec->cluster.array;
    long        n = 0;

    if (!svp_launch_is_set(p)) {
        return 0;
    }
    /* items "A", "A-B" or "A-B:S", comma-separated, before any "%N" */
    while (*p != '\0' && *p != '%') {
        long a, b, step = 1;

        p = svp_launch_digits(p, &a);
        if (p == NULL) {
            return 0;
        }
        b = a;
        if (*p == '-') {
            p = svp_launch_digits(p + 1, &b);
            if (p == NULL || b < a) {
                return 0;
            }
            if (*p == ':') {
                p = svp_launch_digits(p + 1, &step);
                if (p == NULL || step < 1) {
                    return 0;
                }
            }
        }
        n += (b - a) / step + 1;
        if (n > INT_MAX) {
            return 0;
        }
        if (*p == ',') {
            ++p;
        } else if (*p != '\0' && *p != '%') {
            return 0;
        }
    }
    return (int)n;
}

/* The largest task id of cluster.array (its items "A", "A-B", "A-B:S"
 * before any "%N"), or -1 when not set or not readable. */
static long launch_array_max_id(const char *p)
{
    long max = -1;

    while (p != NULL && *p != '\0' && *p != '%') {
        long a, b, step = 1;

        p = svp_launch_digits(p, &a);
        if (p == NULL) {
            return -1;
        }
        b = a;
        if (*p == '-') {
            p = svp_launch_digits(p + 1, &b);
            if (p == NULL) {
                return -1;
            }
            if (*p == ':') {
                p = svp_launch_digits(p + 1, &step);
                if (p == NULL || step < 1) {
                    return -1;
                }
            }
            b = a + (b - a) / step * step; /* the last id the step reaches */
        }
        max = SVP_MAX(max, b);
        if (*p == ',') {
            ++p;
        } else if (*p != '\0' && *p != '%') {
            return -1;
        }
    }
    return max;
}

/*
 * Slurm's MaxArraySize (slurm.conf) bounds the task ids, not their count:
 * the largest id must be below it.  Its default is 1001 (ids 0 to 1000);
 * sites raise it, and only scontrol show config tells, so this is a
 * warning: sbatch refuses the job with "Invalid job array specification"
 * where the site kept the default.
 */
#define LAUNCH_MAX_ARRAY_SIZE_DEFAULT 1001

int svp_launch_array_warning(const svp_spec_t *spec, int samples, char *msg,
                             size_t len)
{
    int  tasks = svp_launch_array_tasks(spec);
    long max   = launch_array_max_id(spec->cluster.array);

    if (tasks < 1) {
        return 0;
    }
    if (max >= LAUNCH_MAX_ARRAY_SIZE_DEFAULT) {
        snprintf(msg, len,
                 "%s: cluster.array: %s has task ids up to %ld, and "
                 "Slurm's default MaxArraySize of %d allows ids up to %d: sbatch "
                 "refuses the job unless the site raised MaxArraySize "
                 "(scontrol show config | grep MaxArraySize)",
                 spec->file ? spec->file : "<spec>", spec->cluster.array, max,
                 LAUNCH_MAX_ARRAY_SIZE_DEFAULT, LAUNCH_MAX_ARRAY_SIZE_DEFAULT - 1);
        return 1;
    }
    if (samples > 0 && tasks > samples) {
        snprintf(msg, len,
                 "%s: cluster.array: %s makes %d tasks for %d "
                 "sample%s: %d task%s get%s no sample and end%s at once; an "
                 "array of %d tasks does the same work (and its ids stay below "
                 "Slurm's MaxArraySize, %d by default)",
                 spec->file ? spec->file : "<spec>", spec->cluster.array, tasks,
                 samples, samples == 1 ? "" : "s", tasks - samples,
                 tasks - samples == 1 ? "" : "s", tasks - samples == 1 ? "s" : "",
                 tasks - samples == 1 ? "s" : "", samples,
                 LAUNCH_MAX_ARRAY_SIZE_DEFAULT);
        return 1;
    }
    return 0;
}
