# SVP_CHECK_JANSSON: jansson through pkg-config module "jansson" or --with-jansson=DIR.
AC_DEFUN([SVP_CHECK_JANSSON], [SVP_CHECK_PKG([jansson], [jansson], [jansson.h], [jansson], [json_loads], [yes])])
