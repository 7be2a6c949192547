/*
 * What the UNet benchmarks share: sorting the times of their runs (the
 * median is then times[runs / 2], the extremes the ends).  Wall times come
 * from svp_clock_now() (common/clock.h).
 */
#ifndef SVP_BENCH_UTIL_H
#define SVP_BENCH_UTIL_H

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

#endif
