/*
 * Writes an svdworker conditioning file (model.conditioning) from the
 * golden pipeline_tiny run: the image latents, the image embeddings, the
 * added time ids and the initial latents diffusers used, so the worker
 * reproduces that run exactly.
 *
 *   golden_conditioning GOLDEN_DIR/pipeline_tiny/pipeline.safetensors OUT
 */
#include "tensor/safetensors.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    static const struct {
        const char *golden, *name;
        int         rows; /* keep the first `rows` rows (0: all) */
    } map[] = {
        {"image_latents", "image_latents", 0},
        {"image_embeds_stub", "image_embeds", 0},
        {"added_time_ids", "added_time_ids", 1},
        {"latents_initial", "latents", 0},
    };
    svp_safetensors_h        st;
    svp_safetensors_writer_h w;
    svp_tensor_t            *t[4];
    size_t                   i;
    int                      rc = 1;

    if (argc != 3) {
        fprintf(stderr, "usage: %s pipeline.safetensors OUT.safetensors\n", argv[0]);
        return 2;
    }
    if (svp_safetensors_open(argv[1], &st) != SVP_OK) {
        return 1;
    }
    svp_safetensors_writer_create(&w);
    for (i = 0; i < 4; ++i) {
        if (svp_safetensors_load(st, map[i].golden, SVP_DTYPE_F32, &t[i]) !=
            SVP_OK) {
            return 1;
        }
        if (map[i].rows > 0) {
            t[i]->shape[0] = map[i].rows; /* a prefix of the rows */
        }
        svp_safetensors_writer_add(w, map[i].name, t[i]);
    }
    if (svp_safetensors_writer_commit(w, argv[2]) == SVP_OK) {
        rc = 0;
    }
    svp_safetensors_writer_destroy(w);
    for (i = 0; i < 4; ++i) {
        svp_tensor_destroy(t[i]);
    }
    svp_safetensors_close(st);
    return rc;
}
