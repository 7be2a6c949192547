/*
 * The simulator stage: the dummy UNet on a [B, F, C, H, W] latent.
 * begin: initial latent ~ N(0, 1) from the sample's seed with the counter RNG,
 *        then the encode stand-in (sleep encode_ms);
 * step:  svp_dummy_step;
 * finish: the decode stand-in (sleep decode_ms), then the final latent is
 *        written atomically as <output.dir>/sample_NNNNNN.safetensors (or
 *        the manifest's name) with metadata (job, sample, steps, seed, and
 *        the sample's own parameters); with output.format webdataset it is
 *        staged with a sample.json of the same for its shard (job/wds.h).
 *
 * The seed is the sample list's (job/samples.h): the spec's seed, or a
 * manifest line's.  The simulator reads no image and has no frame rate or
 * guidance, but it records them, so a manifest's parameters reach every
 * sample's output and resume checks them as it does for the model.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/stage.h"
#include "job/outputs.h"
#include "job/samples.h"
#include "job/wds.h"
#include "model/dummy.h"
#include "noise/rng.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/file.h"
#include "common/util.h"

#include "tensor/safetensors.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const svp_spec_t  *spec;
    svp_dummy_h        model;
    svp_dummy_h        half; /* a pair's step: half the cost */
    svp_job_samples_t *list;
    svp_job_wds_h      wds; /* output.format webdataset, else NULL */
} svp_stage_dummy_t;

static svp_status_t svp_stage_dummy_alloc(void *self, int index, svp_sample_t *s)
{
    svp_stage_dummy_t *st = self;
    svp_status_t       status;

    status =
        svp_tensor_create(SVP_DTYPE_F32, 5, st->spec->latent_shape, &s->tensors[0]);
    if (status != SVP_OK) {
        return status;
    }
    s->ntensors = 1;
    s->index    = index;
    s->seed     = st->spec->seed;
    return SVP_OK;
}

static svp_status_t svp_stage_dummy_begin(void *self, int index, svp_sample_t *s)
{
    svp_stage_dummy_t *st = self;
    svp_status_t       status;

    status = svp_stage_dummy_alloc(self, index, s);
    if (status != SVP_OK) {
        return status;
    }
    /* the latent depends on the sample's seed only (sched/rng.h) */
    s->seed = st->list->items[index].seed;
    svp_rng_normal(s->seed, svp_rng_stream(SVP_RNG_LATENTS), 0,
                   (size_t)svp_tensor_numel(s->tensors[0]), s->tensors[0]->data);
    s->next_step = 0;
    svp_clock_sleep(st->spec->model.dummy.encode_ms * 1e-3);
    return SVP_OK;
}

static svp_status_t svp_stage_dummy_step(void *self, svp_sample_t *s, int step)
{
    svp_stage_dummy_t *st = self;

    return svp_dummy_step(st->model, s->tensors[0], step);
}

/*
 * The stand-in of a pair's step (pipeline.guidance_parallel: 2): the same
 * update as step() on both ranks, at half the cost (half the sleep, or half
 * the conv's repetitions, which do not change the result), and a real
 * exchange of a latent-sized message: each rank sends its latents as they
 * were before the step, and a pair whose two copies differ fails in
 * merge().
 */
static svp_status_t svp_stage_dummy_half(void *self, svp_sample_t *s, int step,
                                         int lane, void *out, size_t bytes)
{
    svp_stage_dummy_t *st = self;
    svp_tensor_t      *x  = s->tensors[0];

    (void)lane;
    if (bytes != svp_tensor_nbytes(x)) {
        svp_error("internal: a dummy latent is %zu bytes, the pair's message %zu",
                  svp_tensor_nbytes(x), bytes);
        return SVP_ERR_INTERNAL;
    }
    memcpy(out, x->data, bytes);
    return svp_dummy_step(st->half, x, step);
}

static svp_status_t svp_stage_dummy_merge(void *self, svp_sample_t *s, int step,
                                          int lane, const void *mine,
                                          const void *theirs, size_t bytes)
{
    (void)self;
    (void)lane;
    if (memcmp(mine, theirs, bytes) != 0) {
        svp_error("sample %d step %d: the two ranks of the pair hold different "
                  "latents",
                  s->index, step);
        return SVP_ERR_MESSAGE;
    }
    return SVP_OK;
}

static svp_status_t svp_stage_dummy_write(svp_stage_dummy_t *st, svp_sample_t *s);

static svp_status_t svp_stage_dummy_finish(void *self, svp_sample_t *s)
{
    svp_stage_dummy_t *st = self;

    svp_clock_sleep(st->spec->model.dummy.decode_ms * 1e-3);
    return svp_stage_dummy_write(st, s);
}

/*
 * The stand-in of a finish split over a pair: each rank sleeps half the
 * decode; lane 1's share is its final latents, which lane 0 checks against
 * its own before it writes them.
 */
static size_t svp_stage_dummy_share_bytes(void *self)
{
    svp_stage_dummy_t *st = self;
    size_t             n  = 1;
    int                d;

    for (d = 0; d < 5; ++d) {
        n *= (size_t)st->spec->latent_shape[d];
    }
    return n * sizeof(float);
}

static svp_status_t svp_stage_dummy_share(void *self, svp_sample_t *s, int lane,
                                          void *out, size_t bytes)
{
    svp_stage_dummy_t *st = self;

    svp_clock_sleep(st->spec->model.dummy.decode_ms * 1e-3 / 2);
    if (lane == 1) {
        if (bytes != svp_tensor_nbytes(s->tensors[0])) {
            return SVP_ERR_INTERNAL;
        }
        memcpy(out, s->tensors[0]->data, bytes);
    }
    return SVP_OK;
}

static svp_status_t svp_stage_dummy_finish_shared(void *self, svp_sample_t *s,
                                                  const void *theirs, size_t bytes)
{
    svp_stage_dummy_t *st = self;

    if (bytes != svp_tensor_nbytes(s->tensors[0]) ||
        memcmp(theirs, s->tensors[0]->data, bytes) != 0) {
        svp_error("sample %d: the two ranks of the pair finished different latents",
                  s->index);
        return SVP_ERR_MESSAGE;
    }
    return svp_stage_dummy_write(st, s);
}

/*
 * output.format webdataset: the sample staged as one file of
 * latents.safetensors and sample.json (job, sample, seed, steps, model and
 * the sample's own parameters), for its shard (job/wds.h).
 */
static svp_status_t svp_stage_dummy_stage(svp_stage_dummy_t *st, svp_sample_t *s,
                                          const char *params)
{
    svp_job_wds_stage_h h;
    char                path[4200], *text = NULL;
    void               *latents = NULL;
    size_t              bytes   = 0;
    json_t             *o;
    svp_status_t        status;

    svp_job_wds_staged_path(st->wds, s->index, path, sizeof(path));
    status = svp_job_wds_stage_begin(path, &h);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_sample_tensor_bytes(st->spec, s, "latent", s->tensors[0], "dummy",
                                     params, &latents, &bytes);
    if (status == SVP_OK) {
        status = svp_job_wds_stage_add(h, "latents.safetensors", latents, bytes);
    }
    free(latents);
    o = json_pack("{s:s, s:i, s:I, s:i, s:s, s:o}", "job", st->spec->name, "sample",
                  s->index, "seed", (json_int_t)s->seed, "steps", st->spec->steps,
                  "model", "dummy", "params", json_loads(params, 0, NULL));
    text = (o != NULL) ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                           JSON_REAL_PRECISION(9))
                       : NULL;
    json_decref(o);
    if (status == SVP_OK && text == NULL) {
        status = SVP_ERR_NO_MEMORY;
    }
    if (status == SVP_OK) {
        status = svp_job_wds_stage_add(h, "sample.json", text, strlen(text));
    }
    free(text);
    if (status != SVP_OK) {
        svp_job_wds_stage_abort(h);
        return status;
    }
    status = svp_job_wds_stage_commit(h);
    if (status == SVP_OK) {
        svp_job_wds_staged(st->wds, s->index);
    }
    return status;
}

static svp_status_t svp_stage_dummy_write(svp_stage_dummy_t *st, svp_sample_t *s)
{
    char         path[4096], name[256], *params;
    svp_status_t status;

    status = svp_mkdir_p(st->spec->output.dir, 0755);
    if (status != SVP_OK) {
        return status;
    }
    svp_job_samples_name(st->list, s->index, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s.safetensors", st->spec->output.dir, name);
    params = svp_job_samples_params_json(st->list, s->index);
    if (params == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    /* the seed travels in the sample; this rank may not be where it began */
    s->seed = st->list->items[s->index].seed;
    if (st->wds != NULL) {
        status = svp_stage_dummy_stage(st, s, params);
        free(params);
        return status;
    }
    status = svp_sample_write_tensor(st->spec, s, "latent", s->tensors[0], "dummy",
                                     params, path);
    free(params);
    if (status == SVP_OK) {
        svp_debug("wrote %s", path);
    }
    return status;
}

/* Whether the latent file at path is sample index's of this job. */
static svp_status_t svp_stage_dummy_check_file(svp_stage_dummy_t *st, int index,
                                               const char *path, char *why,
                                               size_t len)
{
    const char       *got;
    svp_safetensors_h f;
    svp_status_t      status;

    status = svp_job_outputs_check_tensor(st->spec, path, "latent", "dummy", index,
                                          st->list->items[index].seed, 5,
                                          st->spec->latent_shape, why, len);
    if (status != SVP_OK) {
        return status;
    }
    /* the sample's own parameters: a manifest line changed since is another
     * sample (a latent written before they were recorded, 0.3, has none and
     * is judged by its seed and steps alone) */
    status = svp_safetensors_open(path, &f);
    if (status == SVP_OK) {
        got = svp_safetensors_metadata(f, "params");
        if (got != NULL) {
            status =
                svp_job_samples_params_check(st->list, index, got, path, why, len);
        }
        svp_safetensors_close(f);
    } else {
        snprintf(why, len, "%s does not open: %s", path, svp_status_string(status));
        status = SVP_ERR_BAD_FILE;
    }
    return status;
}

/*
 * The webdataset's check of sample i (wds.h svp_job_wds_check_cb_t): a
 * packed shard's entry of it, or its staged file's (`where` names either).
 */
static svp_status_t svp_stage_dummy_wds_check(void *arg, int i, const char *where,
                                              json_t *entry, char *why, size_t len)
{
    svp_stage_dummy_t *st = arg;
    char              *params;
    json_t            *v, *record = json_object_get(entry, "record");
    svp_status_t       status;

    if (!svp_job_wds_entry_has(entry, "latents.safetensors")) {
        snprintf(why, len, "%s: the shard has no latents of it", where);
        return SVP_ERR_BAD_FILE;
    }
    /* the record: this job, its steps and the sample's seed and parameters */
    v = json_object_get(record, "job");
    if (!json_is_string(v) || strcmp(json_string_value(v), st->spec->name) != 0) {
        snprintf(why, len,
                 "%s was made with other parameters: job: '%s', this job "
                 "has '%s'",
                 where, json_is_string(v) ? json_string_value(v) : "(none)",
                 st->spec->name);
        return SVP_ERR_SPEC;
    }
    v = json_object_get(record, "steps");
    if (json_integer_value(v) != st->spec->steps) {
        snprintf(why, len,
                 "%s was made with other parameters: steps: %lld, this job "
                 "has %d",
                 where, (long long)json_integer_value(v), st->spec->steps);
        return SVP_ERR_SPEC;
    }
    v = json_object_get(record, "seed");
    if ((uint64_t)json_integer_value(v) != st->list->items[i].seed) {
        snprintf(why, len,
                 "%s was made with other parameters: seed: %lld, this job "
                 "has %llu",
                 where, (long long)json_integer_value(v),
                 (unsigned long long)st->list->items[i].seed);
        return SVP_ERR_SPEC;
    }
    params = json_dumps(json_object_get(record, "params"),
                        JSON_COMPACT | JSON_REAL_PRECISION(9));
    if (params == NULL) {
        snprintf(why, len, "%s has no parameters", where);
        return SVP_ERR_BAD_FILE;
    }
    status = svp_job_samples_params_check(st->list, i, params, where, why, len);
    free(params);
    return status;
}

static svp_status_t svp_stage_dummy_check_output(void *self, int index, char *why,
                                                 size_t len)
{
    svp_stage_dummy_t *st = self;
    char               path[4096], name[256];

    if (st->wds != NULL) {
        return svp_job_wds_check_sample(st->wds, index, why, len);
    }
    svp_job_samples_name(st->list, index, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s.safetensors", st->spec->output.dir, name);
    return svp_stage_dummy_check_file(st, index, path, why, len);
}

static svp_job_wds_h svp_stage_dummy_shards(void *self)
{
    return ((svp_stage_dummy_t *)self)->wds;
}

static uint64_t svp_stage_dummy_output_bytes(void *self)
{
    svp_stage_dummy_t *st = self;
    uint64_t           n  = 4;
    int                d;

    for (d = 0; d < 5; ++d) {
        n *= (uint64_t)st->spec->latent_shape[d];
    }
    return n + 4096; /* the header and its metadata */
}

static void svp_stage_dummy_destroy(void *self)
{
    svp_stage_dummy_t *st = self;

    svp_job_wds_destroy(st->wds);
    svp_dummy_destroy(st->model);
    svp_dummy_destroy(st->half);
    svp_job_samples_destroy(st->list);
    free(st);
}

static const svp_stage_ops_t svp_stage_dummy_ops = {
    .name          = "dummy",
    .alloc         = svp_stage_dummy_alloc,
    .begin         = svp_stage_dummy_begin,
    .step          = svp_stage_dummy_step,
    .half          = svp_stage_dummy_half,
    .merge         = svp_stage_dummy_merge,
    .finish        = svp_stage_dummy_finish,
    .share_bytes   = svp_stage_dummy_share_bytes,
    .share         = svp_stage_dummy_share,
    .finish_shared = svp_stage_dummy_finish_shared,
    .check_output  = svp_stage_dummy_check_output,
    .output_bytes  = svp_stage_dummy_output_bytes,
    .shards        = svp_stage_dummy_shards,
    .destroy       = svp_stage_dummy_destroy,
};

svp_status_t svp_stage_dummy_create(const svp_spec_t *spec, svp_stage_t *stage_p)
{
    svp_stage_dummy_t *st;
    svp_dummy_params_t mp;
    char               err[1024];
    svp_status_t       status;

    /* the simulator's latent and its arithmetic are fp32, nothing else */
    if (spec->dtype != SVP_DTYPE_F32) {
        svp_error("%s: dtype: the dummy model computes in f32 only", spec->file);
        return SVP_ERR_SPEC;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    st->spec = spec;
    status   = svp_job_samples_create(spec, err, sizeof(err), &st->list);
    if (status != SVP_OK) {
        svp_error("%s", err);
        free(st);
        return status;
    }
    mp.seed     = spec->seed;
    mp.channels = spec->latent_shape[2];
    mp.cost     = spec->model.dummy.cost;
    mp.work     = spec->model.dummy.work;
    mp.step_ms  = spec->model.dummy.step_ms;
    status      = svp_dummy_create(&mp, &st->model);
    if (status == SVP_OK && spec->pipeline.guidance_parallel > 1) {
        mp.work    = SVP_MAX(1, mp.work / 2);
        mp.step_ms = mp.step_ms / 2;
        status     = svp_dummy_create(&mp, &st->half);
    }
    if (status == SVP_OK && spec->output.format == SVP_OUTPUT_WEBDATASET) {
        status = svp_job_wds_create(spec, st->list, svp_stage_dummy_wds_check, st,
                                    &st->wds);
    }
    if (status != SVP_OK) {
        svp_dummy_destroy(st->half);
        svp_dummy_destroy(st->model);
        svp_job_samples_destroy(st->list);
        free(st);
        return status;
    }
    stage_p->ops    = &svp_stage_dummy_ops;
    stage_p->self   = st;
    stage_p->devmem = NULL; /* host memory only, whatever the device */
    return SVP_OK;
}
