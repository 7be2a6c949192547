/*
 * Image objects and the format dispatch of svp_media_image_load().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/image.h"
#include "media/image_int.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t svp_media_png_magic[8] = {0x89, 'P',  'N',  'G',
                                               '\r', '\n', 0x1a, '\n'};
/* SOI marker followed by the first marker's 0xff */
static const uint8_t svp_media_jpeg_magic[3] = {0xff, 0xd8, 0xff};

svp_status_t svp_media_image_alloc(int width, int height, const char *what,
                                   svp_media_image_t **image_p)
{
    svp_media_image_t *image;

    if (width <= 0 || height <= 0 || width > SVP_MEDIA_IMAGE_MAX_SIDE ||
        height > SVP_MEDIA_IMAGE_MAX_SIDE) {
        svp_error("%s: image size %dx%d outside 1..%d", what, width, height,
                  SVP_MEDIA_IMAGE_MAX_SIDE);
        return SVP_ERR_INVALID_PARAM;
    }
    image = malloc(sizeof(*image));
    if (image == NULL) {
        goto err;
    }
    image->pixels = malloc((size_t)width * (size_t)height * 3);
    if (image->pixels == NULL) {
        free(image);
        goto err;
    }
    image->width  = width;
    image->height = height;
    *image_p      = image;
    return SVP_OK;

err:
    svp_error("%s: no memory for a %dx%d image", what, width, height);
    return SVP_ERR_NO_MEMORY;
}

svp_status_t svp_media_image_create(int width, int height,
                                    svp_media_image_t **image_p)
{
    svp_media_image_t *image;
    svp_status_t       status;

    status = svp_media_image_alloc(width, height, "image", &image);
    if (status != SVP_OK) {
        return status;
    }
    memset(image->pixels, 0, (size_t)width * (size_t)height * 3);
    *image_p = image;
    return SVP_OK;
}

void svp_media_image_destroy(svp_media_image_t *image)
{
    if (image == NULL) {
        return;
    }
    free(image->pixels);
    free(image);
}

svp_status_t svp_media_image_load(const char *path, svp_media_image_t **image_p)
{
    uint8_t      magic[8];
    size_t       got;
    FILE        *file;
    svp_status_t status;

    file = fopen(path, "rb");
    if (file == NULL) {
        svp_error("cannot open image %s: %m", path);
        return (errno == ENOENT) ? SVP_ERR_NOT_FOUND : SVP_ERR_IO;
    }

    got = fread(magic, 1, sizeof(magic), file);
    if (ferror(file)) {
        svp_error("cannot read image %s: %m", path);
        status = SVP_ERR_IO;
        goto out_close;
    }
    rewind(file);

    if (got >= sizeof(svp_media_png_magic) &&
        !memcmp(magic, svp_media_png_magic, sizeof(svp_media_png_magic))) {
        status = svp_media_png_read(file, path, image_p);
    } else if (got >= sizeof(svp_media_jpeg_magic) &&
               !memcmp(magic, svp_media_jpeg_magic, sizeof(svp_media_jpeg_magic))) {
        status = svp_media_jpeg_read(file, path, image_p);
    } else {
        svp_error("%s: not a PNG or JPEG file (%s)", path,
                  (got == 0) ? "empty" : "unknown signature");
        status = SVP_ERR_BAD_FILE;
    }

out_close:
    fclose(file);
    return status;
}

void svp_media_image_to_pm1(const svp_media_image_t *image, float *dst)
{
    size_t plane = (size_t)image->width * (size_t)image->height;
    size_t i;
    int    c;

    for (c = 0; c < 3; ++c) {
        for (i = 0; i < plane; ++i) {
            /* two float32 roundings, in this order, as numpy/torch do */
            float v                    = (float)image->pixels[i * 3 + c] / 255.0f;
            dst[(size_t)c * plane + i] = v * 2.0f - 1.0f;
        }
    }
}
