/* The frame header check: what a peer (or a corrupted transfer) sends. */
#include "fuzz.h"
#include "comm/frame.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct svp_comm_frame frame;
    svp_comm_frame_id_t   id = {.job_id   = 0x5eed,
                                .kind     = SVP_COMM_KIND_LATENT,
                                .sample   = 3,
                                .step     = 4,
                                .src_rank = 1};
    size_t                received, i;

    svp_fuzz_tmpfile(data, 0); /* quiet logging */
    memset(&frame, 0, sizeof(frame));
    frame.desc.num_tensors         = 1;
    frame.desc.tensors[0].dtype    = 0;
    frame.desc.tensors[0].ndim     = 5;
    frame.desc.tensors[0].shape[0] = 1;
    frame.desc.tensors[0].shape[1] = 4;
    frame.desc.tensors[0].shape[2] = 4;
    frame.desc.tensors[0].shape[3] = 6;
    frame.desc.tensors[0].shape[4] = 8;
    frame.desc.tensors[0].bytes    = 4 * 4 * 6 * 8 * 4;
    if (svp_comm_frame_layout(&frame.desc, frame.offsets, &frame.length) != SVP_OK) {
        abort();
    }
    frame.base = calloc(1, frame.length);
    if (frame.base == NULL) {
        return 0;
    }
    /* a valid frame, with the input XORed over its first bytes (the empty
     * input is the valid frame, and mutations flip its fields); the input's
     * length picks the received byte count */
    svp_comm_frame_seal(&frame, &id, 1);
    for (i = 0; (i < size) && (i < frame.length); ++i) {
        ((uint8_t *)frame.base)[i] ^= data[i];
    }
    received = (size < frame.length) ? frame.length - (size % 97) : frame.length;
    (void)svp_comm_frame_check(&frame, received, &id, "fuzz");
    free(frame.base);
    return 0;
}
