# SVP_CHECK_CUDA: the CUDA backend.
#
# Two separate questions, as UCX asks them:
#   HAVE_NVCC  - can we compile kernels/ (nvcc found)?
#   HAVE_CUDA  - can we link the runtime and libraries (cudart, cuBLAS, cuDNN)?
# --with-cuda=DIR (default: guess /usr/local/cuda).  Absent CUDA is a warning;
# --with-cuda given explicitly and not found is an error.
AC_DEFUN([SVP_CHECK_CUDA], [
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA toolkit (default: guess, /usr/local/cuda)])],
        [], [with_cuda=guess])
    have_cuda=no; have_nvcc=no; have_cudart=no; have_cublas=no; have_cudnn=no
    CUDA_CPPFLAGS=""; CUDA_LDFLAGS=""; CUDA_LIBS=""; NVCC=""
    AS_IF([test "x$with_cuda" != "xno"], [
        AS_IF([test "x$with_cuda" = "xguess" -o "x$with_cuda" = "xyes"],
              [svp_cuda_dir=/usr/local/cuda], [svp_cuda_dir="$with_cuda"])
        AC_PATH_PROG([NVCC], [nvcc], [], [$svp_cuda_dir/bin:$PATH])
        AS_IF([test "x$NVCC" != "x"], [have_nvcc=yes])
        CUDA_CPPFLAGS="-I$svp_cuda_dir/include"
        CUDA_LDFLAGS="-L$svp_cuda_dir/lib64 -Wl,-rpath,$svp_cuda_dir/lib64"
        svp_save_CPPFLAGS="$CPPFLAGS"; svp_save_LDFLAGS="$LDFLAGS"; svp_save_LIBS="$LIBS"
        CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
        AC_CHECK_HEADER([cuda_runtime.h], [
            AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [have_cudart=yes])
            AC_CHECK_LIB([cublas], [cublasCreate_v2], [have_cublas=yes], [], [-lcudart])
        ])
        AC_CHECK_HEADER([cudnn.h], [
            AC_CHECK_LIB([cudnn], [cudnnCreate], [have_cudnn=yes], [], [-lcudart])
        ])
        CPPFLAGS="$svp_save_CPPFLAGS"; LDFLAGS="$svp_save_LDFLAGS"; LIBS="$svp_save_LIBS"
        AS_IF([test "x$have_cudart" = "xyes" -a "x$have_cublas" = "xyes"], [
            have_cuda=yes
            CUDA_LIBS="-lcudart -lcublas"
            AS_IF([test "x$have_cudnn" = "xyes"], [CUDA_LIBS="$CUDA_LIBS -lcudnn"
                   AC_DEFINE([HAVE_CUDNN], [1], [Define if cuDNN is available])])
        ])
        AS_IF([test "x$have_cuda" = "xno" -a "x$with_cuda" != "xguess"],
              [AC_MSG_ERROR([CUDA requested (--with-cuda=$with_cuda) but cudart/cuBLAS not found in $svp_cuda_dir])])
        AS_IF([test "x$have_cuda" = "xno"],
              [AC_MSG_WARN([CUDA not found: building the CPU backend only])])
        AS_IF([test "x$have_cuda" = "xyes" -a "x$have_nvcc" = "xno"],
              [AC_MSG_WARN([CUDA libraries found but no nvcc: the CUDA backend is not built])])
    ])
    AS_IF([test "x$have_cuda" = "xyes" -a "x$have_nvcc" = "xyes"],
          [AC_DEFINE([HAVE_CUDA], [1], [Define if the CUDA backend is built])],
          [have_cuda=no])
    AC_ARG_VAR([NVCC], [CUDA compiler])
    AC_ARG_VAR([NVCCFLAGS], [flags for nvcc])
    AC_SUBST([CUDA_CPPFLAGS])
    AC_SUBST([CUDA_LDFLAGS])
    AC_SUBST([CUDA_LIBS])
    AM_CONDITIONAL([HAVE_NVCC], [test "x$have_nvcc" = "xyes"])
    AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = "xyes"])
])
