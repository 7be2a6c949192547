/*
 * WebDataset output (output.format: webdataset): a job's samples packed
 * into tar shards of output.samples_per_shard samples each.
 *
 * Shards follow the job's slicing: task t of n (job/samples.h) makes the
 * samples t, t + n, t + 2n, ...; its shard j holds positions [j*S,
 * (j+1)*S) of that list (S = output.samples_per_shard).  So array tasks
 * never write the same shard, and a task run again alone finishes exactly
 * its own.  A shard's members, for each sample in the order of the list:
 *
 *   KEY.json                   the sample's record (sample.json less the
 *                              run's timings and CPU, which vary by run)
 *   KEY.mp4                    the video (output.mp4, with FFmpeg)
 *   KEY.latents.safetensors    the latents
 *   KEY.frame_NNNN.png         the frames (output.frames)
 *
 * (the simulator's samples: KEY.json and KEY.latents.safetensors).  KEY is
 * the sample's name (sample_NNNNNN or its manifest name).  Every
 * header has mode 0644, uid and gid 0, no user or group name and mtime
 * SVP_JOB_WDS_MTIME, so a shard's bytes depend only on its samples' outputs:
 * not on the layout, the thread count or which rank finished what.
 *
 * A finished sample waits in output.dir/staging/ as one file, NAME.tar:
 * its members (sample.json, video.mp4, latents.safetensors,
 * frame_NNNN.png) in their shard order, then a member
 * SVP_JOB_WDS_STAGED_SUM with the SHA-256 of their names, sizes and bytes,
 * written as a temporary, flushed once and renamed, as the files format
 * writes a sample's one file.  The rank that finishes a shard's last
 * sample packs it, copying the staged samples' members: the tar (a
 * temporary, then a rename), its stats
 * NAME.stats.json (count, failures, bytes, seconds, the samples' indices),
 * and last its index
 * NAME.index.json (the tar's size and SHA-256; per sample its key, index,
 * status, record, the run's timings and each member's name, offset and
 * size), which marks the shard packed; then it removes the staged
 * files.  Resume (pipe/resume.h) counts a staged sample whose checksum
 * holds or a sample of a shard whose tar matches its index as finished; a
 * shard that does not match, or a staged sample cut short or damaged, is
 * named in a warning and made again.
 */
#ifndef SVP_JOB_WDS_H
#define SVP_JOB_WDS_H

#include "common/status.h"
#include "job/samples.h"
#include "jobspec/spec.h"

#include <jansson.h>
#include <stddef.h>

/* Every member's modification time: 2000-01-01T00:00:00Z. */
#define SVP_JOB_WDS_MTIME 946684800

/* The folder in output.dir where finished samples wait for their shard. */
#define SVP_JOB_WDS_STAGING "staging"

/* A staged sample's last member: the SHA-256 (hex) of the others. */
#define SVP_JOB_WDS_STAGED_SUM "staged.sha256"

/* Shards of task's samples of a job of n, per samples each. */
int svp_job_wds_shard_count(const svp_job_shard_t *task, int n, int per);

/* The shard (of its task) that holds sample i. */
int svp_job_wds_shard_of(const svp_job_shard_t *task, int per, int i);

/*
 * The samples of task's shard j (a job of n): their count, and in
 * samples[] (room for per) their indices in order.
 */
int svp_job_wds_shard_samples(const svp_job_shard_t *task, int n, int per, int j,
                              int *samples);

/*
 * The file name of task's shard j with ext (".tar", ".index.json",
 * ".stats.json"): "shard-000003.tar", or "shard-1-of-3-000003.tar" for
 * task 1 of 3.
 */
void svp_job_wds_shard_name(const svp_job_shard_t *task, int j, const char *ext,
                            char *buf, size_t len);

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
 * Writes the shard at dir/name (name without ".tar") from its n staged
 * samples, in order, then its index and stats, each atomically.  The
 * staged files stay (svp_job_wds_unstage removes them).  frames: add the
 * frame_NNNN.png of each sample.  SVP_ERR_BAD_FILE when a staged sample
 * is missing, cut short or damaged (why names it; *bad_p, when not NULL,
 * is its position in samples), SVP_ERR_IO when the shard does not write.
 */
svp_status_t svp_job_wds_pack(const char *dir, const char *name,
                              const svp_job_wds_sample_t *samples, int n, int frames,
                              int *bad_p, char *why, size_t len);

/*
 * Sample index's staged file at path read back, checked (its checksum, its
 * record and latents) and described as an index entry with key: "record",
 * "run" and "members" (KEY.json, KEY.mp4, ...) as a shard's (*entry_p:
 * json_decref).  SVP_ERR_NOT_FOUND: absent; SVP_ERR_BAD_FILE: why says.
 */
svp_status_t svp_job_wds_staged_entry(const char *path, const char *key, int index,
                                      json_t **entry_p, char *why, size_t len);

/* Removes the staged files of a packed shard's samples. */
void svp_job_wds_unstage(const svp_job_wds_sample_t *samples, int n);

/*
 * Whether the shard dir/name (without ".tar") is whole: its index reads,
 * and the tar's size and SHA-256 are the index's.  SVP_OK with the index
 * in *index_p (the caller json_decref()s it); SVP_ERR_NOT_FOUND: no index
 * (not packed); SVP_ERR_BAD_FILE: truncated, damaged or unreadable, why
 * says which and how.
 */
svp_status_t svp_job_wds_shard_check(const char *dir, const char *name,
                                     json_t **index_p, char *why, size_t len);

/*
 * Removes the temporaries of task's shards, indexes and stats in dir that
 * a killed run left ("shard-000003.tar.tmp.<pid>@<host>"), leaving those
 * whose writer is a live process of this host.  *removed_p counts them.
 */
void svp_job_wds_clean(const char *dir, const svp_job_shard_t *task, int *removed_p);

/* The index's entry of sample index (borrowed), or NULL. */
json_t *svp_job_wds_index_sample(json_t *index, int sample);

/*
 * Writes the job's listing dir/shards.json (shards.shard-1-of-3.json for
 * task 1 of 3): each of task's shards with its samples, and, where packed,
 * its bytes and SHA-256 from its index.  Atomic.  *pending_p counts the
 * shards not packed.
 */
svp_status_t svp_job_wds_write_listing(const char *dir, const svp_job_shard_t *task,
                                       int n, int per, int *pending_p);

/*
 * A run's shards, for a stage that writes output.format webdataset: the
 * stage stages each finished sample (at least latents.safetensors and
 * sample.json) at svp_job_wds_staged_path with svp_job_wds_stage_begin
 * ... commit, then calls svp_job_wds_staged, which packs the sample's
 * shard once all its samples are staged.  Resume asks
 * svp_job_wds_check_sample.
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
 * frees what the handle read (indexes) and the handle.
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
void svp_job_wds_set_task(svp_job_wds_h wds, int index, int count);

/* Where sample i is staged: output.dir/staging/NAME.tar. */
void svp_job_wds_staged_path(svp_job_wds_h wds, int i, char *buf, size_t len);

/* Sample i is staged: packs its shard when it is the shard's last. */
svp_status_t svp_job_wds_staged(svp_job_wds_h wds, int i);

/*
 * At a run's start: packs each shard whose samples are all staged (a run
 * killed between a shard's last sample and its packing), and removes the
 * staged samples of a shard already packed, for the shards whose last
 * sample mine() says is this rank's.
 */
svp_status_t svp_job_wds_pack_ready(svp_job_wds_h wds,
                                    int (*mine)(int sample, void *arg), void *arg);

/*
 * Resume's verdict on sample i (as a stage's check_output): its shard is
 * whole, holds this job's shard's samples (and, with output.overwrite,
 * only this job's) and its record passes check; else its staged file
 * reads whole and passes check.
 */
svp_status_t svp_job_wds_check_sample(svp_job_wds_h wds, int i, char *why,
                                      size_t len);

#endif
