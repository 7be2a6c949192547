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
#include <strings.h>

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

#if defined(__x86_64__) || defined(__i386__)
/*
 * The instruction sets each of OpenBLAS's x86 kernel families executes
 * (its kernel/x86_64 sources).  A family forced by $OPENBLAS_CORETYPE is
 * loaded whatever the CPU, and dies on its first product with SIGILL where
 * the CPU lacks one of them (SkylakeX without AVX-512; the Bulldozer line's
 * FMA4 and XOP, which Zen dropped).  OpenBLAS's own choice always runs.
 */
static const struct {
    const char *family;
    const char *isa[5];
} svp_ops_blas_isa[] = {
    {"Prescott",       {"sse3"}},
    {"Core2",          {"ssse3"}},
    {"Atom",           {"ssse3"}},
    {"Penryn",         {"sse4.1"}},
    {"Dunnington",     {"sse4.1"}},
    {"Nehalem",        {"sse4.2"}},
    {"Barcelona",      {"sse4a"}},
    {"Bobcat",         {"sse4a", "ssse3"}},
    {"Sandybridge",    {"avx"}},
    {"Haswell",        {"avx2", "fma"}},
    {"Zen",            {"avx2", "fma"}},
    {"Bulldozer",      {"avx", "fma4", "xop"}},
    {"Piledriver",     {"avx", "fma4", "xop", "fma"}},
    {"Steamroller",    {"avx", "fma4", "xop", "fma"}},
    {"Excavator",      {"avx2", "fma4", "xop", "fma"}},
    {"SkylakeX",       {"avx512f", "avx512bw", "avx512vl", "avx512dq"}},
    {"Cooperlake",     {"avx512f", "avx512bw", "avx512vl", "avx512dq"}},
    {"SapphireRapids", {"avx512f", "avx512bw", "avx512vl", "avx512dq"}},
};

/* __builtin_cpu_supports() wants a literal: one case per feature named above. */
static int svp_ops_blas_cpu_has(const char *isa)
{
#define SVP_ISA_(_name) if (!strcmp(isa, _name)) return __builtin_cpu_supports(_name) != 0
    SVP_ISA_("sse3");
    SVP_ISA_("ssse3");
    SVP_ISA_("sse4.1");
    SVP_ISA_("sse4.2");
    SVP_ISA_("sse4a");
    SVP_ISA_("avx");
    SVP_ISA_("avx2");
    SVP_ISA_("fma");
    SVP_ISA_("fma4");
    SVP_ISA_("xop");
    SVP_ISA_("avx512f");
    SVP_ISA_("avx512bw");
    SVP_ISA_("avx512vl");
    SVP_ISA_("avx512dq");
#undef SVP_ISA_
    return 1;   /* not one we know to ask about */
}
#endif

svp_status_t svp_ops_blas_check(const svp_ops_blas_t *blas, char *errbuf, int errlen)
{
#if defined(__x86_64__) || defined(__i386__)
    size_t i, k;

    if (blas->forced[0] == '\0') {
        return SVP_OK;
    }
    __builtin_cpu_init();
    for (i = 0; i < sizeof(svp_ops_blas_isa) / sizeof(svp_ops_blas_isa[0]); ++i) {
        if (strcasecmp(blas->kernels, svp_ops_blas_isa[i].family) != 0) {
            continue;
        }
        for (k = 0; k < 5 && svp_ops_blas_isa[i].isa[k] != NULL; ++k) {
            if (!svp_ops_blas_cpu_has(svp_ops_blas_isa[i].isa[k])) {
                snprintf(errbuf, (size_t)errlen, "OPENBLAS_CORETYPE=%s: %s's %s kernels "
                         "need %s, which this CPU does not have: its first product "
                         "would die on an illegal instruction.  Unset it (OpenBLAS then "
                         "picks for this CPU) or name a family this CPU runs",
                         blas->forced, blas->library, blas->kernels,
                         svp_ops_blas_isa[i].isa[k]);
                return SVP_ERR_UNSUPPORTED;
            }
        }
        return SVP_OK;
    }
#else
    (void)blas;
    (void)errbuf;
    (void)errlen;
#endif
    return SVP_OK;
}
