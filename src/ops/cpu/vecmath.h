/*
 * Vector expf/erff for the CPU backend's loops.
 *
 * glibc's libmvec has SIMD versions of expf and erff (_ZGVbN4v_expf, ...),
 * but math.h only declares them under -ffast-math, which this build does
 * not use (it would also relax everything else).  Declaring the functions
 * "omp declare simd" lets GCC call the vector variants from `omp simd`
 * loops; Debian's libm.so links libmvec as needed.  Measured on unet_small
 * (1 thread): scalar erff + expf were 20% of the forward.  Accuracy: a few
 * ulp, the same order as the scalar functions (GELU within 3e-7 absolute of
 * the double reference over [-8, 8]).  x86-64 only: Debian 12's aarch64
 * glibc (2.36) ships no libmvec, so there the declarations made GCC call
 * _ZGVnN4v_expf, which no library defines (the link failed).
 */
#ifndef SVP_OPS_CPU_VECMATH_H
#define SVP_OPS_CPU_VECMATH_H

#include <math.h>

#if defined(__x86_64__)
#pragma omp declare simd notinbranch
extern float             expf(float);
#pragma omp declare simd notinbranch
extern float             erff(float);
#endif

#endif
