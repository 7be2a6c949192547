# SVP_CHECK_CRITERION: criterion through pkg-config module "criterion" or --with-criterion=DIR.
AC_DEFUN([SVP_CHECK_CRITERION], [SVP_CHECK_PKG([criterion], [criterion], [criterion/criterion.h], [criterion], [criterion_initialize], [guess])])
