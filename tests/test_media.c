/*
 * Tests for src/media: image loading (PNG variants, JPEG, bad files),
 * Pillow-exact LANCZOS resize and CLIP preprocessing against the golden data,
 * PNG/MP4 output and atomic sample directories.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/image.h"
#include "media/resize.h"
#include "tensor/safetensors.h"
#include "common/log.h"
#include "common/util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char test_dir[64];

static void setup_dir(void)
{
    strcpy(test_dir, "/tmp/svp_media_XXXXXX");
    cr_assert_not_null(mkdtemp(test_dir));
}

static void teardown_dir(void)
{
    svp_rmtree(test_dir);
}

static const char *golden_dir(void)
{
    const char *dir = getenv("SVP_GOLDEN_DIR");

    if (dir == NULL || access(dir, R_OK) != 0) {
        cr_skip_test("golden data not found at %s (set SVP_GOLDEN_DIR)",
                     dir ? dir : "(unset)");
    }
    return dir;
}

static void golden_path(char *buf, size_t len, const char *rel)
{
    snprintf(buf, len, "%s/%s", golden_dir(), rel);
}

/* Number of entries in a directory, "." and ".." excluded. */
static int dir_entries(const char *path)
{
    char cmd[512];
    FILE *p;
    int   n = -1;

    snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", path);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    cr_assert_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* ---- PNG variants written directly with libpng ------------------------ */

/* Writes a w x h PNG of the given libpng colour type and depth from raw
 * packed rows; palette/trns may be NULL. */
static void write_raw_png(const char *path, int w, int h, int color_type,
                          int depth, const uint8_t *rows, size_t stride,
                          const png_color *palette, int npalette,
                          const uint8_t *trns, int ntrns)
{
    FILE       *f = fopen(path, "wb");
    png_structp png;
    png_infop   info;
    int         y;

    cr_assert_not_null(f);
    png  = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    info = png_create_info_struct(png);
    cr_assert(png != NULL && info != NULL);
    if (setjmp(png_jmpbuf(png))) {
        cr_assert_fail("libpng failed writing %s", path);
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, depth, color_type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (palette != NULL) {
        png_set_PLTE(png, info, palette, npalette);
    }
    if (trns != NULL) {
        png_set_tRNS(png, info, trns, ntrns, NULL);
    }
    png_write_info(png, info);
    for (y = 0; y < h; ++y) {
        png_write_row(png, rows + (size_t)y * stride);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

static svp_media_image_t *load_ok(const char *path)
{
    svp_media_image_t *image = NULL;

    cr_assert_eq(svp_media_image_load(path, &image), SVP_OK, "cannot load %s",
                 path);
    return image;
}

static void assert_pixel(const svp_media_image_t *im, int x, int y, int r,
                         int g, int b)
{
    const uint8_t *p = im->pixels + ((size_t)y * im->width + x) * 3;

    cr_assert(p[0] == r && p[1] == g && p[2] == b,
              "pixel (%d,%d) is (%d,%d,%d), expected (%d,%d,%d)", x, y, p[0],
              p[1], p[2], r, g, b);
}

TestSuite(image, .init = setup_dir, .fini = teardown_dir);

Test(image, png_gray_and_gray_alpha)
{
    uint8_t            gray[2 * 2]   = {0, 77, 200, 255};
    uint8_t            gray_a[2 * 4] = {10, 0, 20, 128, 30, 255, 40, 7};
    char               path[128];
    svp_media_image_t *im;

    snprintf(path, sizeof(path), "%s/gray.png", test_dir);
    write_raw_png(path, 2, 2, PNG_COLOR_TYPE_GRAY, 8, gray, 2, NULL, 0, NULL, 0);
    im = load_ok(path);
    cr_assert(im->width == 2 && im->height == 2);
    assert_pixel(im, 1, 0, 77, 77, 77);
    assert_pixel(im, 0, 1, 200, 200, 200);
    svp_media_image_destroy(im);

    /* alpha is dropped, not composited (PIL LA -> RGB) */
    snprintf(path, sizeof(path), "%s/gray_alpha.png", test_dir);
    write_raw_png(path, 4, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8, gray_a, 8, NULL, 0,
                  NULL, 0);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 10, 10, 10);
    assert_pixel(im, 3, 0, 40, 40, 40);
    svp_media_image_destroy(im);
}

Test(image, png_low_bit_gray_scales_to_full_range)
{
    /* 2-bit gray 0,1,2,3 -> 0,85,170,255 (PIL "L;2") */
    uint8_t            row[1] = {0x1b};  /* 00 01 10 11 */
    char               path[128];
    svp_media_image_t *im;

    snprintf(path, sizeof(path), "%s/gray2.png", test_dir);
    write_raw_png(path, 4, 1, PNG_COLOR_TYPE_GRAY, 2, row, 1, NULL, 0, NULL, 0);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 0, 0, 0);
    assert_pixel(im, 1, 0, 85, 85, 85);
    assert_pixel(im, 2, 0, 170, 170, 170);
    assert_pixel(im, 3, 0, 255, 255, 255);
    svp_media_image_destroy(im);
}

Test(image, png_palette_ignores_transparency)
{
    png_color          pal[3]  = {{255, 0, 0}, {0, 128, 0}, {1, 2, 3}};
    uint8_t            trns[3] = {0, 255, 100};
    uint8_t            idx[3]  = {2, 0, 1};
    char               path[128];
    svp_media_image_t *im;

    snprintf(path, sizeof(path), "%s/pal.png", test_dir);
    write_raw_png(path, 3, 1, PNG_COLOR_TYPE_PALETTE, 8, idx, 3, pal, 3, trns,
                  3);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 1, 2, 3);
    assert_pixel(im, 1, 0, 255, 0, 0);   /* fully transparent: colour kept */
    assert_pixel(im, 2, 0, 0, 128, 0);
    svp_media_image_destroy(im);
}

Test(image, png_rgba_and_16bit)
{
    uint8_t rgba[2 * 4] = {1, 2, 3, 0, 250, 251, 252, 9};
    /* 16-bit big-endian samples: the high byte survives (PIL "RGB;16B") */
    uint8_t rgb16[2 * 6] = {0x12, 0xff, 0x34, 0x00, 0x56, 0x80,
                            0xff, 0xff, 0x00, 0xff, 0x80, 0x7f};
    char               path[128];
    svp_media_image_t *im;

    snprintf(path, sizeof(path), "%s/rgba.png", test_dir);
    write_raw_png(path, 2, 1, PNG_COLOR_TYPE_RGBA, 8, rgba, 8, NULL, 0, NULL, 0);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 1, 2, 3);
    assert_pixel(im, 1, 0, 250, 251, 252);
    svp_media_image_destroy(im);

    snprintf(path, sizeof(path), "%s/rgb16.png", test_dir);
    write_raw_png(path, 2, 1, PNG_COLOR_TYPE_RGB, 16, rgb16, 12, NULL, 0, NULL,
                  0);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 0x12, 0x34, 0x56);
    assert_pixel(im, 1, 0, 0xff, 0x00, 0x80);
    svp_media_image_destroy(im);
}

Test(image, bad_files_are_named_errors)
{
    svp_media_image_t *im = NULL;
    char               path[128], src[512];
    char              *data;
    size_t             len;

    snprintf(path, sizeof(path), "%s/missing.png", test_dir);
    cr_assert_eq(svp_media_image_load(path, &im), SVP_ERR_NOT_FOUND);

    /* a PNG by name only: the format comes from the bytes */
    snprintf(path, sizeof(path), "%s/text.png", test_dir);
    cr_assert_eq(svp_file_write_atomic(path, "hello, world\n", 13), SVP_OK);
    cr_assert_eq(svp_media_image_load(path, &im), SVP_ERR_BAD_FILE);

    snprintf(path, sizeof(path), "%s/empty.jpg", test_dir);
    cr_assert_eq(svp_file_write_atomic(path, "", 0), SVP_OK);
    cr_assert_eq(svp_media_image_load(path, &im), SVP_ERR_BAD_FILE);
    cr_assert_null(im, "output written on failure");

    /* truncated PNG and JPEG: the first half of the golden sources */
    golden_path(src, sizeof(src), "image_resize/down_odd.png");
    cr_assert_eq(svp_file_read_all(src, &data, &len), SVP_OK);
    snprintf(path, sizeof(path), "%s/cut.png", test_dir);
    cr_assert_eq(svp_file_write_atomic(path, data, len / 2), SVP_OK);
    cr_assert_eq(svp_media_image_load(path, &im), SVP_ERR_BAD_FILE);
    /* ... and the whole file under a misleading name loads */
    snprintf(path, sizeof(path), "%s/really_png.jpg", test_dir);
    cr_assert_eq(svp_file_write_atomic(path, data, len), SVP_OK);
    free(data);
    im = load_ok(path);
    cr_assert(im->width == 131 && im->height == 97);
    svp_media_image_destroy(im);
    im = NULL;

    golden_path(src, sizeof(src), "image_resize/down_odd.jpg");
    cr_assert_eq(svp_file_read_all(src, &data, &len), SVP_OK);
    snprintf(path, sizeof(path), "%s/cut.jpg", test_dir);
    cr_assert_eq(svp_file_write_atomic(path, data, len / 2), SVP_OK);
    free(data);
    cr_assert_eq(svp_media_image_load(path, &im), SVP_ERR_BAD_FILE);
    cr_assert_null(im);
}

/* ---- Pillow LANCZOS resize and JPEG decode (golden image_resize) ------ */

static const char *resize_cases[] = {
    "down_landscape", "up_small", "down_odd", "portrait", "svd_size", "same",
};

/* Largest |a - b| over n bytes, and how many differ. */
static int u8_max_diff(const uint8_t *a, const uint8_t *b, size_t n,
                       size_t *ndiff_p)
{
    size_t i, ndiff = 0;
    int    worst = 0, d;

    for (i = 0; i < n; ++i) {
        d = abs((int)a[i] - (int)b[i]);
        ndiff += (d != 0);
        worst  = SVP_MAX(worst, d);
    }
    *ndiff_p = ndiff;
    return worst;
}

Test(resize, matches_pillow_lanczos)
{
    char                   path[512], name[128];
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    svp_media_image_t     *src, *dst;
    svp_tensor_t          *pv;
    float                 *pm1;
    size_t                 i, n, ndiff;
    int                    worst;

    golden_path(path, sizeof(path), "image_resize/resize.safetensors");
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);

    for (i = 0; i < SVP_ARRAY_SIZE(resize_cases); ++i) {
        snprintf(path, sizeof(path), "%s/image_resize/%s.png", golden_dir(),
                 resize_cases[i]);
        src = load_ok(path);

        snprintf(name, sizeof(name), "%s.resized_u8", resize_cases[i]);
        cr_assert_eq(svp_safetensors_find(st, name, &info), SVP_OK);
        cr_assert(info.dtype == SVP_DTYPE_U8 && info.ndim == 3 &&
                  info.shape[2] == 3);
        cr_assert_eq(svp_media_image_resize_lanczos(src, (int)info.shape[1],
                                                    (int)info.shape[0], &dst),
                     SVP_OK);
        n = (size_t)dst->width * dst->height * 3;
        cr_assert_eq(n, info.nbytes);
        /* The README allows 1 level; we reproduce Pillow's fixed-point
         * arithmetic, so any difference at all is a bug. */
        worst = u8_max_diff(dst->pixels, info.data, n, &ndiff);
        cr_expect_eq(worst, 0, "%s: %zu of %zu bytes differ from Pillow, "
                     "by up to %d", resize_cases[i], ndiff, n, worst);

        /* [-1, 1] as diffusers maps it: float32 all the way, exact */
        snprintf(name, sizeof(name), "%s.pixel_values", resize_cases[i]);
        cr_assert_eq(svp_safetensors_load(st, name, SVP_DTYPE_F32, &pv),
                     SVP_OK);
        cr_assert_eq((size_t)svp_tensor_numel(pv), n);
        pm1 = malloc(n * sizeof(float));
        svp_media_image_to_pm1(dst, pm1);
        cr_expect_arr_eq(pm1, pv->data, n * sizeof(float),
                         "%s: pixel_values differ", resize_cases[i]);
        free(pm1);
        svp_tensor_destroy(pv);
        svp_media_image_destroy(dst);
        svp_media_image_destroy(src);
    }
    svp_safetensors_close(st);
}

Test(resize, jpeg_decode_matches_pillow)
{
    char                   path[512], name[128];
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    svp_media_image_t     *im;
    size_t                 i, n, ndiff;
    int                    worst;

    golden_path(path, sizeof(path), "image_resize/resize.safetensors");
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    for (i = 0; i < SVP_ARRAY_SIZE(resize_cases); ++i) {
        snprintf(path, sizeof(path), "%s/image_resize/%s.jpg", golden_dir(),
                 resize_cases[i]);
        im = load_ok(path);
        snprintf(name, sizeof(name), "%s.jpg_decoded_u8", resize_cases[i]);
        cr_assert_eq(svp_safetensors_find(st, name, &info), SVP_OK);
        cr_assert(info.shape[0] == im->height && info.shape[1] == im->width);
        n = (size_t)im->width * im->height * 3;
        /* exact: Debian's libjpeg is libjpeg-turbo, as in Pillow (README) */
        worst = u8_max_diff(im->pixels, info.data, n, &ndiff);
        cr_expect_eq(worst, 0, "%s: %zu of %zu bytes differ, by up to %d",
                     resize_cases[i], ndiff, n, worst);
        svp_media_image_destroy(im);
    }
    svp_safetensors_close(st);
}
