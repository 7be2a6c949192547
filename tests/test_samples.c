/*
 * Tests for the sample list (job/samples.h): the manifest's lines and its
 * errors (file:line and the key), images x seeds, the cap, the shards
 * of an array (together every sample, each once), and an image's identity
 * by its content (replaced in place: another; moved: the same).
 */
#define _GNU_SOURCE
#include "job/samples.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(samples);
TestSuite(shard);

static char tmpdir[256];

/* A fresh folder with images a.png, b.png, c.png (the list only stats them). */
static void mkfolder(void)
{
    const char *names[] = {"c.png", "a.png", "b.png", "notes.txt"};
    char        path[512];
    size_t      i;
    FILE       *f;

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/svp-samples.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    snprintf(path, sizeof(path), "%s/img", tmpdir);
    cr_assert_eq(mkdir(path, 0755), 0);
    for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        snprintf(path, sizeof(path), "%s/img/%s", tmpdir, names[i]);
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs("x", f);
        fclose(f);
    }
}

static void rmfolder(void)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

static svp_spec_t *spec_with(const char *yaml)
{
    char        err[1024];
    svp_spec_t *spec;

    cr_assert_eq(svp_spec_load_string(yaml, "t.yaml", NULL, 0, err, sizeof(err),
                                      &spec),
                 SVP_OK, "%s", err);
    return spec;
}

/* The manifest `text` in tmpdir/m.jsonl; the list it makes, or the error.
 * video_extra goes into the video mapping, extra after it. */
static svp_status_t manifest_v(const char *text, const char *video_extra,
                               const char *extra, char *err, int errlen,
                               svp_job_samples_t **list_p)
{
    char         path[512], yaml[2048];
    svp_spec_t  *spec;
    FILE        *f;
    svp_status_t status;

    snprintf(path, sizeof(path), "%s/m.jsonl", tmpdir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    snprintf(yaml, sizeof(yaml), "video: {manifest: '%s'%s}\n%s", path, video_extra,
             extra);
    spec   = spec_with(yaml);
    err[0] = '\0';
    status = svp_job_samples_create(spec, err, errlen, list_p);
    svp_spec_destroy(spec);
    return status;
}

static svp_status_t manifest(const char *text, const char *extra, char *err,
                             int errlen, svp_job_samples_t **list_p)
{
    return manifest_v(text, "", extra, err, errlen, list_p);
}

Test(samples, manifest_lines_take_their_own_parameters_and_the_spec_the_rest,
     .init = mkfolder, .fini = rmfolder)
{
    svp_job_samples_t *l;
    char               err[1024], want[512], name[64], *js;

    cr_assert_eq(manifest_v("{\"image\": \"img/a.png\", \"seed\": 9, \"fps\": 12}\n"
                            "\n# a comment line\n"
                            "{\"image\": \"img/b.png\", \"motion_bucket_id\": 30, "
                            "\"noise_aug_strength\": 0.1, \"min_guidance\": 1.5, "
                            "\"max_guidance\": 2.5, \"name\": \"bee-1\"}\n"
                            "{\"image\": \"img/c.png\"}",
                            ", fps: 8", "seed: 77\n", err, sizeof(err), &l),
                 SVP_OK, "%s", err);
    cr_assert_eq(l->count, 3);
    cr_assert_eq(l->total, 3);
    snprintf(want, sizeof(want), "%s/img/a.png", tmpdir);
    cr_assert_str_eq(svp_job_samples_image(l, 0), want);
    cr_assert_eq(l->items[0].seed, 9);
    cr_assert_eq(l->items[0].fps, 12);
    cr_assert_eq(l->items[0].motion_bucket_id, 127); /* the spec's default */
    cr_assert_eq(l->items[0].line, 1);
    cr_assert_eq(l->items[1].line, 4, "blank and comment lines keep the numbering");
    cr_assert_eq(l->items[1].seed, 77, "a line without a seed takes the spec's");
    cr_assert_eq(l->items[1].fps, 8);
    cr_assert_eq(l->items[1].motion_bucket_id, 30);
    cr_assert_float_eq(l->items[1].noise_aug_strength, 0.1, 1e-15);
    cr_assert_float_eq(l->items[1].min_guidance, 1.5, 1e-15);
    cr_assert_float_eq(l->items[1].max_guidance, 2.5, 1e-15);
    svp_job_samples_name(l, 1, name, sizeof(name));
    cr_assert_str_eq(name, "bee-1");
    svp_job_samples_name(l, 2, name, sizeof(name));
    cr_assert_str_eq(name, "sample_000002");
    js = svp_job_samples_params_json(l, 1);
    cr_assert_not_null(js);
    cr_assert_not_null(strstr(js, "\"motion_bucket_id\":30"), "%s", js);
    /* where the line sits is not the sample: no line number; the image by
     * its resolved path and content */
    cr_assert_null(strstr(js, "manifest_line"), "%s", js);
    cr_assert_not_null(strstr(js, "\"image_path\":\"/"), "%s", js);
    cr_assert_not_null(strstr(js, "\"image_sha256\":\""), "%s", js);
    free(js);
    svp_job_samples_describe(l, want, sizeof(want));
    cr_assert_not_null(strstr(want, "3 samples from the manifest "), "%s", want);
    svp_job_samples_destroy(l);

    /* samples caps the list from the front: identities stay */
    cr_assert_eq(manifest("{\"image\": \"img/a.png\"}\n{\"image\": \"img/b.png\"}\n"
                          "{\"image\": \"img/c.png\"}\n",
                          "samples: 2\n", err, sizeof(err), &l),
                 SVP_OK, "%s", err);
    cr_assert_eq(l->count, 2);
    cr_assert_eq(l->total, 3);
    svp_job_samples_describe(l, want, sizeof(want));
    cr_assert_not_null(strstr(want, "caps the 3"), "%s", want);
    svp_job_samples_destroy(l);
}

/* Each bad line: the status, and what the message must hold. */
static const struct {
    const char  *text;
    svp_status_t status;
    const char  *says;
} bad_lines[] = {
    {"{\"image\": \"img/a.png\"}\n{\"seed\": 3}\n", SVP_ERR_SPEC,
     "m.jsonl:2: key 'image': expected an image path, found none"},
    {"{\"image\": \"img/nope.png\"}\n", SVP_ERR_NOT_FOUND,
     "m.jsonl:1: key 'image': cannot open "},
    {"{\"image\": \"img\"}\n", SVP_ERR_NOT_FOUND,
     "m.jsonl:1: key 'image': expected an image file, found the folder"},
    {"{\"image\": \"img/a.png\", \"fps\": \"7\"}\n", SVP_ERR_SPEC,
     "m.jsonl:1: key 'fps': expected an integer, found a string"},
    {"{\"image\": \"img/a.png\", \"fps\": 7.5}\n", SVP_ERR_SPEC,
     "m.jsonl:1: key 'fps': expected an integer, found a number"},
    {"{\"image\": \"img/a.png\", \"fps\": 0}\n", SVP_ERR_SPEC,
     "m.jsonl:1: key 'fps': expected a number in [1, 240], found 0"},
    {"{\"image\": \"img/a.png\", \"seed\": -1}\n", SVP_ERR_SPEC,
     "m.jsonl:1: key 'seed': expected a non-negative integer"},
    {"{\"image\": \"img/a.png\", \"min_guidance\": 4}\n", SVP_ERR_SPEC,
     "m.jsonl:1: key 'min_guidance': expected at most max_guidance (3), found 4"},
    {"{\"image\": \"img/a.png\", \"sead\": 4}\n", SVP_ERR_SPEC,
     "m.jsonl:1: unknown key 'sead' (did you mean 'seed'?)"},
    {"{\"image\": \"img/a.png\"}\n\n{\"image\": \"img/a.png\",\n", SVP_ERR_SPEC,
     "m.jsonl:3:"},
    {"[\"img/a.png\"]\n", SVP_ERR_SPEC, "m.jsonl:1: expected an object"},
    {"{\"image\": \"img/a.png\", \"name\": \"../x\"}\n", SVP_ERR_SPEC,
     "m.jsonl:1: key 'name': expected a file name"},
    {"{\"image\": \"img/a.png\", \"name\": \"x\"}\n{\"image\": \"img/b.png\", "
     "\"name\": \"x\"}\n",
     SVP_ERR_SPEC, "m.jsonl:2: key 'name': 'x' is also the output of line 1"},
    {"{\"image\": \"img/a.png\"}\n{\"image\": \"img/b.png\", \"name\": "
     "\"sample_000000\"}\n",
     SVP_ERR_SPEC,
     "m.jsonl:2: key 'name': 'sample_000000' is also the output of line 1"},
    {"# nothing\n\n", SVP_ERR_SPEC, "holds no sample"},
};

Test(samples, bad_manifest_lines_name_file_line_and_key, .init = mkfolder,
     .fini = rmfolder)
{
    svp_job_samples_t *l = NULL;
    char               err[1024];
    size_t             i;

    for (i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); ++i) {
        cr_assert_eq(manifest(bad_lines[i].text, "", err, sizeof(err), &l),
                     bad_lines[i].status, "case %zu: %s", i, err);
        cr_assert_not_null(strstr(err, bad_lines[i].says),
                           "case %zu: '%s' does not say "
                           "'%s'",
                           i, err, bad_lines[i].says);
    }
}

Test(samples, images_x_seeds_in_name_order, .init = mkfolder, .fini = rmfolder)
{
    svp_job_samples_t *l;
    svp_spec_t        *spec;
    char               yaml[1024], err[1024], buf[256];
    const char        *img;
    int                i;

    snprintf(yaml, sizeof(yaml),
             "video: {inputs: ['%s/img'], seeds: [7, 100, 5, 1]}\n", tmpdir);
    spec = spec_with(yaml);
    cr_assert_eq(svp_job_samples_create(spec, err, sizeof(err), &l), SVP_OK, "%s",
                 err);
    cr_assert_eq(l->count, 12, "3 images x 4 seeds (notes.txt is no image)");
    cr_assert_eq(l->nimages, 3);
    for (i = 0; i < 12; ++i) {
        img = svp_job_samples_image(l, i);
        cr_assert_eq(img[strlen(img) - 5], "abc"[i % 3], "sample %d: %s", i, img);
        cr_assert_eq(l->items[i].seed, (uint64_t)spec->video.seeds.items[i / 3]);
    }
    svp_job_samples_describe(l, buf, sizeof(buf));
    cr_assert_str_eq(buf, "12 samples: 3 images x 4 seeds");
    svp_job_samples_destroy(l);
    svp_spec_destroy(spec);

    /* the cap */
    snprintf(yaml, sizeof(yaml),
             "samples: 5\nvideo: {inputs: ['%s/img'], "
             "seeds: [7, 100, 5, 1]}\n",
             tmpdir);
    spec = spec_with(yaml);
    cr_assert_eq(svp_job_samples_create(spec, err, sizeof(err), &l), SVP_OK, "%s",
                 err);
    cr_assert_eq(l->count, 5);
    cr_assert_eq(l->items[4].seed, 100);
    svp_job_samples_describe(l, buf, sizeof(buf));
    cr_assert_str_eq(
        buf, "5 samples: 3 images x 4 seeds (samples caps the 12 pairs make)");
    svp_job_samples_destroy(l);
    svp_spec_destroy(spec);

    /* more than the pairs: said, not silently fewer */
    snprintf(yaml, sizeof(yaml),
             "samples: 13\nvideo: {inputs: ['%s/img'], "
             "seeds: [7, 100, 5, 1]}\n",
             tmpdir);
    spec = spec_with(yaml);
    cr_assert_eq(svp_job_samples_create(spec, err, sizeof(err), &l), SVP_ERR_SPEC);
    cr_assert_not_null(strstr(err,
                              "samples: expected at most the 12 samples 3 images x "
                              "4 seeds make, found 13"),
                       "%s", err);
    svp_spec_destroy(spec);

    /* one seed and more samples than images: rounds of seed, seed + 1, ... */
    snprintf(yaml, sizeof(yaml),
             "samples: 7\nseed: 42\nvideo: {inputs: ['%s/img/b.png', "
             "'%s/img/a.png']}\n",
             tmpdir, tmpdir);
    spec = spec_with(yaml);
    cr_assert_eq(svp_job_samples_create(spec, err, sizeof(err), &l), SVP_OK, "%s",
                 err);
    cr_assert_eq(l->count, 7);
    for (i = 0; i < 7; ++i) {
        cr_assert_eq(l->items[i].seed, 42 + (uint64_t)(i / 2));
        cr_assert_not_null(
            strstr(svp_job_samples_image(l, i), (i % 2) ? "a.png" : "b.png"));
    }
    svp_job_samples_destroy(l);
    svp_spec_destroy(spec);

    /* no samples: every image once, with the seed */
    snprintf(yaml, sizeof(yaml), "seed: 3\nvideo: {inputs: ['%s/img']}\n", tmpdir);
    spec = spec_with(yaml);
    cr_assert_eq(svp_job_samples_create(spec, err, sizeof(err), &l), SVP_OK, "%s",
                 err);
    cr_assert_eq(l->count, 3);
    cr_assert_eq(l->items[2].seed, 3);
    svp_job_samples_destroy(l);
    svp_spec_destroy(spec);
}

Test(samples, without_inputs_samples_counts_them)
{
    svp_job_samples_t *l;
    svp_spec_t        *spec;
    char               err[1024];

    spec = spec_with("seed: 9\n");
    cr_assert_eq(svp_job_samples_create(spec, err, sizeof(err), &l), SVP_OK, "%s",
                 err);
    cr_assert_eq(l->count, SVP_JOB_SAMPLES_DEFAULT);
    cr_assert_eq(l->items[0].seed, 9);
    cr_assert_eq(l->items[3].seed, 12, "the simulator: sample i takes the seed + i");
    cr_assert_null(svp_job_samples_image(l, 0));
    svp_job_samples_destroy(l);
    svp_spec_destroy(spec);
    spec = spec_with("samples: 11\nvideo: {seeds: [1, 2]}\n");
    cr_assert_eq(svp_job_samples_create(spec, err, sizeof(err), &l), SVP_ERR_SPEC);
    cr_assert_not_null(strstr(err, "video.seeds: expected video.inputs"), "%s", err);
    svp_spec_destroy(spec);
}

Test(shard, the_shards_of_any_array_make_every_sample_once)
{
    int n, count, i, k, made, *seen;

    for (n = 0; n <= 23; ++n) {
        for (count = 1; count <= 7; ++count) {
            seen = calloc((size_t)n + 1, sizeof(*seen));
            for (k = 0; k < count; ++k) {
                svp_job_shard_t s = {k, count};
                made              = 0;
                for (i = 0; i < n; ++i) {
                    if (svp_job_shard_owns(&s, i)) {
                        seen[i]++;
                        made++;
                    }
                }
                cr_assert_eq(made, svp_job_shard_size(&s, n), "n %d, shard %d/%d", n,
                             k, count);
                cr_assert(made == n / count || made == n / count + 1,
                          "shards within one sample of each other");
            }
            for (i = 0; i < n; ++i) {
                cr_assert_eq(seen[i], 1, "n %d, %d shards: sample %d made %d times",
                             n, count, i, seen[i]);
            }
            free(seen);
        }
    }
}

Test(shard, parse_and_slurm_variables)
{
    svp_job_shard_t s;
    char            err[256];

    cr_assert_eq(svp_job_shard_parse("2/3", &s, err, sizeof(err)), SVP_OK);
    cr_assert(s.index == 2 && s.count == 3);
    cr_assert_eq(svp_job_shard_parse("3/3", &s, err, sizeof(err)), SVP_ERR_USAGE);
    cr_assert_not_null(strstr(err, "found '3/3'"));
    cr_assert_eq(svp_job_shard_parse("1", &s, err, sizeof(err)), SVP_ERR_USAGE);
    cr_assert_eq(svp_job_shard_parse("-1/2", &s, err, sizeof(err)), SVP_ERR_USAGE);
    /* digits only, as the task ids Slurm gives */
    cr_assert_eq(svp_job_shard_parse(" 1/3", &s, err, sizeof(err)), SVP_ERR_USAGE);
    cr_assert_eq(svp_job_shard_parse("+1/3", &s, err, sizeof(err)), SVP_ERR_USAGE);
    cr_assert_eq(svp_job_shard_parse("1/ 3", &s, err, sizeof(err)), SVP_ERR_USAGE);
    cr_assert_eq(svp_job_shard_parse("1/+3", &s, err, sizeof(err)), SVP_ERR_USAGE);
    cr_assert_eq(svp_job_shard_parse("1/3 ", &s, err, sizeof(err)), SVP_ERR_USAGE);

    unsetenv("SLURM_ARRAY_TASK_ID");
    cr_assert_eq(svp_job_shard_from_env("0-2", &s, err, sizeof(err)),
                 SVP_ERR_NOT_FOUND);
    /* --array=4-6: task 5 is shard 1 of 3 */
    setenv("SLURM_ARRAY_TASK_ID", "5", 1);
    cr_assert_eq(svp_job_shard_from_env("4-6", &s, err, sizeof(err)), SVP_OK, "%s",
                 err);
    cr_assert(s.index == 1 && s.count == 3);
    /* resubmitted alone (sbatch --array=5): Slurm's MIN and MAX say 5-5, the
     * spec's range still makes it shard 1 of 3 */
    setenv("SLURM_ARRAY_TASK_MIN", "5", 1);
    setenv("SLURM_ARRAY_TASK_MAX", "5", 1);
    cr_assert_eq(svp_job_shard_from_env("4-6%2", &s, err, sizeof(err)), SVP_OK, "%s",
                 err);
    cr_assert(s.index == 1 && s.count == 3);
    /* lists and steps are no shards of one count; a task outside the range */
    cr_assert_eq(svp_job_shard_from_env("4-8:2", &s, err, sizeof(err)),
                 SVP_ERR_USAGE);
    cr_assert_not_null(strstr(err, "cluster.array: expected a range"), "%s", err);
    cr_assert_eq(svp_job_shard_from_env("1,3,5", &s, err, sizeof(err)),
                 SVP_ERR_USAGE);
    cr_assert_eq(svp_job_shard_from_env("0-3", &s, err, sizeof(err)), SVP_ERR_USAGE);
    cr_assert_not_null(strstr(err, "SLURM_ARRAY_TASK_ID=5: expected a task of"),
                       "%s", err);
    unsetenv("SLURM_ARRAY_TASK_ID");
}

Test(shard, run_level_files_have_a_name_per_shard)
{
    svp_job_shard_t one = {0, 1}, t = {1, 3};
    char            buf[64];

    svp_job_shard_file(&one, "run", ".json", buf, sizeof(buf));
    cr_assert_str_eq(buf, "run.json");
    svp_job_shard_file(&t, "run", ".json", buf, sizeof(buf));
    cr_assert_str_eq(buf, "run.shard-1-of-3.json");
}

/* Writes text into tmpdir/rel. */
static void put(const char *rel, const char *text)
{
    char  path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(samples, an_image_is_its_content_under_any_path, .init = mkfolder,
     .fini = rmfolder)
{
    svp_job_samples_t *l = NULL, *moved = NULL;
    char               err[1024], why[1024], path[1024], *rec;

    cr_assert_eq(manifest("{\"image\": \"img/a.png\", \"seed\": 3}\n", "", err,
                          sizeof(err), &l),
                 SVP_OK, "%s", err);
    rec = svp_job_samples_params_json(l, 0);
    cr_assert_not_null(rec);
    cr_assert_eq(svp_job_samples_params_check(l, 0, rec, "s.json", why, sizeof(why)),
                 SVP_OK, "%s", why);

    /* replaced in place by another picture: the same path, another image */
    put("img/a.png", "another picture");
    why[0] = '\0';
    cr_assert_eq(svp_job_samples_params_check(l, 0, rec, "s.json", why, sizeof(why)),
                 SVP_ERR_SPEC);
    cr_assert_not_null(strstr(why, "s.json was made from another image"), "%s", why);
    cr_assert_not_null(strstr(why, "img/a.png"), "%s", why);
    /* both digests, in full: sha256("x") and sha256("another picture") */
    cr_assert_not_null(strstr(why,
                              "sha256 2d711642b726b04401627ca9fbac32f5c8530fb1903"
                              "cc4db02258717921a4881"),
                       "%s", why);
    cr_assert_not_null(strstr(why,
                              "sha256 b2917681b4f4fee3ef345ae33557fbe7ddbee9e0851"
                              "efbff9cad5708ef1ad247"),
                       "%s", why);
    cr_assert_not_null(strstr(why, "this job has '"), "%s", why);
    put("img/a.png", "x");

    /* the folder moved (the same bytes elsewhere): the same image */
    snprintf(path, sizeof(path), "mv '%s/img' '%s/pictures'", tmpdir, tmpdir);
    cr_assert_eq(system(path), 0);
    cr_assert_eq(manifest("{\"image\": \"pictures/a.png\", \"seed\": 3}\n", "", err,
                          sizeof(err), &moved),
                 SVP_OK, "%s", err);
    cr_assert_eq(svp_job_samples_params_check(moved, 0, rec, "s.json", why,
                                              sizeof(why)),
                 SVP_OK, "%s", why);
    free(rec);
    svp_job_samples_destroy(l);
    svp_job_samples_destroy(moved);
}
