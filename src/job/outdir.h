/*
 * The output directory, before any work: is it usable, and what did an
 * interrupted run leave in it.
 *
 * Temporaries: outputs are written as "<final>.tmp.<pid>@<host>" and
 * renamed into place (file.h svp_file_write_atomic and svp_tmp_tag,
 * media/sample_dir.h); a sample directory being replaced is moved aside as
 * "<final>.old.<pid>@<host>" for a moment.  A process killed in between leaves these behind.  Only names of
 * exactly that form for the job's own outputs (sample_NNNNNN,
 * sample_NNNNNN.safetensors) are ever touched; any other file stays.
 */
#ifndef SVP_JOB_OUTDIR_H
#define SVP_JOB_OUTDIR_H

#include "common/status.h"

#include <stdint.h>

/*
 * Removes the temporaries in dir, recursively for directories.  pid > 0:
 * only those of that process of this host (a stopping rank's own); pid ==
 * 0: all whose writer is gone (at start, before any rank of the job
 * writes, with output.dir's lease held: job/lease.h), leaving, with a
 * warning, any whose writer is a live process of this host.  own(i, arg), when not NULL,
 * limits it to the samples i for which it returns non-zero.  A moved-aside
 * "<final>.old.<pid>" is put back when <final> is missing, else removed.
 * *removed_p (may be NULL) counts what was removed or put back.  A missing
 * dir is not an error.
 */
svp_status_t svp_job_outdir_clean(const char *dir, long                    pid,
                                  int (*own)(int sample, void *arg), void *arg,
                                  int *removed_p);

/*
 * Whether name, a temporary "<final>.tmp.<pid>[@<host>]", may still be
 * being written (its writer a live process of this host other than this
 * one): 1, else 0; -1 when name is no temporary.
 */
int svp_job_outdir_tmp_live(const char *name);

/*
 * Checks that dir (created if missing) takes a new file and a rename, and
 * that its filesystem has room for `bytes` (one sample's outputs).  Logs
 * the path and what is wrong: SVP_ERR_IO.
 */
svp_status_t svp_job_outdir_check(const char *dir, uint64_t bytes);

#endif
