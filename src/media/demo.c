/*
 * The demo landscape.  Integers only (no libm, no floating point): the
 * committed PNG must be reproducible bit for bit by any compiler.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/demo.h"
#include "common/log.h"

#include <stdint.h>

typedef struct {
    int r, g, b;
} svp_media_rgb_t;

/* a + (b - a) * num / den, per channel */
static svp_media_rgb_t svp_media_mix(svp_media_rgb_t a, svp_media_rgb_t b, int num,
                                     int den)
{
    svp_media_rgb_t out = {
        a.r + (b.r - a.r) * num / den,
        a.g + (b.g - a.g) * num / den,
        a.b + (b.b - a.b) * num / den,
    };

    return out;
}

/* Small deterministic hash for texture, in [0, 255]. */
static int svp_media_hash(int x, int y)
{
    uint32_t h = (uint32_t)x * 374761393u + (uint32_t)y * 668265263u;

    h = (h ^ (h >> 13)) * 1274126177u;
    return (int)((h ^ (h >> 16)) & 0xff);
}

static int svp_media_clamp8(int v)
{
    return (v < 0) ? 0 : (v > 255) ? 255 : v;
}

/* Height of a parabolic ridge at x: top at (cx, top), falling by `drop`
 * pixels at a horizontal distance of `half` pixels. */
static int svp_media_ridge(int x, int cx, int top, int drop, int half)
{
    int64_t d = (int64_t)(x - cx);

    return top + (int)(d * d * drop / ((int64_t)half * half));
}

static svp_media_rgb_t svp_media_demo_pixel(int x, int y, int w, int h)
{
    const svp_media_rgb_t sky_top = {52, 110, 190}, sky_low = {196, 222, 240};
    const svp_media_rgb_t sun      = {255, 214, 110};
    const svp_media_rgb_t far_hill = {96, 138, 112};
    const svp_media_rgb_t near_top = {88, 150, 58}, near_low = {40, 96, 34};
    const svp_media_rgb_t wall = {186, 70, 52}, roof = {92, 40, 36};
    const svp_media_rgb_t window = {250, 228, 140}, door = {70, 44, 30};
    svp_media_rgb_t       c;
    int                   horizon = h * 3 / 5;
    int far_y  = svp_media_ridge(x, w * 3 / 10, h * 2 / 5, h / 4, w / 2);
    int near_y = svp_media_ridge(x, w * 3 / 4, h / 2, h / 3, w * 2 / 3);
    int sun_x = w * 6 / 7, sun_y = h / 5, sun_r = h / 9 + 1;
    int dx = x - sun_x, dy = y - sun_y, d2 = dx * dx + dy * dy;
    int house_x0 = w * 5 / 8, house_x1 = w * 5 / 8 + w / 6;
    int house_y1 = svp_media_ridge((house_x0 + house_x1) / 2, w * 3 / 4, h / 2,
                                   h / 3, w * 2 / 3) +
                   1;
    int house_y0 = house_y1 - h / 7 - 1;
    int roof_h   = (house_x1 - house_x0) / 2 + 1;
    int grain;

    /* sky, with the sun's disc blended over a one-pixel soft edge */
    c = svp_media_mix(sky_top, sky_low, (y < horizon ? y : horizon), horizon);
    if (d2 <= sun_r * sun_r) {
        c = sun;
    } else if (d2 < (sun_r + 1) * (sun_r + 1)) {
        c = svp_media_mix(sun, c, d2 - sun_r * sun_r, 2 * sun_r + 1);
    }
    if (y >= far_y) {
        c = svp_media_mix(far_hill, sky_low, 1, 4);
    }
    if (y >= near_y) {
        c     = svp_media_mix(near_top, near_low, y - near_y, h - near_y + 1);
        grain = svp_media_hash(x, y) / 16 - 8;
        c.r += grain;
        c.g += grain;
        c.b += grain / 2;
    }
    /* the house: walls, a window, a door, a roof overhanging by a pixel */
    if (x >= house_x0 && x < house_x1 && y >= house_y0 && y < house_y1) {
        int mid = (house_x0 + house_x1) / 2;

        c = wall;
        if (y >= house_y0 + 2 && y < house_y0 + 2 + h / 20 + 1 &&
            x >= house_x0 + 2 && x < house_x0 + 2 + w / 28 + 1) {
            c = window;
        }
        if (x >= mid + 1 && x < mid + 1 + w / 40 + 1 && y >= house_y1 - h / 14 - 1) {
            c = door;
        }
    }
    if (y < house_y0 && y >= house_y0 - roof_h) {
        int up   = house_y0 - y; /* 1 .. roof_h */
        int cx   = (house_x0 + house_x1) / 2;
        int half = (house_x1 - house_x0) / 2 + 1 - up + 1;

        if (x >= cx - half && x <= cx + half - 1) {
            c = roof;
        }
    }
    c.r = svp_media_clamp8(c.r);
    c.g = svp_media_clamp8(c.g);
    c.b = svp_media_clamp8(c.b);
    return c;
}

svp_status_t svp_media_demo_image_create(int width, int height,
                                         svp_media_image_t **image_p)
{
    svp_media_image_t *image;
    svp_media_rgb_t    c;
    svp_status_t       status;
    int                x, y;

    if (width < 8 || height < 8) {
        svp_error("demo image %dx%d: both sides must be at least 8", width, height);
        return SVP_ERR_INVALID_PARAM;
    }
    status = svp_media_image_create(width, height, &image);
    if (status != SVP_OK) {
        return status;
    }
    for (y = 0; y < height; ++y) {
        for (x = 0; x < width; ++x) {
            uint8_t *p = image->pixels + ((size_t)y * width + x) * 3;

            c    = svp_media_demo_pixel(x, y, width, height);
            p[0] = (uint8_t)c.r;
            p[1] = (uint8_t)c.g;
            p[2] = (uint8_t)c.b;
        }
    }
    *image_p = image;
    return SVP_OK;
}
