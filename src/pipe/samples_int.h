/*
 * What the sample list's files (samples.c, manifest.c) share; not part of
 * its interface (samples.h).
 */
#ifndef SVP_JOB_SAMPLES_INT_H
#define SVP_JOB_SAMPLES_INT_H

#include "job/samples.h"

/* A list of count samples, zeroed, no image yet; NULL when out of memory.
 * The caller frees it with svp_job_samples_destroy. */
svp_job_samples_t *svp_job_samples_alloc(int count);

/* Adds a copy of path to list's images (its index: nimages - 1). */
svp_status_t svp_job_samples_add_image(svp_job_samples_t *list, const char *path);

/* The spec's values: what a sample takes where its manifest line says nothing. */
void svp_job_samples_defaults(const svp_spec_t *spec, svp_job_sample_params_t *p);

/*
 * The samples of spec's video.manifest into *list_p (manifest.c), paths
 * seen through map when not NULL; SVP_ERR_SPEC and the like with
 * "FILE:LINE: ..." in errbuf.
 */
svp_status_t svp_job_samples_read_manifest(const svp_spec_t          *spec,
                                           const svp_pipe_path_map_t *map,
                                           svp_job_samples_t **list_p, char *errbuf,
                                           int errlen);

#endif
