/* The safetensors reader: header, offsets, every tensor loaded. */
#include "fuzz.h"
#include "tensor/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    svp_tensor_t          *t;
    int                    i;

    if (svp_safetensors_open(svp_fuzz_tmpfile(data, size), &st) != SVP_OK) {
        return 0;
    }
    for (i = 0; i < svp_safetensors_count(st); ++i) {
        if ((svp_safetensors_info(st, i, &info) == SVP_OK) &&
            (svp_safetensors_load(st, info.name, SVP_DTYPE_F32, &t) == SVP_OK)) {
            svp_tensor_destroy(t);
        }
    }
    (void)svp_safetensors_metadata(st, "format");
    svp_safetensors_close(st);
    return 0;
}
