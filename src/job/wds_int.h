/*
 * The WebDataset files' own parts (wds.c, wds_pack.c, wds_run.c,
 * wds_packer.c): the run handle's state and the helpers they share.
 */
#ifndef SVP_JOB_WDS_INT_H
#define SVP_JOB_WDS_INT_H

#include "job/wds.h"

#include <jansson.h>
#include <pthread.h>

/* What the packer knows of one shard of the task. */
typedef struct {
    signed char need;   /* 1: to pack this run (its samples run, or wait staged) */
    signed char packed; /* 1: its tar is there (packed, by this run or before) */
    json_int_t  bytes, samples_count;
    char        sha256[65];
    double      seconds; /* its packing, by this run; < 0: not this run's */
} svp_job_wds_shard_t;

struct svp_job_wds {
    const svp_spec_t        *spec;
    const svp_job_samples_t *list;
    svp_job_wds_check_cb_t   check;
    void                    *arg;
    svp_job_shard_t          task;
    int                      per, nshards; /* shards of the job */
    /* per shard what resume found: 0 not looked at, 1 whole, -1 absent,
     * damaged or not this job's (its index is read, checked and let go:
     * a job's indexes hold every sample's record) */
    signed char *state;
    /* per sample of the job: its packed record passed check (looked at
     * with its shard, so each is checked once) */
    unsigned char *passed;
    /* the packer (rank 0): its shards, and the thread's hand-over */
    svp_job_wds_shard_t *shards;
    svp_job_lease_t     *lease;
    pthread_t            thread;
    pthread_mutex_t      lock;
    pthread_cond_t       cond;
    int                  running, stop, kick;
    int                  quit;   /* stop at once, mid-shard (atomic) */
    svp_status_t         failed; /* the packer's first error */
};

/* A staged member's extension in a shard: KEY.mp4 for the video, else
 * KEY.<its name in the sample>. */
const char *svp_job_wds_member_ext(const char *name);

/*
 * The sample's record from its staged sample.json, into entry: "record"
 * less what varies from run to run (timings, cpu); the record's text for
 * the shard in *text_p (malloc'd) when not NULL.
 */
svp_status_t svp_job_wds_record(const char *path, const svp_job_wds_member_t *m,
                                json_t *entry, char **text_p, char *why, size_t len);

/* Whether a staged sample's members start with its record and hold its
 * latents (what every stage stages). */
svp_status_t svp_job_wds_staged_whole(const char                 *path,
                                      const svp_job_wds_member_t *v, int n,
                                      char *why, size_t len);

/* A member's header as every shard and staged file has it (wds.h): name,
 * size, mode 0644, uid and gid 0, mtime SVP_JOB_WDS_MTIME. */
struct archive_entry;
void svp_job_wds_header(struct archive_entry *e, const char *name, size_t size);

/* The spare folder beside the staged file at path (dir: "DIR/.spare") and
 * the spare of that file (spare: "DIR/.spare/NAME"). */
void svp_job_wds_spare_path(const char *path, char *dir, size_t dlen, char *spare,
                            size_t slen);

/* Where the index's text holds its sha256's 64 digits (-1: nowhere). */
long svp_job_wds_digest_at(const char *text, size_t size);

/* Whether shard j is this task's. */
int svp_job_wds_mine(svp_job_wds_h w, int j);

/* The samples of shard j: their keys and staged files (malloc'd:
 * svp_job_wds_list_free), their count in *m_p. */
svp_job_wds_sample_t *svp_job_wds_list(svp_job_wds_h w, int j, int *m_p);
void                  svp_job_wds_list_free(svp_job_wds_sample_t *v, int m);

/* Whether sample k of v is staged (its file is renamed into place whole). */
int svp_job_wds_is_staged(const svp_job_wds_sample_t *v, int k);

/* Whether shard j is whole and this job's (looked at once per run). */
int svp_job_wds_whole(svp_job_wds_h w, int j);

/* Ends the packer at once, if it runs (destroy). */
void svp_job_wds_packer_end(svp_job_wds_h w);

#endif
