/*
 * What the UNet benchmarks share: sorting the times of their runs (the
 * median is then times[runs / 2], the extremes the ends), and the line
 * naming the BLAS kernels they ran.  Wall times come
 * from svp_clock_now() (common/clock.h).
 */
#ifndef SVP_BENCH_UTIL_H
#define SVP_BENCH_UTIL_H

#include "ops/ops.h"

#include <stdio.h>
#include <stdlib.h>

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Sorts n run times in place, shortest first. */
static inline void bench_sort_times(double *times, int n)
{
    qsort(times, (size_t)n, sizeof(*times), bench_cmp_double);
}

/*
 * The BLAS kernel family the figures were measured with, on a line of its
 * own after key ("kernels: " or the aligned "kernels        : "): the same
 * CPU runs 1.5x slower or faster by it alone.
 */
static inline void bench_print_kernels(const char *key)
{
    svp_ops_blas_t blas;
    char           line[256];

    svp_ops_blas_query(&blas);
    svp_ops_blas_describe(&blas, line, sizeof(line));
    printf("%s%s\n", key, line);
}

#endif
