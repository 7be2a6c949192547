/*
 * What the fuzz targets share (fuzz.h): the input written to a temporary
 * file for the parsers that read a path, and their error lines kept quiet.
 */
#include "fuzz.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char svp_fuzz_path[64];

static void svp_fuzz_unlink(void)
{
    unlink(svp_fuzz_path);
}

const char *svp_fuzz_tmpfile(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    FILE        *f;

    if (svp_fuzz_path[0] == '\0') {
        snprintf(svp_fuzz_path, sizeof(svp_fuzz_path), "/tmp/svp-fuzz.%ld",
                 (long)getpid());
        atexit(svp_fuzz_unlink);
        /* the parsers' error lines are the expected outcome: not shown */
        devnull = fopen("/dev/null", "w");
        if (devnull != NULL) {
            svp_log_set_stream(devnull);
        }
    }
    f = fopen(svp_fuzz_path, "wb");
    if (f == NULL) {
        abort();
    }
    if ((size > 0) && (fwrite(data, 1, size, f) != size)) {
        abort();
    }
    fclose(f);
    return svp_fuzz_path;
}
