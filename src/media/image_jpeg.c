/*
 * JPEG through libjpeg (libjpeg-turbo on Debian, as in Pillow's wheels).
 *
 * libjpeg's default error_exit() prints and calls exit(): a corrupt user
 * image must not kill a rank, so we install an error manager that logs the
 * library's message with the file name and longjmp()s back.  The setjmp()
 * sits in a helper whose state lives in a caller-owned context (see the same
 * note in image_png.c).
 *
 * A truncated JPEG is only a *warning* for libjpeg (JWRN_JPEG_EOF: it pads
 * the data with a fake EOI and returns a grey-bottomed image).  Pillow refuses
 * such files ("image file is truncated"), and so do we: that one warning is
 * promoted to an error.  Other corrupt-data warnings are logged and decoding
 * goes on, which is also what Pillow does.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/image.h"
#include "media/image_int.h"
#include "common/log.h"

#include <jpeglib.h>
#include <jerror.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    struct jpeg_error_mgr pub; /* first: libjpeg casts cinfo->err to it */
    jmp_buf               jmp;
    const char           *path;
} svp_media_jpeg_error_t;

typedef struct {
    struct jpeg_decompress_struct cinfo;
    svp_media_jpeg_error_t        err;
    svp_media_image_t            *image;
    svp_status_t                  status; /* the failure, when decode fails */
} svp_media_jpeg_reader_t;

static void svp_media_jpeg_error_exit(j_common_ptr cinfo)
{
    svp_media_jpeg_error_t *err = (svp_media_jpeg_error_t *)cinfo->err;
    char                    msg[JMSG_LENGTH_MAX];

    cinfo->err->format_message(cinfo, msg);
    svp_error("%s: bad JPEG: %s", err->path, msg);
    longjmp(err->jmp, 1);
}

static void svp_media_jpeg_emit_message(j_common_ptr cinfo, int level)
{
    svp_media_jpeg_error_t *err = (svp_media_jpeg_error_t *)cinfo->err;
    char                    msg[JMSG_LENGTH_MAX];

    if (level >= 0) {
        return; /* trace messages */
    }
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
        svp_error("%s: JPEG file is truncated", err->path);
        longjmp(err->jmp, 1);
    }
    cinfo->err->format_message(cinfo, msg);
    svp_warn("%s: corrupt JPEG data: %s", err->path, msg);
}

static int svp_media_jpeg_decode(svp_media_jpeg_reader_t *rd, FILE *file)
{
    struct jpeg_decompress_struct *cinfo = &rd->cinfo;
    JSAMPROW                       row;

    if (setjmp(rd->err.jmp)) {
        return -1;
    }

    jpeg_create_decompress(cinfo);
    jpeg_stdio_src(cinfo, file);
    jpeg_read_header(cinfo, TRUE);

    if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
        svp_error("%s: CMYK JPEG images are not supported; convert the image "
                  "to RGB",
                  rd->err.path);
        rd->status = SVP_ERR_UNSUPPORTED;
        return -1;
    }
    /* gray and YCbCr both come out as RGB; everything else stays at the
     * library defaults, which are Pillow's */
    cinfo->out_color_space = JCS_RGB;
    jpeg_start_decompress(cinfo);
    if (cinfo->output_components != 3) {
        svp_error("%s: JPEG decodes to %d components, expected 3", rd->err.path,
                  cinfo->output_components);
        return -1;
    }

    rd->status =
        svp_media_image_alloc((int)cinfo->output_width, (int)cinfo->output_height,
                              rd->err.path, &rd->image);
    if (rd->status != SVP_OK) {
        return -1;
    }
    rd->status = SVP_ERR_BAD_FILE;

    while (cinfo->output_scanline < cinfo->output_height) {
        row = rd->image->pixels +
              (size_t)cinfo->output_scanline * (size_t)rd->image->width * 3;
        jpeg_read_scanlines(cinfo, &row, 1);
    }
    jpeg_finish_decompress(cinfo);
    return 0;
}

svp_status_t svp_media_jpeg_read(FILE *file, const char *path,
                                 svp_media_image_t **image_p)
{
    svp_media_jpeg_reader_t rd;

    memset(&rd, 0, sizeof(rd));
    rd.status               = SVP_ERR_BAD_FILE;
    rd.err.path             = path;
    rd.cinfo.err            = jpeg_std_error(&rd.err.pub);
    rd.err.pub.error_exit   = svp_media_jpeg_error_exit;
    rd.err.pub.emit_message = svp_media_jpeg_emit_message;

    if (svp_media_jpeg_decode(&rd, file) != 0) {
        jpeg_destroy_decompress(&rd.cinfo);
        svp_media_image_destroy(rd.image);
        return rd.status;
    }
    jpeg_destroy_decompress(&rd.cinfo);
    *image_p = rd.image;
    return SVP_OK;
}
