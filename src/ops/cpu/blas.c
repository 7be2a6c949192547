/*
 * Which BLAS the CPU backend runs, and which of its kernels: the one place
 * that asks, and that chooses.  OpenBLAS built for many CPUs (Debian's,
 * DYNAMIC_ARCH) picks a kernel family at load time from $OPENBLAS_CORETYPE
 * when that is set (sites set it where a wider family misbehaves; we never
 * override it), else from a table of CPU models.  A CPU newer than the
 * table gets its generic Prescott (SSE3) kernels: Debian 12's 0.3.21 on an
 * Emerald Rapids (family 6, model 207) ran the SVD-XT UNet 4x slower than
 * under its SkylakeX kernels.  So where the site set nothing, svdpipe
 * weighs the library's choice against the instruction sets the CPU reports
 * (CPUID, as the operating system enables them) and, where the library's is
 * weaker, re-executes itself with OPENBLAS_CORETYPE set to the best family
 * the CPU executes (svp_ops_blas_choose()).  The family decides the speed
 * and the last bits of every product: each family gives the same bits on
 * any thread count (gemm.c), but two families may differ.  A run names it,
 * and who chose it, in its log and sample.json.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops.h"

#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* Names svdpipe's own choice: "FAMILY:LIBRARY_CHOICE:PID" (pid: the
 * process that re-executed itself; exec keeps it). */
#define SVP_OPS_BLAS_MARKER "SVP_OPENBLAS_CHOICE"

/* Why svp_ops_blas_choose() could not apply its choice, for the log. */
static char svp_ops_blas_note[200];

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

/*
 * The instruction sets each of OpenBLAS's x86 kernel families executes
 * (its kernel/x86_64 sources), and its tier for svp_ops_blas_better(): 0
 * SSE, 1 AVX, 2 AVX2 and FMA, 3 AVX-512.  A family forced by
 * $OPENBLAS_CORETYPE is loaded whatever the CPU, and dies on its first
 * product with SIGILL where the CPU lacks one of them (SkylakeX without
 * AVX-512; the Bulldozer line's FMA4 and XOP, which Zen dropped).
 * OpenBLAS's own choice always runs.  Kept outside the x86 guard: the
 * choice is a pure function, tested on any machine.
 */
static const struct {
    const char *family;
    int         tier;
    const char *isa[5];
} svp_ops_blas_isa[] = {
    {"Opteron", 0, {"sse2"}},
    {"Opteron_SSE3", 0, {"sse3"}},
    {"Prescott", 0, {"sse3"}},
    {"Core2", 0, {"ssse3"}},
    {"Atom", 0, {"ssse3"}},
    {"Nano", 0, {"ssse3"}},
    {"Penryn", 0, {"sse4.1"}},
    {"Dunnington", 0, {"sse4.1"}},
    {"Nehalem", 0, {"sse4.2"}},
    {"Barcelona", 0, {"sse4a"}},
    {"Bobcat", 0, {"sse4a", "ssse3"}},
    {"Sandybridge", 1, {"avx"}},
    {"Bulldozer", 1, {"avx", "fma4", "xop"}},
    {"Piledriver", 1, {"avx", "fma4", "xop", "fma"}},
    {"Steamroller", 1, {"avx", "fma4", "xop", "fma"}},
    {"Haswell", 2, {"avx2", "fma"}},
    {"Zen", 2, {"avx2", "fma"}},
    {"Excavator", 2, {"avx2", "fma4", "xop", "fma"}},
    {"SkylakeX", 3, {"avx512f", "avx512bw", "avx512vl", "avx512dq"}},
    {"Cooperlake", 3, {"avx512f", "avx512bw", "avx512vl", "avx512dq"}},
    {"SapphireRapids", 3, {"avx512f", "avx512bw", "avx512vl", "avx512dq"}},
};
#define SVP_OPS_BLAS_NFAMILIES \
    (sizeof(svp_ops_blas_isa) / sizeof(svp_ops_blas_isa[0]))

/* The features svp_ops_cpuid_t records, widest first, with their names. */
static const struct {
    unsigned    bit;
    const char *name;
} svp_ops_cpuid_feature_names[] = {
    {SVP_OPS_CPUID_AVX512F, "avx512f"},   {SVP_OPS_CPUID_AVX512BW, "avx512bw"},
    {SVP_OPS_CPUID_AVX512VL, "avx512vl"}, {SVP_OPS_CPUID_AVX512DQ, "avx512dq"},
    {SVP_OPS_CPUID_AVX2, "avx2"},         {SVP_OPS_CPUID_FMA, "fma"},
    {SVP_OPS_CPUID_AVX, "avx"},
};

void svp_ops_cpuid_probe(svp_ops_cpuid_t *cpu_p)
{
    memset(cpu_p, 0, sizeof(*cpu_p));
#if defined(__x86_64__) || defined(__i386__)
    {
        unsigned int a, b, c, d, base;

        if (__get_cpuid(0, &a, &b, &c, &d)) {
            memcpy(cpu_p->vendor, &b, 4);
            memcpy(cpu_p->vendor + 4, &d, 4);
            memcpy(cpu_p->vendor + 8, &c, 4);
            cpu_p->vendor[12] = '\0';
            /* a hypervisor's may hold anything: printable ASCII for JSON and logs */
            for (a = 0; a < 12; ++a) {
                unsigned char ch = (unsigned char)cpu_p->vendor[a];

                if (ch != '\0' &&
                    (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\')) {
                    cpu_p->vendor[a] = '_';
                }
            }
        }
        if (__get_cpuid(1, &a, &b, &c, &d)) {
            /* the display family and model (the extended fields count
             * only on family 15, and on 6 for the model) */
            base          = (a >> 8) & 0xf;
            cpu_p->family = (int)(base + ((base == 0xf) ? ((a >> 20) & 0xff) : 0));
            cpu_p->model  = (int)((a >> 4) & 0xf);
            if (base == 0x6 || base == 0xf) {
                cpu_p->model |= (int)(((a >> 16) & 0xf) << 4);
            }
        }
    }
    /* libgcc's view: a feature counts only where the operating system
     * saves its registers (XCR0), as OpenBLAS asks too */
    __builtin_cpu_init();
#define SVP_CPU_(_bit, _name) \
    if (__builtin_cpu_supports(_name)) \
    cpu_p->features |= (_bit)
    SVP_CPU_(SVP_OPS_CPUID_AVX, "avx");
    SVP_CPU_(SVP_OPS_CPUID_AVX2, "avx2");
    SVP_CPU_(SVP_OPS_CPUID_FMA, "fma");
    SVP_CPU_(SVP_OPS_CPUID_AVX512F, "avx512f");
    SVP_CPU_(SVP_OPS_CPUID_AVX512BW, "avx512bw");
    SVP_CPU_(SVP_OPS_CPUID_AVX512VL, "avx512vl");
    SVP_CPU_(SVP_OPS_CPUID_AVX512DQ, "avx512dq");
#undef SVP_CPU_
#endif
}

void svp_ops_cpuid_features(const svp_ops_cpuid_t *cpu, char *buf, size_t len)
{
    size_t i, n = 0;

    if (len == 0) {
        return;
    }
    buf[0] = '\0';
    for (i = 0; i < sizeof(svp_ops_cpuid_feature_names) /
                        sizeof(svp_ops_cpuid_feature_names[0]);
         ++i) {
        if ((cpu->features & svp_ops_cpuid_feature_names[i].bit) && n < len) {
            n += (size_t)snprintf(buf + n, len - n, "%s%s", (n > 0) ? " " : "",
                                  svp_ops_cpuid_feature_names[i].name);
        }
    }
    if (n == 0) {
        snprintf(buf, len, "none of avx, avx2, fma, avx512");
    }
}

/* The tier of what the CPU executes, as the table's. */
static int svp_ops_cpuid_tier(const svp_ops_cpuid_t *cpu)
{
    const unsigned avx512 = SVP_OPS_CPUID_AVX512F | SVP_OPS_CPUID_AVX512BW |
                            SVP_OPS_CPUID_AVX512VL | SVP_OPS_CPUID_AVX512DQ;
    const unsigned avx2 = SVP_OPS_CPUID_AVX2 | SVP_OPS_CPUID_FMA;

    if ((cpu->features & avx2) != avx2) {
        return (cpu->features & SVP_OPS_CPUID_AVX) ? 1 : 0;
    }
    return ((cpu->features & avx512) == avx512) ? 3 : 2;
}

const char *svp_ops_blas_better(const svp_ops_cpuid_t *cpu,
                                const char            *library_choice)
{
    size_t i;
    int    tier;

    for (i = 0; i < SVP_OPS_BLAS_NFAMILIES; ++i) {
        if (library_choice != NULL &&
            strcasecmp(library_choice, svp_ops_blas_isa[i].family) == 0) {
            break;
        }
    }
    if (i == SVP_OPS_BLAS_NFAMILIES) {
        return NULL; /* a family we cannot place: the library's call */
    }
    tier = svp_ops_cpuid_tier(cpu);
    if (svp_ops_blas_isa[i].tier >= tier) {
        return NULL;
    }
    switch (tier) {
    case 3:
        /* on an Emerald Rapids SkylakeX ran the SVD-XT UNet in 9.4-9.8 s,
         * 0.3.21's SapphireRapids (its Cooperlake kernels) in 11.2-11.7,
         * Cooperlake 12.8-16.9, Haswell 14.1-18.2 */
        return "SkylakeX";
    case 2:
        return (!strcmp(cpu->vendor, "AuthenticAMD") ||
                !strcmp(cpu->vendor, "HygonGenuine"))
                   ? "Zen"
                   : "Haswell";
    default:
        return "Sandybridge";
    }
}

#if defined(HAVE_OPENBLAS_GET_CONFIG) && defined(HAVE_OPENBLAS_GET_CORENAME)
/*
 * The marker's fields when it names this process and the family
 * $OPENBLAS_CORETYPE holds: 1, with them in family_p and own_p; 0 when it
 * is absent, malformed, another process's (inherited) or overridden.
 */
static int svp_ops_blas_marker_ours(const char *forced, char *family_p, size_t flen,
                                    char *own_p, size_t olen)
{
    const char *marker = getenv(SVP_OPS_BLAS_MARKER);
    const char *c1, *c2;
    char       *end;
    long        pid;

    if (marker == NULL || forced == NULL || (c1 = strchr(marker, ':')) == NULL ||
        (c2 = strchr(c1 + 1, ':')) == NULL) {
        return 0;
    }
    errno = 0;
    pid   = strtol(c2 + 1, &end, 10);
    if (errno != 0 || *end != '\0' || pid != (long)getpid() ||
        (size_t)(c1 - marker) != strlen(forced) ||
        strncasecmp(marker, forced, (size_t)(c1 - marker)) != 0) {
        return 0;
    }
    snprintf(family_p, flen, "%.*s", (int)(c1 - marker), marker);
    snprintf(own_p, olen, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
    return 1;
}
#endif

void svp_ops_blas_choose(char **argv)
{
#if defined(HAVE_OPENBLAS_GET_CONFIG) && defined(HAVE_OPENBLAS_GET_CORENAME)
    const char     *forced = getenv("OPENBLAS_CORETYPE");
    const char     *marker = getenv(SVP_OPS_BLAS_MARKER);
    const char     *own, *better;
    char            family[64], ownbuf[64], value[200], site[64];
    svp_ops_cpuid_t cpu;

    if (marker != NULL) {
        if (svp_ops_blas_marker_ours(forced, family, sizeof(family), ownbuf,
                                     sizeof(ownbuf))) {
            return; /* re-executed: the choice is in force */
        }
        if (forced != NULL && *forced != '\0' &&
            strncasecmp(marker, forced, strlen(forced)) == 0 &&
            marker[strlen(forced)] == ':') {
            /* another svdpipe program's choice, for its own CPU: this one
             * lets the library choose again, then weighs it */
            snprintf(site, sizeof(site), "%s", forced);
            unsetenv(SVP_OPS_BLAS_MARKER);
            unsetenv("OPENBLAS_CORETYPE");
            execv("/proc/self/exe", argv);
            snprintf(
                svp_ops_blas_note, sizeof(svp_ops_blas_note),
                "OPENBLAS_CORETYPE=%s came from another svdpipe program and stays: "
                "re-executing /proc/self/exe failed: %s",
                site, strerror(errno));
            setenv("OPENBLAS_CORETYPE", site, 1);
            return;
        }
        unsetenv(SVP_OPS_BLAS_MARKER); /* stale: the variable is the site's */
        forced = getenv("OPENBLAS_CORETYPE");
    }
    if (forced != NULL && *forced != '\0') {
        return; /* the site's */
    }
    if (strstr(openblas_get_config(), "DYNAMIC_ARCH") == NULL) {
        return; /* one family built in: the variable does nothing */
    }
    own = openblas_get_corename();
    svp_ops_cpuid_probe(&cpu);
    better = svp_ops_blas_better(&cpu, own);
    if (better == NULL) {
        return;
    }
    snprintf(value, sizeof(value), "%s:%.64s:%ld", better, own, (long)getpid());
    if (setenv("OPENBLAS_CORETYPE", better, 1) == 0 &&
        setenv(SVP_OPS_BLAS_MARKER, value, 1) == 0) {
        execv("/proc/self/exe", argv);
    }
    snprintf(svp_ops_blas_note, sizeof(svp_ops_blas_note),
             "svdpipe could not re-execute itself with OPENBLAS_CORETYPE=%s: %s",
             better, strerror(errno));
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(SVP_OPS_BLAS_MARKER);
#else
    (void)argv;
#endif
}

void svp_ops_blas_query(svp_ops_blas_t *blas_p)
{
    const char *forced = getenv("OPENBLAS_CORETYPE");

    memset(blas_p, 0, sizeof(*blas_p));
    svp_ops_cpuid_probe(&blas_p->cpu);
#if defined(HAVE_OPENBLAS_GET_CONFIG) && defined(HAVE_OPENBLAS_GET_CORENAME)
    {
        const char *config = openblas_get_config();
        const char *ver, *better;
        char        family[64], own[64];

        /* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" */
        svp_ops_blas_copy(blas_p->config, sizeof(blas_p->config), config, 0);
        ver = (strncmp(config, "OpenBLAS ", 9) == 0) ? config + 9 : "";
        snprintf(blas_p->library, sizeof(blas_p->library), "OpenBLAS");
        if (*ver != '\0') {
            size_t n = strlen(blas_p->library);

            blas_p->library[n++] = ' ';
            svp_ops_blas_copy(blas_p->library + n, sizeof(blas_p->library) - n, ver,
                              1);
        }
        svp_ops_blas_copy(blas_p->kernels, sizeof(blas_p->kernels),
                          openblas_get_corename(), 1);
        /* only OpenBLAS reads the variable */
        if (svp_ops_blas_marker_ours(forced, family, sizeof(family), own,
                                     sizeof(own))) {
            svp_ops_blas_copy(blas_p->ours, sizeof(blas_p->ours), family, 1);
            svp_ops_blas_copy(blas_p->own, sizeof(blas_p->own), own, 1);
            if (strcasecmp(blas_p->kernels, blas_p->ours) != 0) {
                snprintf(blas_p->note, sizeof(blas_p->note),
                         "OpenBLAS runs %s though svdpipe set OPENBLAS_CORETYPE=%s",
                         blas_p->kernels, blas_p->ours);
            }
        } else {
            if (forced != NULL && *forced != '\0') {
                svp_ops_blas_copy(blas_p->forced, sizeof(blas_p->forced), forced, 1);
            }
            better = svp_ops_blas_better(&blas_p->cpu, blas_p->kernels);
            if (better != NULL) {
                snprintf(blas_p->better, sizeof(blas_p->better), "%s", better);
            }
            snprintf(blas_p->note, sizeof(blas_p->note), "%s", svp_ops_blas_note);
        }
    }
#else
    /* a CBLAS that does not say (reference BLAS, BLIS's, MKL's): the
     * family is whatever it chose */
    (void)forced;
    snprintf(blas_p->library, sizeof(blas_p->library), "CBLAS");
    snprintf(blas_p->kernels, sizeof(blas_p->kernels), "unknown");
#endif
}

void svp_ops_blas_describe_cpu(const svp_ops_blas_t *blas, char *buf, size_t len)
{
    char features[128];

    svp_ops_cpuid_features(&blas->cpu, features, sizeof(features));
    snprintf(buf, len, "%s, family %d, model %d; features: %s",
             blas->cpu.vendor[0] != '\0' ? blas->cpu.vendor : "unknown vendor",
             blas->cpu.family, blas->cpu.model, features);
}

void svp_ops_blas_describe(const svp_ops_blas_t *blas, char *buf, size_t len)
{
    char cpu[256];

    svp_ops_blas_describe_cpu(blas, cpu, sizeof(cpu));
    if (blas->ours[0] != '\0') {
        /* "...; OpenBLAS chose Prescott for this CPU (GenuineIntel, family
         * 6, model 207; features: avx512f ...)" */
        snprintf(buf, len,
                 "%s, %s kernels (svdpipe's choice; OpenBLAS chose %s for this "
                 "CPU (%s)%s%s)",
                 blas->library, blas->kernels, blas->own, cpu,
                 blas->note[0] != '\0' ? "; " : "", blas->note);
    } else if (blas->forced[0] != '\0') {
        snprintf(buf, len, "%s, %s kernels (OPENBLAS_CORETYPE=%s%s%s)",
                 blas->library, blas->kernels, blas->forced,
                 blas->note[0] != '\0' ? "; " : "", blas->note);
    } else if (blas->config[0] == '\0') {
        snprintf(buf, len, "%s, %s kernels (not reported by the BLAS)",
                 blas->library, blas->kernels);
    } else if (blas->better[0] != '\0') {
        snprintf(buf, len,
                 "%s, %s kernels (its choice for this CPU, which executes "
                 "%s's: %s; %s)",
                 blas->library, blas->kernels, blas->better, cpu,
                 blas->note[0] != '\0' ? blas->note : "not re-executed with them");
    } else {
        snprintf(buf, len, "%s, %s kernels (its choice for this CPU)", blas->library,
                 blas->kernels);
    }
}

#if defined(__x86_64__) || defined(__i386__)
/* __builtin_cpu_supports() wants a literal: one case per feature named above. */
static int svp_ops_blas_cpu_has(const char *isa)
{
#define SVP_ISA_(_name) \
    if (!strcmp(isa, _name)) \
    return __builtin_cpu_supports(_name) != 0
    SVP_ISA_("sse2");
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
    return 1; /* not one we know to ask about */
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
    for (i = 0; i < SVP_OPS_BLAS_NFAMILIES; ++i) {
        if (strcasecmp(blas->kernels, svp_ops_blas_isa[i].family) != 0) {
            continue;
        }
        for (k = 0; k < 5 && svp_ops_blas_isa[i].isa[k] != NULL; ++k) {
            if (!svp_ops_blas_cpu_has(svp_ops_blas_isa[i].isa[k])) {
                snprintf(
                    errbuf, (size_t)errlen,
                    "OPENBLAS_CORETYPE=%s: %s's %s kernels "
                    "need %s, which this CPU does not have: its first product "
                    "would die on an illegal instruction.  Unset it (svdpipe then "
                    "picks the widest family this CPU runs) or name a family this "
                    "CPU runs",
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
