/*
 * Helpers shared by the launcher's files; not part of its interface.
 */
#ifndef SVP_LAUNCH_LAUNCH_INT_H
#define SVP_LAUNCH_LAUNCH_INT_H

#include "launch/launch.h"

#include <stddef.h>

#include "common/errf.h" /* svp_errf: the message into errbuf */

/* Whether s holds a control character (newline, tab, DEL, a C1 control). */
int svp_launch_has_control(const char *s);

/* Whether s is set: not NULL and not empty. */
int svp_launch_is_set(const char *s);

/* Reads digits into *v; returns the end, or NULL for no digits/overflow. */
const char *svp_launch_digits(const char *s, long *v);

/* The effective values, defaults applied (helpers.c). */
const char *svp_launch_job_name(const svp_spec_t *spec);
const char *svp_launch_mpi(const svp_spec_t *spec);
const char *svp_launch_worker(const svp_spec_t *spec);
int         svp_launch_gpus_per_task(const svp_spec_t *spec); /* 0: no GPU */
long        svp_launch_exit_wait(const svp_spec_t *spec);     /* srun -W */

/*
 * "FILE:LINE:COLUMN" of key ("cluster.env.A", "cluster.srun_args[1]") in
 * spec's file when the file holds it with the value found (NULL: any),
 * else "FILE" (a value from --set or a default), into out (mark.c).
 */
void svp_launch_mark(const svp_spec_t *spec, const char *key, const char *found,
                     char *out, size_t len);

/*
 * The worker as the script names it (worker.c): cluster.worker itself when
 * it is absolute or a bare name (looked up on PATH); a relative path (the
 * spec's own, which the spec reader joined to the spec's folder, or one
 * from --set, the working directory's) made absolute from the working
 * directory, as the job's srun runs elsewhere; in a container, that path
 * through the mounts.  Returns 1, or 0 with what cluster.worker should be
 * in why (no mount shows it, the working directory is unknown).
 */
int svp_launch_worker_path(const svp_spec_t *spec, char *out, size_t len, char *why,
                           size_t whylen);

/* Whether the job runs in cluster.container_image. */
int svp_launch_in_container(const svp_spec_t *spec);

/*
 * The container-side path of host path host, through the last mount of
 * cluster.container_mounts whose SRC holds it, into out; 0 when no mount
 * covers it (container.c).
 */
int svp_launch_container_path(const svp_spec_t *spec, const char *host, char *out,
                              size_t len);

/*
 * The host path of container path path, through the last mount whose DST
 * holds it, into out; 0 when no mount covers it (container.c).
 */
int svp_launch_container_host(const svp_spec_t *spec, const char *path, char *out,
                              size_t len);

/* Whether container path path lies under some mount's DST. */
int svp_launch_container_sees(const svp_spec_t *spec, const char *path);

/* The two Slurm commands whose options a spec adds to (slurm_options.c). */
enum {
    SVP_LAUNCH_SBATCH = 0, /* cluster.sbatch_args: #SBATCH lines */
    SVP_LAUNCH_SRUN   = 1  /* cluster.srun_args: the srun line */
};

/* One option of an argument, as the tool reads it. */
typedef struct {
    const char *name;    /* the long option it is, in full ("nodes" for
                             "-N2", "--nod" never: ambiguous); NULL: not one
                             of Slurm 22.05's (a plugin's, a newer Slurm's) */
    const char *written; /* the name as written ("ntasks-per-n", "N") */
    size_t      len;     /* of written */
    const char *value;   /* what follows '=' or the letter; NULL: none */
} svp_launch_slurm_opt_t;

/*
 * The options of one argument ("--ntasks-per-n=4", "-N2", "-Hk") as tool
 * (SVP_LAUNCH_SBATCH or SVP_LAUNCH_SRUN) reads it: a long option by its
 * name or an unambiguous prefix of it, short options by their letters.
 * Returns how many were written into opts (at most max), or -1 with what
 * the argument should be in why: a prefix of several options (named), an
 * option that takes a value written without one (the tool would take the
 * next argument), a value given to an option that takes none.
 */
int svp_launch_slurm_parse(int tool, const char *arg, svp_launch_slurm_opt_t *opts,
                           int max, char *why, size_t whylen);

/* "sbatch" or "srun". */
const char *svp_launch_slurm_tool_name(int tool);

/*
 * For the tests that hold the table against the installed tools: the long
 * option --name[0..len) stands for, by getopt_long's rule, or NULL; *takes_p
 * is how it takes a value (1 none, 2 required, 3 optional), 0 for no such
 * option, -1 for a prefix of several (named in cands, "--a, --b").  And the
 * table's i-th option of tool, NULL past the last.
 */
const char *svp_launch_slurm_resolve(int tool, const char *name, size_t len,
                                     char *cands, size_t cands_len, int *takes_p);
const char *svp_launch_slurm_option_name(int tool, size_t i);

/* How many tasks a cluster.array value makes ("0-63" 64, "1,3,5-7" 5,
 * "0-15:4" 4; a "%N" throttle is left out); 0 when not set. */
int svp_launch_array_tasks(const svp_spec_t *spec);

/*
 * The host side of a container job, a path check (skipped with
 * --no-path-check): an Apptainer image that is a file must exist (relative:
 * from the spec's folder), and where this host is the cluster's (sbatch on
 * PATH) apptainer or singularity must be on PATH.  SVP_ERR_SPEC with the
 * reason in errbuf.
 */
svp_status_t svp_launch_container_host_check(const svp_spec_t *spec, char *errbuf,
                                             int errlen);

#endif
