/*
 * A synthetic input image for demos and tests: a small landscape (sky
 * gradient, sun, two hills, a house, textured ground) drawn in integer
 * arithmetic only, so every machine draws the same bytes.  The project's
 * demo input, etc/demo/input.png, is this image at 112 x 64 (a 16:9-ish
 * size whose latent, 14 x 8, halves cleanly); tests check that the file
 * still matches the code.
 */
#ifndef SVP_MEDIA_DEMO_H
#define SVP_MEDIA_DEMO_H

#include "media/image.h"

#define SVP_MEDIA_DEMO_WIDTH  112
#define SVP_MEDIA_DEMO_HEIGHT 64

/* A new width x height demo image; at least 8 x 8.  The caller destroys it. */
svp_status_t svp_media_demo_image_create(int width, int height,
                                         svp_media_image_t **image_p);

#endif
