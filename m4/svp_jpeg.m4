# SVP_CHECK_JPEG: jpeg through pkg-config module "libjpeg" or --with-jpeg=DIR.
AC_DEFUN([SVP_CHECK_JPEG], [SVP_CHECK_PKG([jpeg], [libjpeg], [jpeglib.h], [jpeg], [jpeg_CreateDecompress], [yes])])
