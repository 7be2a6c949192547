/*
 * Private to src/media: the per-format decoders behind svp_media_image_load().
 * Each one reads an already opened file positioned at its first byte, logs
 * its own errors with the file name, and on success returns a new image.
 */
#ifndef SVP_MEDIA_IMAGE_INT_H
#define SVP_MEDIA_IMAGE_INT_H

#include "media/image.h"

#include <stdio.h>

svp_status_t svp_media_png_read(FILE *file, const char *path,
                                svp_media_image_t **image_p);

svp_status_t svp_media_jpeg_read(FILE *file, const char *path,
                                 svp_media_image_t **image_p);

/* An uninitialised width x height image, after checking the size. */
svp_status_t svp_media_image_alloc(int width, int height, const char *what,
                                   svp_media_image_t **image_p);

#endif
