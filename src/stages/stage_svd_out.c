/*
 * The SVD stage's finish and resume check (stage_svd_int.h): where a sample
 * leaves.  latents / scaling_factor, VAE decode in chunks of
 * video.decode_chunk_size frames, clamp(x/2 + 0.5, 0, 1), then the sample
 * directory with frames, video, sample.json and latents, written whole or
 * not at all (with output.format webdataset, staged for its shard:
 * job/wds.h); and the check that such a directory, or a shard's record of
 * the sample, is this job's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "stages/stage_svd_int.h"
#include "media/frames.h"
#include "media/sample_dir.h"
#include "media/video.h"
#include "job/outputs.h"
#include "job/wds.h"
#include "trace/range.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/file.h"

#include <jansson.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The decode with host input and output: on the CPU backend straight from
 * and into them (its memory is the host's: no copy of the frames), else
 * through buffers of the ops handle (as the encode, stage_svd_cond.c). */
static svp_status_t svp_stage_svd_vae_decode_n(svp_stage_svd_t *st, int nframes,
                                               int chunk, const float *latents,
                                               float *frames)
{
    int64_t      in        = (int64_t)nframes * 4 * st->h * st->w;
    int64_t      out       = (int64_t)nframes * 3 * st->H * st->W;
    float       *d_latents = NULL, *d_frames = NULL;
    svp_status_t status;

    if (st->spec->device == SVP_OPS_BACKEND_CPU) {
        return svp_vae_decode(st->vae, nframes, (int)st->h, (int)st->w, chunk,
                              latents, frames);
    }

    status = svp_stage_svd_dev_buf(st, latents, in, &d_latents);
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, out, &d_frames);
    }
    if (status == SVP_OK) {
        status = svp_vae_decode(st->vae, nframes, (int)st->h, (int)st->w, chunk,
                                d_latents, d_frames);
    }
    if (status == SVP_OK) {
        status = svp_ops_download(st->ops, frames, d_frames, (size_t)out);
    }
    svp_ops_free(st->ops, d_frames);
    svp_ops_free(st->ops, d_latents);
    return status;
}

/* A number rounded to milliseconds, as sample.json gives timings. */
static json_t *svp_stage_svd_json_ms(double seconds)
{
    return json_real(round(seconds * 1e3) / 1e3);
}

/* sample.json: what a person needs to know what this video is; in dir, or
 * a member of the staged sample h (output.format webdataset). */
static svp_status_t svp_stage_svd_write_json(svp_stage_svd_t    *st,
                                             const svp_sample_t *s, const char *dir,
                                             svp_job_wds_stage_h h, double decode_s)
{
    const svp_spec_t              *spec   = st->spec;
    const svp_job_sample_params_t *p      = &st->list->items[s->index];
    const double                  *timing = s->tensors[SVD_T_TIMING]->data;
    char                           path[4096], features[128], *buf, *text, *params;
    json_t                        *o, *cpu, *times, *po;
    svp_ops_blas_t                 blas;
    svp_status_t                   status;

    /* the sample's own parameters in one object (its manifest line, if
     * any): what resume compares, whichever keys sit beside it */
    params = svp_job_samples_params_json(st->list, s->index);
    po     = (params != NULL) ? json_loads(params, 0, NULL) : NULL;
    free(params);
    /* the CPU's BLAS kernels and threads, which decide its last bits, and
     * who chose the kernels: the site, svdpipe (with the library's own
     * choice it replaced and the CPU it chose for) or the BLAS */
    svp_ops_blas_query(&blas);
    svp_ops_cpuid_features(&blas.cpu, features, sizeof(features));
    cpu = json_pack("{s:s, s:s, s:o, s:s, s:o, s:{s:s, s:i, s:i, s:s}, s:i}", "blas",
                    blas.library, "kernels", blas.kernels, "forced_by",
                    (blas.forced[0] != '\0')
                        ? json_sprintf("OPENBLAS_CORETYPE=%s", blas.forced)
                        : json_null(),
                    "chosen_by",
                    (blas.forced[0] != '\0') ? "OPENBLAS_CORETYPE"
                    : (blas.ours[0] != '\0') ? "svdpipe"
                                             : "the BLAS",
                    "blas_choice",
                    (blas.ours[0] != '\0')     ? json_string(blas.own)
                    : (blas.forced[0] == '\0') ? json_string(blas.kernels)
                                               : json_null(),
                    "processor", "vendor", blas.cpu.vendor, "family",
                    blas.cpu.family, "model", blas.cpu.model, "features", features,
                    "threads", svp_ops_threads(st->ops));
    times =
        json_pack("{s:o, s:o, s:o}", "encode_s", svp_stage_svd_json_ms(timing[1]),
                  "decode_s", svp_stage_svd_json_ms(decode_s), "end_to_end_s",
                  svp_stage_svd_json_ms(svp_clock_wall() - timing[0]));
    o = json_pack("{s:s, s:i}", "job", spec->name, "sample", s->index);
    if (o == NULL || po == NULL || cpu == NULL || times == NULL) {
        json_decref(o);
        json_decref(po);
        json_decref(cpu);
        json_decref(times);
        return SVP_ERR_NO_MEMORY;
    }
    if (st->cond != NULL) {
        json_object_set_new(o, "conditioning",
                            json_string(spec->model.conditioning));
    } else {
        json_object_set_new(o, "image",
                            json_string(svp_job_samples_image(st->list, s->index)));
    }
    json_object_set_new(o, "seed",
                        json_integer(*(int64_t *)s->tensors[SVD_T_SEED]->data));
    json_object_set_new(o, "steps", json_integer(spec->steps));
    json_object_set_new(o, "num_frames", json_integer(st->F));
    json_object_set_new(o, "width", json_integer(st->W));
    json_object_set_new(o, "height", json_integer(st->H));
    json_object_set_new(o, "fps", json_integer(p->fps));
    json_object_set_new(o, "motion_bucket_id", json_integer(p->motion_bucket_id));
    json_object_set_new(o, "noise_aug_strength", json_real(p->noise_aug_strength));
    json_object_set_new(o, "min_guidance", json_real(p->min_guidance));
    json_object_set_new(o, "max_guidance", json_real(p->max_guidance));
    json_object_set_new(o, "params", po);
    json_object_set_new(o, "decode_chunk_size",
                        json_integer(spec->video.decode_chunk_size));
    json_object_set_new(o, "device", json_string(svp_ops_backend(st->ops)));
    json_object_set_new(o, "dtype", json_string(svp_ops_dtype(st->ops)));
    /* where the products ran: their last bits depend on it */
    json_object_set_new(o, "products",
                        svp_ops_product_units(st->ops) != NULL
                            ? json_sprintf("%s on %s",
                                           svp_dtype_short_name(
                                               svp_ops_product_dtype(st->ops)),
                                           svp_ops_product_units(st->ops))
                            : json_string("f32"));
    json_object_set_new(o, "cpu", cpu);
    json_object_set_new(o, "timings", times);
    text =
        json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(o);
    if (text == NULL || asprintf(&buf, "%s\n", text) < 0) {
        free(text);
        return SVP_ERR_NO_MEMORY;
    }
    free(text);
    if (h != NULL) {
        status = svp_job_wds_stage_add(h, "sample.json", buf, strlen(buf));
    } else {
        snprintf(path, sizeof(path), "%s/sample.json", dir);
        status = svp_file_write_atomic(path, buf, strlen(buf));
    }
    free(buf);
    return status;
}

/*
 * Decodes the chunks of lat (video.decode_chunk_size frames each) whose
 * index k has k mod 2 = lane into dec, one call per chunk: a chunk's frames
 * depend on its latents alone (svp_vae_decode runs the chunks one after
 * the other the same way), so the halves of a pair make the bits one rank
 * makes.
 */
static svp_status_t svp_stage_svd_decode_share(svp_stage_svd_t *st, const float *lat,
                                               float *dec, int lane)
{
    int64_t      in = 4 * st->h * st->w, out = 3 * st->H * st->W;
    int          c      = st->spec->video.decode_chunk_size, f0, k, len;
    svp_status_t status = SVP_OK;

    c = (c <= 0 || c > st->F) ? (int)st->F : c;
    for (f0 = 0, k = 0; f0 < st->F && status == SVP_OK; f0 += c, ++k) {
        len = (st->F - f0 < c) ? (int)st->F - f0 : c;
        if (k % 2 != lane) {
            continue;
        }
        status =
            svp_stage_svd_vae_decode_n(st, len, len, lat + f0 * in, dec + f0 * out);
    }
    return status;
}

/* Copies lane 1's chunks of src into dec. */
static void svp_stage_svd_merge_share(const svp_stage_svd_t *st, const float *src,
                                      float *dec)
{
    int64_t out = 3 * st->H * st->W;
    int     c   = st->spec->video.decode_chunk_size, f0, k, len;

    c = (c <= 0 || c > st->F) ? (int)st->F : c;
    for (f0 = 0, k = 0; f0 < st->F; f0 += c, ++k) {
        len = (st->F - f0 < c) ? (int)st->F - f0 : c;
        if (k % 2 == 1) {
            memcpy(dec + f0 * out, src + f0 * out,
                   (size_t)(len * out) * sizeof(float));
        }
    }
}

/* The sample's latents / scaling_factor, the decode's input (malloc'd;
 * NULL: no memory).  The reciprocal in double, the product in float (as
 * diffusers does: dividing instead moves the frames by about 1e-6). */
static float *svp_stage_svd_unscaled(const svp_stage_svd_t *st,
                                     const svp_sample_t    *s)
{
    int64_t      n   = st->F * 4 * st->h * st->w, i;
    const float *x   = s->tensors[SVD_T_LATENTS]->data;
    float       *lat = malloc(n * sizeof(float));
    float        inv = (float)(1.0 / svp_vae_config(st->vae)->scaling_factor);

    for (i = 0; lat != NULL && i < n; ++i) {
        lat[i] = x[i] * inv;
    }
    return lat;
}

/* The frames' floats, the decode's output (0 without a VAE). */
static int64_t svp_stage_svd_frames_numel(const svp_stage_svd_t *st)
{
    return (st->vae != NULL) ? st->F * 3 * st->H * st->W : 0;
}

size_t svp_stage_svd_share_bytes(void *self)
{
    return (size_t)svp_stage_svd_frames_numel(self) * sizeof(float);
}

/*
 * A pair's share of the decode (stage.h): lane's chunks, lane 1's into its
 * message, lane 0's into the stage's share buffer, which the shared finish
 * then completes with lane 1's.
 */
svp_status_t svp_stage_svd_share(void *self, svp_sample_t *s, int lane, void *out,
                                 size_t bytes)
{
    svp_stage_svd_t *st = self;
    int64_t          m  = svp_stage_svd_frames_numel(st);
    float           *lat, *dec;
    double           t0 = svp_clock_now();
    svp_status_t     status;

    if (st->vae == NULL) {
        return SVP_OK; /* latents only: lane 0 writes them */
    }
    if (lane == 1 && bytes != (size_t)m * sizeof(float)) {
        return SVP_ERR_INTERNAL;
    }
    if (lane == 0 && st->share_dec == NULL &&
        (st->share_dec = malloc(m * sizeof(float))) == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    dec = (lane == 1) ? out : st->share_dec;
    lat = svp_stage_svd_unscaled(st, s);
    if (lat == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    svp_range_push_ctx("sample %d decode (lane %d's share)", s->index, lane);
    status = svp_stage_svd_decode_share(st, lat, dec, lane);
    svp_range_pop();
    free(lat);
    st->share_decode_s = svp_clock_now() - t0;
    return status;
}

/*
 * The decoded frames of the sample into dec: all of them (theirs NULL), or
 * a shared finish's, lane 0's share (decoded by svp_stage_svd_share into
 * the share buffer) with lane 1's from theirs.
 */
static svp_status_t svp_stage_svd_decode(svp_stage_svd_t *st, const svp_sample_t *s,
                                         const float *theirs, float *dec)
{
    int64_t      m = svp_stage_svd_frames_numel(st);
    float       *lat;
    svp_status_t status;

    if (theirs != NULL) {
        memcpy(dec, st->share_dec, (size_t)m * sizeof(float));
        svp_stage_svd_merge_share(st, theirs, dec);
        return SVP_OK;
    }
    lat = svp_stage_svd_unscaled(st, s);
    if (lat == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    svp_range_push_ctx("sample %d decode", s->index);
    status = svp_stage_svd_vae_decode_n(st, (int)st->F,
                                        st->spec->video.decode_chunk_size, lat, dec);
    svp_range_pop();
    free(lat);
    return status;
}

/* Where sample i's directory goes: output.dir/NAME, or with output.format
 * webdataset its staged file. */
static void svp_stage_svd_sample_dir(const svp_stage_svd_t *st, int i, char *buf,
                                     size_t len)
{
    char name[256];

    if (st->wds != NULL) {
        svp_job_wds_staged_path(st->wds, i, buf, len);
        return;
    }
    svp_job_samples_name(st->list, i, name, sizeof(name));
    snprintf(buf, len, "%s/%s", st->spec->output.dir, name);
}

svp_job_wds_h svp_stage_svd_shards(void *self)
{
    return ((svp_stage_svd_t *)self)->wds;
}

svp_status_t svp_stage_svd_finish(void *self, svp_sample_t *s)
{
    return svp_stage_svd_finish_shared(self, s, NULL, 0);
}

/* The outputs of the sample: frames (decoded here, or shared: theirs set),
 * the video, latents and sample.json, in one sample directory (with
 * output.format webdataset, one staged file: the latents and sample.json
 * from memory, the frames and video from its scratch folder). */
svp_status_t svp_stage_svd_finish_shared(void *self, svp_sample_t *s,
                                         const void *theirs, size_t bytes)
{
    svp_stage_svd_t         *st     = self;
    const svp_spec_t        *spec   = st->spec;
    svp_media_sample_dir_h   dir    = NULL;
    svp_job_wds_stage_h      stage  = NULL;
    svp_media_frames_t      *frames = NULL;
    svp_media_video_params_t vp;
    float                   *dec = NULL;
    int64_t                  i, m = svp_stage_svd_frames_numel(st);
    char                     path[4200], file[4300];
    const char              *where;
    void                    *latents     = NULL;
    size_t                   latents_len = 0;
    double                   t0, decode_s = 0;
    svp_status_t             status;

    if (theirs != NULL && st->vae != NULL && bytes != (size_t)m * sizeof(float)) {
        return SVP_ERR_INTERNAL;
    }
    status = svp_mkdir_p(spec->output.dir, 0755);
    if (status != SVP_OK) {
        return status;
    }
    svp_stage_svd_sample_dir(st, s->index, path, sizeof(path));
    if (st->wds != NULL) {
        status = svp_job_wds_stage_begin(path, &stage);
        where  = (status == SVP_OK) ? svp_job_wds_stage_scratch(stage) : NULL;
        if (status == SVP_OK && where == NULL) {
            svp_job_wds_stage_abort(stage);
            status = SVP_ERR_IO;
        }
    } else {
        status = svp_media_sample_dir_begin(path, &dir);
        where  = (status == SVP_OK) ? svp_media_sample_dir_path(dir) : NULL;
    }
    if (status != SVP_OK) {
        return status;
    }
    /* the seed travels in the message; this rank may not be where it began */
    s->seed = (uint64_t) * (int64_t *)s->tensors[SVD_T_SEED]->data;
    if (stage != NULL) {
        status =
            svp_sample_tensor_bytes(spec, s, "latents", s->tensors[SVD_T_LATENTS],
                                    "svd", NULL, &latents, &latents_len);
        if (status == SVP_OK) {
            status = svp_job_wds_stage_add(stage, "latents.safetensors", latents,
                                           latents_len);
        }
        free(latents);
    } else {
        snprintf(file, sizeof(file), "%s/latents.safetensors", where);
        status =
            svp_sample_write_tensor(spec, s, "latents", s->tensors[SVD_T_LATENTS],
                                    "svd", NULL, file);
    }

    if (status == SVP_OK && st->vae != NULL) {
        t0  = svp_clock_now();
        dec = malloc(m * sizeof(float));
        if (dec == NULL) {
            status = SVP_ERR_NO_MEMORY;
            goto out;
        }
        status = svp_stage_svd_decode(st, s, theirs, dec);
        if (status != SVP_OK) {
            goto out;
        }
        for (i = 0; i < m; ++i) {
            dec[i] = dec[i] / 2.0f + 0.5f; /* clamped to [0, 1] below */
        }
        decode_s =
            svp_clock_now() - t0 + ((theirs != NULL) ? st->share_decode_s : 0);
        status = svp_media_frames_from_f32(dec, (int)st->F, (int)st->H, (int)st->W,
                                           &frames);
        if (status == SVP_OK && spec->output.frames) {
            status = svp_media_frames_write_png(frames, where);
        }
#ifdef HAVE_FFMPEG
        if (status == SVP_OK && spec->output.mp4) {
            svp_media_video_params_init(&vp);
            vp.fps = st->list->items[s->index].fps;
            snprintf(file, sizeof(file), "%s/video.mp4", where);
            status = svp_media_video_write_mp4(file, frames, &vp);
        }
#else
        (void)vp;
#endif
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_write_json(st, s, where, stage, decode_s);
    }
out:
    free(dec);
    svp_media_frames_destroy(frames);
    if (status == SVP_OK) {
        status = (stage != NULL) ? svp_job_wds_stage_commit(stage)
                                 : svp_media_sample_dir_commit(dir);
        if (status == SVP_OK) {
            svp_debug("sample %d: wrote %s (decode %.2fs)", s->index, path,
                      decode_s);
        }
        if (status == SVP_OK && st->wds != NULL) {
            svp_job_wds_staged(st->wds, s->index);
        }
    } else if (stage != NULL) {
        svp_job_wds_stage_abort(stage);
    } else {
        svp_media_sample_dir_abort(dir);
    }
    return status;
}

/*
 * Resume: sample_NNNNNN/ is complete (it was renamed into place whole), its
 * sample.json names this job's parameters, its latents file opens with this
 * job's metadata, and the frames and video this job writes are there.
 */
static svp_status_t svp_stage_svd_check_dir(svp_stage_svd_t *st, int index,
                                            const char *dir, json_t *record,
                                            char *why, size_t len)
{
    const svp_spec_t              *spec = st->spec;
    const svp_job_sample_params_t *p    = &st->list->items[index];
    struct {
        const char *key;
        double      want;
    } nums[] = {
        {"sample", index},
        {"seed", (double)svp_stage_svd_seed(st, index)},
        {"steps", spec->steps},
        {"num_frames", (double)st->F},
        {"width", (double)st->W},
        {"height", (double)st->H},
        {"fps", p->fps},
        {"motion_bucket_id", p->motion_bucket_id},
        {"noise_aug_strength", p->noise_aug_strength},
        {"min_guidance", p->min_guidance},
        {"max_guidance", p->max_guidance},
        {"decode_chunk_size", spec->video.decode_chunk_size},
    };
    const char  *skey, *swant, *sgot;
    char         path[4200], txt[64], *got;
    int64_t      shape[5] = {1, st->F, 4, st->h, st->w};
    json_error_t jerr;
    json_t      *root, *v;
    struct stat  sb;
    svp_status_t status = SVP_OK;
    size_t       i;
    int64_t      f;

    if (record != NULL) {
        /* a packed sample: its record from the shard's index */
        snprintf(path, sizeof(path), "%s", dir);
        root = json_incref(record);
    } else {
        if (stat(dir, &sb) != 0) {
            return SVP_ERR_NOT_FOUND;
        }
        snprintf(path, sizeof(path), "%s/sample.json", dir);
        root = json_load_file(path, 0, &jerr);
        if (root == NULL) {
            snprintf(why, len, "%s does not read: %s", path, jerr.text);
            return SVP_ERR_BAD_FILE;
        }
    }
    skey  = (st->cond != NULL) ? "conditioning" : "image";
    swant = (st->cond != NULL) ? spec->model.conditioning
                               : svp_job_samples_image(st->list, index);
    sgot  = json_string_value(json_object_get(root, "job"));
    if (sgot == NULL || strcmp(sgot, spec->name) != 0) {
        snprintf(why, len,
                 "%s was made with other parameters: job: '%s', this job "
                 "has '%s'",
                 path, sgot ? sgot : "(none)", spec->name);
        status = SVP_ERR_SPEC;
        goto out;
    }
    /* the image is the sample's parameters' to compare (by what it is, not
     * how its path was typed); the conditioning file by its resolved path */
    sgot = json_string_value(json_object_get(root, skey));
    if ((st->cond != NULL || json_object_get(root, "params") == NULL) &&
        (sgot == NULL || !svp_same_file(sgot, swant))) {
        snprintf(why, len,
                 "%s was made with other parameters: %s: '%s', this job "
                 "has '%s'",
                 path, skey, sgot ? sgot : "(none)", swant);
        status = SVP_ERR_SPEC;
        goto out;
    }
    for (i = 0; i < sizeof(nums) / sizeof(nums[0]); ++i) {
        /* sample.json holds doubles as %.9g: compare in that form */
        v = json_object_get(root, nums[i].key);
        snprintf(txt, sizeof(txt), "%.9g", nums[i].want);
        if (!json_is_number(v) || json_number_value(v) != strtod(txt, NULL)) {
            snprintf(why, len,
                     "%s was made with other parameters: %s: %.9g, this "
                     "job has %s",
                     path, nums[i].key,
                     json_is_number(v) ? json_number_value(v) : -1.0, txt);
            status = SVP_ERR_SPEC;
            goto out;
        }
    }
    /* the sample's own parameters, as a manifest line gave them; a sample
     * made before they were recorded (0.3) is judged by the keys above */
    v = json_object_get(root, "params");
    if (v != NULL) {
        got = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(9));
        if (got == NULL) {
            status = SVP_ERR_NO_MEMORY;
            goto out;
        }
        status = svp_job_samples_params_check(st->list, index, got, path, why, len);
        free(got);
        if (status != SVP_OK) {
            goto out;
        }
    }
    if (record != NULL) {
        goto out; /* its files: its shard's or staged file's checksum vouches */
    }
    snprintf(path, sizeof(path), "%s/latents.safetensors", dir);
    status = svp_job_outputs_check_tensor(spec, path, "latents", "svd", index,
                                          svp_stage_svd_seed(st, index), 5, shape,
                                          why, len);
    if (status == SVP_ERR_NOT_FOUND) {
        snprintf(why, len, "%s is missing", path);
        status = SVP_ERR_BAD_FILE;
    }
    if (status != SVP_OK || st->vae == NULL) {
        goto out;
    }
    for (f = 0; spec->output.frames && f < st->F; ++f) {
        snprintf(path, sizeof(path), "%s/frame_%04d.png", dir, (int)f);
        if (stat(path, &sb) != 0) {
            snprintf(why, len, "%s is missing", path);
            status = SVP_ERR_BAD_FILE;
            goto out;
        }
    }
#ifdef HAVE_FFMPEG
    snprintf(path, sizeof(path), "%s/video.mp4", dir);
    if (spec->output.mp4 && stat(path, &sb) != 0) {
        snprintf(why, len, "%s is missing", path);
        status = SVP_ERR_BAD_FILE;
    }
#endif
out:
    json_decref(root);
    return status;
}

/*
 * The webdataset's check of a sample (wds.h svp_job_wds_check_cb_t): a
 * packed or staged record and the members this job writes (a shard packed
 * before output.frames was turned on lacks frames).
 */
svp_status_t svp_stage_svd_wds_check(void *arg, int i, const char *where,
                                     json_t *entry, char *why, size_t len)
{
    svp_stage_svd_t  *st   = arg;
    const svp_spec_t *spec = st->spec;
    char              ext[64];
    svp_status_t      status;
    int64_t           f;
    int               missing;

    status = svp_stage_svd_check_dir(st, i, where, json_object_get(entry, "record"),
                                     why, len);
    if (status != SVP_OK) {
        return status;
    }
    snprintf(ext, sizeof(ext), "latents.safetensors");
    missing = !svp_job_wds_entry_has(entry, ext);
    for (f = 0; !missing && st->vae != NULL && spec->output.frames && f < st->F;
         ++f) {
        snprintf(ext, sizeof(ext), "frame_%04d.png", (int)f);
        missing = !svp_job_wds_entry_has(entry, ext);
    }
#ifdef HAVE_FFMPEG
    if (!missing && st->vae != NULL && spec->output.mp4) {
        snprintf(ext, sizeof(ext), "mp4");
        missing = !svp_job_wds_entry_has(entry, ext);
    }
#endif
    if (missing) {
        snprintf(why, len, "%s: the shard has no %s.%s, which this job writes",
                 where, json_string_value(json_object_get(entry, "key")), ext);
        return SVP_ERR_BAD_FILE;
    }
    return SVP_OK;
}

/*
 * Resume: the sample's directory output.dir/NAME is complete and this
 * job's; with output.format webdataset, its shard's record or its staged
 * directory (svp_job_wds_check_sample).
 */
svp_status_t svp_stage_svd_check_output(void *self, int index, char *why, size_t len)
{
    svp_stage_svd_t *st = self;
    char             dir[4200];

    if (st->wds != NULL) {
        return svp_job_wds_check_sample(st->wds, index, why, len);
    }
    svp_stage_svd_sample_dir(st, index, dir, sizeof(dir));
    return svp_stage_svd_check_dir(st, index, dir, NULL, why, len);
}
