/*
 * A diffusers SVD / SVD-XT checkpoint folder: the table of its parts, and
 * the one check of a folder that svdtool check-model, svdlaunch's checks
 * before queueing and svdtool init (which writes a folder part by part)
 * all read from that table.
 */
#ifndef SVP_MODEL_CHECKPOINT_H
#define SVP_MODEL_CHECKPOINT_H

#include "common/status.h"

#include <stdio.h>

typedef enum {
    SVP_MODEL_ARCH_UNKNOWN = 0,
    SVP_MODEL_ARCH_UNET, /* UNetSpatioTemporalConditionModel */
    SVP_MODEL_ARCH_VAE,  /* AutoencoderKLTemporalDecoder */
    SVP_MODEL_ARCH_CLIP  /* CLIPVisionModelWithProjection */
} svp_model_arch_t;

/* When a job needs a part (svp_checkpoint_part_t.job). */
enum {
    SVP_CHECKPOINT_JOB_ALWAYS  = 1u << 0, /* every job */
    SVP_CHECKPOINT_JOB_IMAGES  = 1u << 1, /* a job that encodes images */
    SVP_CHECKPOINT_JOB_PRESENT = 1u << 2  /* checked when it is there */
};

typedef struct {
    const char      *name;    /* as check-model reports it */
    const char      *dir;     /* its folder in the checkpoint; "": the top */
    const char      *config;  /* its config file in that folder */
    const char      *weights; /* the weights' file stem; NULL: none */
    svp_model_arch_t kind;    /* the model it holds; UNKNOWN: configs only */
    unsigned         job;     /* SVP_CHECKPOINT_JOB_* */
} svp_checkpoint_part_t;

/*
 * The parts in the order they are checked and written: model_index.json,
 * scheduler/, feature_extractor/, unet/, vae/, image_encoder/.  The table
 * is static; count_p receives its length.
 */
const svp_checkpoint_part_t *svp_checkpoint_parts(int *count_p);

/* What svp_checkpoint_check() asks of the folder. */
enum {
    /* only what a job uses: the parts marked JOB_ALWAYS, and JOB_PRESENT
     * ones when they are there; without SVP_CHECKPOINT_IMAGES, vae/ only
     * when present */
    SVP_CHECKPOINT_FOR_JOB = 1u << 0,
    /* the job encodes images: the parts marked JOB_IMAGES */
    SVP_CHECKPOINT_IMAGES = 1u << 1
};

/*
 * Checks a checkpoint folder without loading weights: configs parse, every
 * tensor the configs imply is present with the right shape (fp32 files or
 * the .fp16 variant), and the components fit together (latent channels,
 * embedding width, encoder input size).  flags 0 asks for a complete
 * checkpoint.  One line per part goes to report (NULL: none); the reasons
 * for a failure are logged.
 */
svp_status_t svp_checkpoint_check(const char *dir, unsigned flags, FILE *report);

#endif
