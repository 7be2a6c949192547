/*
 * A preload for tests/test_blas_choice.sh: OpenBLAS as it behaves on a CPU
 * newer than its model table.  Where $OPENBLAS_CORETYPE is unset, its
 * choice reads as the generic Prescott (SSE3) kernels; where it is set, the
 * library answers itself, so the family a forced run names is the one that
 * really loaded.  Built for the test only, never installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

char *openblas_get_corename(void)
{
    const char *forced = getenv("OPENBLAS_CORETYPE");
    char *(*real)(void);

    if (forced == NULL || *forced == '\0') {
        return (char *)"Prescott";
    }
    real = (char *(*)(void))dlsym(RTLD_NEXT, "openblas_get_corename");
    return (real != NULL) ? real() : (char *)"unknown";
}
