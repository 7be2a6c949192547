/*
 * Which BLAS the CPU backend runs, and which of its kernels: the one place
 * that asks.  OpenBLAS built for many CPUs (Debian's, DYNAMIC_ARCH) picks a
 * kernel family at load time from the CPU, or from $OPENBLAS_CORETYPE when
 * that is set (sites set it where a wider family misbehaves; we never
 * override it).  The family decides the speed and the last bits of every
 * product: each family gives the same bits on any thread count (gemm.c),
 * but two families may differ.  A run names it in its log and sample.json.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Copies src into dst[len], cut at the first whitespace when word is set;
 * quotes, backslashes and control characters become '_', so the text can
 * go into JSON and a log line as it is (the environment's value included).
 */
static void svp_ops_blas_copy(char *dst, size_t len, const char *src, int word)
{
    size_t n = 0;

    while (src != NULL && src[n] != '\0' && n + 1 < len &&
           !(word && (src[n] == ' ' || src[n] == '\t' || src[n] == '\n'))) {
        unsigned char c = (unsigned char)src[n];

        dst[n] = (c < 0x20 || c == '"' || c == '\\' || c == 0x7f) ? '_' : (char)c;
        n++;
    }
    dst[n] = '\0';
}

void svp_ops_blas_query(svp_ops_blas_t *blas_p)
{
    const char *forced = getenv("OPENBLAS_CORETYPE");

    memset(blas_p, 0, sizeof(*blas_p));
#if defined(HAVE_OPENBLAS_GET_CONFIG) && defined(HAVE_OPENBLAS_GET_CORENAME)
    {
        const char *config = openblas_get_config();
        const char *ver;

        /* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" */
        svp_ops_blas_copy(blas_p->config, sizeof(blas_p->config), config, 0);
        ver = (strncmp(config, "OpenBLAS ", 9) == 0) ? config + 9 : "";
        snprintf(blas_p->library, sizeof(blas_p->library), "OpenBLAS");
        if (*ver != '\0') {
            size_t n = strlen(blas_p->library);

            blas_p->library[n++] = ' ';
            svp_ops_blas_copy(blas_p->library + n, sizeof(blas_p->library) - n,
                              ver, 1);
        }
        svp_ops_blas_copy(blas_p->kernels, sizeof(blas_p->kernels),
                          openblas_get_corename(), 1);
    }
    /* only OpenBLAS reads the variable */
    if (forced != NULL && *forced != '\0') {
        svp_ops_blas_copy(blas_p->forced, sizeof(blas_p->forced), forced, 1);
    }
#else
    /* a CBLAS that does not say (reference BLAS, BLIS's, MKL's): the
     * family is whatever it chose */
    (void)forced;
    snprintf(blas_p->library, sizeof(blas_p->library), "CBLAS");
    snprintf(blas_p->kernels, sizeof(blas_p->kernels), "unknown");
#endif
}

void svp_ops_blas_describe(const svp_ops_blas_t *blas, char *buf, size_t len)
{
    if (blas->forced[0] != '\0') {
        snprintf(buf, len, "%s, %s kernels (OPENBLAS_CORETYPE=%s)",
                 blas->library, blas->kernels, blas->forced);
    } else {
        snprintf(buf, len, "%s, %s kernels (%s)", blas->library, blas->kernels,
                 blas->config[0] != '\0' ? "its choice for this CPU"
                                         : "not reported by the BLAS");
    }
}
