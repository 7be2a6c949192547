/*
 * A finished sample staged for its shard as one file (wds.h): its members,
 * in their order in a shard, as an uncompressed tar closed by a member
 * SVP_JOB_WDS_STAGED_SUM that holds the SHA-256 of what precedes it, so
 * that a staged file cut short or damaged is told from a whole one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/wds.h"
#include "job/wds_int.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/file.h"
#include "common/str.h"
#include "common/util.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct svp_job_wds_stage {
    char                 *path;    /* the staged file */
    char                 *scratch; /* the stage's folder, NULL until asked for */
    svp_job_wds_member_t *v;
    int                   n, room;
};

svp_status_t svp_job_wds_stage_begin(const char *path, svp_job_wds_stage_h *h_p)
{
    svp_job_wds_stage_h h = calloc(1, sizeof(*h));
    char               *parent;
    struct stat         sb;
    svp_status_t        status;

    if (h == NULL || (h->path = svp_strdup(path)) == NULL) {
        free(h);
        return SVP_ERR_NO_MEMORY;
    }
    parent = svp_strdup(path);
    if (parent == NULL) {
        svp_job_wds_stage_abort(h);
        return SVP_ERR_NO_MEMORY;
    }
    if (strrchr(parent, '/') != NULL) {
        *strrchr(parent, '/') = '\0';
    }
    /* the staging folder is there but for the first sample of a run */
    status = (stat(parent, &sb) == 0 && S_ISDIR(sb.st_mode))
                 ? SVP_OK
                 : svp_mkdir_p(parent, 0755);
    free(parent);
    if (status != SVP_OK) {
        svp_job_wds_stage_abort(h);
        return status;
    }
    *h_p = h;
    return SVP_OK;
}

const char *svp_job_wds_stage_scratch(svp_job_wds_stage_h h)
{
    size_t n;

    if (h->scratch != NULL) {
        return h->scratch;
    }
    /* NAME.tmp.<tag> beside NAME.tar: a killed run's is removed as any
     * temporary of the sample */
    n = strlen(h->path);
    if (n > 4 && strcmp(h->path + n - 4, ".tar") == 0) {
        n -= 4;
    }
    if (asprintf(&h->scratch, "%.*s.tmp.%s", (int)n, h->path, svp_tmp_tag()) < 0) {
        h->scratch = NULL;
        return NULL;
    }
    (void)svp_rmtree(h->scratch);
    if (mkdir(h->scratch, 0755) != 0) {
        svp_error("cannot create the sample folder %s: %m", h->scratch);
        free(h->scratch);
        h->scratch = NULL;
    }
    return h->scratch;
}

/* Takes data (malloc'd) as member name. */
static svp_status_t svp_job_wds_stage_take(svp_job_wds_stage_h h, const char *name,
                                           char *data, size_t size)
{
    svp_job_wds_member_t *grown;

    if (h->n == h->room) {
        h->room = SVP_MAX(8, 2 * h->room);
        grown   = realloc(h->v, (size_t)h->room * sizeof(*h->v));
        if (grown == NULL) {
            free(data);
            return SVP_ERR_NO_MEMORY;
        }
        h->v = grown;
    }
    h->v[h->n].name = svp_strdup(name);
    h->v[h->n].data = data;
    h->v[h->n].size = size;
    if (h->v[h->n].name == NULL) {
        free(data);
        return SVP_ERR_NO_MEMORY;
    }
    h->n++;
    return SVP_OK;
}

svp_status_t svp_job_wds_stage_add(svp_job_wds_stage_h h, const char *name,
                                   const void *data, size_t size)
{
    char *copy = malloc(size + 1);

    if (copy == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    if (size > 0) {
        memcpy(copy, data, size);
    }
    return svp_job_wds_stage_take(h, name, copy, size);
}

/* A member's place in a shard: the record, the video, the latents, the
 * frames (by number), anything else by name after them. */
static int svp_job_wds_member_rank(const char *name)
{
    if (strcmp(name, "sample.json") == 0) {
        return 0;
    }
    if (strcmp(name, "video.mp4") == 0) {
        return 1;
    }
    if (strcmp(name, "latents.safetensors") == 0) {
        return 2;
    }
    return 3;
}

static int svp_job_wds_member_cmp(const void *a, const void *b)
{
    const svp_job_wds_member_t *x = a, *y = b;
    int rx = svp_job_wds_member_rank(x->name), ry = svp_job_wds_member_rank(y->name);

    return (rx != ry) ? rx - ry : strcmp(x->name, y->name);
}

/* The checksum's share of a member: its name, its size and its bytes. */
static void svp_job_wds_sum_member(svp_sha256_t *sum, const char *name,
                                   const void *data, size_t size)
{
    unsigned char len[8];
    int           b;

    for (b = 0; b < 8; ++b) {
        len[b] = (unsigned char)((uint64_t)size >> (8 * b));
    }
    svp_sha256_update(sum, name, strlen(name) + 1);
    svp_sha256_update(sum, len, sizeof(len));
    svp_sha256_update(sum, data, size);
}

/* One member with the shard's fixed header (wds.h). */
static int svp_job_wds_stage_put(struct archive *a, struct archive_entry *e,
                                 const char *name, const void *data, size_t size)
{
    svp_job_wds_header(e, name, size);
    if (archive_write_header(a, e) != ARCHIVE_OK) {
        return -1;
    }
    return (size == 0 || archive_write_data(a, data, size) == (la_ssize_t)size) ? 0
                                                                                : -1;
}

/* The files the stage wrote in its folder, as members. */
static svp_status_t svp_job_wds_stage_gather(svp_job_wds_stage_h h)
{
    DIR           *d;
    struct dirent *de;
    char           path[4400], *data;
    size_t         size;
    svp_status_t   status = SVP_OK;

    if (h->scratch == NULL) {
        return SVP_OK;
    }
    d = opendir(h->scratch);
    if (d == NULL) {
        svp_error("cannot read the sample folder %s: %m", h->scratch);
        return SVP_ERR_IO;
    }
    while (status == SVP_OK && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", h->scratch, de->d_name);
        status = svp_file_read_all(path, &data, &size);
        if (status != SVP_OK) {
            svp_error("cannot read %s: %s", path, svp_status_string(status));
            break;
        }
        status = svp_job_wds_stage_take(h, de->d_name, data, size);
    }
    closedir(d);
    return status;
}

/*
 * This process's look into a staging folder's spares (SVP_JOB_WDS_SPARE):
 * the folder open for reading while it gives files, looked at again some
 * samples after it gave none.
 */
#define SVP_JOB_WDS_SPARE_RETRY 64

static struct {
    pthread_mutex_t lock;
    DIR            *d;
    char            dir[4400];
    int             misses;
} svp_job_wds_spares = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Renames a spare of the staging folder of path (a staged file's) to tmp:
 * 1 done, 0 none to take (tmp is then made anew). */
static int svp_job_wds_spare_take(const char *path, const char *tmp)
{
    char           dir[4400], spare[8800];
    struct dirent *de;
    int            got = 0;

    svp_job_wds_spare_path(path, dir, sizeof(dir), spare, sizeof(spare));
    pthread_mutex_lock(&svp_job_wds_spares.lock);
    if (strcmp(svp_job_wds_spares.dir, dir) != 0) {
        if (svp_job_wds_spares.d != NULL) {
            closedir(svp_job_wds_spares.d);
            svp_job_wds_spares.d = NULL;
        }
        snprintf(svp_job_wds_spares.dir, sizeof(svp_job_wds_spares.dir), "%s", dir);
        svp_job_wds_spares.misses = 0;
    }
    if (svp_job_wds_spares.d == NULL && svp_job_wds_spares.misses-- <= 0) {
        svp_job_wds_spares.d = opendir(dir);
    }
    while (svp_job_wds_spares.d != NULL && !got &&
           (de = readdir(svp_job_wds_spares.d)) != NULL) {
        if (de->d_name[0] == '.') {
            continue;
        }
        snprintf(spare, sizeof(spare), "%s/%s", dir, de->d_name);
        /* another process may have taken it first */
        got = (rename(spare, tmp) == 0);
    }
    if (svp_job_wds_spares.d != NULL && !got) {
        closedir(svp_job_wds_spares.d);
        svp_job_wds_spares.d      = NULL;
        svp_job_wds_spares.misses = SVP_JOB_WDS_SPARE_RETRY;
    }
    pthread_mutex_unlock(&svp_job_wds_spares.lock);
    return got;
}

svp_status_t svp_job_wds_stage_commit(svp_job_wds_stage_h h)
{
    struct archive       *a = NULL;
    struct archive_entry *e = NULL;
    svp_sha256_t          sum;
    char                  tmp[4400], hex[65];
    svp_status_t          status;
    int                   fd = -1, k;

    status = svp_job_wds_stage_gather(h);
    if (status != SVP_OK) {
        goto out;
    }
    qsort(h->v, (size_t)h->n, sizeof(*h->v), svp_job_wds_member_cmp);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%s", h->path, svp_tmp_tag());
    (void)svp_job_wds_spare_take(h->path, tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        svp_error("cannot create %s: %m", tmp);
        status = SVP_ERR_IO;
        goto out;
    }
    a = archive_write_new();
    e = archive_entry_new();
    if (a == NULL || e == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        archive_write_add_filter_none(a) != ARCHIVE_OK ||
        archive_write_open_fd(a, fd) != ARCHIVE_OK) {
        svp_error("cannot write %s: %s", tmp, archive_error_string(a));
        status = SVP_ERR_IO;
        goto out;
    }
    svp_sha256_init(&sum);
    for (k = 0; k < h->n && status == SVP_OK; ++k) {
        svp_job_wds_sum_member(&sum, h->v[k].name, h->v[k].data, h->v[k].size);
        if (svp_job_wds_stage_put(a, e, h->v[k].name, h->v[k].data, h->v[k].size) !=
            0) {
            svp_error("cannot write %s: member %s: %s", tmp, h->v[k].name,
                      archive_error_string(a));
            status = SVP_ERR_IO;
        }
    }
    svp_sha256_final(&sum, hex);
    if (status == SVP_OK &&
        (svp_job_wds_stage_put(a, e, SVP_JOB_WDS_STAGED_SUM, hex, 64) != 0 ||
         archive_write_close(a) != ARCHIVE_OK)) {
        svp_error("cannot write %s: %s", tmp, archive_error_string(a));
        status = SVP_ERR_IO;
    }
out:
    archive_entry_free(e);
    if (a != NULL) {
        archive_write_free(a);
    }
    /* the one flush of the sample: its staged file is what a resume finds */
    if (fd >= 0 && status == SVP_OK && fsync(fd) != 0) {
        svp_error("fsync of %s failed: %m", tmp);
        status = SVP_ERR_IO;
    }
    if (fd >= 0 && close(fd) != 0 && status == SVP_OK) {
        svp_error("close of %s failed: %m", tmp);
        status = SVP_ERR_IO;
    }
    if (fd >= 0 && status == SVP_OK && rename(tmp, h->path) != 0) {
        svp_error("rename %s -> %s failed: %m", tmp, h->path);
        status = SVP_ERR_IO;
    }
    if (fd >= 0 && status != SVP_OK) {
        unlink(tmp);
    }
    svp_job_wds_stage_abort(h);
    return status;
}

void svp_job_wds_stage_abort(svp_job_wds_stage_h h)
{
    if (h == NULL) {
        return;
    }
    if (h->scratch != NULL && svp_rmtree(h->scratch) != SVP_OK) {
        svp_warn("cannot remove the sample folder %s", h->scratch);
    }
    svp_job_wds_members_free(h->v, h->n);
    free(h->scratch);
    free(h->path);
    free(h);
}

void svp_job_wds_members_free(svp_job_wds_member_t *v, int n)
{
    int k;

    for (k = 0; v != NULL && k < n; ++k) {
        free(v[k].name);
        free(v[k].data);
    }
    free(v);
}

/* Appends a member (taking data, which may be NULL) to *v_p of *n_p. */
static svp_status_t svp_job_wds_member_push(svp_job_wds_member_t **v_p, int *n_p,
                                            int *room_p, const char *name,
                                            char *data, size_t size)
{
    svp_job_wds_member_t *grown;

    if (*n_p == *room_p) {
        *room_p = SVP_MAX(8, 2 * *room_p);
        grown   = realloc(*v_p, (size_t)*room_p * sizeof(**v_p));
        if (grown == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        *v_p = grown;
    }
    (*v_p)[*n_p].name = svp_strdup(name);
    (*v_p)[*n_p].data = data;
    (*v_p)[*n_p].size = size;
    (*n_p)++;
    return SVP_OK;
}

/* staged_read (sizes 0) or staged_sizes (1). */
static svp_status_t svp_job_wds_staged_load(const char *path, int sizes,
                                            svp_job_wds_member_t **v_p, int *n_p,
                                            char *why, size_t len)
{
    struct archive       *a;
    struct archive_entry *e;
    svp_job_wds_member_t *v = NULL;
    svp_sha256_t          sum;
    const char           *name;
    char                  hex[65], *data;
    la_int64_t            size;
    int                   n = 0, room = 0, r, summed = 0;
    struct stat           sb;
    svp_status_t          status = SVP_OK;

    *v_p = NULL;
    *n_p = 0;
    if (stat(path, &sb) != 0) {
        snprintf(why, len, "%s is missing", path);
        return SVP_ERR_NOT_FOUND;
    }
    a = archive_read_new();
    if (a == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, path, 16384) != ARCHIVE_OK) {
        snprintf(why, len, "staged sample %s does not read: %s", path,
                 archive_error_string(a));
        archive_read_free(a);
        return SVP_ERR_BAD_FILE;
    }
    svp_sha256_init(&sum);
    while (status == SVP_OK && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
        name = archive_entry_pathname(e);
        size = archive_entry_size(e);
        if (summed || name == NULL || size < 0) {
            snprintf(why, len, "staged sample %s: a member after its checksum",
                     path);
            status = SVP_ERR_BAD_FILE;
            break;
        }
        if (sizes && strcmp(name, "sample.json") != 0) {
            /* its size alone; its bytes (and the checksum) are read when
             * the shard is written */
            summed |= (strcmp(name, SVP_JOB_WDS_STAGED_SUM) == 0);
            if (!summed) {
                status =
                    svp_job_wds_member_push(&v, &n, &room, name, NULL, (size_t)size);
            }
            continue;
        }
        data = malloc((size_t)size + 1);
        if (data == NULL) {
            status = SVP_ERR_NO_MEMORY;
            break;
        }
        if (size > 0 &&
            archive_read_data(a, data, (size_t)size) != (la_ssize_t)size) {
            snprintf(why, len,
                     "staged sample %s: member %s is cut short or damaged (%s)",
                     path, name,
                     archive_error_string(a) ? archive_error_string(a)
                                             : "short read");
            free(data);
            status = SVP_ERR_BAD_FILE;
            break;
        }
        data[size] = '\0';
        if (strcmp(name, SVP_JOB_WDS_STAGED_SUM) == 0) {
            svp_sha256_final(&sum, hex);
            summed = 1;
            if (size != 64 || memcmp(data, hex, 64) != 0) {
                snprintf(why, len,
                         "staged sample %s: its members' checksum is %s, it "
                         "says %.64s (damaged)",
                         path, hex, data);
                status = SVP_ERR_BAD_FILE;
            }
            free(data);
            continue;
        }
        svp_job_wds_sum_member(&sum, name, data, (size_t)size);
        status = svp_job_wds_member_push(&v, &n, &room, name, data, (size_t)size);
        if (status != SVP_OK) {
            free(data);
        }
    }
    if (status == SVP_OK && r != ARCHIVE_EOF) {
        snprintf(why, len, "staged sample %s is cut short or damaged: %s", path,
                 archive_error_string(a));
        status = SVP_ERR_BAD_FILE;
    }
    if (status == SVP_OK && !summed) {
        snprintf(why, len, "staged sample %s has no checksum (cut short)", path);
        status = SVP_ERR_BAD_FILE;
    }
    archive_read_free(a);
    if (status != SVP_OK) {
        svp_job_wds_members_free(v, n);
        return status;
    }
    *v_p = v;
    *n_p = n;
    return SVP_OK;
}

svp_status_t svp_job_wds_staged_read(const char *path, svp_job_wds_member_t **v_p,
                                     int *n_p, char *why, size_t len)
{
    return svp_job_wds_staged_load(path, 0, v_p, n_p, why, len);
}

svp_status_t svp_job_wds_staged_sizes(const char *path, svp_job_wds_member_t **v_p,
                                      int *n_p, char *why, size_t len)
{
    return svp_job_wds_staged_load(path, 1, v_p, n_p, why, len);
}
