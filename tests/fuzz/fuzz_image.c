/* The PNG and JPEG readers (the input images of a job). */
#include "fuzz.h"
#include "media/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    svp_media_image_t *image;

    if (svp_media_image_load(svp_fuzz_tmpfile(data, size), &image) == SVP_OK) {
        svp_media_image_destroy(image);
    }
    return 0;
}
