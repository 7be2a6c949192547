/*
 * Internal to the SVD stage (stage_svd*.c) and its tests.
 *
 * The stage lives in four files:
 *   stage_svd.c         the vtable, the sample's tensors and the step (one
 *                       rank's, and a pair's half and merge)
 *   stage_svd_cond.c    begin: conditioning from a file or from an image
 *                       (CLIP, VAE encode) and the initial noise
 *   stage_svd_out.c     finish (decode, the sample directory, sample.json),
 *                       a pair's shared finish, and the resume check
 *   stage_svd_create.c  create and destroy: scheduler, ops handle, models,
 *                       the step's buffers
 */
#ifndef SVP_PIPE_STAGE_SVD_INT_H
#define SVP_PIPE_STAGE_SVD_INT_H

#include "pipe/stage.h"
#include "job/samples.h"
#include "job/wds.h"
#include "media/clip_preprocess.h"
#include "model/clip.h"
#include "model/unet.h"
#include "model/vae.h"
#include "ops/ops.h"
#include "noise/euler.h"
#include "tensor/safetensors.h"

/* The tensors of a sample's message, in order (stage_svd.c says what each
 * holds). */
enum {
    SVD_T_LATENTS = 0,
    SVD_T_IMAGE_LATENTS,
    SVD_T_EMBEDS,
    SVD_T_IDS,
    SVD_T_SEED,
    SVD_T_TIMING,
    SVD_T_COUNT
};

typedef struct {
    const svp_spec_t       *spec;
    svp_ops_h               ops;
    svp_unet_h              unet;
    svp_vae_h               vae;         /* NULL: no vae/ in the model folder */
    svp_clip_h              clip;        /* images only */
    svp_media_clip_params_t clip_params; /* CLIP input size, mean, std */
    svp_sched_h             sched;
    svp_safetensors_h       cond; /* conditioning file, or NULL: images */
    int                     sets; /* S (file) */
    int                     has_ids, has_latents;
    svp_job_samples_t      *list; /* each sample's image and parameters */
    int64_t                 F, h, w, D, H, W;
    int                     cfg;     /* classifier-free guidance on for some
                                       sample: the buffers take batch 2 */
    float                  *ids, *t; /* the UNet's host inputs, per batch */
    /*
     * The step's one buffer set, buffers of the ops handle: device memory
     * on cuda, host memory on cpu, so that one step path serves both.
     * d_in, d_out, d_v, d_ehs are the UNet's input, output, the guided
     * velocity and its embeddings; d_x, d_img, d_emb hold a host sample's
     * latents and conditioning while it is stepped; d_zero is the
     * unconditional half's zeros; scales the guidance per frame (host).
     */
    float *d_in, *d_out, *d_v, *d_ehs, *d_x, *d_img, *d_emb, *d_zero;
    float *scales;
    /* a shared finish (stage.h): lane 0's share of the decoded frames,
     * and the seconds its decode took */
    float *share_dec;
    double share_decode_s;
    /* output.format webdataset: the run's shards (job/wds.h); NULL with
     * files */
    svp_job_wds_h wds;
} svp_stage_svd_t;

/* The vtable (stage_svd.c), which create (stage_svd_create.c) hands out. */
extern const svp_stage_ops_t svp_stage_svd_ops;

/* A buffer of the ops handle of n floats, holding a copy of host[0, n)
 * unless host is NULL.  Free it with svp_ops_free(). */
svp_status_t svp_stage_svd_dev_buf(svp_stage_svd_t *st, const float *host, int64_t n,
                                   float **buf_p);

/* The step's buffers for a UNet batch of batch (stage_svd.c), and their
 * release (also of a part-made set: svp_ops_free(NULL) is a no-op). */
svp_status_t svp_stage_svd_buffers_init(svp_stage_svd_t *st, int batch);
void         svp_stage_svd_buffers_cleanup(svp_stage_svd_t *st);

/* The seed of sample i, from the sample list. */
uint64_t svp_stage_svd_seed(const svp_stage_svd_t *st, int i);

/* The sample's tensors (SVD_T_*), zeroed; on failure none is left. */
svp_status_t svp_stage_svd_alloc(void *self, int index, svp_sample_t *s);

/* The vtable's entries that live in the other files. */
svp_status_t svp_stage_svd_begin(void *self, int index, svp_sample_t *s);
svp_status_t svp_stage_svd_finish(void *self, svp_sample_t *s);
size_t       svp_stage_svd_share_bytes(void *self);
svp_status_t svp_stage_svd_share(void *self, svp_sample_t *s, int lane, void *out,
                                 size_t bytes);
svp_status_t svp_stage_svd_finish_shared(void *self, svp_sample_t *s,
                                         const void *theirs, size_t bytes);
svp_status_t svp_stage_svd_check_output(void *self, int index, char *why,
                                        size_t len);
void         svp_stage_svd_destroy(void *self);
void         svp_stage_svd_set_task(void *self, int index, int count);
svp_status_t svp_stage_svd_pack(void *self, int (*mine)(int sample, void *arg),
                                void *arg);
svp_status_t svp_stage_svd_wds_check(void *arg, int i, const char *where,
                                     json_t *entry, char *why, size_t len);

#endif
