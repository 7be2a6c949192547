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
#include "media/antialias.h"
#include "media/clip_preprocess.h"
#include "media/frames.h"
#include "media/sample_dir.h"
#include "media/video.h"
#include "media/demo.h"
#include "tensor/safetensors.h"
#include "common/log.h"
#include "common/file.h"
#include "common/util.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <png.h>
#include <jpeglib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A tensor's bytes as the file holds them (its own dtype). */
static svp_tensor_t *raw_tensor(svp_safetensors_h st, const char *name)
{
    svp_safetensors_info_t info;
    svp_tensor_t          *t = NULL;

    cr_assert_eq(svp_safetensors_find(st, name, &info), SVP_OK, "%s", name);
    cr_assert_eq(svp_safetensors_load(st, name, info.dtype, &t), SVP_OK, "%s", name);
    return t;
}

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

/* dir/rel; a skip when rel's case is not in this set (a set that holds
 * only some of the cases). */
static void golden_path(char *buf, size_t len, const char *rel)
{
    const char *root = golden_dir();

    snprintf(buf, len, "%s/%.*s", root, (int)strcspn(rel, "/"), rel);
    if (access(buf, R_OK) != 0) {
        cr_skip_test("golden case %.*s is not in %s: it is in the larger "
                     "reference set only",
                     (int)strcspn(rel, "/"), rel, root);
    }
    snprintf(buf, len, "%s/%s", root, rel);
}

/* Number of entries in a directory, "." and ".." excluded. */
static int dir_entries(const char *path)
{
    char  cmd[512];
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
static void write_raw_png(const char *path, int w, int h, int color_type, int depth,
                          const uint8_t *rows, size_t stride,
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

    cr_assert_eq(svp_media_image_load(path, &image), SVP_OK, "cannot load %s", path);
    return image;
}

static void assert_pixel(const svp_media_image_t *im, int x, int y, int r, int g,
                         int b)
{
    const uint8_t *p = im->pixels + ((size_t)y * im->width + x) * 3;

    cr_assert(p[0] == r && p[1] == g && p[2] == b,
              "pixel (%d,%d) is (%d,%d,%d), expected (%d,%d,%d)", x, y, p[0], p[1],
              p[2], r, g, b);
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
    write_raw_png(path, 4, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8, gray_a, 8, NULL, 0, NULL,
                  0);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 10, 10, 10);
    assert_pixel(im, 3, 0, 40, 40, 40);
    svp_media_image_destroy(im);
}

Test(image, png_low_bit_gray_scales_to_full_range)
{
    /* 2-bit gray 0,1,2,3 -> 0,85,170,255 (PIL "L;2") */
    uint8_t            row[1] = {0x1b}; /* 00 01 10 11 */
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
    write_raw_png(path, 3, 1, PNG_COLOR_TYPE_PALETTE, 8, idx, 3, pal, 3, trns, 3);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 1, 2, 3);
    assert_pixel(im, 1, 0, 255, 0, 0); /* fully transparent: colour kept */
    assert_pixel(im, 2, 0, 0, 128, 0);
    svp_media_image_destroy(im);
}

Test(image, png_rgba_and_16bit)
{
    uint8_t rgba[2 * 4] = {1, 2, 3, 0, 250, 251, 252, 9};
    /* 16-bit big-endian samples: the high byte survives (PIL "RGB;16B") */
    uint8_t            rgb16[2 * 6] = {0x12, 0xff, 0x34, 0x00, 0x56, 0x80,
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
    write_raw_png(path, 2, 1, PNG_COLOR_TYPE_RGB, 16, rgb16, 12, NULL, 0, NULL, 0);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 0x12, 0x34, 0x56);
    assert_pixel(im, 1, 0, 0xff, 0x00, 0x80);
    svp_media_image_destroy(im);

    /* 16-bit gray: the high byte too (our documented deviation from PIL) */
    snprintf(path, sizeof(path), "%s/gray16.png", test_dir);
    write_raw_png(path, 2, 1, PNG_COLOR_TYPE_GRAY, 16,
                  (uint8_t[4]){0xab, 0xcd, 0x01, 0xff}, 4, NULL, 0, NULL, 0);
    im = load_ok(path);
    assert_pixel(im, 0, 0, 0xab, 0xab, 0xab);
    assert_pixel(im, 1, 0, 0x01, 0x01, 0x01);
    svp_media_image_destroy(im);
}

/* Writes im as a baseline 4:4:4 JPEG (quality 90) with libjpeg; gray when
 * `gray` (the red channel is used). */
static void write_jpeg(const char *path, const svp_media_image_t *im, int gray)
{
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr       jerr;
    FILE                       *f   = fopen(path, "wb");
    uint8_t                    *row = malloc((size_t)im->width * 3);
    JSAMPROW                    rp  = row;
    int                         x;

    cr_assert(f != NULL && row != NULL);
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width      = im->width;
    cinfo.image_height     = im->height;
    cinfo.input_components = gray ? 1 : 3;
    cinfo.in_color_space   = gray ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 90, TRUE);
    /* 4:4:4: no chroma subsampling to blur the test's sharp edges */
    cinfo.comp_info[0].h_samp_factor = 1;
    cinfo.comp_info[0].v_samp_factor = 1;
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        const uint8_t *src =
            im->pixels + (size_t)cinfo.next_scanline * im->width * 3;

        for (x = 0; x < im->width; ++x) {
            row[x] = src[x * 3];
        }
        rp = gray ? row : (JSAMPROW)src;
        jpeg_write_scanlines(&cinfo, &rp, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    fclose(f);
    free(row);
}

Test(image, jpeg_color_and_gray)
{
    svp_media_image_t *demo, *im;
    char               path[128];
    size_t             i, n;
    int                worst = 0;

    cr_assert_eq(svp_media_demo_image_create(40, 24, &demo), SVP_OK);
    n = (size_t)40 * 24 * 3;

    snprintf(path, sizeof(path), "%s/color.jpg", test_dir);
    write_jpeg(path, demo, 0);
    im = load_ok(path);
    cr_assert(im->width == 40 && im->height == 24);
    for (i = 0; i < n; ++i) {
        worst = SVP_MAX(worst, abs((int)im->pixels[i] - (int)demo->pixels[i]));
    }
    /* lossy, but the right colours in the right places: a channel swap or
     * a wrong colour space is off by 100+ */
    cr_log_info("JPEG round trip: max difference %d", worst);
    cr_assert_lt(worst, 48, "decoded JPEG off by %d", worst);
    svp_media_image_destroy(im);

    /* grayscale JPEG: one channel replicated, as PIL's L -> RGB */
    snprintf(path, sizeof(path), "%s/gray.jpg", test_dir);
    write_jpeg(path, demo, 1);
    im = load_ok(path);
    for (i = 0; i < n; i += 3) {
        cr_assert(im->pixels[i] == im->pixels[i + 1] &&
                  im->pixels[i] == im->pixels[i + 2]);
    }
    svp_media_image_destroy(im);
    svp_media_image_destroy(demo);
}

Test(image, bad_files_are_named_errors)
{
    svp_media_image_t *im = NULL, *demo;
    char               path[128], src[128];
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

    /* truncated PNG and JPEG: the first half of good files */
    cr_assert_eq(svp_media_demo_image_create(64, 48, &demo), SVP_OK);
    snprintf(src, sizeof(src), "%s/good.png", test_dir);
    cr_assert_eq(svp_media_image_write_png(src, demo), SVP_OK);
    cr_assert_eq(svp_file_read_all(src, &data, &len), SVP_OK);
    snprintf(path, sizeof(path), "%s/cut.png", test_dir);
    cr_assert_eq(svp_file_write_atomic(path, data, len / 2), SVP_OK);
    cr_assert_eq(svp_media_image_load(path, &im), SVP_ERR_BAD_FILE);
    /* ... and the whole file under a misleading name loads */
    snprintf(path, sizeof(path), "%s/really_png.jpg", test_dir);
    cr_assert_eq(svp_file_write_atomic(path, data, len), SVP_OK);
    free(data);
    im = load_ok(path);
    cr_assert_arr_eq(im->pixels, demo->pixels, 64 * 48 * 3);
    svp_media_image_destroy(im);
    im = NULL;

    snprintf(src, sizeof(src), "%s/good.jpg", test_dir);
    write_jpeg(src, demo, 0);
    cr_assert_eq(svp_file_read_all(src, &data, &len), SVP_OK);
    snprintf(path, sizeof(path), "%s/cut.jpg", test_dir);
    cr_assert_eq(svp_file_write_atomic(path, data, len / 2), SVP_OK);
    free(data);
    cr_assert_eq(svp_media_image_load(path, &im), SVP_ERR_BAD_FILE);
    cr_assert_null(im);
    svp_media_image_destroy(demo);
}

/* ---- Pillow LANCZOS resize and JPEG decode (golden image_resize) ------ */

static const char *resize_cases[] = {
    "down_landscape", "up_small", "down_odd", "portrait", "svd_size", "same",
};

/*
 * Whether image_resize holds sub-case name: every one in the larger set; in
 * the compact set (tests/data) those its SUBSET file lists, one per line.
 */
static int resize_case_present(const char *name)
{
    char  path[512], line[128];
    FILE *f;
    int   found = 0;

    snprintf(path, sizeof(path), "%s/image_resize/SUBSET", golden_dir());
    f = fopen(path, "r");
    if (f == NULL) {
        return 1;
    }
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        found                     = (strcmp(line, name) == 0);
    }
    fclose(f);
    return found;
}

/* Largest |a - b| over n bytes, and how many differ. */
static int u8_max_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *ndiff_p)
{
    size_t i, ndiff = 0;
    int    worst = 0, d;

    for (i = 0; i < n; ++i) {
        d = abs((int)a[i] - (int)b[i]);
        ndiff += (d != 0);
        worst = SVP_MAX(worst, d);
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
    svp_tensor_t          *pv, *mine, *raw;
    size_t                 i, n, ndiff;
    int                    worst;

    golden_path(path, sizeof(path), "image_resize/resize.safetensors");
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);

    for (i = 0; i < SVP_ARRAY_SIZE(resize_cases); ++i) {
        if (!resize_case_present(resize_cases[i])) {
            continue;
        }
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
        raw   = raw_tensor(st, name);
        worst = u8_max_diff(dst->pixels, raw->data, n, &ndiff);
        svp_tensor_destroy(raw);
        cr_expect_eq(worst, 0,
                     "%s: %zu of %zu bytes differ from Pillow, "
                     "by up to %d",
                     resize_cases[i], ndiff, n, worst);

        /* [-1, 1] as diffusers maps it: float32 all the way, exact */
        snprintf(name, sizeof(name), "%s.pixel_values", resize_cases[i]);
        cr_assert_eq(svp_safetensors_load(st, name, SVP_DTYPE_F32, &pv), SVP_OK);
        cr_assert_eq(svp_media_vae_preprocess(src, dst->width, dst->height, &mine),
                     SVP_OK);
        cr_assert(mine->ndim == 4 && mine->shape[0] == 1 && mine->shape[1] == 3 &&
                  mine->shape[2] == dst->height && mine->shape[3] == dst->width);
        cr_assert_eq((size_t)svp_tensor_numel(pv), n);
        cr_expect_arr_eq(mine->data, pv->data, n * sizeof(float),
                         "%s: pixel_values differ", resize_cases[i]);
        svp_tensor_destroy(mine);
        svp_tensor_destroy(pv);
        svp_media_image_destroy(dst);
        svp_media_image_destroy(src);
    }
    svp_safetensors_close(st);
}

Test(resize, one_axis_and_flat_images)
{
    static const int   sizes[][2] = {{30, 20}, {13, 20}, {30, 7}, {64, 41}, {5, 90}};
    svp_media_image_t *src, *dst;
    size_t             i, p;
    int                x, y;

    /* a flat image stays flat whatever the sizes: every window's fixed-point
     * weights sum to 1 within rounding */
    cr_assert_eq(svp_media_image_create(30, 20, &src), SVP_OK);
    memset(src->pixels, 173, 30 * 20 * 3);
    for (i = 0; i < SVP_ARRAY_SIZE(sizes); ++i) {
        cr_assert_eq(svp_media_image_resize_lanczos(src, sizes[i][0], sizes[i][1],
                                                    &dst),
                     SVP_OK);
        for (p = 0; p < (size_t)dst->width * dst->height * 3; ++p) {
            cr_assert_eq(dst->pixels[p], 173, "%dx%d: byte %zu is %d", sizes[i][0],
                         sizes[i][1], p, dst->pixels[p]);
        }
        svp_media_image_destroy(dst);
    }

    /* only the height changes: columns are resampled independently, so a
     * horizontal gradient keeps every column's value */
    for (y = 0; y < 20; ++y) {
        for (x = 0; x < 30; ++x) {
            memset(src->pixels + ((size_t)y * 30 + x) * 3, x * 8, 3);
        }
    }
    cr_assert_eq(svp_media_image_resize_lanczos(src, 30, 9, &dst), SVP_OK);
    for (y = 0; y < 9; ++y) {
        cr_assert_arr_eq(dst->pixels + (size_t)y * 30 * 3, src->pixels, 30 * 3,
                         "row %d", y);
    }
    svp_media_image_destroy(dst);
    svp_media_image_destroy(src);
}

Test(resize, jpeg_decode_matches_pillow)
{
    char                   path[512], name[128];
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    svp_tensor_t          *raw;
    svp_media_image_t     *im;
    size_t                 i, n, ndiff;
    int                    worst;

    golden_path(path, sizeof(path), "image_resize/resize.safetensors");
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    for (i = 0; i < SVP_ARRAY_SIZE(resize_cases); ++i) {
        if (!resize_case_present(resize_cases[i])) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/image_resize/%s.jpg", golden_dir(),
                 resize_cases[i]);
        im = load_ok(path);
        snprintf(name, sizeof(name), "%s.jpg_decoded_u8", resize_cases[i]);
        cr_assert_eq(svp_safetensors_find(st, name, &info), SVP_OK);
        cr_assert(info.shape[0] == im->height && info.shape[1] == im->width);
        n = (size_t)im->width * im->height * 3;
        /* exact: Debian's libjpeg is libjpeg-turbo, as in Pillow (README) */
        raw   = raw_tensor(st, name);
        worst = u8_max_diff(im->pixels, raw->data, n, &ndiff);
        svp_tensor_destroy(raw);
        cr_expect_eq(worst, 0, "%s: %zu of %zu bytes differ, by up to %d",
                     resize_cases[i], ndiff, n, worst);
        svp_media_image_destroy(im);
    }
    svp_safetensors_close(st);
}

/* ---- CLIP preprocessing (golden clip_preprocess) ---------------------- */

/*
 * The CLIP input size is the case's own (params.json, interpolate.size):
 * SVD's 224 in the larger set; 56 in the compact set in tests/data, whose
 * images are the larger set's scaled by 56/224 where they blur, so the
 * sigmas and kernels are the same (tests/data/README.md).
 *
 * Tolerances, from the golden README ("CLIP tolerances (measured)"):
 *  - kernels within 1e-7 absolute;
 *  - x/255*2-1 and identity blurs exact (a [0, 1, 0] kernel is exact);
 *  - resized and clip_pixel_input within 2e-5, pixel_values within 5e-5:
 *    torch's float32 bicubic is itself up to 7.0e-6 away from float64, the
 *    division by std (about 0.27) scales that by 3.7 (pixel_values
 *    measured 1.27e-5; in the compact set resized 7.0e-6, pixel_values
 *    1.28e-5).
 *  - A real blur (576x1024 and 720x240 in the larger set, 144x256 and
 *    180x60 in the compact one) gets the resized tolerance: torch's
 *    conv2d sums in its own order, the README measures the blur as adding
 *    nothing visible next to the bicubic noise.
 */
#define CLIP_TOL_KERNEL  1e-7
#define CLIP_TOL_RESIZED 2e-5
#define CLIP_TOL_PIXELS  5e-5
#define CLIP_NUM_IMAGES  5

/* The case's CLIP input size, [height, width], from its params.json. */
static void clip_target(int *h, int *w)
{
    char         path[512];
    json_error_t err;
    json_t      *root, *size;

    golden_path(path, sizeof(path), "clip_preprocess/params.json");
    root = json_load_file(path, 0, &err);
    cr_assert_not_null(root, "%s: %s", path, err.text);
    size = json_object_get(json_object_get(root, "interpolate"), "size");
    cr_assert(json_array_size(size) == 2, "%s: no interpolate.size", path);
    *h = (int)json_integer_value(json_array_get(size, 0));
    *w = (int)json_integer_value(json_array_get(size, 1));
    cr_assert(*h > 0 && *w > 0, "%s: interpolate.size", path);
    json_decref(root);
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double worst = 0.0;
    size_t i;

    for (i = 0; i < n; ++i) {
        double d = fabs((double)a[i] - (double)b[i]);

        worst = (d > worst || isnan(d)) ? d : worst;
    }
    return worst;
}

/* Loads name as F32 and checks its element count; NULL when the golden
 * file does not store it (stated per image in params.json). */
static svp_tensor_t *golden_f32(svp_safetensors_h st, const char *name, size_t numel)
{
    svp_safetensors_info_t info;
    svp_tensor_t          *t;

    if (svp_safetensors_find(st, name, &info) != SVP_OK) {
        return NULL;
    }
    cr_assert_eq(svp_safetensors_load(st, name, SVP_DTYPE_F32, &t), SVP_OK);
    cr_assert_eq((size_t)svp_tensor_numel(t), numel, "%s: size", name);
    return t;
}

static void expect_close(const char *what, int index, const float *got,
                         const float *want, size_t n, double tol)
{
    double d = max_abs_diff(got, want, n);

    cr_log_info("image%d.%s: max |C - golden| = %.3g (tolerance %.3g)", index, what,
                d, tol);
    cr_expect(d <= tol, "image%d.%s: max |C - golden| = %.3g > %.3g", index, what, d,
              tol);
}

Test(clip_preprocess, stages_match_diffusers)
{
    char                   path[512], name[128];
    svp_safetensors_h      st_in, st_io, st_mid;
    svp_safetensors_info_t info;
    svp_media_image_t     *im;
    svp_media_gauss_t      gx, gy;
    float                  kx[SVP_MEDIA_GAUSS_MAX_TAPS];
    float                  ky[SVP_MEDIA_GAUSS_MAX_TAPS];
    svp_tensor_t          *g, *raw;
    float                 *pm1, *bx, *bxy, *resized;
    size_t                 out_n;
    int                    i, th, tw;
    size_t                 n;

    clip_target(&th, &tw);
    out_n = (size_t)3 * th * tw;
    golden_path(path, sizeof(path), "clip_preprocess/input_u8.safetensors");
    cr_assert_eq(svp_safetensors_open(path, &st_in), SVP_OK);
    golden_path(path, sizeof(path), "clip_preprocess/io.safetensors");
    cr_assert_eq(svp_safetensors_open(path, &st_io), SVP_OK);
    golden_path(path, sizeof(path), "clip_preprocess/intermediates.safetensors");
    cr_assert_eq(svp_safetensors_open(path, &st_mid), SVP_OK);
    resized = malloc(sizeof(float) * out_n);

    for (i = 0; i < CLIP_NUM_IMAGES; ++i) {
        /* our PNG decoder gives np.array(PIL image) */
        snprintf(path, sizeof(path), "%s/clip_preprocess/input%d.png", golden_dir(),
                 i);
        im = load_ok(path);
        snprintf(name, sizeof(name), "image%d.u8", i);
        cr_assert_eq(svp_safetensors_find(st_in, name, &info), SVP_OK);
        n = (size_t)im->width * im->height * 3;
        cr_assert(info.shape[0] == im->height && info.shape[1] == im->width);
        raw = raw_tensor(st_in, name);
        cr_assert_arr_eq(im->pixels, raw->data, n, "%s differs", name);
        svp_tensor_destroy(raw);

        pm1 = malloc(sizeof(float) * n);
        bx  = malloc(sizeof(float) * n);
        bxy = malloc(sizeof(float) * n);
        svp_media_image_to_pm1(im, pm1);
        snprintf(name, sizeof(name), "image%d.pm1", i);
        if ((g = golden_f32(st_io, name, n)) != NULL) {
            cr_expect_arr_eq(pm1, g->data, n * sizeof(float), "%s", name);
            svp_tensor_destroy(g);
        }

        svp_media_gauss_for_scale(im->width, tw, &gx);
        svp_media_gauss_for_scale(im->height, th, &gy);
        cr_assert_eq(svp_media_gauss_kernel(&gx, kx), SVP_OK);
        cr_assert_eq(svp_media_gauss_kernel(&gy, ky), SVP_OK);
        snprintf(name, sizeof(name), "image%d.kernel_x", i);
        g = golden_f32(st_mid, name, gx.size);
        cr_assert_not_null(g, "%s missing or wrong size", name);
        expect_close("kernel_x", i, kx, g->data, gx.size, CLIP_TOL_KERNEL);
        svp_tensor_destroy(g);
        snprintf(name, sizeof(name), "image%d.kernel_y", i);
        g = golden_f32(st_mid, name, gy.size);
        cr_assert_not_null(g, "%s missing or wrong size", name);
        expect_close("kernel_y", i, ky, g->data, gy.size, CLIP_TOL_KERNEL);
        svp_tensor_destroy(g);

        cr_assert_eq(svp_media_blur_x(pm1, 3, im->height, im->width, kx, gx.size,
                                      bx),
                     SVP_OK);
        cr_assert_eq(svp_media_blur_y(bx, 3, im->height, im->width, ky, gy.size,
                                      bxy),
                     SVP_OK);
        snprintf(name, sizeof(name), "image%d.blur_x", i);
        if ((g = golden_f32(st_mid, name, n)) != NULL) {
            expect_close("blur_x", i, bx, g->data, n,
                         (gx.sigma == 0.001) ? 0.0 : CLIP_TOL_RESIZED);
            svp_tensor_destroy(g);
        }
        snprintf(name, sizeof(name), "image%d.blurred", i);
        g = golden_f32(st_mid, name, n);
        cr_assert_not_null(g, "%s missing or wrong size", name);
        expect_close("blurred", i, bxy, g->data, n,
                     (gx.sigma == 0.001 && gy.sigma == 0.001) ? 0.0
                                                              : CLIP_TOL_RESIZED);
        svp_tensor_destroy(g);

        cr_assert_eq(svp_media_bicubic_resize(bxy, 3, im->height, im->width, th, tw,
                                              resized),
                     SVP_OK);
        snprintf(name, sizeof(name), "image%d.resized", i);
        g = golden_f32(st_io, name, out_n);
        cr_assert_not_null(g, "%s missing or wrong size", name);
        expect_close("resized", i, resized, g->data, out_n, CLIP_TOL_RESIZED);
        svp_tensor_destroy(g);

        free(bxy);
        free(bx);
        free(pm1);
        svp_media_image_destroy(im);
    }
    free(resized);
    svp_safetensors_close(st_mid);
    svp_safetensors_close(st_io);
    svp_safetensors_close(st_in);
}

Test(clip_preprocess, encoder_input_matches_diffusers)
{
    char                    path[512];
    svp_safetensors_h       st_io;
    svp_media_clip_params_t params;
    svp_media_image_t      *im;
    svp_tensor_t           *cpi, *pv, *out;
    size_t                  out_n;
    float                  *mine;
    int                     i, th, tw;

    clip_target(&th, &tw);
    out_n = (size_t)3 * th * tw;
    mine  = malloc(sizeof(float) * out_n);
    golden_path(path, sizeof(path), "clip_preprocess/io.safetensors");
    cr_assert_eq(svp_safetensors_open(path, &st_io), SVP_OK);
    cpi = golden_f32(st_io, "clip_pixel_input", CLIP_NUM_IMAGES * out_n);
    pv  = golden_f32(st_io, "pixel_values", CLIP_NUM_IMAGES * out_n);
    cr_assert(cpi != NULL && pv != NULL);
    svp_media_clip_params_init(&params);
    params.height = th;
    params.width  = tw;

    for (i = 0; i < CLIP_NUM_IMAGES; ++i) {
        snprintf(path, sizeof(path), "%s/clip_preprocess/input%d.png", golden_dir(),
                 i);
        im = load_ok(path);
        cr_assert_eq(svp_media_clip_preprocess(im, &params, mine, &out), SVP_OK);
        cr_assert(out->ndim == 4 && out->shape[0] == 1 && out->shape[1] == 3 &&
                  out->shape[2] == th && out->shape[3] == tw);
        expect_close("clip_pixel_input", i, mine,
                     (const float *)cpi->data + i * out_n, out_n, CLIP_TOL_RESIZED);
        expect_close("pixel_values", i, out->data,
                     (const float *)pv->data + i * out_n, out_n, CLIP_TOL_PIXELS);
        svp_tensor_destroy(out);
        svp_media_image_destroy(im);
    }
    free(mine);
    svp_tensor_destroy(pv);
    svp_tensor_destroy(cpi);
    svp_safetensors_close(st_io);
}

Test(clip_preprocess, target_size_is_a_parameter)
{
    svp_media_clip_params_t params;
    svp_media_image_t      *im;
    svp_tensor_t           *out;
    int                     x;

    svp_media_clip_params_init(&params);
    params.height = 32;
    params.width  = 48;
    cr_assert_eq(svp_media_image_create(100, 40, &im), SVP_OK);
    for (x = 0; x < 100 * 40 * 3; ++x) {
        im->pixels[x] = 255;
    }
    cr_assert_eq(svp_media_clip_preprocess(im, &params, NULL, &out), SVP_OK);
    cr_assert(out->shape[2] == 32 && out->shape[3] == 48);
    /* a white image stays white: (1 - mean) / std in every channel; the
     * blur and bicubic weights each sum to 1 within float32 rounding */
    for (x = 0; x < 3; ++x) {
        float want = (1.0f - params.mean[x]) / params.std[x];

        cr_assert_float_eq(((float *)out->data)[x * 32 * 48 + 100], want, 1e-5);
    }
    svp_tensor_destroy(out);
    svp_media_image_destroy(im);
}

/* ---- frames, PNG sequences, MP4, sample directories ------------------- */

/* A deterministic test pattern: gradients plus a moving square. */
static svp_media_frames_t *pattern_frames(int num_frames, int height, int width)
{
    svp_media_frames_t *frames;
    int                 f, y, x;

    cr_assert_eq(svp_media_frames_create(num_frames, height, width, &frames),
                 SVP_OK);
    for (f = 0; f < num_frames; ++f) {
        for (y = 0; y < height; ++y) {
            for (x = 0; x < width; ++x) {
                uint8_t *p =
                    frames->pixels + (((size_t)f * height + y) * width + x) * 3;
                int in_square =
                    (x - 4 * f >= 8 && x - 4 * f < 24 && y >= 8 && y < 24);

                p[0] = (uint8_t)(x * 255 / SVP_MAX(width - 1, 1));
                p[1] = (uint8_t)(y * 255 / SVP_MAX(height - 1, 1));
                p[2] = in_square ? 255 : (uint8_t)(40 * f);
            }
        }
    }
    return frames;
}

TestSuite(frames, .init = setup_dir, .fini = teardown_dir);

Test(frames, f32_to_u8_like_numpy_round)
{
    /* [F=1, 3, H=1, W=4] */
    float               data[12] = {-0.5f, 0.0f,          1.0f, 7.0f, NAN,    0.2f,
                                    0.5f,  1.0f / 255.0f, 1.0f, 0.0f, 0.999f, 0.25f};
    svp_media_frames_t *frames;
    svp_media_image_t   view;
    int                 k, ties = 0;

    cr_assert_eq(svp_media_frames_from_f32(data, 1, 1, 4, &frames), SVP_OK);
    svp_media_frames_view(frames, 0, &view);
    assert_pixel(&view, 0, 0, 0, 0, 255); /* clamped; NaN -> 0 */
    assert_pixel(&view, 1, 0, 0, 51, 0);
    assert_pixel(&view, 2, 0, 255, 128, 255); /* 127.5 -> 128 (even) */
    assert_pixel(&view, 3, 0, 255, 1, 64);    /* 63.75 -> 64 */
    svp_media_frames_destroy(frames);

    /* exact halves round to even, as numpy.round does */
    for (k = 0; k < 255; ++k) {
        float x = ((float)k + 0.5f) / 255.0f;

        if (x * 255.0f != (float)k + 0.5f) {
            continue;
        }
        cr_assert_eq(svp_media_frames_from_f32((float[3]){x, x, x}, 1, 1, 1,
                                               &frames),
                     SVP_OK);
        cr_assert_eq(frames->pixels[0], (k % 2 == 0) ? k : k + 1,
                     "%d.5 rounded to %d", k, frames->pixels[0]);
        svp_media_frames_destroy(frames);
        ++ties;
    }
    cr_assert_gt(ties, 0, "no exact half found to test");
}

Test(frames, png_round_trip)
{
    svp_media_frames_t *frames = pattern_frames(3, 20, 30);
    svp_media_image_t   view, *back;
    char                path[256];
    int                 f;

    cr_assert_eq(svp_media_frames_write_png(frames, test_dir), SVP_OK);
    cr_assert_eq(dir_entries(test_dir), 3, "temporaries left behind");
    for (f = 0; f < 3; ++f) {
        snprintf(path, sizeof(path), "%s/frame_%04d.png", test_dir, f);
        back = load_ok(path);
        svp_media_frames_view(frames, f, &view);
        cr_assert(back->width == 30 && back->height == 20);
        cr_assert_arr_eq(back->pixels, view.pixels, 30 * 20 * 3,
                         "frame %d changed through PNG", f);
        svp_media_image_destroy(back);
    }
    svp_media_frames_destroy(frames);
}

TestSuite(sample_dir, .init = setup_dir, .fini = teardown_dir);

Test(sample_dir, abort_leaves_nothing)
{
    svp_media_frames_t    *frames = pattern_frames(2, 8, 8);
    svp_media_sample_dir_h dir;
    char                   final[256], tmp[256];

    snprintf(final, sizeof(final), "%s/out/sample_0001", test_dir);
    cr_assert_eq(svp_media_sample_dir_begin(final, &dir), SVP_OK);
    snprintf(tmp, sizeof(tmp), "%s", svp_media_sample_dir_path(dir));
    cr_assert_str_neq(tmp, final);
    /* half a sample: one frame written, then a failure */
    cr_assert_eq(svp_media_frames_write_png(frames, tmp), SVP_OK);
    cr_assert_neq(access(final, F_OK), 0, "visible before commit");
    svp_media_sample_dir_abort(dir);
    cr_assert_neq(access(final, F_OK), 0);
    cr_assert_neq(access(tmp, F_OK), 0, "temporary left behind");
    snprintf(tmp, sizeof(tmp), "%s/out", test_dir);
    cr_assert_eq(dir_entries(tmp), 0);
    svp_media_frames_destroy(frames);
}

Test(sample_dir, commit_publishes_and_replaces)
{
    svp_media_frames_t    *frames = pattern_frames(2, 8, 8);
    svp_media_sample_dir_h dir;
    char                   final[256], path[512];

    snprintf(final, sizeof(final), "%s/sample_0000", test_dir);
    cr_assert_eq(svp_media_sample_dir_begin(final, &dir), SVP_OK);
    cr_assert_eq(svp_media_frames_write_png(frames, svp_media_sample_dir_path(dir)),
                 SVP_OK);
    cr_assert_eq(svp_media_sample_dir_commit(dir), SVP_OK);
    cr_assert_eq(dir_entries(final), 2);
    cr_assert_eq(dir_entries(test_dir), 1, "temporary left behind");

    /* a second run of the same sample replaces the first one whole */
    cr_assert_eq(svp_media_sample_dir_begin(final, &dir), SVP_OK);
    snprintf(path, sizeof(path), "%s/only.txt", svp_media_sample_dir_path(dir));
    cr_assert_eq(svp_file_write_atomic(path, "x", 1), SVP_OK);
    cr_assert_eq(svp_media_sample_dir_commit(dir), SVP_OK);
    cr_assert_eq(dir_entries(final), 1);
    snprintf(path, sizeof(path), "%s/only.txt", final);
    cr_assert_eq(access(path, F_OK), 0);
    cr_assert_eq(dir_entries(test_dir), 1, "old copy left behind");
    svp_media_frames_destroy(frames);
}

Test(sample_dir, whole_sample_or_nothing)
{
    svp_media_frames_t      *frames = pattern_frames(3, 16, 16);
    svp_media_video_params_t params;
    char                     final[256];

    snprintf(final, sizeof(final), "%s/s0", test_dir);
    svp_media_video_params_init(&params);
    params.encoder = "no-such-encoder"; /* fails after the PNGs */
    cr_assert_neq(svp_media_sample_write(final, frames, &params), SVP_OK);
    cr_assert_eq(dir_entries(test_dir), 0, "a partial sample was left");

    cr_assert_eq(svp_media_sample_write(final, frames, NULL), SVP_OK);
    cr_assert_eq(dir_entries(final), 3);
#ifdef HAVE_FFMPEG
    params.encoder = NULL;
    cr_assert_eq(svp_media_sample_write(final, frames, &params), SVP_OK);
    cr_assert_eq(dir_entries(final), 4);
#endif
    cr_assert_eq(dir_entries(test_dir), 1);
    svp_media_frames_destroy(frames);
}

TestSuite(video, .init = setup_dir, .fini = teardown_dir);

#ifdef HAVE_FFMPEG
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>

static void write_and_probe(int num_frames, int height, int width, int fps,
                            svp_media_video_info_t *info_p)
{
    svp_media_frames_t      *frames = pattern_frames(num_frames, height, width);
    svp_media_video_params_t params;
    char                     path[256];

    svp_media_video_params_init(&params);
    params.fps = fps;
    snprintf(path, sizeof(path), "%s/video.mp4", test_dir);
    cr_assert_eq(svp_media_video_write_mp4(path, frames, &params), SVP_OK);
    cr_assert_eq(dir_entries(test_dir), 1, "temporary left behind");
    cr_assert_eq(svp_media_video_probe(path, info_p), SVP_OK);
    svp_media_frames_destroy(frames);
}

/* Decodes frame `index` of a video file to RGB24 with libav* directly
 * (independently of the writer), into a malloc'ed w x h x 3 buffer. */
static uint8_t *decode_frame_rgb(const char *path, int index, int *w_p, int *h_p)
{
    AVFormatContext   *fmt = NULL;
    AVCodecContext    *dec;
    const AVCodec     *codec;
    AVPacket          *pkt   = av_packet_alloc();
    AVFrame           *frame = av_frame_alloc();
    struct SwsContext *sws;
    uint8_t           *rgb = NULL, *dst[4] = {NULL, NULL, NULL, NULL};
    int                stream, seen = 0, stride[4] = {0, 0, 0, 0}, ret;

    cr_assert_eq(avformat_open_input(&fmt, path, NULL, NULL), 0);
    cr_assert_geq(avformat_find_stream_info(fmt, NULL), 0);
    stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    cr_assert_geq(stream, 0);
    dec = avcodec_alloc_context3(codec);
    avcodec_parameters_to_context(dec, fmt->streams[stream]->codecpar);
    cr_assert_eq(avcodec_open2(dec, codec, NULL), 0);
    while (rgb == NULL) {
        ret = av_read_frame(fmt, pkt);
        avcodec_send_packet(dec,
                            (ret >= 0 && pkt->stream_index == stream) ? pkt : NULL);
        av_packet_unref(pkt);
        while (rgb == NULL && avcodec_receive_frame(dec, frame) == 0) {
            if (seen++ != index) {
                continue;
            }
            *w_p      = frame->width;
            *h_p      = frame->height;
            stride[0] = frame->width * 3;
            rgb       = malloc((size_t)stride[0] * frame->height);
            dst[0]    = rgb;
            sws       = sws_getContext(frame->width, frame->height, frame->format,
                                       frame->width, frame->height, AV_PIX_FMT_RGB24,
                                       SWS_BICUBIC, NULL, NULL, NULL);
            sws_scale(sws, (const uint8_t *const *)frame->data, frame->linesize, 0,
                      frame->height, dst, stride);
            sws_freeContext(sws);
        }
        cr_assert(rgb != NULL || ret >= 0, "frame %d not found", index);
    }
    av_frame_free(&frame);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    avformat_close_input(&fmt);
    return rgb;
}

Test(video, decoded_frames_look_like_the_input)
{
    svp_media_frames_t      *frames;
    svp_media_video_params_t params;
    svp_media_image_t        view;
    char                     path[256];
    uint8_t                 *rgb;
    double                   sum;
    int                      w, h, x, y, c, f;

    /* the demo scene, odd-sized, scrolled by 3 pixels per frame */
    cr_assert_eq(svp_media_frames_create(4, 45, 81, &frames), SVP_OK);
    {
        svp_media_image_t *demo;

        cr_assert_eq(svp_media_demo_image_create(81 + 12, 45, &demo), SVP_OK);
        for (f = 0; f < 4; ++f) {
            svp_media_frames_view(frames, f, &view);
            for (y = 0; y < 45; ++y) {
                memcpy(view.pixels + (size_t)y * 81 * 3,
                       demo->pixels + ((size_t)y * 93 + 3 * f) * 3, 81 * 3);
            }
        }
        svp_media_image_destroy(demo);
    }
    svp_media_video_params_init(&params);
    snprintf(path, sizeof(path), "%s/v.mp4", test_dir);
    cr_assert_eq(svp_media_video_write_mp4(path, frames, &params), SVP_OK);

    for (f = 0; f < 4; f += 3) {
        rgb = decode_frame_rgb(path, f, &w, &h);
        cr_assert(w == 82 && h == 46);
        svp_media_frames_view(frames, f, &view);
        sum = 0.0;
        for (y = 0; y < 46; ++y) {
            for (x = 0; x < 82; ++x) {
                /* the padding repeats the last row and column */
                const uint8_t *want =
                    view.pixels + ((size_t)SVP_MIN(y, 44) * 81 + SVP_MIN(x, 80)) * 3;

                for (c = 0; c < 3; ++c) {
                    sum +=
                        abs((int)rgb[((size_t)y * 82 + x) * 3 + c] - (int)want[c]);
                }
            }
        }
        /* CRF 18 and 4:2:0 chroma on this scene's pixel noise and sharp
         * edges: 5.8 and 6.3 levels on average measured (no bias: -0.9 to
         * 0.1 in flat sky); a swapped channel or a flipped image costs tens
         * of levels */
        cr_log_info("frame %d: mean |decoded - input| = %.2f", f,
                    sum / (46 * 82 * 3));
        cr_assert_lt(sum / (46 * 82 * 3), 10.0, "frame %d: mean error %.2f", f,
                     sum / (46 * 82 * 3));
        free(rgb);
    }
    svp_media_frames_destroy(frames);
}

Test(video, mp4_header_is_valid)
{
    svp_media_video_info_t info;

    write_and_probe(14, 48, 64, 7, &info);
    cr_assert_eq(info.num_streams, 1);
    cr_assert_eq(info.num_frames, 14);
    cr_assert(info.width == 64 && info.height == 48, "size %dx%d", info.width,
              info.height);
    cr_assert_float_eq(info.fps, 7.0, 1e-9);
    /* Debian's libavcodec has libx264: expect H.264, not the fallback */
    cr_assert_str_eq(info.codec, "h264");
}

Test(video, odd_sizes_are_padded_to_even)
{
    svp_media_video_info_t info;

    write_and_probe(3, 25, 33, 12, &info);
    cr_assert(info.width == 34 && info.height == 26, "size %dx%d", info.width,
              info.height);
    cr_assert_eq(info.num_frames, 3);
    cr_assert_float_eq(info.fps, 12.0, 1e-9);
}

Test(video, mpeg4_fallback_encoder)
{
    svp_media_frames_t      *frames = pattern_frames(4, 16, 16);
    svp_media_video_params_t params;
    svp_media_video_info_t   info;
    char                     path[256];

    svp_media_video_params_init(&params);
    params.encoder = "mpeg4";
    snprintf(path, sizeof(path), "%s/v.mp4", test_dir);
    cr_assert_eq(svp_media_video_write_mp4(path, frames, &params), SVP_OK);
    cr_assert_eq(svp_media_video_probe(path, &info), SVP_OK);
    cr_assert_str_eq(info.codec, "mpeg4");
    cr_assert_eq(info.num_frames, 4);
    svp_media_frames_destroy(frames);
}

Test(video, failure_leaves_nothing_at_the_path)
{
    svp_media_frames_t      *frames = pattern_frames(2, 16, 16);
    svp_media_video_params_t params;
    char                     path[256], *data;
    size_t                   len;

    snprintf(path, sizeof(path), "%s/video.mp4", test_dir);
    svp_media_video_params_init(&params);
    params.encoder = "no-such-encoder";
    cr_assert_eq(svp_media_video_write_mp4(path, frames, &params),
                 SVP_ERR_UNSUPPORTED);
    cr_assert_eq(dir_entries(test_dir), 0);

    /* an older file survives a failed rewrite */
    cr_assert_eq(svp_file_write_atomic(path, "old", 3), SVP_OK);
    params.encoder = NULL;
    params.fps     = 0;
    cr_assert_eq(svp_media_video_write_mp4(path, frames, &params),
                 SVP_ERR_INVALID_PARAM);
    /* a failure inside FFmpeg (avio_open: no such directory) */
    snprintf(path, sizeof(path), "%s/gone/video.mp4", test_dir);
    params.fps = 7;
    cr_assert_eq(svp_media_video_write_mp4(path, frames, &params), SVP_ERR_IO);
    snprintf(path, sizeof(path), "%s/video.mp4", test_dir);
    cr_assert_eq(svp_file_read_all(path, &data, &len), SVP_OK);
    cr_assert(len == 3 && !memcmp(data, "old", 3));
    free(data);
    cr_assert_eq(dir_entries(test_dir), 1);
    svp_media_frames_destroy(frames);
}
#else
Test(video, mp4_header_is_valid)
{
    cr_skip_test("built without FFmpeg: no MP4 output");
}
#endif

/* ---- the demo input image --------------------------------------------- */

Test(demo, committed_png_is_drawn_by_our_code)
{
    const char        *top = getenv("SVP_TOP_SRCDIR");
    svp_media_image_t *drawn, *file;
    char               path[512];

    if (top == NULL) {
        cr_skip_test("SVP_TOP_SRCDIR not set (run through make check)");
    }
    snprintf(path, sizeof(path), "%s/etc/demo/input.png", top);
    file = load_ok(path);
    cr_assert_eq(svp_media_demo_image_create(SVP_MEDIA_DEMO_WIDTH,
                                             SVP_MEDIA_DEMO_HEIGHT, &drawn),
                 SVP_OK);
    cr_assert(file->width == drawn->width && file->height == drawn->height);
    cr_assert_arr_eq(file->pixels, drawn->pixels,
                     (size_t)drawn->width * drawn->height * 3,
                     "etc/demo/input.png differs from svp_media_demo_image_create;"
                     " regenerate it with etc/demo/make_input");
    svp_media_image_destroy(drawn);
    svp_media_image_destroy(file);
}

Test(demo, any_size_and_not_flat)
{
    svp_media_image_t *im;
    size_t             i, n;
    int                lo = 255, hi = 0;

    cr_assert_eq(svp_media_demo_image_create(7, 64, &im), SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_media_demo_image_create(1024, 576, &im), SVP_OK);
    n = (size_t)1024 * 576 * 3;
    for (i = 0; i < n; ++i) {
        lo = SVP_MIN(lo, im->pixels[i]);
        hi = SVP_MAX(hi, im->pixels[i]);
    }
    cr_assert(hi - lo > 200, "range %d..%d", lo, hi);
    svp_media_image_destroy(im);
}
