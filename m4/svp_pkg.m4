# SVP_CHECK_PKG(NAME, PKGCONFIG-MODULE, HEADER, LIBRARY, FUNCTION, [REQUIRED=yes|guess])
# ------------------------------------------------------------------------------
# The one way svdpipe finds a dependency: --with-NAME[=DIR] (default "guess"),
# pkg-config first, then DIR/include and DIR/lib.  CPPFLAGS/LDFLAGS/LIBS are
# saved and restored; the result is NAME_CPPFLAGS, NAME_LDFLAGS, NAME_LIBS and
# have_NAME=yes|no.  A dependency asked for by --with-NAME that is missing is
# an error; a guessed one that is missing is left to the caller (warn or fail).
AC_DEFUN([SVP_CHECK_PKG], [
    m4_pushdef([_UP], m4_toupper([$1]))
    AC_ARG_WITH([$1],
        [AS_HELP_STRING([--with-$1@<:@=DIR@:>@], [use $1 (default: guess)])],
        [], [with_$1=guess])
    have_$1=no
    _UP[]_CPPFLAGS=""
    _UP[]_LDFLAGS=""
    _UP[]_LIBS=""
    AS_IF([test "x$with_$1" != "xno"], [
        svp_save_CPPFLAGS="$CPPFLAGS"; svp_save_LDFLAGS="$LDFLAGS"; svp_save_LIBS="$LIBS"
        AS_IF([test "x$with_$1" = "xguess" -o "x$with_$1" = "xyes"], [
            m4_ifnblank([$2], [
                PKG_CHECK_MODULES(_UP, [$2],
                    [_UP[]_CPPFLAGS="$[]_UP[]_CFLAGS"], [:])
            ])
        ], [
            _UP[]_CPPFLAGS="-I$with_$1/include"
            AS_IF([test -d "$with_$1/lib64"],
                  [_UP[]_LDFLAGS="-L$with_$1/lib64 -Wl,-rpath,$with_$1/lib64"],
                  [_UP[]_LDFLAGS="-L$with_$1/lib -Wl,-rpath,$with_$1/lib"])
        ])
        CPPFLAGS="$CPPFLAGS $[]_UP[]_CPPFLAGS"
        LDFLAGS="$LDFLAGS $[]_UP[]_LDFLAGS"
        AC_CHECK_HEADER([$3], [
            AS_IF([test "x$[]_UP[]_LIBS" != "x"], [LIBS="$[]_UP[]_LIBS $LIBS"])
            AC_MSG_CHECKING([for $5 in $1])
            AC_LINK_IFELSE([AC_LANG_CALL([], [$5])],
                [have_$1=yes], [
                 LIBS="-l$4 $svp_save_LIBS"
                 AC_LINK_IFELSE([AC_LANG_CALL([], [$5])],
                    [have_$1=yes; _UP[]_LIBS="-l$4"], [have_$1=no])])
            AC_MSG_RESULT([$have_$1])
        ])
        CPPFLAGS="$svp_save_CPPFLAGS"; LDFLAGS="$svp_save_LDFLAGS"; LIBS="$svp_save_LIBS"
        AS_IF([test "x$have_$1" = "xno" -a "x$with_$1" != "xguess"],
              [AC_MSG_ERROR([$1 was requested (--with-$1=$with_$1) but not found])])
        AS_IF([test "x$have_$1" = "xno" -a "x$6" != "xguess"],
              [AC_MSG_ERROR([$1 is required: install its development package (see README.md)])])
        AS_IF([test "x$have_$1" = "xno"],
              [AC_MSG_WARN([$1 not found: the parts that need it are not built])])
    ])
    AS_IF([test "x$have_$1" = "xyes"],
          [AC_DEFINE([HAVE_]_UP, [1], [Define if $1 is available])])
    AC_SUBST(_UP[]_CPPFLAGS)
    AC_SUBST(_UP[]_LDFLAGS)
    AC_SUBST(_UP[]_LIBS)
    AM_CONDITIONAL([HAVE_]_UP, [test "x$have_$1" = "xyes"])
    m4_popdef([_UP])
])
