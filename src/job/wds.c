/*
 * WebDataset shards: their names, packing (the index first, the data's
 * checksum written into it once the data is written) and check (wds.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/wds.h"
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

void svp_job_wds_shard_name(int j, const char *ext, char *buf, size_t len)
{
    snprintf(buf, len, "shard-%06d%s", j, ext);
}

int svp_job_wds_shard_number(const char *name)
{
    const char *p;
    long        j = 0;

    if (strncmp(name, "shard-", 6) != 0) {
        return -1;
    }
    for (p = name + 6; *p >= '0' && *p <= '9' && j < 100000000; ++p) {
        j = 10 * j + (*p - '0');
    }
    return (p - (name + 6) >= 6 && *p == '.') ? (int)j : -1;
}

/* One member: its header and data; its offsets into members (an array). */
static svp_status_t svp_job_wds_add(struct archive *a, struct archive_entry *e,
                                    const char *name, const void *data, size_t size,
                                    json_t *members, char *why, size_t len)
{
    /* the bytes handed on so far end at the last member's data: its
     * header starts at the next 512-byte record */
    la_int64_t header = (archive_filter_bytes(a, 0) + 511) / 512 * 512, offset;

    archive_entry_clear(e);
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_mtime(e, SVP_JOB_WDS_MTIME, 0);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
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

/* A staged member's extension in a shard: KEY.mp4 for the video, else
 * KEY.<its name in the sample>. */
static const char *svp_job_wds_member_ext(const char *name)
{
    return (strcmp(name, "video.mp4") == 0) ? "mp4" : name;
}

/*
 * The sample's record from its staged sample.json, into entry: "record"
 * less what varies from run to run (timings, cpu);
 * the record's text for the shard in *text_p (malloc'd) when not NULL.
 */
static svp_status_t svp_job_wds_record(const char                 *path,
                                       const svp_job_wds_member_t *m, json_t *entry,
                                       char **text_p, char *why, size_t len)
{
    json_error_t jerr;
    json_t      *root;
    char        *text;

    root = json_loadb(m->data, m->size, JSON_DECODE_ANY, &jerr);
    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(why, len, "staged sample %s: its sample.json does not read: %s",
                 path, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    /* what varies by run stays out of the shard (the trace has it) */
    json_object_del(root, "timings");
    json_object_del(root, "cpu");
    json_object_set(entry, "record", root);
    if (text_p != NULL) {
        text    = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                       JSON_REAL_PRECISION(9));
        *text_p = text;
        if (text == NULL) {
            json_decref(root);
            return SVP_ERR_NO_MEMORY;
        }
    }
    json_decref(root);
    return SVP_OK;
}

/* Whether a staged sample's members start with its record and hold its
 * latents (what every stage stages). */
static svp_status_t svp_job_wds_staged_whole(const char                 *path,
                                             const svp_job_wds_member_t *v, int n,
                                             char *why, size_t len)
{
    int k, latents = 0;

    for (k = 0; k < n; ++k) {
        latents |= (strcmp(v[k].name, "latents.safetensors") == 0);
    }
    if (n == 0 || strcmp(v[0].name, "sample.json") != 0 || !latents) {
        snprintf(why, len, "staged sample %s lacks its %s", path,
                 (n == 0 || strcmp(v[0].name, "sample.json") != 0)
                     ? "sample.json"
                     : "latents.safetensors");
        return SVP_ERR_BAD_FILE;
    }
    return SVP_OK;
}

svp_status_t svp_job_wds_staged_entry(const char *path, const char *key, int index,
                                      json_t **entry_p, char *why, size_t len)
{
    svp_job_wds_member_t *v;
    json_t               *entry, *members;
    char                  name[512];
    int                   n, k;
    svp_status_t          status;

    *entry_p = NULL;
    status   = svp_job_wds_staged_read(path, &v, &n, why, len);
    if (status != SVP_OK) {
        return status;
    }
    status  = svp_job_wds_staged_whole(path, v, n, why, len);
    members = json_array();
    entry = json_pack("{s:s, s:i, s:s, s:o}", "key", key, "sample", index, "status",
                      "staged", "members", members);
    if (entry == NULL) {
        status = SVP_ERR_NO_MEMORY;
    }
    if (status == SVP_OK) {
        status = svp_job_wds_record(path, &v[0], entry, NULL, why, len);
    }
    for (k = 0; status == SVP_OK && k < n; ++k) {
        snprintf(name, sizeof(name), "%s.%s", key,
                 (k == 0) ? "json" : svp_job_wds_member_ext(v[k].name));
        json_array_append_new(members, json_pack("{s:s, s:I}", "name", name, "size",
                                                 (json_int_t)v[k].size));
    }
    svp_job_wds_members_free(v, n);
    if (status != SVP_OK) {
        json_decref(entry);
        return status;
    }
    *entry_p = entry;
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

/* Where the index's text holds its sha256's 64 digits (-1: nowhere). */
static long svp_job_wds_digest_at(const char *text, size_t size)
{
    static const char key[] = "\"sha256\": \"";
    const char       *p     = memchr(text, '"', size < 16 ? size : 16);

    /* the index's first key, so its place is fixed */
    if (p == NULL || size < (size_t)(p - text) + sizeof(key) - 1 + 64 ||
        strncmp(p, key, sizeof(key) - 1) != 0) {
        return -1;
    }
    return (long)(p - text) + (long)sizeof(key) - 1;
}

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

void svp_job_wds_unstage(const svp_job_wds_sample_t *samples, int n)
{
    int i;

    for (i = 0; i < n; ++i) {
        /* another rank packing the same shard may have been first */
        (void)unlink(samples[i].path);
    }
}

/* An index larger than this is no index of ours (1000 samples of 25
 * frames take about 2 MB). */
#define SVP_JOB_WDS_INDEX_MAX (256 << 20)

/* The index of the shard at path, and where its digest's digits are. */
static svp_status_t svp_job_wds_index_read(const char *path, json_t **index_p,
                                           long *digest_p, char *why, size_t len)
{
    struct archive       *a;
    struct archive_entry *e;
    json_error_t          jerr;
    json_t               *index = NULL;
    la_int64_t            size  = -1;
    char                 *text  = NULL;
    struct stat           sb;
    svp_status_t          status = SVP_ERR_BAD_FILE;

    *index_p = NULL;
    if (stat(path, &sb) != 0) {
        return SVP_ERR_NOT_FOUND;
    }
    a = archive_read_new();
    if (a == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, path, 10240) != ARCHIVE_OK ||
        archive_read_next_header(a, &e) != ARCHIVE_OK) {
        snprintf(why, len, "shard %s has no index that reads: %s", path,
                 archive_error_string(a) ? archive_error_string(a) : "no member");
        goto out;
    }
    size = archive_entry_size(e);
    if (strcmp(archive_entry_pathname(e), SVP_JOB_WDS_INDEX) != 0 || size <= 0 ||
        size > SVP_JOB_WDS_INDEX_MAX) {
        snprintf(why, len, "shard %s does not start with its index (%s)", path,
                 SVP_JOB_WDS_INDEX);
        goto out;
    }
    text = malloc((size_t)size);
    if (text == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    if (archive_read_data(a, text, (size_t)size) != (la_ssize_t)size) {
        snprintf(why, len, "shard %s: its index is cut short", path);
        goto out;
    }
    index = json_loadb(text, (size_t)size, 0, &jerr);
    if (!json_is_object(index) ||
        json_integer_value(json_object_get(index, "data_offset")) !=
            512 + (size + 511) / 512 * 512 ||
        svp_job_wds_digest_at(text, (size_t)size) < 0) {
        snprintf(why, len, "shard %s: its index does not read%s%s", path,
                 index ? "" : ": ", index ? "" : jerr.text);
        json_decref(index);
        goto out;
    }
    *index_p  = index;
    *digest_p = 512 + svp_job_wds_digest_at(text, (size_t)size);
    status    = SVP_OK;
out:
    free(text);
    archive_read_free(a);
    return status;
}

svp_status_t svp_job_wds_shard_index(const char *path, json_t **index_p, char *why,
                                     size_t len)
{
    long digest;

    return svp_job_wds_index_read(path, index_p, &digest, why, len);
}

/* The SHA-256 of the file at path with the 64 bytes at digest read as '0'. */
static svp_status_t svp_job_wds_sealed_sum(const char *path, long digest,
                                           char hex[65])
{
    svp_sha256_t sum;
    char         buf[65536];
    ssize_t      r;
    off_t        at = 0, lo, hi;
    int          fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return SVP_ERR_IO;
    }
    svp_sha256_init(&sum);
    while ((r = read(fd, buf, sizeof(buf))) > 0) {
        lo = SVP_MAX(at, (off_t)digest);
        hi = SVP_MIN(at + r, (off_t)digest + 64);
        if (lo < hi) {
            memset(buf + (lo - at), '0', (size_t)(hi - lo));
        }
        svp_sha256_update(&sum, buf, (size_t)r);
        at += r;
    }
    close(fd);
    if (r < 0) {
        return SVP_ERR_IO;
    }
    svp_sha256_final(&sum, hex);
    return SVP_OK;
}

svp_status_t svp_job_wds_shard_check(const char *dir, const char *name,
                                     json_t **index_p, char *why, size_t len)
{
    char         tar[4200], hash[65] = "";
    json_t      *index;
    struct stat  sb;
    const char  *want;
    json_int_t   bytes;
    long         digest = -1;
    svp_status_t status;

    *index_p = NULL;
    snprintf(tar, sizeof(tar), "%s/%s.tar", dir, name);
    status = svp_job_wds_index_read(tar, &index, &digest, why, len);
    if (status != SVP_OK) {
        return status;
    }
    bytes = json_integer_value(json_object_get(index, "bytes"));
    want  = json_string_value(json_object_get(index, "sha256"));
    if (stat(tar, &sb) != 0 || (json_int_t)sb.st_size != bytes) {
        snprintf(why, len,
                 "shard %s is %" PRId64 " bytes, its index says %" PRId64
                 " (truncated or damaged)",
                 tar, (int64_t)sb.st_size, (int64_t)bytes);
        goto bad;
    }
    if (want == NULL || svp_job_wds_sealed_sum(tar, digest, hash) != SVP_OK ||
        strcmp(hash, want) != 0) {
        snprintf(why, len, "shard %s has sha256 %s, its index says %s (damaged)",
                 tar, hash, want ? want : "(none)");
        goto bad;
    }
    *index_p = index;
    return SVP_OK;
bad:
    json_decref(index);
    return SVP_ERR_BAD_FILE;
}

void svp_job_wds_clean(const char *dir, const svp_job_shard_t *task, int *removed_p)
{
    DIR           *d = opendir(dir);
    struct dirent *de;
    char           path[4400];
    int            live, j;

    *removed_p = 0;
    if (d == NULL) {
        return;
    }
    while ((de = readdir(d)) != NULL) {
        /* this task's shards' temporaries: another task's may be a write in
         * progress */
        j = svp_job_wds_shard_number(de->d_name);
        if (j < 0 || j % task->count != task->index ||
            strstr(de->d_name, ".tmp.") == NULL) {
            continue;
        }
        live = svp_job_outdir_tmp_live(de->d_name);
        if (live == 1) {
            svp_warn("left %s/%s: its writer, a process of this host, is running",
                     dir, de->d_name);
        } else if (live == 0) {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            if (unlink(path) == 0) {
                (*removed_p)++;
            }
        }
    }
    closedir(d);
}

int svp_job_wds_entry_has(json_t *entry, const char *ext)
{
    const char *key = json_string_value(json_object_get(entry, "key")), *name;
    size_t      k, n;
    json_t     *m;

    if (key == NULL) {
        return 0;
    }
    n = strlen(key);
    json_array_foreach(json_object_get(entry, "members"), k, m)
    {
        name = json_string_value(json_object_get(m, "name"));
        if (name != NULL && strncmp(name, key, n) == 0 && name[n] == '.' &&
            strcmp(name + n + 1, ext) == 0) {
            return 1;
        }
    }
    return 0;
}

json_t *svp_job_wds_index_sample(json_t *index, int sample)
{
    json_t *list = json_object_get(index, "samples"), *v;
    size_t  k;

    json_array_foreach(list, k, v)
    {
        if (json_integer_value(json_object_get(v, "sample")) == sample) {
            return v;
        }
    }
    return NULL;
}
