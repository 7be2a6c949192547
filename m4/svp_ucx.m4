# SVP_CHECK_UCX: ucx through pkg-config module "ucx" or --with-ucx=DIR.
AC_DEFUN([SVP_CHECK_UCX], [SVP_CHECK_PKG([ucx], [ucx], [ucp/api/ucp.h], [ucp], [ucp_init_version], [yes])])
