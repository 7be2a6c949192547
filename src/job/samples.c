/*
 * The sample list of a job: from video.inputs and video.seeds, from the
 * spec alone, or from the manifest (manifest.c), and each sample's
 * recorded parameters, which resume holds an output to (see samples.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/samples.h"
#include "job/samples_int.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/str.h"
#include "common/errf.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

svp_job_samples_t *svp_job_samples_alloc(int count)
{
    svp_job_samples_t *list = calloc(1, sizeof(*list));

    if (list == NULL) {
        return NULL;
    }
    list->items = calloc((size_t)count + 1, sizeof(*list->items));
    if (list->items == NULL) {
        free(list);
        return NULL;
    }
    list->count = count;
    return list;
}

void svp_job_samples_destroy(svp_job_samples_t *list)
{
    int i;

    if (list == NULL) {
        return;
    }
    for (i = 0; i < list->count; ++i) {
        free(list->items[i].name);
    }
    for (i = 0; i < list->nimages; ++i) {
        free(list->images[i]);
    }
    free(list->images);
    free(list->items);
    free(list->manifest);
    free(list);
}

svp_status_t svp_job_samples_add_image(svp_job_samples_t *list, const char *path)
{
    char **grown;

    if ((list->nimages & (list->nimages - 1)) == 0) {
        /* doubling at powers of two: a million-line manifest adds in linear time */
        grown =
            realloc(list->images, SVP_MAX(2 * list->nimages, 1) * sizeof(*grown));
        if (grown == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        list->images = grown;
    }
    list->images[list->nimages] = svp_strdup(path);
    if (list->images[list->nimages] == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    list->nimages++;
    return SVP_OK;
}

void svp_job_samples_defaults(const svp_spec_t *spec, svp_job_sample_params_t *p)
{
    p->image              = -1;
    p->line               = 0;
    p->name               = NULL;
    p->seed               = spec->seed;
    p->fps                = spec->video.fps;
    p->motion_bucket_id   = spec->video.motion_bucket_id;
    p->noise_aug_strength = spec->video.noise_aug_strength;
    p->min_guidance       = spec->video.min_guidance;
    p->max_guidance       = spec->video.max_guidance;
}

static int svp_samples_is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');

    return dot != NULL && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") ||
                           !strcasecmp(dot, ".jpeg"));
}

static int svp_samples_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * video.inputs: files, or folders whose PNG/JPEG files are taken in name
 * order (so a folder gives the same list on every rank and every run).
 */
static svp_status_t svp_samples_collect_inputs(const svp_spec_t          *spec,
                                               const svp_pipe_path_map_t *map,
                                               svp_job_samples_t *list, char *errbuf,
                                               int errlen)
{
    struct dirent *de;
    struct stat    sb;
    DIR           *d;
    char           path[4096];
    int            i, first;
    svp_status_t   status;

    for (i = 0; i < spec->video.inputs.count; ++i) {
        const char *in = spec->video.inputs.items[i];
        const char *at = in; /* where this host sees it */
        char        seen[4096];

        if (map != NULL) {
            if (!map->fn(map->arg, in, seen, sizeof(seen))) {
                svp_errf(errbuf, errlen, "%s: video.inputs[%d]: %s %s", spec->file,
                         i, in, map->unseen);
                return SVP_ERR_NOT_FOUND;
            }
            at = seen;
        }
        if (stat(at, &sb) != 0) {
            svp_errf(errbuf, errlen, "%s: video.inputs[%d]: cannot open %s: %s",
                     spec->file, i, at, strerror(errno));
            return SVP_ERR_NOT_FOUND;
        }
        if (!S_ISDIR(sb.st_mode)) {
            status = svp_job_samples_add_image(list, in);
            if (status != SVP_OK) {
                return status;
            }
            continue;
        }
        d = opendir(at);
        if (d == NULL) {
            svp_errf(errbuf, errlen,
                     "%s: video.inputs[%d]: cannot read "
                     "directory %s: %s",
                     spec->file, i, at, strerror(errno));
            return SVP_ERR_IO;
        }
        first = list->nimages;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.' || !svp_samples_is_image_name(de->d_name)) {
                continue;
            }
            snprintf(path, sizeof(path), "%s/%s", in, de->d_name);
            status = svp_job_samples_add_image(list, path);
            if (status != SVP_OK) {
                closedir(d);
                return status;
            }
        }
        closedir(d);
        if (list->nimages == first) {
            svp_errf(errbuf, errlen,
                     "%s: video.inputs[%d]: no .png, .jpg or "
                     ".jpeg file in %s",
                     spec->file, i, at);
            return SVP_ERR_NOT_FOUND;
        }
        qsort(list->images + first, list->nimages - first, sizeof(char *),
              svp_samples_cmp_str);
    }
    return SVP_OK;
}
svp_status_t svp_job_samples_create(const svp_spec_t *spec, char *errbuf, int errlen,
                                    svp_job_samples_t **list_p)
{
    return svp_job_samples_create_mapped(spec, NULL, errbuf, errlen, list_p);
}

svp_status_t svp_job_samples_create_mapped(const svp_spec_t          *spec,
                                           const svp_pipe_path_map_t *map,
                                           char *errbuf, int errlen,
                                           svp_job_samples_t **list_p)
{
    svp_job_samples_t *list = NULL, *from = NULL;
    svp_status_t       status;
    int                n, i, I, S;

    if (spec->video.manifest[0] != '\0') {
        if (spec->video.inputs.count > 0 || spec->video.seeds.count > 0) {
            svp_errf(errbuf, errlen,
                     "%s: video.manifest: expected either a "
                     "manifest or video.inputs/video.seeds, found both",
                     spec->file);
            return SVP_ERR_SPEC;
        }
        status = svp_job_samples_read_manifest(spec, map, &list, errbuf, errlen);
        if (status != SVP_OK) {
            return status;
        }
        if (spec->samples > list->count) {
            svp_errf(errbuf, errlen,
                     "%s: samples: expected at most the %d "
                     "samples of the manifest %s, found %d",
                     spec->file, list->count, spec->video.manifest, spec->samples);
            svp_job_samples_destroy(list);
            return SVP_ERR_SPEC;
        }
        if (spec->samples > 0 && spec->samples < list->count) {
            for (i = spec->samples; i < list->count; ++i) {
                free(list->items[i].name);
            }
            list->count = spec->samples;
        }
        *list_p = list;
        return SVP_OK;
    }

    if (spec->video.inputs.count == 0) {
        if (spec->video.seeds.count > 0) {
            svp_errf(errbuf, errlen,
                     "%s: video.seeds: expected video.inputs "
                     "to go with it (the seeds are per image), found none",
                     spec->file);
            return SVP_ERR_SPEC;
        }
        n    = (spec->samples > 0) ? spec->samples : SVP_JOB_SAMPLES_DEFAULT;
        list = svp_job_samples_alloc(n);
        if (list == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        list->total = n;
        for (i = 0; i < n; ++i) {
            svp_job_samples_defaults(spec, &list->items[i]);
            /* the spec gives one seed: sample i takes seed + i (a
             * conditioning file's sets repeat, each round its own seed;
             * the simulator's samples differ the same way) */
            list->items[i].seed = spec->seed + (uint64_t)i;
        }
        *list_p = list;
        return SVP_OK;
    }

    /* images x seeds */
    from = calloc(1, sizeof(*from));
    if (from == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_samples_collect_inputs(spec, map, from, errbuf, errlen);
    if (status != SVP_OK) {
        svp_job_samples_destroy(from);
        return status;
    }
    I = from->nimages;
    S = (spec->video.seeds.count > 0) ? spec->video.seeds.count : 1;
    if (spec->video.seeds.count == 0 && I > 0 && spec->samples > I) {
        /* the single seed as rounds: seed, seed + 1, ... (how a spec with
         * one seed and more samples than images always read) */
        S = (spec->samples + I - 1) / I;
    }
    if ((int64_t)I * S > 1000000) {
        svp_errf(errbuf, errlen,
                 "%s: video.seeds: %d images x %d seeds make "
                 "more than 1000000 samples",
                 spec->file, I, S);
        svp_job_samples_destroy(from);
        return SVP_ERR_SPEC;
    }
    if (spec->samples > I * S) {
        svp_errf(errbuf, errlen,
                 "%s: samples: expected at most the %d samples "
                 "%d image%s x %d seed%s make, found %d",
                 spec->file, I * S, I, I == 1 ? "" : "s", S, S == 1 ? "" : "s",
                 spec->samples);
        svp_job_samples_destroy(from);
        return SVP_ERR_SPEC;
    }
    n    = (spec->samples > 0) ? spec->samples : I * S;
    list = svp_job_samples_alloc(n);
    if (list == NULL) {
        svp_job_samples_destroy(from);
        return SVP_ERR_NO_MEMORY;
    }
    list->images  = from->images;
    list->nimages = from->nimages;
    from->images  = NULL;
    from->nimages = 0;
    svp_job_samples_destroy(from);
    list->total  = I * S;
    list->nseeds = S;
    for (i = 0; i < n; ++i) {
        svp_job_samples_defaults(spec, &list->items[i]);
        list->items[i].image = i % I;
        list->items[i].seed  = (spec->video.seeds.count > 0)
                                   ? (uint64_t)spec->video.seeds.items[i / I]
                                   : spec->seed + (uint64_t)(i / I);
    }
    *list_p = list;
    return SVP_OK;
}

void svp_job_samples_describe(const svp_job_samples_t *list, char *buf, int len)
{
    int  n       = 0;
    char cap[96] = "";

    if (list->count < list->total) {
        snprintf(cap, sizeof(cap), " (samples caps the %d %s make)", list->total,
                 (list->manifest != NULL) ? "lines" : "pairs");
    }
    n = snprintf(buf, (size_t)len, "%d sample%s", list->count,
                 list->count == 1 ? "" : "s");
    if (n < 0 || n >= len) {
        return;
    }
    if (list->manifest != NULL) {
        snprintf(buf + n, (size_t)(len - n), " from the manifest %s%s",
                 list->manifest, cap);
    } else if (list->nimages > 0) {
        snprintf(buf + n, (size_t)(len - n), ": %d image%s x %d seed%s%s",
                 list->nimages, list->nimages == 1 ? "" : "s", list->nseeds,
                 list->nseeds == 1 ? "" : "s", cap);
    }
}

const char *svp_job_samples_image(const svp_job_samples_t *list, int i)
{
    int k = list->items[i].image;

    return (k >= 0) ? list->images[k] : NULL;
}

void svp_job_samples_name(const svp_job_samples_t *list, int i, char *buf, int len)
{
    if (list->items[i].name != NULL) {
        snprintf(buf, (size_t)len, "%s", list->items[i].name);
    } else {
        snprintf(buf, (size_t)len, "sample_%06d", i);
    }
}
/* The image's resolved path (realpath) into buf, or the path as given when
 * it does not resolve (then the content hash decides, or nothing). */
static void svp_samples_resolved(const char *image, char *buf, size_t len)
{
    char *r = realpath(image, NULL);

    snprintf(buf, len, "%s", (r != NULL) ? r : image);
    free(r);
}

char *svp_job_samples_params_json(const svp_job_samples_t *list, int i)
{
    const svp_job_sample_params_t *p     = &list->items[i];
    const char                    *image = svp_job_samples_image(list, i);
    char                           name[256], *s, path[4096], hash[65];
    json_t                        *o;

    svp_job_samples_name(list, i, name, sizeof(name));
    o = json_pack("{s:s?, s:I, s:i, s:i, s:f, s:f, s:f, s:s}", "image", image,
                  "seed", (json_int_t)p->seed, "fps", p->fps, "motion_bucket_id",
                  p->motion_bucket_id, "noise_aug_strength", p->noise_aug_strength,
                  "min_guidance", p->min_guidance, "max_guidance", p->max_guidance,
                  "name", name);
    if (o == NULL) {
        return NULL;
    }
    if (image != NULL) {
        /* what the image is wherever it is seen from: resume compares these,
         * not the path as typed (svp_job_samples_params_check) */
        svp_samples_resolved(image, path, sizeof(path));
        json_object_set_new(o, "image_path", json_string(path));
        if (svp_sha256_file(image, hash) == SVP_OK) {
            json_object_set_new(o, "image_sha256", json_string(hash));
        }
    }
    s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}

/* A JSON value as a short string for a message. */
static void svp_samples_show(json_t *v, char *buf, size_t len)
{
    char *t;

    if (v == NULL) {
        snprintf(buf, len, "(none)");
    } else if (json_is_string(v)) {
        snprintf(buf, len, "'%s'", json_string_value(v));
    } else {
        t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(9));
        snprintf(buf, len, "%s", (t != NULL) ? t : "?");
        free(t);
    }
}

/*
 * Whether the recorded image is ours.  Where the record has the image's
 * digest and the image reads, its bytes decide: a picture replaced under
 * the same path is another image, a copy under another path (another
 * mount, a moved folder) the same.  Else the same resolved path; a record
 * without either (before 0.4) by its path as typed.  *digest (65 bytes)
 * holds the image's digest when it was computed, else "".
 */
static int svp_samples_same_image(json_t *got, const char *image, char *digest)
{
    json_t *path  = json_object_get(got, "image_path");
    json_t *hash  = json_object_get(got, "image_sha256");
    json_t *typed = json_object_get(got, "image");
    char    mine[4096];

    digest[0] = '\0';
    if (image == NULL) {
        return (typed == NULL) || json_is_null(typed);
    }
    if (json_is_string(hash) && svp_sha256_file(image, digest) == SVP_OK) {
        return strcmp(json_string_value(hash), digest) == 0;
    }
    digest[0] = '\0';
    svp_samples_resolved(image, mine, sizeof(mine));
    if (json_is_string(path) && strcmp(json_string_value(path), mine) == 0) {
        return 1;
    }
    return json_is_string(typed) && (strcmp(json_string_value(typed), image) == 0);
}

svp_status_t svp_job_samples_params_check(const svp_job_samples_t *list, int i,
                                          const char *recorded, const char *where,
                                          char *why, size_t len)
{
    static const char *const       keys[] = {"seed",
                                             "fps",
                                             "motion_bucket_id",
                                             "noise_aug_strength",
                                             "min_guidance",
                                             "max_guidance",
                                             "name"};
    const svp_job_sample_params_t *p      = &list->items[i];
    const char                    *image  = svp_job_samples_image(list, i);
    char                           a[300], b[300], digest[65];
    json_t                        *got, *want, *gv, *wv;
    size_t                         k;
    svp_status_t                   status = SVP_OK;

    got = json_loads(recorded, 0, NULL);
    if (!json_is_object(got)) {
        json_decref(got);
        snprintf(why, len, "%s: its recorded parameters do not parse", where);
        return SVP_ERR_BAD_FILE;
    }
    /* this sample's own, without the image's hash (costly, and only wanted
     * when the paths differ) */
    svp_job_samples_name(list, i, a, sizeof(a));
    want =
        json_pack("{s:I, s:i, s:i, s:f, s:f, s:f, s:s}", "seed", (json_int_t)p->seed,
                  "fps", p->fps, "motion_bucket_id", p->motion_bucket_id,
                  "noise_aug_strength", p->noise_aug_strength, "min_guidance",
                  p->min_guidance, "max_guidance", p->max_guidance, "name", a);
    if (want == NULL) {
        json_decref(got);
        return SVP_ERR_NO_MEMORY;
    }
    if (!svp_samples_same_image(got, image, digest)) {
        gv = json_object_get(got, "image_path");
        svp_samples_show(gv != NULL ? gv : json_object_get(got, "image"), a,
                         sizeof(a));
        svp_samples_resolved(image != NULL ? image : "", b, sizeof(b));
        if (image != NULL && json_is_string(json_object_get(got, "image_sha256")) &&
            digest[0] != '\0') {
            snprintf(why, len,
                     "%s was made from another image: image: %s (sha256 "
                     "%s), this job has '%s' (sha256 %s)",
                     where, a,
                     json_string_value(json_object_get(got, "image_sha256")), b,
                     digest);
        } else {
            snprintf(why, len,
                     "%s was made from another image: image: %s, this "
                     "job has %s%s%s",
                     where, a, image ? "'" : "", image ? b : "(none)",
                     image ? "'" : "");
        }
        status = SVP_ERR_SPEC;
        goto out;
    }
    for (k = 0; k < sizeof(keys) / sizeof(keys[0]); ++k) {
        gv = json_object_get(got, keys[k]);
        wv = json_object_get(want, keys[k]);
        if (gv != NULL && json_is_number(gv) && json_is_number(wv)) {
            /* numbers as recorded: %.9g, like every record of them */
            snprintf(a, sizeof(a), "%.9g", json_number_value(gv));
            snprintf(b, sizeof(b), "%.9g", json_number_value(wv));
            if (strcmp(a, b) == 0) {
                continue;
            }
        } else if (gv != NULL && json_equal(gv, wv)) {
            continue;
        }
        svp_samples_show(gv, a, sizeof(a));
        svp_samples_show(wv, b, sizeof(b));
        snprintf(why, len,
                 "%s was made with other parameters: %s: %s, this job "
                 "has %s",
                 where, keys[k], a, b);
        status = SVP_ERR_SPEC;
        goto out;
    }
out:
    json_decref(got);
    json_decref(want);
    return status;
}
