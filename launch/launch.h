/*
 * svdlaunch: job spec -> sbatch script.
 *
 * Every value that reaches the script comes from a YAML file a user edits, so
 * every value is validated first and nothing is trusted afterwards:
 *
 *   - values on #SBATCH lines are checked against the narrow character set
 *     Slurm itself accepts for that option (partition names, time formats,
 *     dependency lists, ...).  sbatch parses those lines with its own small
 *     tokenizer, not with a shell, so quoting would not help there; the
 *     character sets contain no blank, quote, '#' or newline.
 *   - values on shell lines (environment values, container image and mounts,
 *     the worker path, the job spec path, --set overrides) are single-quoted.
 *   - a control character (newline included) anywhere is rejected outright:
 *     a newline is the only way to start a second #SBATCH line.
 *
 * Errors name the spec file (with the value's line and column when the file
 * holds it), the key path, what was expected and what was found (with
 * control characters escaped).
 */
#ifndef SVP_LAUNCH_LAUNCH_H
#define SVP_LAUNCH_LAUNCH_H

#include "common/status.h"
#include "jobspec/spec.h"
#include "job/samples.h"

#include <stdio.h>

/*
 * Seconds srun waits after the first task exits before killing the others
 * (srun -W): the job's comm.deadline, rounded up, plus this grace.  Every rank
 * ends with a wait bounded by comm.deadline, so a healthy job has no rank
 * left after that; the grace covers closing output files.
 */
#define SVP_LAUNCH_EXIT_GRACE_S 30

/* How the rendered script names the job spec. */
typedef enum {
    /*
     * spec_ref is absolute: the script works from anywhere on machines that
     * share the file system.  Used for scripts rendered for one submission.
     */
    SVP_LAUNCH_SPEC_ABSOLUTE = 0,
    /*
     * spec_ref is relative to the directory the script lives in (checked-in
     * scripts: "../etc/svd_7gpu.yaml").  The script resolves it at run time
     * against its own location, which under sbatch is recovered from the
     * job's Command field (sbatch runs a spooled copy of the script).
     */
    SVP_LAUNCH_SPEC_SCRIPT_RELATIVE
} svp_launch_spec_ref_t;

typedef struct {
    const char           *spec_ref; /* path of the job spec in the script */
    svp_launch_spec_ref_t spec_ref_kind;
    const char *const    *overrides; /* "key=value" passed on to the worker
                                              as --set, NULL allowed */
    int                   num_overrides;
    const char           *spec_host;   /* with a container: the spec's
                                              absolute host path, mapped
                                              through the mounts for the
                                              worker (NULL: spec_ref, which
                                              must then be absolute) */
    int                   shard_index; /* an independent shard job: the
                                              worker runs --shard
                                              shard_index/shard_count; */
    int                   shard_count; /* 0 or 1: the whole job */
} svp_launch_render_params_t;

/*
 * Checks every cluster.* value (and the few other keys the script uses)
 * against what Slurm and the shell accept.  On failure writes one message
 * into errbuf (when not NULL) and returns SVP_ERR_SPEC.  Logs nothing: the
 * caller decides how to report.
 */
svp_status_t svp_launch_validate(const svp_spec_t *spec, char *errbuf, int errlen);

/*
 * svp_launch_validate() plus everything the job checks before it starts
 * that does not need the cluster: the step assignment (steps divisible by
 * nodes * ranks_per_node) and the sample count.
 */
svp_status_t svp_launch_check(const svp_spec_t *spec, char *errbuf, int errlen);

/*
 * What the job would compute in can be computed: both backends hold
 * bf16/f16 weights, the (f32) dummy model does not, so dtype bf16 or f16
 * with it fails here; the worker refuses it too.  Same error convention as
 * svp_launch_validate().
 */
svp_status_t svp_launch_check_compute(const svp_spec_t *spec, char *errbuf,
                                      int errlen);

/*
 * svp_launch_check() and svp_launch_check_compute() plus what can be
 * checked from the submitting host
 * before a job is queued: model.path is a folder with what the job needs
 * (svdtool check-model's checks, without the image encoder and with the VAE
 * optional when model.conditioning is given), model.conditioning and every
 * video.inputs entry can be read (a folder must hold an image), the
 * sample list parses (video.manifest, with file:line errors) and, for svd,
 * every image it names decodes (the bad ones are named), output.dir
 * is a folder that can be written or created, and cluster.worker can be
 * run (a path, or a name found on PATH).  With cluster.container_image,
 * paths are mapped through cluster.container_mounts and left alone when no
 * mount covers them.  Same error convention as svp_launch_validate(); every
 * failure is an input error (exit status 2).
 */
svp_status_t svp_launch_preflight(const svp_spec_t *spec, char *errbuf, int errlen);

/*
 * The comment line of a rendered script that says where the job's outputs
 * land (output.dir, relative to the job's working directory when relative;
 * in a container, its host path): `svdlaunch status JOBID` reads it.
 */
#define SVP_LAUNCH_OUTPUT_MARK "# svdpipe output.dir: "

/*
 * The output directory of Slurm job jobid ("123", "123_4"): the script
 * `scontrol show job` names as its Command, rendered by svdlaunch, says it
 * (SVP_LAUNCH_OUTPUT_MARK), a relative one joined to the job's WorkDir.
 * Fails with the reason (scontrol missing, the job forgotten by Slurm, a
 * script svdlaunch did not render) in errbuf.
 */
svp_status_t svp_launch_job_output(const char *jobid, char *dir, size_t len,
                                   char *errbuf, int errlen);

/*
 * The job's sample list as this host sees it (svp_job_samples_create):
 * inside a container, the manifest and its absolute image paths are the
 * container's, read here through the mounts, and an image no mount holds is
 * an error naming its line.  The list keeps the paths the worker opens.
 */
svp_status_t svp_launch_samples(const svp_spec_t *spec, char *errbuf, int errlen,
                                svp_job_samples_t **list_p);

/*
 * With cluster.container_image: that the job spec (spec_host, its absolute
 * host path; NULL: not checked) lies under a mount's SRC, and that
 * model.path, model.conditioning, video.manifest, every absolute
 * video.inputs entry, output.dir and cluster.container_workdir lie under a mount's DST (what
 * the worker opens inside the container); model and inputs may also lie
 * below the spec's own folder (relative in the spec: the worker joins them
 * to the spec's folder in the container).  A relative output.dir needs
 * cluster.container_workdir.  Without a container: SVP_OK.  Same error
 * convention as svp_launch_validate().
 */
svp_status_t svp_launch_container_check(const svp_spec_t *spec,
                                        const char *spec_host, char *errbuf,
                                        int errlen);

/*
 * Renders the sbatch script for spec.  On success *script_p is a malloc'ed,
 * NUL-terminated script the caller frees; on failure *script_p is untouched,
 * errbuf holds the reason and the result is SVP_ERR_SPEC (invalid value) or
 * SVP_ERR_NO_MEMORY.  The output depends only on spec and params, so
 * checked-in scripts can be compared byte for byte.
 */
svp_status_t svp_launch_render(const svp_spec_t                 *spec,
                               const svp_launch_render_params_t *params,
                               char *errbuf, int errlen, char **script_p);

/*
 * What Slurm would make of cluster.array beside a job of `samples`
 * samples (0: unknown): a warning into msg, naming Slurm's MaxArraySize
 * when a task id passes the default's largest (1000), or saying how many
 * tasks get no sample when there are more tasks than samples.  Returns 1
 * when there is one, 0 (msg untouched) when not.
 */
int svp_launch_array_warning(const svp_spec_t *spec, int samples, char *msg,
                             size_t len);

/*
 * Parses a Slurm time limit ("minutes", "minutes:seconds",
 * "hours:minutes:seconds", "days-hours", "days-hours:minutes",
 * "days-hours:minutes:seconds", or "UNLIMITED"/"INFINITE" giving -1) into
 * seconds.  Stricter than Slurm in one way: minutes and seconds after a
 * colon must be below 60 and hours after a '-' below 24, so that a typo is
 * not silently read as a different limit.
 */
svp_status_t svp_launch_time_parse(const char *text, long *seconds_p);

/*
 * The path of target relative to directory dir ("../etc/job.yaml").  Both
 * must exist (they are resolved with realpath).  *rel_p is malloc'ed.
 */
svp_status_t svp_launch_relpath(const char *dir, const char *target, char **rel_p);

/*
 * svdlaunch status: done/total, the rate, the ETA and the failed samples of
 * the job whose output directory is dir, across its array tasks, from the
 * task files and outputs the job writes there (launch/status.c).  Text, or
 * one JSON object with as_json.  SVP_ERR_NOT_FOUND when dir does not open,
 * SVP_ERR_BAD_FILE for a damaged task file (errbuf says which).
 */
svp_status_t svp_launch_status(FILE *out, const char *dir, int as_json, char *errbuf,
                               int errlen);

#endif
