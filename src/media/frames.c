/*
 * Frames: float to 8-bit conversion and PNG sequences.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/frames.h"
#include "common/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

svp_status_t svp_media_frames_create(int num_frames, int height, int width,
                                     svp_media_frames_t **frames_p)
{
    svp_media_frames_t *frames;
    size_t              frame_bytes;

    if (num_frames < 1 || height < 1 || width < 1 ||
        height > SVP_MEDIA_IMAGE_MAX_SIDE || width > SVP_MEDIA_IMAGE_MAX_SIDE) {
        svp_error("bad frame geometry %d x %dx%d", num_frames, width, height);
        return SVP_ERR_INVALID_PARAM;
    }
    frame_bytes = (size_t)height * (size_t)width * 3;
    frames      = malloc(sizeof(*frames));
    if (frames == NULL) {
        goto err;
    }
    frames->pixels = calloc((size_t)num_frames, frame_bytes);
    if (frames->pixels == NULL) {
        free(frames);
        goto err;
    }
    frames->num_frames = num_frames;
    frames->height     = height;
    frames->width      = width;
    *frames_p          = frames;
    return SVP_OK;

err:
    svp_error("no memory for %d frames of %dx%d", num_frames, width, height);
    return SVP_ERR_NO_MEMORY;
}

/* numpy's (x * 255).round() on float32, after clamping: rintf rounds half
 * to even in the default rounding mode, as numpy.round does. */
static uint8_t svp_media_unit_to_u8(float x)
{
    if (!(x > 0.0f)) {
        return 0; /* also NaN */
    }
    if (x >= 1.0f) {
        return 255;
    }
    return (uint8_t)rintf(x * 255.0f);
}

svp_status_t svp_media_frames_from_f32(const float *data, int num_frames, int height,
                                       int width, svp_media_frames_t **frames_p)
{
    svp_media_frames_t *frames;
    size_t              plane = (size_t)height * (size_t)width;
    size_t              i;
    svp_status_t        status;
    int                 f, c;

    status = svp_media_frames_create(num_frames, height, width, &frames);
    if (status != SVP_OK) {
        return status;
    }
    for (f = 0; f < num_frames; ++f) {
        const float *src = data + (size_t)f * 3 * plane;
        uint8_t     *dst = frames->pixels + (size_t)f * 3 * plane;

        for (c = 0; c < 3; ++c) {
            for (i = 0; i < plane; ++i) {
                dst[i * 3 + c] = svp_media_unit_to_u8(src[c * plane + i]);
            }
        }
    }
    *frames_p = frames;
    return SVP_OK;
}

void svp_media_frames_destroy(svp_media_frames_t *frames)
{
    if (frames == NULL) {
        return;
    }
    free(frames->pixels);
    free(frames);
}

void svp_media_frames_view(const svp_media_frames_t *frames, int index,
                           svp_media_image_t *view_p)
{
    view_p->width  = frames->width;
    view_p->height = frames->height;
    view_p->pixels =
        frames->pixels + (size_t)index * frames->height * frames->width * 3;
}

svp_status_t svp_media_frames_write_png(const svp_media_frames_t *frames,
                                        const char               *dir)
{
    svp_media_image_t view;
    char              path[4096];
    svp_status_t      status;
    int               f;

    for (f = 0; f < frames->num_frames; ++f) {
        if (snprintf(path, sizeof(path), "%s/frame_%04d.png", dir, f) >=
            (int)sizeof(path)) {
            svp_error("frame path too long in %s", dir);
            return SVP_ERR_INVALID_PARAM;
        }
        svp_media_frames_view(frames, f, &view);
        status = svp_media_image_write_png(path, &view);
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}
