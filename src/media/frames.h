/*
 * Decoded video frames in host memory, and writing them as PNG files.
 *
 * The pipeline's VAE decode gives frames as float [F, 3, H, W] in [0, 1]
 * (diffusers: clamp(x / 2 + 0.5, 0, 1)).  They become 8-bit RGB the way
 * diffusers' numpy_to_pil does it, (x * 255).round() with numpy's
 * round-half-to-even, so a frame we write is the PIL image a diffusers user
 * would save.
 *
 * Ownership: create/from_f32 allocate the struct and its pixels;
 * svp_media_frames_destroy() frees both.  Output parameters are written only
 * on success.
 */
#ifndef SVP_MEDIA_FRAMES_H
#define SVP_MEDIA_FRAMES_H

#include "media/image.h"

typedef struct svp_media_frames {
    int      num_frames;
    int      height;
    int      width;
    uint8_t *pixels; /* [num_frames][height][width][3] RGB; owned */
} svp_media_frames_t;

/* num_frames zero-filled frames of width x height. */
svp_status_t svp_media_frames_create(int num_frames, int height, int width,
                                     svp_media_frames_t **frames_p);

/* Converts float [num_frames, 3, height, width] (values clamped to [0, 1]
 * first; NaN becomes 0) to 8-bit frames. */
svp_status_t svp_media_frames_from_f32(const float *data, int num_frames, int height,
                                       int width, svp_media_frames_t **frames_p);

void svp_media_frames_destroy(svp_media_frames_t *frames);

/* Frame `index` as an image that borrows the frames' pixels: valid while
 * frames lives, never passed to svp_media_image_destroy(). */
void svp_media_frames_view(const svp_media_frames_t *frames, int index,
                           svp_media_image_t *view_p);

/*
 * Writes every frame as dir/frame_0000.png, dir/frame_0001.png, ... (four
 * digits, more when num_frames needs them).  Each file is written
 * atomically; for a directory that is complete or absent, write into a
 * sample directory (media/sample_dir.h).
 */
svp_status_t svp_media_frames_write_png(const svp_media_frames_t *frames,
                                        const char               *dir);

#endif
