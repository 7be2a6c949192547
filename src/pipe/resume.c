/*
 * Resume: which samples are finished, agreed by all ranks (see resume.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/resume.h"
#include "job/samples.h"
#include "pipe/schedule.h"
#include "jobspec/layout.h"
#include "common/log.h"
#include "tensor/safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What a rank publishes: its verdict on each sample it finishes. */
#define SVP_RESUME_KEY "svp.resume"

enum {
    SVP_RESUME_RUN  = 0, /* not this rank's, or to be run */
    SVP_RESUME_DONE = 1, /* finished: skip */
    SVP_RESUME_BAD  = 2  /* made with other parameters: the job fails */
};

int svp_pipe_resume_finisher(const svp_layout_t    *layout,
                             const svp_job_shard_t *shard, int i)
{
    if (!svp_job_shard_owns(shard, i)) {
        return -1;
    }
    return svp_layout_owner(layout, svp_job_shard_pos(shard, i));
}

/* This rank's verdicts on the samples it finishes; *bad_p counts mismatches. */
static svp_status_t svp_pipe_resume_scan(const svp_spec_t  *spec,
                                         const svp_stage_t *stage, int n,
                                         const svp_job_shard_t *shard, int rank,
                                         const svp_layout_t *layout,
                                         unsigned char *v, int *bad_p)
{
    char         why[1024];
    svp_status_t status;
    int          i, bad = 0;

    for (i = 0; i < n; ++i) {
        v[i] = SVP_RESUME_RUN;
        /* another shard's samples are that task's business, finished or not */
        if (stage->ops->check_output == NULL || !svp_job_shard_owns(shard, i) ||
            svp_pipe_resume_finisher(layout, shard, i) != rank) {
            continue;
        }
        why[0] = '\0';
        status = stage->ops->check_output(stage->self, i, why, sizeof(why));
        if (status == SVP_OK) {
            v[i] = SVP_RESUME_DONE;
        } else if (status == SVP_ERR_SPEC && !spec->output.overwrite) {
            if (bad++ == 0) {
                svp_error("sample %d: %s (output.overwrite: true replaces it)", i,
                          why);
            }
            v[i] = SVP_RESUME_BAD;
        } else if (status == SVP_ERR_SPEC) {
            svp_info("sample %d: %s: output.overwrite is set, running it again", i,
                     why);
        } else if (status != SVP_ERR_NOT_FOUND) {
            svp_warn("sample %d: %s: running it again", i, why);
        }
    }
    if (bad > 1) {
        svp_error("%d samples in %s were made with other parameters", bad,
                  spec->output.dir);
    }
    *bad_p = bad;
    return SVP_OK;
}

/*
 * "0-19999, 20005, 20010-20019" into buf: a resumed job of many samples says
 * what it skipped in a line, not a line per sample.  At most max ranges are
 * written, then "and N more".
 */
static void svp_pipe_resume_ranges(const unsigned char *all, int n, int what,
                                   char *buf, size_t len, int max)
{
    size_t used = 0;
    int    i = 0, j, ranges = 0, more = 0;

    buf[0] = '\0';
    while (i < n) {
        if (all[i] != what) {
            ++i;
            continue;
        }
        for (j = i; j + 1 < n && all[j + 1] == what; ++j) {
        }
        if (ranges < max && used < len) {
            used += (size_t)snprintf(buf + used, len - used,
                                     (i == j) ? "%s%d" : "%s%d-%d",
                                     ranges ? ", " : "", i, j);
        } else {
            ++more;
        }
        ++ranges;
        i = j + 1;
    }
    if (more > 0 && used < len) {
        snprintf(buf + used, len - used, " and %d more range%s", more,
                 more == 1 ? "" : "s");
    }
}

svp_status_t svp_pipe_resume_agree(svp_rt_h rt, const svp_spec_t *spec,
                                   const svp_stage_t *stage, int n,
                                   const svp_job_shard_t *shard,
                                   svp_pipe_resume_t     *r_p)
{
    int            rank = svp_rt_rank(rt), world = svp_rt_size(rt);
    int            bad = 0, badrank = -1, i, r;
    char           ranges[1024];
    unsigned char *mine, *all;
    void          *data;
    size_t         len;
    svp_status_t   status;
    svp_layout_t   layout;

    if (svp_layout_of_spec(spec, world, NULL, 0, &layout) != SVP_OK) {
        svp_error("internal: resume of a layout the spec does not allow");
        return SVP_ERR_INTERNAL;
    }
    mine = calloc((size_t)n + 1, 1);
    all  = calloc((size_t)n + 1, 1);
    if (mine == NULL || all == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    svp_pipe_resume_scan(spec, stage, n, shard, rank, &layout, mine, &bad);
    if (world > 1) {
        status = svp_rt_put(rt, SVP_RESUME_KEY, mine, (size_t)n);
        if (status == SVP_OK) {
            status = svp_rt_fence(rt);
        }
        if (status != SVP_OK) {
            goto out;
        }
        for (r = 0; r < world; ++r) {
            if (r == rank) {
                data = NULL;
            } else {
                status = svp_rt_get(rt, r, SVP_RESUME_KEY, &data, &len);
                if (status != SVP_OK) {
                    svp_error("cannot read rank %d's finished samples: %s", r,
                              svp_status_string(status));
                    goto out;
                }
                if (len != (size_t)n) {
                    svp_error("rank %d knows %zu samples, this rank %d", r, len, n);
                    free(data);
                    status = SVP_ERR_MESSAGE;
                    goto out;
                }
            }
            for (i = 0; i < n; ++i) {
                unsigned char v = (r == rank) ? mine[i] : ((unsigned char *)data)[i];
                if (v != SVP_RESUME_RUN &&
                    svp_pipe_resume_finisher(&layout, shard, i) == r) {
                    all[i] = v;
                }
                if (v == SVP_RESUME_BAD && badrank < 0) {
                    badrank = r;
                }
            }
            free(data);
        }
    } else {
        memcpy(all, mine, (size_t)n);
        badrank = bad ? 0 : -1;
    }
    if (badrank >= 0) {
        if (badrank != rank) {
            svp_error("rank %d found samples in %s made with other parameters "
                      "(see its log)",
                      badrank, spec->output.dir);
        }
        r_p->agreed_failure = 1;
        status              = SVP_ERR_SPEC;
        goto out;
    }

    memset(r_p, 0, sizeof(*r_p));
    r_p->todo = malloc(((size_t)n + 1) * sizeof(*r_p->todo));
    if (r_p->todo == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    for (i = 0; i < n; ++i) {
        if (all[i] == SVP_RESUME_DONE) {
            r_p->skipped++;
        } else if (svp_job_shard_owns(shard, i)) {
            r_p->todo[r_p->ntodo++] = i;
        }
    }
    if (r_p->skipped > 0) {
        /* one line for the job, where every rank would say the same */
        if (rank == 0) {
            svp_pipe_resume_ranges(all, n, SVP_RESUME_DONE, ranges, sizeof(ranges),
                                   16);
            svp_info("skipped %s (finished by an earlier run)", ranges);
        }
        svp_info("resuming in %s: %d of %d samples finished by an earlier run, "
                 "%d to run",
                 spec->output.dir, r_p->skipped, svp_job_shard_size(shard, n),
                 r_p->ntodo);
    }
    status = SVP_OK;
out:
    free(mine);
    free(all);
    return status;
}

void svp_pipe_resume_cleanup(svp_pipe_resume_t *r)
{
    if (r != NULL) {
        free(r->todo);
        r->todo  = NULL;
        r->ntodo = 0;
    }
}
