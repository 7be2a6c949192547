# SVP_CHECK_BLAS: a CBLAS for the CPU backend's matrix products.
# pkg-config's "openblas" first (Debian's libopenblas-dev), then "cblas",
# then --with-blas=DIR.  OpenBLAS also gives openblas_set_num_threads, and
# openblas_get_corename/openblas_get_config to name the kernels it runs.
AC_DEFUN([SVP_CHECK_BLAS], [
    AC_ARG_WITH([blas],
        [AS_HELP_STRING([--with-blas@<:@=DIR@:>@], [CBLAS to use (default: guess; openblas, then cblas)])],
        [], [with_blas=guess])
    have_blas=no
    BLAS_CPPFLAGS=""; BLAS_LDFLAGS=""; BLAS_LIBS=""
    svp_save_CPPFLAGS="$CPPFLAGS"; svp_save_LDFLAGS="$LDFLAGS"; svp_save_LIBS="$LIBS"
    AS_IF([test "x$with_blas" = "xguess" -o "x$with_blas" = "xyes"], [
        PKG_CHECK_MODULES([OPENBLAS], [openblas],
            [BLAS_CPPFLAGS="$OPENBLAS_CFLAGS"; BLAS_LIBS="$OPENBLAS_LIBS"],
            [PKG_CHECK_MODULES([CBLAS], [cblas],
                [BLAS_CPPFLAGS="$CBLAS_CFLAGS"; BLAS_LIBS="$CBLAS_LIBS"],
                [BLAS_LIBS="-lopenblas"])])
    ], [
        BLAS_CPPFLAGS="-I$with_blas/include"
        BLAS_LDFLAGS="-L$with_blas/lib -Wl,-rpath,$with_blas/lib"
        BLAS_LIBS="-lopenblas"
    ])
    CPPFLAGS="$CPPFLAGS $BLAS_CPPFLAGS"; LDFLAGS="$LDFLAGS $BLAS_LDFLAGS"; LIBS="$BLAS_LIBS $LIBS"
    AC_CHECK_HEADER([cblas.h], [
        AC_MSG_CHECKING([for cblas_sgemm])
        AC_LINK_IFELSE([AC_LANG_CALL([], [cblas_sgemm])], [have_blas=yes])
        AC_MSG_RESULT([$have_blas])
        AC_CHECK_FUNCS([openblas_set_num_threads openblas_get_corename openblas_get_config])
    ])
    CPPFLAGS="$svp_save_CPPFLAGS"; LDFLAGS="$svp_save_LDFLAGS"; LIBS="$svp_save_LIBS"
    AS_IF([test "x$have_blas" = "xno"],
          [AC_MSG_ERROR([a CBLAS is required (Debian: libopenblas-dev)])])
    AC_DEFINE([HAVE_BLAS], [1], [Define if a CBLAS is available])
    AC_SUBST([BLAS_CPPFLAGS])
    AC_SUBST([BLAS_LDFLAGS])
    AC_SUBST([BLAS_LIBS])
])
