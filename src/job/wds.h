/*
 * WebDataset output (output.format: webdataset): a job's samples packed
 * into tar shards of output.samples_per_shard samples each.
 *
 * Shard J holds the samples [J*P, (J+1)*P) of the job (P =
 * output.samples_per_shard) and is named shard-JJJJJJ.tar whatever the
 * layout or the array: a task of an array is dealt whole shards (task t of
 * n makes the shards J with J mod n = t, job/samples.h), so tasks never
 * write the same shard and a task run again alone finishes exactly its
 * own, with the same bytes as one process's run.  A shard's members:
 *
 *   __index__                  the shard's index (below): first, so that
 *                              a reader finds it in the first 512 bytes;
 *                              webdataset skips a member named __NAME__
 *   then for each sample, in index order:
 *   KEY.json                   the sample's record (sample.json less the
 *                              run's timings and CPU, which vary by run)
 *   KEY.mp4                    the video (output.mp4, with FFmpeg)
 *   KEY.latents.safetensors    the latents
 *   KEY.frame_NNNN.png         the frames (output.frames)
 *
 * (the simulator's samples: KEY.json and KEY.latents.safetensors).  KEY is
 * the sample's name (sample_NNNNNN or its manifest name).  Every header
 * has mode 0644, uid and gid 0, no user or group name and mtime
 * SVP_JOB_WDS_MTIME, and the tar ends right after its end-of-archive
 * blocks, so a shard's bytes depend only on its samples' outputs: not on
 * the layout, the thread count or which rank finished what.
 *
 * The index (JSON): "data_sha256", the SHA-256 of every byte after the
 * index member (from "data_offset" to the end); "bytes", the tar's size;
 * the shard's stats ("samples_count", "successes", "failures"); and per
 * sample its key, index, status, record and each member's name, header
 * and data offsets and size.  Nothing in it varies from run to run:
 * timings are in the job's trace and the listing below.
 *
 * A finished sample waits in output.dir/staging/ as one file, NAME.tar:
 * its members (sample.json, video.mp4, latents.safetensors,
 * frame_NNNN.png) in their shard order, then a member
 * SVP_JOB_WDS_STAGED_SUM with the SHA-256 of their names, sizes and bytes,
 * written as a temporary, flushed once and renamed, as the files format
 * writes a sample's one file.  Rank 0's packer (a thread of its own, so
 * the pipeline does not wait for it) packs each shard of its task once all
 * its samples are staged: the tar through a temporary, flushed and renamed,
 * then it removes the staged files and rewrites the task's listing
 * output.dir/shards.json (shards.shard-1-of-3.json for task 1 of 3): per
 * shard its samples, status (packed, pending), bytes, data_sha256, stats
 * and the seconds its packing took.  A shard is therefore one file: a
 * job of N samples leaves N / P shards and a handful of job files.
 * Resume (pipe/resume.h) counts a staged sample whose checksum holds or a
 * sample of a shard whose tar matches its index as finished; a shard that
 * does not match, or a staged sample cut short or damaged, is named in a
 * warning and made again.
 */
#ifndef SVP_JOB_WDS_H
#define SVP_JOB_WDS_H

#include "common/status.h"
#include "job/lease.h"
#include "job/samples.h"
#include "jobspec/spec.h"

#include <jansson.h>
#include <stddef.h>

/* Every member's modification time: 2000-01-01T00:00:00Z. */
#define SVP_JOB_WDS_MTIME 946684800

/* The folder in output.dir where finished samples wait for their shard. */
#define SVP_JOB_WDS_STAGING "staging"

/*
 * The folder in the staging folder where the staged files of packed shards
 * wait to be used again: a sample staged takes one (a rename) rather than
 * making a file, so a run frees no inode while it runs (ext4 without a
 * journal looks past every recently freed inode on each create: 14 % of
 * the simulator's rate at 100,000 samples; a metadata server makes one
 * rename rather than a create and an unlink).  Rank 0 removes them at a
 * run's start and end.
 */
#define SVP_JOB_WDS_SPARE ".spare"

/* A staged sample's last member: the SHA-256 (hex) of the others. */
#define SVP_JOB_WDS_STAGED_SUM "staged.sha256"

/* The name of the index, a shard's first member. */
#define SVP_JOB_WDS_INDEX "__index__"

/* Shards of a job of n samples, per each (the last may hold fewer). */
static inline int svp_job_wds_shards(int n, int per)
{
    return (n + per - 1) / per;
}

/* The samples of shard j of a job of n, per a shard: [*first_p, *end_p). */
static inline int svp_job_wds_shard_range(int n, int per, int j, int *first_p)
{
    int first = j * per, end = (first + per < n) ? first + per : n;

    *first_p = first;
    return (end > first) ? end - first : 0;
}

/* Shard j's file name with ext (".tar"): "shard-000003.tar". */
void svp_job_wds_shard_name(int j, const char *ext, char *buf, size_t len);

/* The shard number of a file name "shard-000003.tar..." (-1: not one). */
int svp_job_wds_shard_number(const char *name);

/* A sample of a shard to pack: its key and its staged file. */
typedef struct {
    const char *key;
    int         index;
    const char *path;
} svp_job_wds_sample_t;

/* A member of a staged sample: its name in the sample ("video.mp4"), its
 * bytes (malloc'd, NUL-terminated past size). */
typedef struct {
    char  *name;
    char  *data;
    size_t size;
} svp_job_wds_member_t;

/*
 * Staging a finished sample at path (staging/NAME.tar): members added from
 * memory, and the files a stage writes into its scratch folder (created
 * on the first call, beside path; its files need no flush).  commit()
 * writes the staged file whole (a temporary, one fsync, a rename) and
 * frees the handle, as abort() does without writing.
 */
typedef struct svp_job_wds_stage *svp_job_wds_stage_h;

svp_status_t svp_job_wds_stage_begin(const char *path, svp_job_wds_stage_h *h_p);
svp_status_t svp_job_wds_stage_add(svp_job_wds_stage_h h, const char *name,
                                   const void *data, size_t size);
const char  *svp_job_wds_stage_scratch(svp_job_wds_stage_h h);
svp_status_t svp_job_wds_stage_commit(svp_job_wds_stage_h h);
void         svp_job_wds_stage_abort(svp_job_wds_stage_h h);

/*
 * The members of the staged sample at path, in order, once its checksum
 * holds (*v_p: svp_job_wds_members_free).  SVP_ERR_NOT_FOUND: absent;
 * SVP_ERR_BAD_FILE: cut short or damaged, why says which and how.
 */
svp_status_t svp_job_wds_staged_read(const char *path, svp_job_wds_member_t **v_p,
                                     int *n_p, char *why, size_t len);
void         svp_job_wds_members_free(svp_job_wds_member_t *v, int n);

/*
 * The members of the staged sample at path as staged_read gives them, but
 * only sample.json's bytes read (the others' data NULL, their sizes set)
 * and the checksum not checked: for counting a shard's offsets before the
 * bytes are copied (and checked) by staged_read.
 */
svp_status_t svp_job_wds_staged_sizes(const char *path, svp_job_wds_member_t **v_p,
                                      int *n_p, char *why, size_t len);

/*
 * Writes the shard at dir/name (name without ".tar") from its n staged
 * samples, in order: the tar through a temporary, its index first, flushed
 * and renamed once lease (may be NULL) still says the directory is this
 * job's; *cancel (may be NULL) turning non-zero stops it between samples
 * (SVP_ERR_CANCELED, nothing written).  The staged files stay
 * (svp_job_wds_unstage removes them).  frames: add the frame_NNNN.png of each sample.  *index_p (when not NULL;
 * json_decref) receives the index.  SVP_ERR_BAD_FILE when a staged sample
 * is missing, cut short or damaged (why names it; *bad_p, when not NULL,
 * is its position in samples), SVP_ERR_IO when the shard does not write,
 * SVP_ERR_SPEC when the lease is lost.
 */
svp_status_t svp_job_wds_pack(const char *dir, const char *name,
                              const svp_job_wds_sample_t *samples, int n, int frames,
                              svp_job_lease_t *lease, const int *cancel,
                              json_t **index_p, int *bad_p, char *why, size_t len);

/*
 * Sample index's staged file at path read back, checked (its checksum, its
 * record and latents) and described as an index entry with key: "record",
 * "run" and "members" (KEY.json, KEY.mp4, ...) as a shard's (*entry_p:
 * json_decref).  SVP_ERR_NOT_FOUND: absent; SVP_ERR_BAD_FILE: why says.
 */
svp_status_t svp_job_wds_staged_entry(const char *path, const char *key, int index,
                                      json_t **entry_p, char *why, size_t len);

/* Takes the staged files of a packed shard's samples away: into the spare
 * folder (SVP_JOB_WDS_SPARE) beside them, else removed. */
void svp_job_wds_unstage(const svp_job_wds_sample_t *samples, int n);

/* Removes the spare folder of the staging folder staging and its files. */
void svp_job_wds_spares_remove(const char *staging);

/*
 * The index of the shard at path (its first member), read without looking
 * further (*index_p: json_decref).  SVP_ERR_NOT_FOUND: no such file;
 * SVP_ERR_BAD_FILE: it has no index that reads, why says how.
 */
svp_status_t svp_job_wds_shard_index(const char *path, json_t **index_p, char *why,
                                     size_t len);

/*
 * Whether the shard dir/name (without ".tar") is whole: its index reads,
 * the tar's size is the index's, and the SHA-256 of what follows the index
 * is its data_sha256.  SVP_OK with the index in *index_p (the caller
 * json_decref()s it); SVP_ERR_NOT_FOUND: no shard (not packed);
 * SVP_ERR_BAD_FILE: truncated, damaged or unreadable, why says which and
 * how.
 */
svp_status_t svp_job_wds_shard_check(const char *dir, const char *name,
                                     json_t **index_p, char *why, size_t len);

/*
 * Removes the temporaries of task's shards in dir that a killed run left
 * ("shard-000003.tar.tmp.<pid>@<host>"), leaving those whose writer is a
 * live process of this host.  *removed_p counts them.
 */
void svp_job_wds_clean(const char *dir, const svp_job_shard_t *task, int *removed_p);

/* The index's entry of sample index (borrowed), or NULL. */
json_t *svp_job_wds_index_sample(json_t *index, int sample);

/*
 * A run's shards, for a stage that writes output.format webdataset: the
 * stage stages each finished sample (at least latents.safetensors and
 * sample.json) at svp_job_wds_staged_path with svp_job_wds_stage_begin
 * ... commit, then calls svp_job_wds_staged.  Resume asks
 * svp_job_wds_check_sample.  The worker tells the handle its task
 * (svp_job_wds_set_task), and on rank 0 runs the packer from the
 * agreement on what to run (svp_job_wds_packer_start) to the final fence
 * (svp_job_wds_packer_finish).
 *
 * check(arg, i, where, entry, why, len) is the stage's own test of sample
 * i's entry: a packed shard's index entry of it, or one made from its
 * staged file (whose checksum held): its record (sample.json, less timings
 * and cpu for a shard's) under "record", its members' names (KEY.ext)
 * under "members"; `where` names the member or the staged file.  SVP_OK,
 * SVP_ERR_SPEC (made with other parameters), or SVP_ERR_BAD_FILE /
 * SVP_ERR_NOT_FOUND (made again), as check_output.
 *
 * create() keeps spec and list (which must outlive the handle); destroy()
 * ends a packer still running (packing nothing more) and frees the handle.
 */
typedef svp_status_t (*svp_job_wds_check_cb_t)(void *arg, int i, const char *where,
                                               json_t *entry, char *why, size_t len);

/* Whether an index entry lists the member KEY.ext. */
int                         svp_job_wds_entry_has(json_t *entry, const char *ext);
typedef struct svp_job_wds *svp_job_wds_h;

svp_status_t svp_job_wds_create(const svp_spec_t        *spec,
                                const svp_job_samples_t *list,
                                svp_job_wds_check_cb_t check, void *arg,
                                svp_job_wds_h *wds_p);
void         svp_job_wds_destroy(svp_job_wds_h wds);

/* This run's task (svdworker --shard, an array task): its shards. */
void svp_job_wds_set_task(svp_job_wds_h wds, const svp_job_shard_t *task);

/* Where sample i is staged: output.dir/staging/NAME.tar. */
void svp_job_wds_staged_path(svp_job_wds_h wds, int i, char *buf, size_t len);

/* Sample i is staged: wakes this process's packer, if it runs one, when i
 * is the last of its shard. */
void svp_job_wds_staged(svp_job_wds_h wds, int i);

/*
 * Rank 0, once the ranks agreed on the todo samples this run makes
 * (ntodo of them): removes the task's shard temporaries a killed run
 * left, packs the shards whose samples are all staged (a run killed
 * between a shard's last sample and its packing), removes the staged
 * samples of a shard already packed, writes the listing and starts the
 * packer, which packs each shard once its samples are staged, checking
 * lease (may be NULL; it must outlive the packer) before it publishes.
 */
svp_status_t svp_job_wds_packer_start(svp_job_wds_h wds, const int *todo, int ntodo,
                                      svp_job_lease_t *lease);

/*
 * Rank 0, after the final fence (every sample is staged): packs what is
 * left, ends the packer and writes the listing.  *pending_p counts the
 * task's shards still not packed (samples this rank could not see staged).
 * The packer's first error, if any.
 */
svp_status_t svp_job_wds_packer_finish(svp_job_wds_h wds, int *pending_p);

/*
 * Resume's verdict on sample i (as a stage's check_output): its shard is
 * whole, holds this job's shard's samples (and, with output.overwrite,
 * only this job's) and its record passes check; else its staged file
 * reads whole and passes check.
 */
svp_status_t svp_job_wds_check_sample(svp_job_wds_h wds, int i, char *why,
                                      size_t len);

#endif
