/* The config.json reader and its typed getters (the model's shape). */
#include "fuzz.h"
#include "tensor/config_json.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ints[] = {"in_channels", "sample_size",
                                       "layers_per_block", "num_attention_heads",
                                       "block_out_channels"};
    svp_config_h             cfg;
    int64_t                  v, arr[16];
    double                   d;
    int                      b, n;
    size_t                   i;
    const char              *s, *strs[16];
    char                    *text;

    svp_fuzz_tmpfile(data, 0); /* quiet logging */
    text = malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    if (svp_config_parse(text, "fuzz.json", &cfg) == SVP_OK) {
        for (i = 0; i < sizeof(ints) / sizeof(ints[0]); ++i) {
            (void)svp_config_get_int(cfg, ints[i], 0, &v);
            (void)svp_config_get_double(cfg, ints[i], 0, &d);
            (void)svp_config_get_bool(cfg, ints[i], 0, &b);
            (void)svp_config_get_string(cfg, ints[i], NULL, &s);
            (void)svp_config_get_int_array(cfg, ints[i], arr, 16, &n);
            (void)svp_config_get_string_array(cfg, ints[i], strs, 16, &n);
        }
        svp_config_destroy(cfg);
    }
    free(text);
    return 0;
}
