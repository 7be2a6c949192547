# SVP_CHECK_FFMPEG: libavcodec/libavformat/libavutil/libswscale for MP4 output.
# Optional: without them frames are still written as PNG.
AC_DEFUN([SVP_CHECK_FFMPEG], [
    AC_ARG_WITH([ffmpeg],
        [AS_HELP_STRING([--with-ffmpeg], [write MP4 through FFmpeg's libraries (default: guess)])],
        [], [with_ffmpeg=guess])
    have_ffmpeg=no
    AS_IF([test "x$with_ffmpeg" != "xno"], [
        PKG_CHECK_MODULES([FFMPEG], [libavcodec libavformat libavutil libswscale],
            [have_ffmpeg=yes; FFMPEG_CPPFLAGS="$FFMPEG_CFLAGS"], [have_ffmpeg=no])
        AS_IF([test "x$have_ffmpeg" = "xno" -a "x$with_ffmpeg" = "xyes"],
              [AC_MSG_ERROR([FFmpeg libraries requested but not found])])
        AS_IF([test "x$have_ffmpeg" = "xno"],
              [AC_MSG_WARN([FFmpeg libraries not found: no MP4 output])])
    ])
    AS_IF([test "x$have_ffmpeg" = "xyes"], [AC_DEFINE([HAVE_FFMPEG], [1], [Define if FFmpeg libraries are available])])
    AC_SUBST([FFMPEG_CPPFLAGS])
    AC_SUBST([FFMPEG_LIBS])
    AM_CONDITIONAL([HAVE_FFMPEG], [test "x$have_ffmpeg" = "xyes"])
])
