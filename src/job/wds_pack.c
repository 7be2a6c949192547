/*
 * A WebDataset shard packed (wds.h): its samples counted first for the
 * index's offsets, then the index and the samples written through a
 * temporary, the digest written into the index once the rest is.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/wds.h"
#include "job/wds_int.h"
#include "job/lease.h"
#include "job/outdir.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "common/file.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One member: its header and data; its offsets into members (an array). */
static svp_status_t svp_job_wds_add(struct archive *a, struct archive_entry *e,
                                    const char *name, const void *data, size_t size,
                                    json_t *members, char *why, size_t len)
{
    /* the bytes handed on so far end at the last member's data: its
     * header starts at the next 512-byte record */
    la_int64_t header = (archive_filter_bytes(a, 0) + 511) / 512 * 512, offset;

    svp_job_wds_header(e, name, size);
    if (archive_write_header(a, e) != ARCHIVE_OK) {
        snprintf(why, len, "member %s: %s", name, archive_error_string(a));
        return SVP_ERR_IO;
    }
    offset = archive_filter_bytes(a, 0);
    if (data == NULL) {
        /* counted only (a sink that writes nothing): zeros of its size */
        static const char zeros[16384];
        size_t            done, step;

        for (done = 0; done < size; done += step) {
            step = SVP_MIN(size - done, sizeof(zeros));
            if (archive_write_data(a, zeros, step) != (la_ssize_t)step) {
                snprintf(why, len, "member %s: %s", name, archive_error_string(a));
                return SVP_ERR_IO;
            }
        }
    } else if (size > 0 && archive_write_data(a, data, size) != (la_ssize_t)size) {
        snprintf(why, len, "member %s: %s", name, archive_error_string(a));
        return SVP_ERR_IO;
    }
    json_array_append_new(members,
                          json_pack("{s:s, s:I, s:I, s:I}", "name", name, "header",
                                    (json_int_t)header, "offset", (json_int_t)offset,
                                    "size", (json_int_t)size));
    return SVP_OK;
}


/*
 * The members of one sample, in their fixed order, and its index entry;
 * counted only (their sizes and record read, their bytes not: zeros go to
 * a sink that writes nothing) when count.
 */
static svp_status_t svp_job_wds_add_sample(struct archive             *a,
                                           struct archive_entry       *e,
                                           const svp_job_wds_sample_t *s, int frames,
                                           int count, json_t *entry, char *why,
                                           size_t len)
{
    json_t               *members = json_array();
    svp_job_wds_member_t *v;
    char                  name[512], *text = NULL;
    int                   n, k;
    svp_status_t          status;

    json_object_set_new(entry, "members", members);
    status = count ? svp_job_wds_staged_sizes(s->path, &v, &n, why, len)
                   : svp_job_wds_staged_read(s->path, &v, &n, why, len);
    if (status != SVP_OK) {
        return SVP_ERR_BAD_FILE; /* missing too: the shard cannot be packed */
    }
    status = svp_job_wds_staged_whole(s->path, v, n, why, len);
    if (status == SVP_OK) {
        status = svp_job_wds_record(s->path, &v[0], entry, &text, why, len);
    }
    if (status == SVP_OK) {
        snprintf(name, sizeof(name), "%s.json", s->key);
        status = svp_job_wds_add(a, e, name, text, strlen(text), members, why, len);
    }
    free(text);
    for (k = 1; status == SVP_OK && k < n; ++k) {
        if (!frames && strncmp(v[k].name, "frame_", 6) == 0) {
            continue;
        }
        snprintf(name, sizeof(name), "%s.%s", s->key,
                 svp_job_wds_member_ext(v[k].name));
        status =
            svp_job_wds_add(a, e, name, v[k].data, v[k].size, members, why, len);
    }
    svp_job_wds_members_free(v, n);
    return status;
}

/*
 * Where a shard's bytes go: the file (fd, or -1 to count them only), the
 * bytes handed on so far, and their SHA-256 from the start.
 */
typedef struct {
    int          fd;
    la_int64_t   at;
    svp_sha256_t sum;
} svp_job_wds_sink_t;

static la_ssize_t svp_job_wds_sink_write(struct archive *a, void *arg,
                                         const void *buf, size_t n)
{
    svp_job_wds_sink_t *k    = arg;
    const char         *p    = buf;
    size_t              done = 0;
    ssize_t             w;

    while (k->fd >= 0 && done < n) {
        w = write(k->fd, p + done, n - done);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0) {
            archive_set_error(a, errno, "%s", strerror(errno));
            return -1;
        }
        done += (size_t)w;
    }
    if (k->fd >= 0) {
        svp_sha256_update(&k->sum, p, n);
    }
    k->at += (la_int64_t)n;
    return (la_ssize_t)n;
}

/*
 * A tar writer onto sink in the shards' one format: ustar headers, with a
 * pax header only for a name past 100 bytes, and nothing after the
 * end-of-archive blocks (no padding of the last block).
 */
static struct archive *svp_job_wds_tar_open(svp_job_wds_sink_t *k)
{
    struct archive *a = archive_write_new();

    svp_sha256_init(&k->sum);
    k->at = 0;
    if (a != NULL && (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
                      archive_write_add_filter_none(a) != ARCHIVE_OK ||
                      archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
                      archive_write_open(a, k, NULL, svp_job_wds_sink_write, NULL) !=
                          ARCHIVE_OK)) {
        archive_write_free(a);
        a = NULL;
    }
    return a;
}

/*
 * The samples' members onto a (after what it holds), their index entries
 * appended to list; a staged sample that does not read is *bad_p.
 */
static svp_status_t svp_job_wds_write_samples(struct archive             *a,
                                              const svp_job_wds_sample_t *samples,
                                              int n, int frames, int count,
                                              const int *cancel, json_t *list,
                                              int *bad_p, char *why, size_t len)
{
    struct archive_entry *e = archive_entry_new();
    json_t               *entry;
    svp_status_t          status = SVP_OK;
    int                   i;

    if (e == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < n && status == SVP_OK; ++i) {
        if (cancel != NULL && __atomic_load_n(cancel, __ATOMIC_RELAXED)) {
            snprintf(why, len, "packing stopped: the run ends");
            status = SVP_ERR_CANCELED;
            break;
        }
        entry = json_pack("{s:s, s:i, s:s}", "key", samples[i].key, "sample",
                          samples[i].index, "status", "done");
        json_array_append_new(list, entry);
        status = svp_job_wds_add_sample(a, e, &samples[i], frames, count, entry, why,
                                        len);
        if (status == SVP_ERR_BAD_FILE && bad_p != NULL) {
            *bad_p = i;
        }
    }
    if (status == SVP_OK && archive_write_close(a) != ARCHIVE_OK) {
        snprintf(why, len, "%s", archive_error_string(a));
        status = SVP_ERR_IO;
    }
    archive_entry_free(e);
    return status;
}

/* Adds delta to every header and data offset of a list of index entries. */
static void svp_job_wds_shift(json_t *list, la_int64_t delta)
{
    json_t *entry, *m;
    size_t  i, k;

    json_array_foreach(list, i, entry)
    {
        json_array_foreach(json_object_get(entry, "members"), k, m)
        {
            json_object_set_new(m, "header",
                                json_integer(json_integer_value(
                                                 json_object_get(m, "header")) +
                                             delta));
            json_object_set_new(m, "offset",
                                json_integer(json_integer_value(
                                                 json_object_get(m, "offset")) +
                                             delta));
        }
    }
}

/* The digest's place holder: the index is written with it, then sealed. */
static const char svp_job_wds_unsealed[65] =
    "0000000000000000000000000000000000000000000000000000000000000000";

/*
 * The index of a shard whose samples, written after an index of
 * data_offset bytes (its header and padding included), take the entries of
 * rel (offsets from 0) and `tail` bytes: its text for the smallest such
 * data_offset (the offsets' digits grow with it), *offset_p that offset.
 */
static char *svp_job_wds_index_text(const char *name, json_t *rel, int n,
                                    la_int64_t tail, la_int64_t *offset_p,
                                    json_t **index_p)
{
    la_int64_t offset = 512, next;
    json_t    *index  = NULL, *list;
    char      *text   = NULL;
    int        round;

    for (round = 0; round < 16; ++round) {
        list = json_deep_copy(rel);
        svp_job_wds_shift(list, offset);
        json_decref(index);
        free(text);
        index = json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:i, s:o}", "sha256",
                          svp_job_wds_unsealed, "shard", name, "bytes",
                          (json_int_t)offset + (json_int_t)tail, "data_offset",
                          (json_int_t)offset, "samples_count", n, "successes", n,
                          "failures", 0, "samples", list);
        text  = (index != NULL)
                    ? json_dumps(index, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                            JSON_REAL_PRECISION(9))
                    : NULL;
        if (text == NULL) {
            break;
        }
        next = 512 + ((la_int64_t)strlen(text) + 511) / 512 * 512;
        if (next == offset) {
            *offset_p = offset;
            *index_p  = index;
            return text;
        }
        offset = next;
    }
    json_decref(index);
    free(text);
    return NULL;
}

/*
 * The shard's bytes onto fd: its samples counted first (a sink that only
 * counts) for the index's offsets, then the index and the samples written;
 * *index_p the index, *digest_p where its sha256's digits are in the file,
 * *sum_p the SHA-256 of the bytes written (the digits as zeros).
 */
static svp_status_t svp_job_wds_write_shard(int fd, const char *name,
                                            const svp_job_wds_sample_t *samples,
                                            int n, int frames, const int *cancel,
                                            json_t **index_p, long *digest_p,
                                            char sum_p[65], int *bad_p, char *why,
                                            size_t len)
{
    svp_job_wds_sink_t    k   = {.fd = -1};
    struct archive       *a   = svp_job_wds_tar_open(&k);
    struct archive_entry *e   = archive_entry_new();
    json_t               *rel = json_array(), *real = json_array(), *index = NULL;
    json_t               *none   = json_array();
    la_int64_t            offset = 0;
    char                 *text   = NULL;
    svp_status_t          status = SVP_ERR_NO_MEMORY;

    if (a == NULL || e == NULL || rel == NULL || real == NULL || none == NULL) {
        goto out;
    }
    status = svp_job_wds_write_samples(a, samples, n, frames, 1, cancel, rel, bad_p,
                                       why, len);
    archive_write_free(a);
    a = NULL;
    if (status != SVP_OK) {
        goto out;
    }
    text = svp_job_wds_index_text(name, rel, n, k.at, &offset, &index);
    if (text == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    k.fd   = fd;
    a      = svp_job_wds_tar_open(&k);
    status = (a != NULL) ? svp_job_wds_add(a, e, SVP_JOB_WDS_INDEX, text,
                                           strlen(text), none, why, len)
                         : SVP_ERR_NO_MEMORY;
    if (status == SVP_OK) {
        status = svp_job_wds_write_samples(a, samples, n, frames, 0, cancel, real,
                                           bad_p, why, len);
    }
    /* the staged files are renamed into place whole and never rewritten:
     * the second read is the first's */
    if (status == SVP_OK &&
        (k.at != (la_int64_t)json_integer_value(json_object_get(index, "bytes")) ||
         !json_equal(real, json_object_get(index, "samples")))) {
        snprintf(why, len, "its staged samples changed while it was packed");
        status = SVP_ERR_IO;
    }
    if (status == SVP_OK) {
        svp_sha256_final(&k.sum, sum_p);
        *digest_p = 512 + svp_job_wds_digest_at(text, strlen(text));
        *index_p  = index;
        index     = NULL;
    }
out:
    if (a != NULL) {
        archive_write_free(a);
    }
    archive_entry_free(e);
    json_decref(rel);
    json_decref(real);
    json_decref(none);
    json_decref(index);
    free(text);
    return status;
}

svp_status_t svp_job_wds_pack(const char *dir, const char *name,
                              const svp_job_wds_sample_t *samples, int n, int frames,
                              svp_job_lease_t *lease, const int *cancel,
                              json_t **index_p, int *bad_p, char *why, size_t len)
{
    char         path[4200], tmp[4400], sum[65];
    json_t      *index  = NULL;
    long         digest = -1;
    svp_status_t status;
    int          fd;

    snprintf(path, sizeof(path), "%s/%s.tar", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%s", path, svp_tmp_tag());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(why, len, "cannot create %s: %s", tmp, strerror(errno));
        return SVP_ERR_IO;
    }
    status = svp_job_wds_write_shard(fd, name, samples, n, frames, cancel, &index,
                                     &digest, sum, bad_p, why, len);
    if (status == SVP_ERR_IO && strncmp(why, "cannot", 6) != 0) {
        char what[1024];

        snprintf(what, sizeof(what), "%s", why);
        snprintf(why, len, "cannot write %s: %s", tmp, what);
    }
    /* seal it: the digest of the bytes with its own digits as zeros */
    if (status == SVP_OK &&
        (digest < 512 || pwrite(fd, sum, 64, (off_t)digest) != 64 ||
         fsync(fd) != 0)) {
        snprintf(why, len, "cannot write %s: %s", tmp, strerror(errno));
        status = SVP_ERR_IO;
    }
    if (close(fd) != 0 && status == SVP_OK) {
        snprintf(why, len, "cannot write %s: %s", tmp, strerror(errno));
        status = SVP_ERR_IO;
    }
    if (status == SVP_OK && svp_job_lease_guard(lease) != SVP_OK) {
        snprintf(why, len, "not published: output.dir is another job's now");
        status = SVP_ERR_SPEC;
    }
    if (status == SVP_OK && rename(tmp, path) != 0) {
        snprintf(why, len, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        status = SVP_ERR_IO;
    }
    if (status != SVP_OK) {
        unlink(tmp);
        json_decref(index);
        return status;
    }
    json_object_set_new(index, "sha256", json_string(sum));
    if (index_p != NULL) {
        *index_p = index;
    } else {
        json_decref(index);
    }
    return SVP_OK;
}
