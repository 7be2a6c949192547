/* CPU backend: handle setup, host memory, workspace. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cpu/ops_cpu.h"
#include "common/log.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static void svp_ops_cpu_cleanup(svp_ops_h ops)
{
    svp_ops_cpu_t *cpu = ops->impl;

    free(cpu->scratch);
    svp_ops_cpu_bf16_cleanup(cpu);
    free(cpu);
}

/* 64-byte alignment: whole cache lines and full AVX-512 vectors. */
static svp_status_t svp_ops_cpu_alloc(svp_ops_h ops, size_t count, float **buf_p)
{
    void *buf;

    if (posix_memalign(&buf, 64, (count ? count : 1) * sizeof(float)) != 0) {
        svp_error("cannot allocate %zu floats of host memory", count);
        return SVP_ERR_NO_MEMORY;
    }
    *buf_p = buf;
    return SVP_OK;
}

static void svp_ops_cpu_free(svp_ops_h ops, float *buf)
{
    free(buf);
}

static svp_status_t svp_ops_cpu_memcpy(svp_ops_h ops, float *dst, const float *src,
                                       size_t count)
{
    memcpy(dst, src, count * sizeof(float));
    return SVP_OK;
}

svp_status_t svp_ops_cpu_scratch(svp_ops_h ops, size_t count, float **buf_p)
{
    svp_ops_cpu_t *cpu = ops->impl;
    float         *buf;

    if (count > cpu->scratch_count) {
        if (svp_ops_cpu_alloc(ops, count, &buf) != SVP_OK) {
            return SVP_ERR_NO_MEMORY;
        }
        ops->mem.backend_allocs++;
        ops->mem.reserved_bytes += (count - cpu->scratch_count) * sizeof(float);
        free(cpu->scratch);
        cpu->scratch       = buf;
        cpu->scratch_count = count;
    }
    *buf_p = cpu->scratch;
    return SVP_OK;
}

/*
 * 16-bit weights to fp32, exactly: bf16 is the top half of an fp32, f16
 * widens through svp_convert_elements() (F16C where the CPU has it).  Both
 * split over the OpenMP threads element by element, so no bit depends on
 * the thread count.
 */
svp_status_t svp_ops_cpu_widen(svp_ops_h ops, svp_dtype_t dtype, const void *src,
                               size_t count, float *dst)
{
    const uint16_t *h = src;
    uint32_t       *d = (uint32_t *)(void *)dst;
    int64_t         i;

    if (dtype == SVP_DTYPE_F16) {
        return svp_convert_elements(SVP_DTYPE_F16, src, SVP_DTYPE_F32, dst,
                                    (int64_t)count);
    }
#pragma omp parallel for schedule(static) if (count >= (1u << 16))
    for (i = 0; i < (int64_t)count; i++) {
        d[i] = (uint32_t)h[i] << 16;
    }
    return SVP_OK;
}

/* the ops (ops_list.h): svp_ops_cpu_<name> in the slot <name> */
#define SVP_OPS_CPU_SLOT_(_name, _out, _flops, _checks, ...) \
    ._name = svp_ops_cpu_##_name,

static const svp_ops_ops_t svp_ops_cpu_ops = {.backend     = SVP_OPS_BACKEND_CPU,
                                              .host_memory = 1,
                                              .cleanup     = svp_ops_cpu_cleanup,
                                              .alloc       = svp_ops_cpu_alloc,
                                              .free        = svp_ops_cpu_free,
                                              .upload      = svp_ops_cpu_memcpy,
                                              .download    = svp_ops_cpu_memcpy,
                                              SVP_OPS_LIST(SVP_OPS_CPU_SLOT_,
                                                           const float *)};

svp_status_t svp_ops_cpu_init(svp_ops_h ops)
{
    svp_ops_cpu_t *cpu = calloc(1, sizeof(*cpu));

    if (cpu == NULL) {
        svp_error("cannot allocate the cpu backend state");
        return SVP_ERR_NO_MEMORY;
    }
    /*
     * OpenBLAS single-threaded first (see ops_cpu.h: one thread pool), then
     * OpenMP's count: the OpenMP build of OpenBLAS (Debian's
     * libopenblas0-openmp) sets OpenMP's thread count to the number it is
     * given, in some releases, which would leave every loop below on one
     * thread.  Inside our parallel regions that build runs single-threaded
     * anyway; the pthreads build needs the call.
     */
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
    openblas_set_num_threads(1);
#endif
#ifdef _OPENMP
    omp_set_num_threads(ops->threads);
#endif
    ops->vt   = &svp_ops_cpu_ops;
    ops->impl = cpu;
    svp_debug("ops: cpu backend, %d threads, %s 3x3 convolutions", ops->threads,
              svp_ops_cpu_has_kernel() ? "AVX-512 Winograd" : "OpenBLAS Winograd");
    return SVP_OK;
}
