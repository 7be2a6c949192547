# SVP_CHECK_LIBARCHIVE: libarchive (the WebDataset tar shards) through pkg-config
# module "libarchive" or --with-libarchive=DIR.
AC_DEFUN([SVP_CHECK_LIBARCHIVE], [SVP_CHECK_PKG([libarchive], [libarchive], [archive.h], [archive], [archive_write_new], [yes])])
