/*
 * Writes the demo input image (media/demo.h) as a PNG:
 *
 *   etc/demo/make_input [OUT.png [WIDTH HEIGHT]]
 *
 * etc/demo/input.png in the source tree is this program's output with the
 * defaults; tests/test_media checks that it still is.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/demo.h"
#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char        *out    = (argc > 1) ? argv[1] : "input.png";
    int                width  = SVP_MEDIA_DEMO_WIDTH;
    int                height = SVP_MEDIA_DEMO_HEIGHT;
    svp_media_image_t *image;
    svp_status_t       status;

    if (argc == 4) {
        width  = atoi(argv[2]);
        height = atoi(argv[3]);
    } else if (argc > 2) {
        fprintf(stderr, "usage: %s [OUT.png [WIDTH HEIGHT]]\n", argv[0]);
        return SVP_EXIT_BAD_INPUT;
    }
    status = svp_media_demo_image_create(width, height, &image);
    if (status == SVP_OK) {
        status = svp_media_image_write_png(out, image);
        svp_media_image_destroy(image);
    }
    return (status == SVP_OK) ? SVP_EXIT_OK : svp_status_exit_code(status);
}
