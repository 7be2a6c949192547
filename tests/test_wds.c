/*
 * Tests for the WebDataset shards (job/wds.h): which samples a shard holds
 * and which task of an array makes it, the shard's names, bytes that do
 * not depend on the staged files' times, modes or owners, an index (the
 * first member) whose offsets hold each member's bytes and whose digest
 * seals the shard, the check that finds a truncated or damaged shard, and a
 * staged sample: one file whose cut or damage is found.
 */
#define _GNU_SOURCE
#include "job/wds.h"
#include "common/sha256.h"
#include "common/file.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

TestSuite(wds);

static char tmpdir[256];

static void mkfolder(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/svp-wds.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void rmfolder(void)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

Test(wds, each_shard_is_one_tasks_and_holds_its_block_of_samples)
{
    int per, count, n = 103, i, j, k, m, t, first, owner, *seen;

    seen = calloc((size_t)n, sizeof(*seen));
    cr_assert_not_null(seen);
    for (per = 1; per <= 40; per += 13) {
        cr_assert_eq(svp_job_wds_shards(n, per), (n + per - 1) / per);
        for (count = 1; count <= 5; ++count) {
            memset(seen, 0, (size_t)n * sizeof(*seen));
            for (j = 0; j < svp_job_wds_shards(n, per); ++j) {
                m = svp_job_wds_shard_range(n, per, j, &first);
                cr_assert(m >= 1 && m <= per, "per %d, shard %d: %d samples", per, j,
                          m);
                cr_assert_eq(first, j * per);
                /* the one task that makes all of them */
                owner = -1;
                for (t = 0; t < count; ++t) {
                    svp_job_shard_t task = {t, count, per};

                    for (k = 0; k < m; ++k) {
                        i = first + k;
                        if (svp_job_shard_owns(&task, i)) {
                            cr_assert(owner == -1 || owner == t,
                                      "per %d, %d tasks: shard %d split", per, count,
                                      j);
                            owner = t;
                        }
                    }
                }
                cr_assert_eq(owner, j % count);
                for (k = 0; k < m; ++k) {
                    seen[first + k]++;
                }
            }
            for (i = 0; i < n; ++i) {
                cr_assert_eq(seen[i], 1, "per %d, %d tasks: sample %d in %d shards",
                             per, count, i, seen[i]);
            }
        }
    }
    free(seen);
}

Test(wds, shard_names_are_their_numbers_for_any_array)
{
    char buf[128];

    svp_job_wds_shard_name(3, ".tar", buf, sizeof(buf));
    cr_assert_str_eq(buf, "shard-000003.tar");
    cr_assert_eq(svp_job_wds_shard_number("shard-000003.tar"), 3);
    cr_assert_eq(svp_job_wds_shard_number("shard-1234567.tar.tmp.1@h"), 1234567);
    cr_assert_eq(svp_job_wds_shard_number("shard-12.tar"), -1);
    cr_assert_eq(svp_job_wds_shard_number("shards.json"), -1);
    cr_assert_eq(svp_job_wds_shard_number("shard-000003"), -1);
}

/* A member's bytes: from seed and the member's number f. */
static void member_bytes(int seed, int f, char *buf, size_t *len_p)
{
    int b, n = 700 + 37 * f + seed; /* off the 512-byte records */

    for (b = 0; b < n; ++b) {
        buf[b] = (char)((b * 31 + seed * 7 + f) & 0xff);
    }
    *len_p = (size_t)n;
}

/*
 * The staged sample staging/key.tar with a record, a video, latents and 2
 * frames: the record and latents from memory, the others from the scratch
 * folder (added out of order), whose files' times and modes come from
 * stamp and mode; contents derive from seed.  latents: 0 leaves them out.
 */
static void stage_some(const char *key, int seed, time_t stamp, mode_t mode,
                       int latents)
{
    const char         *files[] = {"sample.json", "video.mp4", "latents.safetensors",
                                   "frame_0000.png", "frame_0001.png"};
    const int           order[] = {4, 1, 3};
    char                path[512], buf[2048];
    size_t              len;
    size_t              k;
    svp_job_wds_stage_h h;
    const char         *scratch;
    FILE               *fp;
    struct timeval      tv[2] = {{stamp, 0}, {stamp, 0}};

    snprintf(path, sizeof(path), "%s/staging/%s.tar", tmpdir, key);
    cr_assert_eq(svp_job_wds_stage_begin(path, &h), SVP_OK);
    scratch = svp_job_wds_stage_scratch(h);
    cr_assert_not_null(scratch);
    for (k = 0; k < sizeof(order) / sizeof(order[0]); ++k) {
        snprintf(path, sizeof(path), "%s/%s", scratch, files[order[k]]);
        member_bytes(seed, order[k], buf, &len);
        fp = fopen(path, "w");
        cr_assert_not_null(fp);
        cr_assert_eq(fwrite(buf, 1, len, fp), len);
        fclose(fp);
        cr_assert_eq(chmod(path, mode), 0);
        cr_assert_eq(utimes(path, tv), 0);
    }
    if (latents) {
        member_bytes(seed, 2, buf, &len);
        cr_assert_eq(svp_job_wds_stage_add(h, files[2], buf, len), SVP_OK);
    }
    snprintf(buf, sizeof(buf),
             "{\"job\": \"j\", \"sample\": %d, \"seed\": %d, "
             "\"timings\": {\"decode_s\": %d.5}, \"cpu\": {\"threads\": %d}}\n",
             seed, seed, (int)(stamp % 97), (int)(stamp % 5));
    cr_assert_eq(svp_job_wds_stage_add(h, files[0], buf, strlen(buf)), SVP_OK);
    cr_assert_eq(svp_job_wds_stage_commit(h), SVP_OK);
}

static void stage(const char *key, int seed, time_t stamp, mode_t mode)
{
    stage_some(key, seed, stamp, mode, 1);
}

static void pack_two_at(const char *name, svp_status_t want, int want_bad, char *why,
                        size_t len)
{
    char                 d0[512], d1[512];
    int                  bad  = -1;
    svp_job_wds_sample_t v[2] = {{"a", 0, d0}, {"b", 2, d1}};

    snprintf(d0, sizeof(d0), "%s/staging/a.tar", tmpdir);
    snprintf(d1, sizeof(d1), "%s/staging/b.tar", tmpdir);
    why[0] = '\0';
    cr_assert_eq(svp_job_wds_pack(tmpdir, name, v, 2, 1, NULL, NULL, NULL, &bad, why,
                                  len),
                 want, "%s", why);
    cr_assert_eq(bad, want_bad);
}

static void pack_two(const char *name, svp_status_t want)
{
    char why[1024];

    pack_two_at(name, want, -1, why, sizeof(why));
}

static char *slurp(const char *name, size_t *len_p)
{
    char path[512], *data;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    cr_assert_eq(svp_file_read_all(path, &data, len_p), SVP_OK, "%s", path);
    return data;
}

Test(wds, a_shards_bytes_depend_on_the_samples_alone, .init = mkfolder,
     .fini = rmfolder)
{
    char  *x, *y;
    size_t nx, ny;

    stage("a", 1, 1000000, 0600);
    stage("b", 2, 1000000, 0600);
    pack_two("s", SVP_OK);
    x = slurp("s.tar", &nx);
    /* other times, modes and run timings: the same bytes */
    stage("a", 1, 2000000, 0644);
    stage("b", 2, 2000007, 0640);
    pack_two("s", SVP_OK);
    y = slurp("s.tar", &ny);
    cr_assert_eq(nx, ny);
    cr_assert(memcmp(x, y, nx) == 0, "the same samples made other bytes");
    cr_assert_eq(nx % 512, 0);
    free(y);
    /* another sample's content: other bytes */
    stage("b", 3, 1000000, 0600);
    pack_two("s", SVP_OK);
    y = slurp("s.tar", &ny);
    cr_assert(nx != ny || memcmp(x, y, nx) != 0);
    free(x);
    free(y);
}

/* The SHA-256 of a shard's bytes with its index's digest read as zeros. */
static void sealed_sum(const char *tar, size_t n, char hash[65])
{
    char        *copy = malloc(n);
    char        *at;
    svp_sha256_t sum;

    cr_assert_not_null(copy);
    memcpy(copy, tar, n);
    at = strstr(copy + 512, "\"sha256\": \"");
    cr_assert_not_null(at);
    memset(at + 11, '0', 64);
    svp_sha256_init(&sum);
    svp_sha256_update(&sum, copy, n);
    svp_sha256_final(&sum, hash);
    free(copy);
}

Test(wds, the_index_comes_first_holds_each_members_offset_and_nothing_of_the_run,
     .init = mkfolder, .fini = rmfolder)
{
    const char *order[] = {"a.json",
                           "a.mp4",
                           "a.latents.safetensors",
                           "a.frame_0000.png",
                           "a.frame_0001.png",
                           "b.json"};
    char        path[512], *tar, member[2048], hash[65], why[1024];
    size_t      ntar, nmember, k;
    json_t     *index, *members, *m, *rec, *again;
    json_int_t  data;

    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    pack_two("s", SVP_OK);
    tar = slurp("s.tar", &ntar);
    /* the first member, a name webdataset skips */
    cr_assert_str_eq(tar, SVP_JOB_WDS_INDEX);
    snprintf(path, sizeof(path), "%s/s.tar", tmpdir);
    cr_assert_eq(svp_job_wds_shard_index(path, &index, why, sizeof(why)), SVP_OK,
                 "%s", why);
    cr_assert_eq(json_integer_value(json_object_get(index, "bytes")),
                 (json_int_t)ntar);
    data = json_integer_value(json_object_get(index, "data_offset"));
    cr_assert_eq(data % 512, 0);
    cr_assert_str_eq(tar + data, "a.json", "the samples start at data_offset");
    sealed_sum(tar, ntar, hash);
    cr_assert_str_eq(json_string_value(json_object_get(index, "sha256")), hash);
    cr_assert_eq(json_integer_value(json_object_get(index, "samples_count")), 2);
    cr_assert_eq(json_integer_value(json_object_get(index, "failures")), 0);
    cr_assert_eq(json_array_size(json_object_get(index, "samples")), 2);
    cr_assert_eq(json_integer_value(
                     json_object_get(svp_job_wds_index_sample(index, 2), "sample")),
                 2);
    cr_assert_null(svp_job_wds_index_sample(index, 1));
    members = json_object_get(svp_job_wds_index_sample(index, 0), "members");
    cr_assert_eq(json_array_size(members), 5);
    json_array_foreach(members, k, m)
    {
        json_int_t off  = json_integer_value(json_object_get(m, "offset"));
        json_int_t size = json_integer_value(json_object_get(m, "size"));
        json_int_t hdr  = json_integer_value(json_object_get(m, "header"));

        cr_assert_str_eq(json_string_value(json_object_get(m, "name")), order[k]);
        /* the ustar header names the member; the data follows it */
        cr_assert_eq(hdr % 512, 0);
        cr_assert_eq(off, hdr + 512);
        cr_assert_str_eq(tar + hdr, order[k]);
        cr_assert(off + size <= (json_int_t)ntar);
        if (k > 0) {
            member_bytes(1, (int)k, member, &nmember);
            cr_assert_eq((json_int_t)nmember, size);
            cr_assert(memcmp(tar + off, member, nmember) == 0, "%s", order[k]);
        }
    }
    /* the record without what varies by run, and nothing else of the run */
    rec = json_object_get(svp_job_wds_index_sample(index, 0), "record");
    cr_assert_eq(json_integer_value(json_object_get(rec, "seed")), 1);
    cr_assert_null(json_object_get(rec, "timings"));
    cr_assert_null(json_object_get(rec, "cpu"));
    cr_assert_null(json_object_get(svp_job_wds_index_sample(index, 0), "run"));
    /* the check reads the same index */
    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &again, why, sizeof(why)),
                 SVP_OK, "%s", why);
    cr_assert(json_equal(index, again));
    json_decref(again);
    json_decref(index);
    free(tar);
}

/* Writes n bytes of data over the shard s.tar. */
static void rewrite(const char *data, size_t n)
{
    char  path[512];
    FILE *fp;

    snprintf(path, sizeof(path), "%s/s.tar", tmpdir);
    fp = fopen(path, "w");
    cr_assert_not_null(fp);
    cr_assert_eq(fwrite(data, 1, n, fp), n);
    fclose(fp);
}

Test(wds, the_check_finds_a_truncated_or_damaged_shard, .init = mkfolder,
     .fini = rmfolder)
{
    char    path[512], why[1024], *digit;
    json_t *index;
    size_t  n;
    char   *tar;

    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_NOT_FOUND, "not packed: no shard");
    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    pack_two("s", SVP_OK);
    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_OK, "%s", why);
    json_decref(index);

    tar = slurp("s.tar", &n);
    snprintf(path, sizeof(path), "%s/s.tar", tmpdir);
    cr_assert_eq(truncate(path, (off_t)n - 512), 0);
    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_BAD_FILE);
    cr_assert_null(index);
    cr_assert_not_null(strstr(why, "s.tar is "), "%s", why);
    cr_assert_not_null(strstr(why, "truncated"), "%s", why);

    /* the size right, one byte of a sample wrong */
    tar[n - 2048] ^= 1;
    rewrite(tar, n);
    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_BAD_FILE);
    cr_assert_not_null(strstr(why, "has sha256"), "%s", why);
    tar[n - 2048] ^= 1;

    /* one digit of the index itself changed: it still reads, the digest
     * says it is not what was packed */
    digit = strstr(tar + 512, "\"size\": ");
    cr_assert_not_null(digit);
    digit[8] = (char)(digit[8] == '1' ? '2' : '1');
    rewrite(tar, n);
    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_BAD_FILE);
    cr_assert_not_null(strstr(why, "has sha256"), "%s", why);

    /* cut inside the index: no index that reads */
    cr_assert_eq(truncate(path, 700), 0);
    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_BAD_FILE);
    cr_assert_not_null(strstr(why, "index"), "%s", why);
    free(tar);

    /* gone: not packed */
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_NOT_FOUND);
}

Test(wds,
     a_staged_sample_is_one_file_of_its_members_in_shard_order_and_their_checksum,
     .init = mkfolder, .fini = rmfolder)
{
    const char *order[] = {"sample.json", "video.mp4", "latents.safetensors",
                           "frame_0000.png", "frame_0001.png"};
    char        path[512], why[1024], buf[2048];
    svp_job_wds_member_t *v;
    json_t               *entry;
    struct stat           sb;
    DIR                  *d;
    struct dirent        *de;
    size_t                len;
    int                   n, k;

    stage("a", 1, 1000000, 0644);
    /* one file: no scratch folder or temporary left beside it */
    snprintf(path, sizeof(path), "%s/staging/a.tar", tmpdir);
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert(S_ISREG(sb.st_mode));
    snprintf(path, sizeof(path), "%s/staging", tmpdir);
    d = opendir(path);
    cr_assert_not_null(d);
    while ((de = readdir(d)) != NULL) {
        cr_assert(de->d_name[0] == '.' || strcmp(de->d_name, "a.tar") == 0,
                  "left in staging: %s", de->d_name);
    }
    closedir(d);
    snprintf(path, sizeof(path), "%s/staging/a.tar", tmpdir);
    cr_assert_eq(svp_job_wds_staged_read(path, &v, &n, why, sizeof(why)), SVP_OK,
                 "%s", why);
    cr_assert_eq(n, 5);
    for (k = 0; k < n; ++k) {
        cr_assert_str_eq(v[k].name, order[k]);
        if (k > 0) {
            member_bytes(1, k, buf, &len);
            cr_assert_eq(v[k].size, len);
            cr_assert(memcmp(v[k].data, buf, len) == 0, "%s", order[k]);
        }
    }
    svp_job_wds_members_free(v, n);
    /* described as a shard's index entry */
    cr_assert_eq(svp_job_wds_staged_entry(path, "a", 0, &entry, why, sizeof(why)),
                 SVP_OK, "%s", why);
    cr_assert_eq(json_integer_value(
                     json_object_get(json_object_get(entry, "record"), "seed")),
                 1);
    cr_assert_null(json_object_get(json_object_get(entry, "record"), "timings"));
    cr_assert(svp_job_wds_entry_has(entry, "mp4"));
    cr_assert(svp_job_wds_entry_has(entry, "latents.safetensors"));
    cr_assert(svp_job_wds_entry_has(entry, "frame_0001.png"));
    json_decref(entry);
    snprintf(path, sizeof(path), "%s/staging/none.tar", tmpdir);
    cr_assert_eq(svp_job_wds_staged_read(path, &v, &n, why, sizeof(why)),
                 SVP_ERR_NOT_FOUND);
}

Test(wds, a_staged_sample_cut_short_or_damaged_anywhere_does_not_read,
     .init = mkfolder, .fini = rmfolder)
{
    char                  path[512], why[1024], *whole, *data, *sum;
    svp_job_wds_member_t *v;
    size_t                n, cut, k, end;
    int                   m;
    FILE                 *fp;

    stage("a", 1, 1000000, 0644);
    whole = slurp("staging/a.tar", &n);
    snprintf(path, sizeof(path), "%s/staging/a.tar", tmpdir);
    /* every cut before the checksum's last byte (the end-of-archive
     * records after it hold nothing), at and off the 512-byte records */
    sum = memmem(whole, n, SVP_JOB_WDS_STAGED_SUM, strlen(SVP_JOB_WDS_STAGED_SUM));
    cr_assert_not_null(sum);
    end = (size_t)(sum - whole) + 512 + 64;
    cr_assert(end <= n);
    for (cut = 0; cut < end; cut += (cut % 512 == 0) ? 1 : 511) {
        fp = fopen(path, "w");
        cr_assert_not_null(fp);
        cr_assert_eq(fwrite(whole, 1, cut, fp), cut);
        fclose(fp);
        why[0] = '\0';
        cr_assert_eq(svp_job_wds_staged_read(path, &v, &m, why, sizeof(why)),
                     SVP_ERR_BAD_FILE, "cut at %zu of %zu read", cut, n);
        cr_assert_not_null(strstr(why, "staged sample"), "%s", why);
        cr_assert_null(v);
    }
    /* one byte changed in any member's name or bytes */
    data = malloc(n);
    cr_assert_not_null(data);
    for (k = 0; k < n; k += 97) {
        memcpy(data, whole, n);
        data[k] ^= 0x20;
        fp = fopen(path, "w");
        cr_assert_not_null(fp);
        cr_assert_eq(fwrite(data, 1, n, fp), n);
        fclose(fp);
        if (svp_job_wds_staged_read(path, &v, &m, why, sizeof(why)) == SVP_OK) {
            /* only bytes that are no member's: padding, unused header fields */
            svp_job_wds_members_free(v, m);
            continue;
        }
        cr_assert_not_null(strstr(why, "staged sample"), "%s", why);
    }
    /* a changed byte of a member's data, at its middle */
    memcpy(data, whole, n);
    data[512 + 20] ^= 1; /* the first member's (the record's) bytes */
    fp = fopen(path, "w");
    cr_assert_not_null(fp);
    cr_assert_eq(fwrite(data, 1, n, fp), n);
    fclose(fp);
    cr_assert_eq(svp_job_wds_staged_read(path, &v, &m, why, sizeof(why)),
                 SVP_ERR_BAD_FILE);
    cr_assert_not_null(strstr(why, "checksum"), "%s", why);
    free(data);
    free(whole);
}

Test(
    wds,
    a_staged_sample_cut_short_or_lacking_fails_the_pack_names_it_and_leaves_no_shard,
    .init = mkfolder, .fini = rmfolder)
{
    char        path[512], why[1024];
    json_t     *index;
    struct stat sb;

    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    snprintf(path, sizeof(path), "%s/staging/b.tar", tmpdir);
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(truncate(path, sb.st_size / 2), 0);
    pack_two_at("s", SVP_ERR_BAD_FILE, 1, why, sizeof(why));
    cr_assert_not_null(strstr(why, "staging/b.tar"), "%s", why);
    snprintf(path, sizeof(path), "%s/s.tar", tmpdir);
    cr_assert_neq(stat(path, &sb), 0, "no shard after a failed pack");
    cr_assert_eq(svp_job_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_NOT_FOUND);
    /* whole, but without its latents */
    stage_some("b", 2, 1000000, 0644, 0);
    pack_two_at("s", SVP_ERR_BAD_FILE, 1, why, sizeof(why));
    cr_assert_not_null(strstr(why, "latents"), "%s", why);
    cr_assert_neq(stat(path, &sb), 0, "no shard after a failed pack");
}

Test(wds, clean_removes_the_tasks_stale_temporaries_only, .init = mkfolder,
     .fini = rmfolder)
{
    svp_job_shard_t task = {1, 3, 10};
    char            names[6][128], path[1024];
    int             i, removed, keep[6] = {0, 0, 1, 1, 1, 1};
    struct stat     sb;
    FILE           *fp;

    /* task 1 of 3 makes shards 1, 4, 7, ...: another host's temporary; this
     * process's own; a live process's; task 2 of 3's; no temporary; no
     * shard */
    snprintf(names[0], sizeof(names[0]), "shard-000001.tar.tmp.999999@elsewhere");
    snprintf(names[1], sizeof(names[1]), "shard-000004.tar.tmp.%ld", (long)getpid());
    snprintf(names[2], sizeof(names[2]), "shard-000007.tar.tmp.%ld",
             (long)getppid());
    snprintf(names[3], sizeof(names[3]), "shard-000002.tar.tmp.999999@elsewhere");
    snprintf(names[4], sizeof(names[4]), "shard-000001.tar");
    snprintf(names[5], sizeof(names[5]), "notes.tar.tmp.999999@elsewhere");
    for (i = 0; i < 6; ++i) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        fp = fopen(path, "w");
        cr_assert_not_null(fp);
        fclose(fp);
    }
    svp_job_wds_clean(tmpdir, &task, &removed);
    cr_assert_eq(removed, 2);
    for (i = 0; i < 6; ++i) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        cr_assert_eq(stat(path, &sb) == 0, keep[i], "%s: %s", names[i],
                     keep[i] ? "removed" : "left");
    }
}

Test(wds, a_pack_asked_to_stop_writes_nothing, .init = mkfolder, .fini = rmfolder)
{
    char                 d0[512], d1[512], why[1024], path[600];
    int                  cancel = 1;
    svp_job_wds_sample_t v[2]   = {{"a", 0, d0}, {"b", 2, d1}};
    struct stat          sb;
    DIR                 *d;
    struct dirent       *de;

    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    snprintf(d0, sizeof(d0), "%s/staging/a.tar", tmpdir);
    snprintf(d1, sizeof(d1), "%s/staging/b.tar", tmpdir);
    cr_assert_eq(svp_job_wds_pack(tmpdir, "s", v, 2, 1, NULL, &cancel, NULL, NULL,
                                  why, sizeof(why)),
                 SVP_ERR_CANCELED);
    snprintf(path, sizeof(path), "%s/s.tar", tmpdir);
    cr_assert_neq(stat(path, &sb), 0, "no shard");
    d = opendir(tmpdir);
    cr_assert_not_null(d);
    while ((de = readdir(d)) != NULL) {
        cr_assert_null(strstr(de->d_name, ".tmp."), "left: %s", de->d_name);
    }
    closedir(d);
    cr_assert_eq(stat(d0, &sb), 0, "the staged samples stay");
}

/* Files in dir (not counting . and ..), -1 when it does not open. */
static int count_files(const char *dir)
{
    DIR           *d = opendir(dir);
    struct dirent *de;
    int            n = 0;

    if (d == NULL) {
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        n += (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0);
    }
    closedir(d);
    return n;
}

Test(wds, a_packed_shards_staged_files_are_spares_the_next_samples_take,
     .init = mkfolder, .fini = rmfolder)
{
    char                  d0[512], d1[512], spare[600], staging[600], why[1024];
    svp_job_wds_sample_t  v[2] = {{"a", 0, d0}, {"b", 2, d1}};
    svp_job_wds_member_t *m;
    struct stat           sb;
    int                   n;

    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    pack_two("s", SVP_OK);
    snprintf(d0, sizeof(d0), "%s/staging/a.tar", tmpdir);
    snprintf(d1, sizeof(d1), "%s/staging/b.tar", tmpdir);
    snprintf(staging, sizeof(staging), "%s/staging", tmpdir);
    snprintf(spare, sizeof(spare), "%s/staging/%s", tmpdir, SVP_JOB_WDS_SPARE);
    svp_job_wds_unstage(v, 2);
    cr_assert_neq(stat(d0, &sb), 0, "no longer staged");
    cr_assert_eq(count_files(spare), 2, "both kept as spares");
    /* a sample staged now takes one: no new file, and it reads whole */
    stage("c", 3, 1000000, 0644);
    cr_assert_eq(count_files(spare), 1);
    snprintf(d0, sizeof(d0), "%s/staging/c.tar", tmpdir);
    cr_assert_eq(svp_job_wds_staged_read(d0, &m, &n, why, sizeof(why)), SVP_OK, "%s",
                 why);
    cr_assert_eq(n, 5);
    svp_job_wds_members_free(m, n);
    cr_assert_eq(count_files(staging), 2, "c.tar and the spare folder");
    svp_job_wds_spares_remove(staging);
    cr_assert_eq(count_files(spare), -1, "the spare folder is gone");
    cr_assert_eq(stat(d0, &sb), 0, "staged samples stay");
}
