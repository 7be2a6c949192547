/*
 * WebDataset shards: their geometry, packing, check and listing (wds.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/wds.h"
#include "job/outdir.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/sha256.h"
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

int svp_job_wds_shard_count(const svp_job_shard_t *task, int n, int per)
{
    int m = svp_job_shard_size(task, n);

    return (m + per - 1) / per;
}

int svp_job_wds_shard_of(const svp_job_shard_t *task, int per, int i)
{
    /* sample i is the (i div count)-th of its task's list */
    return (i / task->count) / per;
}

int svp_job_wds_shard_samples(const svp_job_shard_t *task, int n, int per, int j,
                              int *samples)
{
    int m = svp_job_shard_size(task, n), p, k = 0;

    for (p = j * per; p < m && p < (j + 1) * per; ++p) {
        samples[k++] = p * task->count + task->index;
    }
    return k;
}

void svp_job_wds_shard_name(const svp_job_shard_t *task, int j, const char *ext,
                            char *buf, size_t len)
{
    if (task->count > 1) {
        snprintf(buf, len, "shard-%d-of-%d-%06d%s", task->index, task->count, j,
                 ext);
    } else {
        snprintf(buf, len, "shard-%06d%s", j, ext);
    }
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
    if (size > 0 && archive_write_data(a, data, size) != (la_ssize_t)size) {
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
 * less what varies from run to run (timings, cpu), which go into "run";
 * the record's text for the shard in *text_p (malloc'd) when not NULL.
 */
static svp_status_t svp_job_wds_record(const char                 *path,
                                       const svp_job_wds_member_t *m, json_t *entry,
                                       char **text_p, char *why, size_t len)
{
    json_error_t jerr;
    json_t      *root, *run;
    char        *text;

    root = json_loadb(m->data, m->size, JSON_DECODE_ANY, &jerr);
    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(why, len, "staged sample %s: its sample.json does not read: %s",
                 path, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    run = json_object();
    json_object_set(run, "timings", json_object_get(root, "timings"));
    json_object_set(run, "cpu", json_object_get(root, "cpu"));
    json_object_del(root, "timings");
    json_object_del(root, "cpu");
    json_object_set(entry, "record", root);
    json_object_set_new(entry, "run", run);
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

/* The members of one sample, in their fixed order, and its index entry. */
static svp_status_t svp_job_wds_add_sample(struct archive             *a,
                                           struct archive_entry       *e,
                                           const svp_job_wds_sample_t *s, int frames,
                                           json_t *entry, char *why, size_t len)
{
    json_t               *members = json_array();
    svp_job_wds_member_t *v;
    char                  name[512], *text = NULL;
    int                   n, k;
    svp_status_t          status;

    json_object_set_new(entry, "members", members);
    status = svp_job_wds_staged_read(s->path, &v, &n, why, len);
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

/* The tar at path (through a temporary beside it); the index's samples. */
static svp_status_t svp_job_wds_write_tar(const char                 *path,
                                          const svp_job_wds_sample_t *samples, int n,
                                          int frames, json_t *list, int *bad_p,
                                          char *why, size_t len)
{
    struct archive       *a;
    struct archive_entry *e;
    char                  tmp[4400];
    json_t               *entry;
    svp_status_t          status = SVP_OK;
    int                   fd, i;

    snprintf(tmp, sizeof(tmp), "%s.tmp.%s", path, svp_tmp_tag());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(why, len, "cannot create %s: %s", tmp, strerror(errno));
        return SVP_ERR_IO;
    }
    a = archive_write_new();
    e = archive_entry_new();
    if (a == NULL || e == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    /* ustar headers, with a pax header only for a name past 100 bytes */
    if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        archive_write_add_filter_none(a) != ARCHIVE_OK ||
        archive_write_open_fd(a, fd) != ARCHIVE_OK) {
        snprintf(why, len, "cannot write %s: %s", tmp, archive_error_string(a));
        status = SVP_ERR_IO;
        goto out;
    }
    for (i = 0; i < n && status == SVP_OK; ++i) {
        entry = json_pack("{s:s, s:i, s:s}", "key", samples[i].key, "sample",
                          samples[i].index, "status", "done");
        json_array_append_new(list, entry);
        status = svp_job_wds_add_sample(a, e, &samples[i], frames, entry, why, len);
        if (status == SVP_ERR_BAD_FILE && bad_p != NULL) {
            *bad_p = i;
        }
    }
    if (status == SVP_OK && archive_write_close(a) != ARCHIVE_OK) {
        snprintf(why, len, "cannot write %s: %s", tmp, archive_error_string(a));
        status = SVP_ERR_IO;
    }
out:
    archive_entry_free(e);
    archive_write_free(a);
    if (status == SVP_OK && fsync(fd) != 0) {
        snprintf(why, len, "cannot write %s: %s", tmp, strerror(errno));
        status = SVP_ERR_IO;
    }
    if (close(fd) != 0 && status == SVP_OK) {
        snprintf(why, len, "cannot write %s: %s", tmp, strerror(errno));
        status = SVP_ERR_IO;
    }
    if (status == SVP_OK && rename(tmp, path) != 0) {
        snprintf(why, len, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        status = SVP_ERR_IO;
    }
    if (status != SVP_OK) {
        unlink(tmp);
    }
    return status;
}

/* A JSON document at path, atomically. */
static svp_status_t svp_job_wds_write_json(const char *path, json_t *o)
{
    char *text =
        json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    char        *buf;
    svp_status_t status;

    if (text == NULL || asprintf(&buf, "%s\n", text) < 0) {
        free(text);
        return SVP_ERR_NO_MEMORY;
    }
    free(text);
    status = svp_file_write_atomic(path, buf, strlen(buf));
    free(buf);
    return status;
}

svp_status_t svp_job_wds_pack(const char *dir, const char *name,
                              const svp_job_wds_sample_t *samples, int n, int frames,
                              int *bad_p, char *why, size_t len)
{
    char         path[4200], hash[65];
    double       t0   = svp_clock_now();
    json_t      *list = json_array(), *index = NULL, *stats = NULL, *ids;
    int          i;
    struct stat  sb;
    svp_status_t status;

    if (list == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    snprintf(path, sizeof(path), "%s/%s.tar", dir, name);
    status = svp_job_wds_write_tar(path, samples, n, frames, list, bad_p, why, len);
    if (status != SVP_OK) {
        json_decref(list);
        return status;
    }
    if (stat(path, &sb) != 0 || svp_sha256_file(path, hash) != SVP_OK) {
        snprintf(why, len, "%s does not read back", path);
        json_decref(list);
        return SVP_ERR_IO;
    }
    index = json_pack("{s:s, s:I, s:s, s:i, s:o}", "shard", name, "bytes",
                      (json_int_t)sb.st_size, "sha256", hash, "samples_count", n,
                      "samples", list);
    ids   = json_array();
    for (i = 0; ids != NULL && i < n; ++i) {
        json_array_append_new(ids, json_integer(samples[i].index));
    }
    /* the samples' indices too: svdlaunch status reads these small files,
     * not the indexes */
    stats = json_pack("{s:s, s:i, s:i, s:i, s:I, s:o, s:o}", "shard", name, "count",
                      n, "successes", n, "failed_to_pack", 0, "bytes",
                      (json_int_t)sb.st_size, "seconds",
                      json_real(round((svp_clock_now() - t0) * 1e3) / 1e3),
                      "samples", ids);
    if (index == NULL || stats == NULL) {
        json_decref(index);
        json_decref(stats);
        return SVP_ERR_NO_MEMORY;
    }
    /* the index last: a shard counts as packed only once it is there */
    snprintf(path, sizeof(path), "%s/%s.stats.json", dir, name);
    status = svp_job_wds_write_json(path, stats);
    if (status == SVP_OK) {
        snprintf(path, sizeof(path), "%s/%s.index.json", dir, name);
        status = svp_job_wds_write_json(path, index);
    }
    if (status != SVP_OK) {
        snprintf(why, len, "cannot write %s", path);
    }
    json_decref(index);
    json_decref(stats);
    return status;
}

void svp_job_wds_unstage(const svp_job_wds_sample_t *samples, int n)
{
    int i;

    for (i = 0; i < n; ++i) {
        /* another rank packing the same shard may have been first */
        (void)unlink(samples[i].path);
    }
}

svp_status_t svp_job_wds_shard_check(const char *dir, const char *name,
                                     json_t **index_p, char *why, size_t len)
{
    char         path[4200], tar[4200], hash[65];
    json_error_t jerr;
    json_t      *index;
    struct stat  sb;
    const char  *want;
    json_int_t   bytes;

    *index_p = NULL;
    snprintf(path, sizeof(path), "%s/%s.index.json", dir, name);
    snprintf(tar, sizeof(tar), "%s/%s.tar", dir, name);
    if (stat(path, &sb) != 0) {
        return SVP_ERR_NOT_FOUND;
    }
    index = json_load_file(path, 0, &jerr);
    if (!json_is_object(index)) {
        json_decref(index);
        snprintf(why, len, "shard index %s does not read: %s", path, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    bytes = json_integer_value(json_object_get(index, "bytes"));
    want  = json_string_value(json_object_get(index, "sha256"));
    if (stat(tar, &sb) != 0) {
        snprintf(why, len, "shard %s is missing (its index %s is there)", tar, path);
        goto bad;
    }
    if ((json_int_t)sb.st_size != bytes) {
        snprintf(why, len,
                 "shard %s is %" PRId64 " bytes, its index says %" PRId64
                 " (truncated or damaged)",
                 tar, (int64_t)sb.st_size, (int64_t)bytes);
        goto bad;
    }
    if (want == NULL || svp_sha256_file(tar, hash) != SVP_OK ||
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

/* Whether name is one of task's shard files: its prefix, then digits. */
static int svp_job_wds_is_task_file(const char *name, const svp_job_shard_t *task)
{
    char        prefix[64];
    size_t      n;
    const char *p;

    svp_job_wds_shard_name(task, 0, "", prefix, sizeof(prefix));
    n = strlen(prefix) - 6; /* less the shard's 6 digits */
    if (strncmp(name, prefix, n) != 0) {
        return 0;
    }
    for (p = name + n; *p >= '0' && *p <= '9'; ++p) {
    }
    return p - (name + n) >= 6 && *p == '.';
}

void svp_job_wds_clean(const char *dir, const svp_job_shard_t *task, int *removed_p)
{
    DIR           *d = opendir(dir);
    struct dirent *de;
    char           path[4400];
    int            live;

    *removed_p = 0;
    if (d == NULL) {
        return;
    }
    while ((de = readdir(d)) != NULL) {
        if (!svp_job_wds_is_task_file(de->d_name, task)) {
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

svp_status_t svp_job_wds_write_listing(const char *dir, const svp_job_shard_t *task,
                                       int n, int per, int *pending_p)
{
    char         name[256], path[4200], file[256];
    json_error_t jerr;
    json_t      *o, *shards, *s, *index;
    int          j, count = svp_job_wds_shard_count(task, n, per), first, *idx;
    struct stat  sb;
    svp_status_t status;

    *pending_p = 0;
    idx        = malloc(((size_t)per + 1) * sizeof(*idx));
    shards     = json_array();
    o = json_pack("{s:i, s:i, s:o}", "samples_per_shard", per, "shards_count", count,
                  "shards", shards);
    if (idx == NULL || o == NULL) {
        free(idx);
        json_decref(o);
        return SVP_ERR_NO_MEMORY;
    }
    for (j = 0; j < count; ++j) {
        int m = svp_job_wds_shard_samples(task, n, per, j, idx);

        first = (m > 0) ? idx[0] : -1;
        svp_job_wds_shard_name(task, j, ".tar", name, sizeof(name));
        s = json_pack("{s:s, s:i, s:i, s:i}", "shard", name, "samples_count", m,
                      "first_sample", first, "last_sample",
                      (m > 0) ? idx[m - 1] : -1);
        /* the index's figures, not the tar's: no read of a shard here */
        svp_job_wds_shard_name(task, j, ".index.json", file, sizeof(file));
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        index = (stat(path, &sb) == 0) ? json_load_file(path, 0, &jerr) : NULL;
        json_object_set_new(s, "status",
                            json_string(index != NULL ? "packed" : "pending"));
        *pending_p += (index == NULL);
        if (index != NULL) {
            json_object_set(s, "bytes", json_object_get(index, "bytes"));
            json_object_set(s, "sha256", json_object_get(index, "sha256"));
            json_decref(index);
        }
        json_array_append_new(shards, s);
    }
    free(idx);
    svp_job_shard_file(task, "shards", ".json", file, (int)sizeof(file));
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    status = svp_job_wds_write_json(path, o);
    json_decref(o);
    return status;
}
