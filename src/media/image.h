/*
 * RGB images in host memory, and loading them from PNG or JPEG files.
 *
 * An image is height x width x 3 bytes, row-major, channels R, G, B: the
 * layout of numpy.array(PIL.Image.open(f).convert("RGB")).  Every loader
 * produces exactly that array, so what the C pipeline sees is what a user's
 * image goes through in diffusers:
 *   - alpha is dropped, not composited (PIL's RGBA -> RGB conversion);
 *   - grayscale is replicated into the three channels;
 *   - palette images are looked up, their transparency ignored;
 *   - 16-bit PNG samples keep their high byte (PIL's ";16B" unpackers);
 *   - JPEG is decoded by libjpeg with its default settings (islow DCT, fancy
 *     upsampling), which is what Pillow asks libjpeg-turbo for.
 * One deviation: Pillow 9.4 opens a 16-bit grayscale PNG in its 32-bit
 * integer mode "I", whose conversion to RGB clamps at 255 instead of
 * scaling (a mostly white image).  We keep the high byte, as for 16-bit
 * colour.
 *
 * Ownership: the create/load functions allocate the struct and its pixels;
 * svp_media_image_destroy() frees both.  Output parameters are written only
 * on success; a failed call leaves nothing allocated.
 */
#ifndef SVP_MEDIA_IMAGE_H
#define SVP_MEDIA_IMAGE_H

#include "common/status.h"

#include <stdint.h>

typedef struct svp_media_image {
    int      width;
    int      height;
    uint8_t *pixels; /* height * width * 3 bytes, RGB, row-major; owned */
} svp_media_image_t;

/* Largest width or height accepted from a file: keeps w * h * 3 far from
 * overflowing and rejects corrupt headers before a huge allocation. */
#define SVP_MEDIA_IMAGE_MAX_SIDE 32768

/* A zero-filled width x height image. */
svp_status_t svp_media_image_create(int width, int height,
                                    svp_media_image_t **image_p);

void svp_media_image_destroy(svp_media_image_t *image);

/*
 * Loads a PNG or JPEG file.  The format is taken from the file's first bytes,
 * never from its name.  A missing file gives SVP_ERR_NOT_FOUND; an unreadable
 * one SVP_ERR_IO; a file that is not PNG/JPEG, is truncated or corrupt gives
 * SVP_ERR_BAD_FILE; a JPEG in CMYK/YCCK gives SVP_ERR_UNSUPPORTED.  Every
 * error is logged once, with the file name and the decoder's own message.
 */
svp_status_t svp_media_image_load(const char *path, svp_media_image_t **image_p);

/*
 * Writes the image as an 8-bit RGB PNG, atomically: the bytes go to a
 * temporary name in the same directory, are fsync'ed, then renamed to path.
 * On failure nothing new is left at path.
 */
svp_status_t svp_media_image_write_png(const char              *path,
                                       const svp_media_image_t *image);

/*
 * Fills dst (3 * height * width floats, planar C,H,W) with the image mapped
 * to [-1, 1] as diffusers does: float32(x) / 255, then 2 * v - 1, each step
 * rounded to float32.  This is both VaeImageProcessor.preprocess's mapping
 * and the first step of the pipeline's CLIP branch.
 */
void svp_media_image_to_pm1(const svp_media_image_t *image, float *dst);

#endif
