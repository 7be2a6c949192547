# SVP_CHECK_YAML: yaml through pkg-config module "yaml-0.1" or --with-yaml=DIR.
AC_DEFUN([SVP_CHECK_YAML], [SVP_CHECK_PKG([yaml], [yaml-0.1], [yaml.h], [yaml], [yaml_parser_initialize], [yes])])
