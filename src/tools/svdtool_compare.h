#ifndef SVP_TOOLS_SVDTOOL_COMPARE_H
#define SVP_TOOLS_SVDTOOL_COMPARE_H
/* svdtool compare A[:T] REF[:T] [--tol REL] */
int svdtool_compare_main(int argc, char **argv);
#endif
