/*
 * WebDataset shards: their names, a staged sample's record, the index read
 * back and the check of a shard against it (wds.h); wds_pack.c writes them.
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


/* A staged member's extension in a shard: KEY.mp4 for the video, else
 * KEY.<its name in the sample>. */
const char *svp_job_wds_member_ext(const char *name)
{
    return (strcmp(name, "video.mp4") == 0) ? "mp4" : name;
}

/*
 * The sample's record from its staged sample.json, into entry: "record"
 * less what varies from run to run (timings, cpu);
 * the record's text for the shard in *text_p (malloc'd) when not NULL.
 */
svp_status_t svp_job_wds_record(const char *path, const svp_job_wds_member_t *m,
                                json_t *entry, char **text_p, char *why, size_t len)
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
svp_status_t svp_job_wds_staged_whole(const char                 *path,
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

/* Where the index's text holds its sha256's 64 digits (-1: nowhere). */
long svp_job_wds_digest_at(const char *text, size_t size)
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

void svp_job_wds_header(struct archive_entry *e, const char *name, size_t size)
{
    archive_entry_clear(e);
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_mtime(e, SVP_JOB_WDS_MTIME, 0);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
}

void svp_job_wds_spare_path(const char *path, char *dir, size_t dlen, char *spare,
                            size_t slen)
{
    const char *slash = strrchr(path, '/');
    int         n     = slash ? (int)(slash - path) : 0;

    snprintf(dir, dlen, "%.*s%s%s", n, path, n ? "/" : "", SVP_JOB_WDS_SPARE);
    snprintf(spare, slen, "%s/%s", dir, slash ? slash + 1 : path);
}

void svp_job_wds_unstage(const svp_job_wds_sample_t *samples, int n)
{
    char dir[4400], spare[8800];
    int  i, made = 0;

    for (i = 0; i < n; ++i) {
        svp_job_wds_spare_path(samples[i].path, dir, sizeof(dir), spare,
                               sizeof(spare));
        if (!made) {
            made = (mkdir(dir, 0755) == 0 || errno == EEXIST);
        }
        /* another rank packing the same shard may have been first */
        if (!made || (rename(samples[i].path, spare) != 0 && errno != ENOENT)) {
            (void)unlink(samples[i].path);
        }
    }
}

void svp_job_wds_spares_remove(const char *staging)
{
    char           dir[4400], path[8800];
    DIR           *d;
    struct dirent *de;

    snprintf(dir, sizeof(dir), "%s/%s", staging, SVP_JOB_WDS_SPARE);
    d = opendir(dir);
    if (d == NULL) {
        return;
    }
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            (void)unlink(path);
        }
    }
    closedir(d);
    (void)rmdir(dir);
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
