# SVP_CHECK_PMIX: pmix through pkg-config module "pmix" or --with-pmix=DIR.
AC_DEFUN([SVP_CHECK_PMIX], [SVP_CHECK_PKG([pmix], [pmix], [pmix.h], [pmix], [PMIx_Init], [yes])])
