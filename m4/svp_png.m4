# SVP_CHECK_PNG: png through pkg-config module "libpng" or --with-png=DIR.
AC_DEFUN([SVP_CHECK_PNG], [SVP_CHECK_PKG([png], [libpng], [png.h], [png], [png_create_read_struct], [yes])])
