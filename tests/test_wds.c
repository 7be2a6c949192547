/*
 * Tests for the WebDataset shards (pipe/wds.h): which samples a shard holds
 * for any array split, the shard's names, bytes that do not depend on the
 * staged files' times, modes or owners, an index whose offsets hold each
 * member's bytes, and the check that finds a truncated or damaged shard.
 */
#define _GNU_SOURCE
#include "pipe/wds.h"
#include "common/sha256.h"
#include "common/util.h"

#include <criterion/criterion.h>
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

Test(wds, the_shards_of_any_array_hold_every_sample_once_in_their_tasks_order)
{
    int per, count, n = 103, i, j, k, m, t, total;
    int seen[103], idx[64];

    for (per = 1; per <= 40; per += 13) {
        for (count = 1; count <= 5; ++count) {
            memset(seen, 0, sizeof(seen));
            total = 0;
            for (t = 0; t < count; ++t) {
                svp_pipe_shard_t task = {t, count};
                int              prev = -1;

                for (j = 0; j < svp_pipe_wds_shard_count(&task, n, per); ++j) {
                    m = svp_pipe_wds_shard_samples(&task, n, per, j, idx);
                    cr_assert(m >= 1 && m <= per, "per %d, task %d/%d, shard %d: %d samples",
                              per, t, count, j, m);
                    for (k = 0; k < m; ++k) {
                        i = idx[k];
                        cr_assert(svp_pipe_shard_owns(&task, i), "sample %d is not task %d's",
                                  i, t);
                        cr_assert_eq(svp_pipe_wds_shard_of(&task, per, i), j);
                        cr_assert_gt(i, prev, "in the task's order");
                        prev = i;
                        seen[i]++;
                        total++;
                    }
                }
            }
            cr_assert_eq(total, n);
            for (i = 0; i < n; ++i) {
                cr_assert_eq(seen[i], 1, "per %d, %d tasks: sample %d in %d shards", per,
                             count, i, seen[i]);
            }
        }
    }
}

Test(wds, shard_names_carry_the_task_of_an_array)
{
    svp_pipe_shard_t one = {0, 1}, task = {1, 3};
    char             buf[128];

    svp_pipe_wds_shard_name(&one, 3, ".tar", buf, sizeof(buf));
    cr_assert_str_eq(buf, "shard-000003.tar");
    svp_pipe_wds_shard_name(&task, 12, ".index.json", buf, sizeof(buf));
    cr_assert_str_eq(buf, "shard-1-of-3-000012.index.json");
}

/* A staged sample dir/key with a record, a video, latents and 2 frames;
 * files' contents derive from seed, their times and modes from stamp. */
static void stage(const char *key, int seed, time_t stamp, mode_t mode)
{
    const char *files[] = {"sample.json", "video.mp4", "latents.safetensors",
                           "frame_0000.png", "frame_0001.png"};
    char        path[512];
    size_t      f;
    int         b;
    FILE       *fp;
    struct timeval tv[2] = {{stamp, 0}, {stamp, 0}};

    snprintf(path, sizeof(path), "%s/staging/%s", tmpdir, key);
    cr_assert_eq(svp_mkdir_p(path, 0755), SVP_OK);
    for (f = 0; f < sizeof(files) / sizeof(files[0]); ++f) {
        snprintf(path, sizeof(path), "%s/staging/%s/%s", tmpdir, key, files[f]);
        fp = fopen(path, "w");
        cr_assert_not_null(fp);
        if (f == 0) {
            fprintf(fp, "{\"job\": \"j\", \"sample\": %d, \"seed\": %d, "
                    "\"timings\": {\"decode_s\": %d.5}, \"cpu\": {\"threads\": %d}}\n",
                    seed, seed, (int)(stamp % 97), (int)(stamp % 5));
        } else {
            /* sizes off the 512-byte records: padding shows in the offsets */
            for (b = 0; b < 700 + 37 * (int)f + seed; ++b) {
                fputc((b * 31 + seed * 7 + (int)f) & 0xff, fp);
            }
        }
        fclose(fp);
        cr_assert_eq(chmod(path, mode), 0);
        cr_assert_eq(utimes(path, tv), 0);
    }
}

static void pack_two(const char *name, svp_status_t want)
{
    char             d0[512], d1[512], why[1024] = "";
    svp_pipe_wds_sample_t v[2] = {{"a", 0, d0}, {"b", 2, d1}};

    snprintf(d0, sizeof(d0), "%s/staging/a", tmpdir);
    snprintf(d1, sizeof(d1), "%s/staging/b", tmpdir);
    cr_assert_eq(svp_pipe_wds_pack(tmpdir, name, v, 2, 1, why, sizeof(why)), want, "%s", why);
}

static char *slurp(const char *name, size_t *len_p)
{
    char  path[512], *data;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    cr_assert_eq(svp_file_read_all(path, &data, len_p), SVP_OK, "%s", path);
    return data;
}

Test(wds, a_shards_bytes_depend_on_the_samples_alone, .init = mkfolder, .fini = rmfolder)
{
    char  *x, *y;
    size_t nx, ny;

    stage("a", 1, 1000000, 0600);
    stage("b", 2, 1000000, 0600);
    pack_two("s1", SVP_OK);
    /* other times, modes and run timings: the same bytes */
    stage("a", 1, 2000000, 0644);
    stage("b", 2, 2000007, 0640);
    pack_two("s2", SVP_OK);
    x = slurp("s1.tar", &nx);
    y = slurp("s2.tar", &ny);
    cr_assert_eq(nx, ny);
    cr_assert(memcmp(x, y, nx) == 0, "the same samples made other bytes");
    cr_assert_eq(nx % 512, 0);
    free(y);
    /* another sample's content: other bytes */
    stage("b", 3, 1000000, 0600);
    pack_two("s3", SVP_OK);
    y = slurp("s3.tar", &ny);
    cr_assert(nx != ny || memcmp(x, y, nx) != 0);
    free(x);
    free(y);
}

Test(wds, the_index_holds_each_members_offset_and_the_record_less_the_run,
     .init = mkfolder, .fini = rmfolder)
{
    const char *order[] = {"a.json", "a.mp4", "a.latents.safetensors", "a.frame_0000.png",
                           "a.frame_0001.png", "b.json"};
    char        path[512], *tar, *member, hash[65];
    size_t      ntar, nmember, k;
    json_t     *index, *members, *m, *rec;
    json_error_t jerr;

    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    pack_two("s", SVP_OK);
    tar = slurp("s.tar", &ntar);
    snprintf(path, sizeof(path), "%s/s.index.json", tmpdir);
    index = json_load_file(path, 0, &jerr);
    cr_assert_not_null(index, "%s", jerr.text);
    cr_assert_eq(json_integer_value(json_object_get(index, "bytes")), (json_int_t)ntar);
    snprintf(path, sizeof(path), "%s/s.tar", tmpdir);
    cr_assert_eq(svp_sha256_file(path, hash), SVP_OK);
    cr_assert_str_eq(json_string_value(json_object_get(index, "sha256")), hash);
    cr_assert_eq(json_array_size(json_object_get(index, "samples")), 2);
    cr_assert_eq(json_integer_value(json_object_get(svp_pipe_wds_index_sample(index, 2), "sample")),
                 2);
    cr_assert_null(svp_pipe_wds_index_sample(index, 1));
    members = json_object_get(svp_pipe_wds_index_sample(index, 0), "members");
    cr_assert_eq(json_array_size(members), 5);
    json_array_foreach(members, k, m) {
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
            snprintf(path, sizeof(path), "staging/a/%s", k == 1 ? "video.mp4" :
                     k == 2 ? "latents.safetensors" : k == 3 ? "frame_0000.png" :
                     "frame_0001.png");
            member = slurp(path, &nmember);
            cr_assert_eq((json_int_t)nmember, size);
            cr_assert(memcmp(tar + off, member, nmember) == 0, "%s", order[k]);
            free(member);
        }
    }
    /* the record without what varies by run; that in "run" */
    rec = json_object_get(svp_pipe_wds_index_sample(index, 0), "record");
    cr_assert_eq(json_integer_value(json_object_get(rec, "seed")), 1);
    cr_assert_null(json_object_get(rec, "timings"));
    cr_assert_null(json_object_get(rec, "cpu"));
    cr_assert_not_null(json_object_get(json_object_get(svp_pipe_wds_index_sample(index, 0), "run"),
                                       "timings"));
    json_decref(index);
    free(tar);
}

Test(wds, the_check_finds_a_truncated_or_damaged_shard, .init = mkfolder, .fini = rmfolder)
{
    char    path[512], why[1024];
    json_t *index;
    FILE   *fp;
    size_t  n;
    char   *tar;

    cr_assert_eq(svp_pipe_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_NOT_FOUND, "not packed: no index");
    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    pack_two("s", SVP_OK);
    cr_assert_eq(svp_pipe_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)), SVP_OK, "%s",
                 why);
    json_decref(index);

    tar = slurp("s.tar", &n);
    snprintf(path, sizeof(path), "%s/s.tar", tmpdir);
    cr_assert_eq(truncate(path, (off_t)n - 512), 0);
    cr_assert_eq(svp_pipe_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_BAD_FILE);
    cr_assert_null(index);
    cr_assert_not_null(strstr(why, "s.tar is "), "%s", why);
    cr_assert_not_null(strstr(why, "truncated"), "%s", why);

    /* the size right, one byte wrong */
    tar[n / 2] ^= 1;
    fp = fopen(path, "w");
    cr_assert_not_null(fp);
    cr_assert_eq(fwrite(tar, 1, n, fp), n);
    fclose(fp);
    cr_assert_eq(svp_pipe_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_BAD_FILE);
    cr_assert_not_null(strstr(why, "has sha256"), "%s", why);
    free(tar);

    /* gone, its index still there */
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(svp_pipe_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_BAD_FILE);
    cr_assert_not_null(strstr(why, "is missing"), "%s", why);
}

Test(wds, a_missing_member_fails_the_pack_and_leaves_no_shard, .init = mkfolder,
     .fini = rmfolder)
{
    char        path[512], why[1024];
    json_t     *index;
    struct stat sb;

    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    snprintf(path, sizeof(path), "%s/staging/b/latents.safetensors", tmpdir);
    cr_assert_eq(unlink(path), 0);
    pack_two("s", SVP_ERR_BAD_FILE);
    snprintf(path, sizeof(path), "%s/s.tar", tmpdir);
    cr_assert_neq(stat(path, &sb), 0, "no shard after a failed pack");
    cr_assert_eq(svp_pipe_wds_shard_check(tmpdir, "s", &index, why, sizeof(why)),
                 SVP_ERR_NOT_FOUND);
}

Test(wds, the_listing_names_each_shard_and_its_state, .init = mkfolder, .fini = rmfolder)
{
    svp_pipe_shard_t task = {1, 2};
    char             path[512];
    int              pending = -1;
    json_t          *o, *s;
    json_error_t     jerr;

    /* task 1 of 2 of 9 samples: 1, 3, 5, 7; 3 per shard: 2 shards */
    stage("a", 1, 1000000, 0644);
    stage("b", 2, 1000000, 0644);
    pack_two("shard-1-of-2-000000", SVP_OK);
    cr_assert_eq(svp_pipe_wds_write_listing(tmpdir, &task, 9, 3, &pending), SVP_OK);
    cr_assert_eq(pending, 1);
    snprintf(path, sizeof(path), "%s/shards.shard-1-of-2.json", tmpdir);
    o = json_load_file(path, 0, &jerr);
    cr_assert_not_null(o, "%s", jerr.text);
    cr_assert_eq(json_integer_value(json_object_get(o, "shards_count")), 2);
    s = json_array_get(json_object_get(o, "shards"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(s, "shard")),
                     "shard-1-of-2-000000.tar");
    cr_assert_str_eq(json_string_value(json_object_get(s, "status")), "packed");
    cr_assert_eq(json_integer_value(json_object_get(s, "first_sample")), 1);
    cr_assert_eq(json_integer_value(json_object_get(s, "last_sample")), 5);
    cr_assert(json_integer_value(json_object_get(s, "bytes")) > 0);
    s = json_array_get(json_object_get(o, "shards"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(s, "status")), "pending");
    cr_assert_eq(json_integer_value(json_object_get(s, "samples_count")), 1);
    cr_assert_eq(json_integer_value(json_object_get(s, "first_sample")), 7);
    json_decref(o);
}

Test(wds, clean_removes_the_tasks_stale_temporaries_only, .init = mkfolder, .fini = rmfolder)
{
    svp_pipe_shard_t task = {0, 1};
    char             names[6][128], path[1024];
    int              i, removed, keep[6] = {0, 0, 1, 1, 1, 1};
    struct stat      sb;
    FILE            *fp;

    /* another host's; this process's own; a live process's; task 1 of 3's;
     * no temporary; no shard */
    snprintf(names[0], sizeof(names[0]), "shard-000001.tar.tmp.999999@elsewhere");
    snprintf(names[1], sizeof(names[1]), "shard-000002.index.json.tmp.%ld", (long)getpid());
    snprintf(names[2], sizeof(names[2]), "shard-000003.tar.tmp.%ld", (long)getppid());
    snprintf(names[3], sizeof(names[3]), "shard-1-of-3-000001.tar.tmp.999999@elsewhere");
    snprintf(names[4], sizeof(names[4]), "shard-000001.tar");
    snprintf(names[5], sizeof(names[5]), "notes.tar.tmp.999999@elsewhere");
    for (i = 0; i < 6; ++i) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        fp = fopen(path, "w");
        cr_assert_not_null(fp);
        fclose(fp);
    }
    svp_pipe_wds_clean(tmpdir, &task, &removed);
    cr_assert_eq(removed, 2);
    for (i = 0; i < 6; ++i) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
        cr_assert_eq(stat(path, &sb) == 0, keep[i], "%s: %s", names[i],
                     keep[i] ? "removed" : "left");
    }
}
