/*
 * PNG through libpng: decode to RGB8 the way PIL's convert("RGB") does, and
 * encode RGB8 into memory for an atomic write.
 *
 * libpng reports errors by longjmp()ing out of whatever call failed.  The
 * setjmp() therefore lives in small functions that keep all their state in
 * a context owned by the caller: locals of a function that calls setjmp()
 * and change afterwards are indeterminate after the longjmp (C11 7.13.2.1).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/image.h"
#include "media/image_int.h"
#include "common/log.h"
#include "common/file.h"
#include "common/util.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char        *path;
    png_structp        png;
    png_infop          info;
    uint8_t           *rows; /* decoded rows, channels bytes per pixel */
    png_bytep         *row_ptrs;
    svp_media_image_t *image;
    int                channels;
    svp_status_t       status; /* the failure, when decode returns -1 */
} svp_media_png_reader_t;

static void svp_media_png_error_cb(png_structp png, png_const_charp msg)
{
    const char *path = png_get_error_ptr(png);

    svp_error("%s: libpng: %s", path, msg);
    png_longjmp(png, 1);
}

static void svp_media_png_warning_cb(png_structp png, png_const_charp msg)
{
    svp_debug("%s: libpng warning: %s", (const char *)png_get_error_ptr(png), msg);
}

/* libpng's stock reader says only "Read Error" at end of file; say what
 * happened. */
static void svp_media_png_read_cb(png_structp png, png_bytep data, png_size_t len)
{
    FILE *file = png_get_io_ptr(png);

    if (fread(data, 1, len, file) != len) {
        png_error(png, ferror(file) ? "read error" : "file is truncated");
    }
}

/* Header, transforms, allocation and decode; returns nonzero after a libpng
 * error (already logged). */
static int svp_media_png_decode(svp_media_png_reader_t *rd, FILE *file)
{
    png_uint_32 width, height, y;
    int         bit_depth, color_type;
    size_t      stride;

    if (setjmp(png_jmpbuf(rd->png))) {
        return -1;
    }

    png_set_read_fn(rd->png, file, svp_media_png_read_cb);
    png_read_info(rd->png, rd->info);
    png_get_IHDR(rd->png, rd->info, &width, &height, &bit_depth, &color_type, NULL,
                 NULL, NULL);

    /* Only what is needed to reach 8-bit gray, gray+alpha, RGB or RGBA; the
     * last step to RGB is ours, below.  No gamma or background handling:
     * PIL applies neither. */
    if (bit_depth == 16) {
        png_set_strip_16(rd->png); /* keeps the high byte, like PIL */
    }
    if (color_type == PNG_COLOR_TYPE_PALETTE) {
        png_set_palette_to_rgb(rd->png); /* may add alpha from tRNS */
    }
    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) {
        png_set_expand_gray_1_2_4_to_8(rd->png); /* 0..2^n-1 -> 0..255 */
    }
    png_set_interlace_handling(rd->png);
    png_read_update_info(rd->png, rd->info);

    rd->channels = png_get_channels(rd->png, rd->info);
    stride       = png_get_rowbytes(rd->png, rd->info);
    rd->status   = svp_media_image_alloc((int)SVP_MIN(width, (png_uint_32)INT32_MAX),
                                         (int)SVP_MIN(height, (png_uint_32)INT32_MAX),
                                         rd->path, &rd->image);
    if (rd->status != SVP_OK) {
        return -1;
    }
    rd->status = SVP_ERR_BAD_FILE;
    if (stride != (size_t)width * (size_t)rd->channels || rd->channels < 1 ||
        rd->channels > 4) {
        svp_error("%s: unexpected PNG layout after conversion (%d channels, "
                  "%zu bytes per row)",
                  rd->path, rd->channels, stride);
        return -1;
    }
    rd->rows     = malloc(stride * height);
    rd->row_ptrs = malloc(sizeof(*rd->row_ptrs) * height);
    if (rd->rows == NULL || rd->row_ptrs == NULL) {
        svp_error("%s: no memory to decode %ux%u PNG", rd->path, width, height);
        rd->status = SVP_ERR_NO_MEMORY;
        return -1;
    }
    for (y = 0; y < height; ++y) {
        rd->row_ptrs[y] = rd->rows + stride * y;
    }
    png_read_image(rd->png, rd->row_ptrs);
    png_read_end(rd->png, NULL);
    return 0;
}

/* gray, gray+alpha, RGB, RGBA (8-bit) -> RGB; alpha is dropped, not used */
static void svp_media_png_to_rgb(const uint8_t *src, int channels, size_t npix,
                                 uint8_t *dst)
{
    size_t i;

    for (i = 0; i < npix; ++i, src += channels, dst += 3) {
        if (channels <= 2) {
            dst[0] = dst[1] = dst[2] = src[0];
        } else {
            dst[0] = src[0];
            dst[1] = src[1];
            dst[2] = src[2];
        }
    }
}

svp_status_t svp_media_png_read(FILE *file, const char *path,
                                svp_media_image_t **image_p)
{
    svp_media_png_reader_t rd = {.path = path, .status = SVP_ERR_BAD_FILE};
    svp_status_t           status;

    rd.png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, (png_voidp)path,
                               svp_media_png_error_cb, svp_media_png_warning_cb);
    if (rd.png == NULL) {
        svp_error("%s: cannot create libpng reader", path);
        return SVP_ERR_NO_MEMORY;
    }
    rd.info = png_create_info_struct(rd.png);
    if (rd.info == NULL) {
        svp_error("%s: cannot create libpng info", path);
        status = SVP_ERR_NO_MEMORY;
        goto out_destroy_png;
    }

    if (svp_media_png_decode(&rd, file) != 0) {
        status = rd.status;
        svp_media_image_destroy(rd.image);
        goto out_free_rows;
    }

    svp_media_png_to_rgb(rd.rows, rd.channels,
                         (size_t)rd.image->width * (size_t)rd.image->height,
                         rd.image->pixels);
    *image_p = rd.image;
    status   = SVP_OK;

out_free_rows:
    free(rd.row_ptrs);
    free(rd.rows);
out_destroy_png:
    png_destroy_read_struct(&rd.png, (rd.info != NULL) ? &rd.info : NULL, NULL);
    return status;
}

/* ---- writing ---------------------------------------------------------- */

typedef struct {
    const char *path;
    png_structp png;
    png_infop   info;
    uint8_t    *buf; /* the encoded file, grown by the write callback */
    size_t      len;
    size_t      cap;
    int         oom;
} svp_media_png_writer_t;

static void svp_media_png_write_cb(png_structp png, png_bytep data, png_size_t len)
{
    svp_media_png_writer_t *wr = png_get_io_ptr(png);
    uint8_t                *grown;
    size_t                  cap;

    if (wr->len + len > wr->cap) {
        cap   = SVP_MAX(wr->cap * 2, wr->len + len + 4096);
        grown = realloc(wr->buf, cap);
        if (grown == NULL) {
            wr->oom = 1;
            png_error(png, "out of memory for the encoded image");
        }
        wr->buf = grown;
        wr->cap = cap;
    }
    memcpy(wr->buf + wr->len, data, len);
    wr->len += len;
}

static void svp_media_png_flush_cb(png_structp png)
{
}

static int svp_media_png_encode(svp_media_png_writer_t  *wr,
                                const svp_media_image_t *image)
{
    int y;

    if (setjmp(png_jmpbuf(wr->png))) {
        return -1;
    }
    png_set_write_fn(wr->png, wr, svp_media_png_write_cb, svp_media_png_flush_cb);
    png_set_IHDR(wr->png, wr->info, (png_uint_32)image->width,
                 (png_uint_32)image->height, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(wr->png, wr->info);
    for (y = 0; y < image->height; ++y) {
        png_write_row(wr->png, image->pixels + (size_t)y * (size_t)image->width * 3);
    }
    png_write_end(wr->png, NULL);
    return 0;
}

svp_status_t svp_media_image_write_png(const char              *path,
                                       const svp_media_image_t *image)
{
    svp_media_png_writer_t wr = {.path = path};
    svp_status_t           status;

    wr.png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, (png_voidp)path,
                                svp_media_png_error_cb, svp_media_png_warning_cb);
    if (wr.png == NULL) {
        svp_error("%s: cannot create libpng writer", path);
        return SVP_ERR_NO_MEMORY;
    }
    wr.info = png_create_info_struct(wr.png);
    if (wr.info == NULL) {
        svp_error("%s: cannot create libpng info", path);
        status = SVP_ERR_NO_MEMORY;
        goto out_destroy_png;
    }
    if (svp_media_png_encode(&wr, image) != 0) {
        status = wr.oom ? SVP_ERR_NO_MEMORY : SVP_ERR_INTERNAL;
        goto out_free_buf;
    }
    status = svp_file_write_atomic(path, wr.buf, wr.len);

out_free_buf:
    free(wr.buf);
out_destroy_png:
    png_destroy_write_struct(&wr.png, (wr.info != NULL) ? &wr.info : NULL);
    return status;
}
