/*
 * Shards of a job: task i of n (svdworker --shard, or Slurm's array
 * variables against cluster.array) and the files each shard writes (see
 * samples.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/samples.h"
#include "common/util.h"
#include "common/errf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

svp_status_t svp_job_shard_parse(const char *s, svp_job_shard_t *shard_p,
                                 char *errbuf, int errlen)
{
    char *end;
    long  i, n;

    /* digits only: strtol would also take blanks and signs ahead of them */
    errno = 0;
    i     = isdigit((unsigned char)s[0]) ? strtol(s, &end, 10) : -1;
    if (i >= 0 && errno == 0 && *end == '/' && isdigit((unsigned char)end[1])) {
        const char *t = end + 1;
        n             = strtol(t, &end, 10);
        if (errno == 0 && *end == '\0' && n >= 1 && n <= 1000000 && i >= 0 &&
            i < n) {
            shard_p->index = (int)i;
            shard_p->count = (int)n;
            return SVP_OK;
        }
    }
    svp_errf(errbuf, errlen,
             "--shard: expected I/N with 0 <= I < N (task I "
             "of N), found '%s'",
             s);
    return SVP_ERR_USAGE;
}

static int svp_samples_env_int(const char *name, long *v_p)
{
    const char *s = getenv(name);
    char       *end;

    if (s == NULL || *s == '\0') {
        return 0;
    }
    errno = 0;
    *v_p  = strtol(s, &end, 10);
    return (errno == 0 && *end == '\0') ? 1 : -1;
}

/* cluster.array's "A-B" or "A" (an optional "%k" throttle aside). */
static int svp_samples_parse_array(const char *array, long *min_p, long *max_p)
{
    char *end;
    long  a, b;

    errno = 0;
    a     = strtol(array, &end, 10);
    if (errno != 0 || end == array || a < 0) {
        return -1;
    }
    b = a;
    if (*end == '-') {
        const char *t = end + 1;
        b             = strtol(t, &end, 10);
        if (errno != 0 || end == t || b < a) {
            return -1;
        }
    }
    if (*end == '%') {
        const char *t = end + 1;
        (void)strtol(t, &end, 10);
        if (errno != 0 || end == t) {
            return -1;
        }
    }
    if (*end != '\0') {
        return -1;
    }
    *min_p = a;
    *max_p = b;
    return 0;
}

svp_status_t svp_job_shard_check_array(const char *array, char *errbuf, int errlen)
{
    long min, max;

    if (svp_samples_parse_array(array, &min, &max) != 0) {
        svp_errf(errbuf, errlen,
                 "cluster.array: expected a range of task ids "
                 "like 0-63 or 0-63%%8 (task i makes its share of the "
                 "samples), found '%s'",
                 array);
        return SVP_ERR_SPEC;
    }
    return SVP_OK;
}

svp_status_t svp_job_shard_from_env(const char *array, svp_job_shard_t *shard_p,
                                    char *errbuf, int errlen)
{
    long        id, min, max;
    const char *env = getenv("SLURM_ARRAY_TASK_ID");

    /* the spec's range, not Slurm's MIN and MAX: one task resubmitted alone
     * (sbatch --array=5 job.sbatch) is an array of one, yet still shard 5 */
    if (svp_samples_parse_array(array, &min, &max) != 0) {
        svp_errf(errbuf, errlen,
                 "cluster.array: expected a range of task ids "
                 "like 0-63 or 0-63%%8 (task i makes its share of the "
                 "samples), found '%s'",
                 array);
        return SVP_ERR_USAGE;
    }
    if (svp_samples_env_int("SLURM_ARRAY_TASK_ID", &id) == 0) {
        return SVP_ERR_NOT_FOUND;
    }
    if (svp_samples_env_int("SLURM_ARRAY_TASK_ID", &id) != 1 || id < min ||
        id > max) {
        svp_errf(errbuf, errlen,
                 "SLURM_ARRAY_TASK_ID=%s: expected a task of "
                 "cluster.array %s",
                 env, array);
        return SVP_ERR_USAGE;
    }
    shard_p->index = (int)(id - min);
    shard_p->count = (int)(max - min + 1);
    return SVP_OK;
}

void svp_job_shard_set_block(svp_job_shard_t *shard, const svp_spec_t *spec)
{
    shard->block = (spec->output.format == SVP_OUTPUT_WEBDATASET)
                       ? spec->output.samples_per_shard
                       : 1;
}

int svp_job_shard_size(const svp_job_shard_t *shard, int n)
{
    int b = svp_job_shard_block(shard), c = shard->count, t = shard->index;
    int whole = n / b, owned;

    /* the whole blocks t, t + c, ... below n / b, then the last partial
     * block (number n / b) when it is this shard's */
    owned = (whole > t) ? (whole - t + c - 1) / c : 0;
    return owned * b + ((whole % c == t) ? n % b : 0);
}

int svp_job_shard_pos(const svp_job_shard_t *shard, int sample)
{
    int b = svp_job_shard_block(shard);

    return (sample / b / shard->count) * b + sample % b;
}

void svp_job_shard_file(const svp_job_shard_t *shard, const char *base,
                        const char *ext, char *buf, int len)
{
    if (shard == NULL || shard->count <= 1) {
        snprintf(buf, (size_t)len, "%s%s", base, ext);
    } else {
        snprintf(buf, (size_t)len, "%s.shard-%d-of-%d%s", base, shard->index,
                 shard->count, ext);
    }
}
