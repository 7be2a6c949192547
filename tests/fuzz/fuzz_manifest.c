/* The manifest of samples (JSONL, job/samples.h): lines, keys, limits,
 * names, the cap, and what is made of a list that parses. */
#include "fuzz.h"
#include "job/samples.h"
#include "jobspec/spec.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char        *path = svp_fuzz_tmpfile(data, size);
    const char        *sets[2];
    char               set[128], err[1024], name[256], *js;
    svp_job_samples_t *list;
    svp_spec_t        *spec;
    int                i, cap;

    snprintf(set, sizeof(set), "video.manifest=%s", path);
    sets[0] = "name=fuzz";
    sets[1] = set;
    if (svp_spec_load_string("", "fuzz.yaml", sets, 2, err, sizeof(err), &spec) !=
        SVP_OK) {
        abort(); /* the spec is ours: it must load */
    }
    /* the whole list, then capped to its first two */
    for (cap = 0; cap <= 2; cap += 2) {
        spec->samples = cap;
        if (svp_job_samples_create(spec, err, sizeof(err), &list) != SVP_OK) {
            continue;
        }
        svp_job_samples_describe(list, err, sizeof(err));
        for (i = 0; i < list->count; ++i) {
            svp_job_samples_name(list, i, name, sizeof(name));
            (void)svp_job_samples_image(list, i);
            js = svp_job_samples_params_json(list, i);
            if (js == NULL) {
                abort();
            }
            free(js);
        }
        svp_job_samples_destroy(list);
    }
    svp_spec_destroy(spec);
    return 0;
}
