/* The job spec parser (YAML, keys, ranges, --set) and the spec dump. */
#include "fuzz.h"
#include "jobspec/spec.h"
#include "jobspec/spec_agree.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *sets[1] = {"name=fuzz"};
    svp_spec_t *spec;
    char        err[512], *yaml, *dump;

    svp_fuzz_tmpfile(data, 0); /* quiet logging */
    yaml = malloc(size + 1);
    if (yaml == NULL) {
        return 0;
    }
    memcpy(yaml, data, size);
    yaml[size] = '\0';
    memset(err, 0xff, sizeof(err));
    if (svp_spec_load_string(yaml, "fuzz.yaml", sets, 1, err, sizeof(err), &spec) ==
        SVP_OK) {
        if (svp_spec_dump_shared(spec, &dump) == SVP_OK) {
            free(dump);
        }
        svp_spec_destroy(spec);
    } else if (strncmp(err, "fuzz.yaml", 9) != 0) {
        /* every refusal leaves a message in the caller's buffer */
        abort();
    }
    free(yaml);
    return 0;
}
