/*
 * The samples of a job: what each one is made from, and which of them an
 * array task (a shard) makes.
 *
 * A sample is its parameters: its image (what the file is, not how its path
 * was typed), its seed, fps, motion bucket, noise augmentation, guidance
 * and output name.  Its noise is drawn from its own seed alone
 * (sched/rng.h), so two samples with the same parameters are the same
 * video, and resume recognises an output by what made it
 * (svp_job_samples_params_check).  The index orders the list: it names
 * unnamed outputs (sample_NNNNNN), deals samples to ranks and shards, and is
 * a pure function of the spec and of the files it names (the manifest, the
 * images in the folders, taken in name order).
 *
 * Where the samples come from:
 *   video.manifest  one sample per line of a JSONL file: {"image": PATH,
 *                   "seed": N, "fps": N, "motion_bucket_id": N,
 *                   "noise_aug_strength": X, "min_guidance": X,
 *                   "max_guidance": X, "name": NAME}; only image is
 *                   required (relative to the manifest's folder), anything
 *                   else a line leaves out is the spec's (a line without
 *                   "seed" takes the spec's seed).  Sample i is line i
 *                   (blank lines and lines starting with '#' skipped).
 *   video.inputs    every image x every seed of video.seeds (default: the
 *                   one seed): sample i is image i mod I with seed
 *                   seeds[i div I].  Without video.seeds a samples larger
 *                   than I adds rounds with seed + 1, seed + 2, ...
 *   neither         (model.kind dummy, model.conditioning) `samples` samples
 *                   (4 when 0), sample i with the spec's seed + i.
 * `samples` (when not 0) caps the list: the first `samples` of it are made.
 *
 * Sharding: task i of n (svdworker --shard i/n, or Slurm's array variables)
 * makes the samples whose index is i mod n.  Interleaving keeps the shards
 * within one sample of each other in size for any N and n, and spreads a
 * manifest sorted by cost (image size, a parameter sweep) over every task.
 */
#ifndef SVP_JOB_SAMPLES_H
#define SVP_JOB_SAMPLES_H

#include "common/status.h"
#include "jobspec/spec.h"

#include <stdint.h>

/* The default sample count of a job with neither manifest nor images. */
#define SVP_JOB_SAMPLES_DEFAULT 4

/* One sample's own parameters. */
typedef struct {
    int      image; /* into svp_job_samples_t.images, -1: none */
    int      line;  /* manifest line (1-based), 0: from the spec */
    char    *name;  /* output name, NULL: sample_NNNNNN */
    uint64_t seed;
    int      fps, motion_bucket_id;
    double   noise_aug_strength, min_guidance, max_guidance;
} svp_job_sample_params_t;

typedef struct {
    int                      count;  /* N, after the cap */
    int                      total;  /* before the cap */
    svp_job_sample_params_t *items;  /* count of them; items[i] is sample i */
    char                   **images; /* image paths (owned) */
    int                      nimages;
    int                      nseeds;   /* images x seeds: the seeds; else 0 */
    char                    *manifest; /* the spec's (a copy), or NULL */
} svp_job_samples_t;

/*
 * Makes the sample list of spec (see above).  Every image is checked to
 * exist; decoding them is the caller's (the stage, svdlaunch check).  On an
 * error a message naming file:line and the key (manifest), or the spec key,
 * is written into errbuf and SVP_ERR_SPEC (or SVP_ERR_NOT_FOUND for a
 * missing file) returned; nothing is allocated.  The list is freed with
 * svp_job_samples_destroy() and does not refer to spec afterwards.
 */
svp_status_t svp_job_samples_create(const svp_spec_t *spec, char *errbuf, int errlen,
                                    svp_job_samples_t **list_p);

/*
 * Where a manifest's image path, as the worker will open it, can be looked
 * at from here (svdlaunch check of a job that runs in a container: the
 * manifest's absolute paths are the container's).  fn writes the path to
 * look at into out and returns 1, or returns 0 when nothing here shows it;
 * the error then says "FILE:LINE: key 'image': PATH <unseen>".
 */
typedef struct {
    int (*fn)(void *arg, const char *path, char *out, size_t len);
    void       *arg;
    const char *unseen;
} svp_pipe_path_map_t;

/* svp_job_samples_create, with each manifest image, and each of
 * video.inputs (a file, or a folder read through the map), checked through
 * map (NULL: as written); the list keeps the paths as the worker will open
 * them. */
svp_status_t svp_job_samples_create_mapped(const svp_spec_t          *spec,
                                           const svp_pipe_path_map_t *map,
                                           char *errbuf, int errlen,
                                           svp_job_samples_t **list_p);

void svp_job_samples_destroy(svp_job_samples_t *list);

/* "20 samples: 5 images x 4 seeds", "20 samples from the manifest M". */
void svp_job_samples_describe(const svp_job_samples_t *list, char *buf, int len);

/* Sample i's image path, or NULL. */
const char *svp_job_samples_image(const svp_job_samples_t *list, int i);

/*
 * Why a sample name is svdpipe's own (the run and task records, the lease,
 * the temporaries), or NULL when a manifest may use it.
 */
const char *svp_job_samples_name_reserved(const char *name);

/* Sample i's output name: its manifest name or sample_NNNNNN. */
void svp_job_samples_name(const svp_job_samples_t *list, int i, char *buf, int len);

/*
 * Sample i's own parameters as one line of JSON, keys sorted: image (the
 * path the worker opens), image_path (its resolved path), image_sha256
 * (its bytes' digest), seed, fps, motion_bucket_id, noise_aug_strength,
 * min/max_guidance, name.  What its outputs record, and what a person
 * needs to make that one sample again.  The caller frees it; NULL when out
 * of memory.
 */
char *svp_job_samples_params_json(const svp_job_samples_t *list, int i);

/*
 * Whether an output's recorded parameters (JSON text, as params_json wrote
 * them) are sample i's.  A sample is what determines it: its image by
 * content where the record has its digest and the image reads (a picture
 * replaced under the same path is another image; the same bytes under
 * another path, a moved folder or a container's mount, are the same),
 * else by resolved path; its seed and parameters; its
 * name.  How a path was typed, the manifest line it sits on, and comment
 * or blank lines around it are not part of it.  SVP_OK when they match;
 * else SVP_ERR_SPEC with why naming the first key that differs with both
 * values ("<where> was made with other parameters: seed: 3, this job has
 * 4"), or SVP_ERR_BAD_FILE when the record does not parse.
 */
svp_status_t svp_job_samples_params_check(const svp_job_samples_t *list, int i,
                                          const char *recorded, const char *where,
                                          char *why, size_t len);

/* Task `index` of `count` (count 1: the whole job). */
typedef struct {
    int index, count;
} svp_job_shard_t;

/* Parses "i/n" (0 <= i < n); SVP_ERR_USAGE with a message in errbuf. */
svp_status_t svp_job_shard_parse(const char *s, svp_job_shard_t *shard_p,
                                 char *errbuf, int errlen);

/*
 * The shard of a Slurm array task: SLURM_ARRAY_TASK_ID within the spec's
 * cluster.array range "A-B" (or "A-B%k"): task A + i is shard i of
 * B - A + 1.  The spec's range rather than Slurm's SLURM_ARRAY_TASK_MIN and
 * _MAX, so a task resubmitted alone (sbatch --array=5) is still shard 5.
 * SVP_ERR_NOT_FOUND when the process is no array task; SVP_ERR_USAGE when
 * the range is a list or has a step ("1,3,5", "0-9:2": their tasks are not
 * shards of one count) or the task id lies outside it.
 */
svp_status_t svp_job_shard_from_env(const char *array, svp_job_shard_t *shard_p,
                                    char *errbuf, int errlen);

/* cluster.array is a range svp_job_shard_from_env can shard by; else
 * SVP_ERR_SPEC with the message in errbuf (svdlaunch check says it before
 * the job is queued). */
svp_status_t svp_job_shard_check_array(const char *array, char *errbuf, int errlen);

static inline int svp_job_shard_owns(const svp_job_shard_t *shard, int sample)
{
    return sample % shard->count == shard->index;
}

/* Samples of [0, n) that the shard makes. */
int svp_job_shard_size(const svp_job_shard_t *shard, int n);

/*
 * A run-level file's name for this shard: "run.json" stays so for a job of
 * one shard, and becomes "run.shard-1-of-3.json" for task 1 of 3, so tasks
 * sharing output.dir keep their own.
 */
void svp_job_shard_file(const svp_job_shard_t *shard, const char *base,
                        const char *ext, char *buf, int len);

#endif
