/*
 * A sample's tensor file checked against this job (outputs.h): what a
 * stage's resume check asks of the latents it wrote.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/outputs.h"
#include "tensor/safetensors.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

svp_status_t svp_job_outputs_check_tensor(const svp_spec_t *spec, const char *path,
                                          const char *name, const char *model,
                                          int index, uint64_t seed, int ndim,
                                          const int64_t *shape, char *why,
                                          size_t len)
{
    /* the job, its steps, the sample's seed and the model decide the
     * latent; the sample's index does not (a manifest line inserted above
     * moves it): its parameters are the stage's to compare */
    struct {
        const char *key;
        const char *want;
    } meta[4];
    char                   steps[24], seedtxt[24];
    svp_safetensors_info_t info;
    svp_safetensors_h      st;
    svp_status_t           status;
    struct stat            sb;
    const char            *got;
    int                    i;

    (void)index;
    if (stat(path, &sb) != 0) {
        return SVP_ERR_NOT_FOUND;
    }
    status = svp_safetensors_open(path, &st);
    if (status != SVP_OK) {
        snprintf(why, len, "%s does not open: %s", path, svp_status_string(status));
        return SVP_ERR_BAD_FILE;
    }
    snprintf(steps, sizeof(steps), "%d", spec->steps);
    snprintf(seedtxt, sizeof(seedtxt), "%" PRIu64, seed);
    meta[0].key  = "job";
    meta[0].want = spec->name;
    meta[1].key  = "steps";
    meta[1].want = steps;
    meta[2].key  = "seed";
    meta[2].want = seedtxt;
    meta[3].key  = "model";
    meta[3].want = model;
    status       = SVP_OK;
    for (i = 0; i < 4; ++i) {
        got = svp_safetensors_metadata(st, meta[i].key);
        if (got == NULL || strcmp(got, meta[i].want) != 0) {
            snprintf(why, len,
                     "%s was made with other parameters: %s: %s%s%s, this "
                     "job has '%s'",
                     path, meta[i].key, got ? "'" : "", got ? got : "(none)",
                     got ? "'" : "", meta[i].want);
            status = SVP_ERR_SPEC;
            goto out;
        }
    }
    if (svp_safetensors_find(st, name, &info) != SVP_OK) {
        snprintf(why, len, "%s has no tensor '%s'", path, name);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    if (info.dtype != SVP_DTYPE_F32 || info.ndim != ndim) {
        snprintf(why, len,
                 "%s: tensor '%s' has %d dimensions or another dtype, "
                 "this job writes %d",
                 path, name, info.ndim, ndim);
        status = SVP_ERR_SPEC;
        goto out;
    }
    for (i = 0; i < ndim; ++i) {
        if (info.shape[i] != shape[i]) {
            snprintf(why, len,
                     "%s: tensor '%s' has size %" PRId64 " in dimension "
                     "%d, this job writes %" PRId64,
                     path, name, info.shape[i], i, shape[i]);
            status = SVP_ERR_SPEC;
            goto out;
        }
    }
out:
    svp_safetensors_close(st);
    return status;
}
