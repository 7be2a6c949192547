/*
 * Where a program finds svdpipe's own files: the backend modules
 * (svdpipe_cuda.so) and the shared data (etc/: job specs, hardware tables,
 * model configs, the demo input; slurm/: job scripts).
 *
 * `make install` puts them in $(pkglibdir) and $(pkgdatadir); the data
 * there mirrors the source tree's etc/ and slurm/, so one relative path
 * ("etc/models/svd-mini") names a file in either.  The directories the
 * build was configured with are compiled in, but a site installs into
 * a prefix of its own (`make install prefix=P`, EasyBuild, a package
 * built with DESTDIR) and moves trees around, so a program first looks
 * where its own executable says the tree is: a program in P/bin has its
 * modules in P/lib/svdpipe and its data in P/share/svdpipe, whatever the
 * configured prefix was.
 *
 * The directories to look in for a kind, best first:
 *   1. its environment variable (SVP_MODULE_DIR, SVP_DATADIR) when set and
 *      not empty: there only, so that a test or an admin can say exactly
 *      what a run gets;
 *   2. the installed tree this program runs from, found from its own path
 *      (/proc/self/exe, symlinks resolved) and the configured layout (the
 *      path from bindir to the directory);
 *   3. for a program that does not run from an installed tree (the build
 *      tree): the build tree's module directory, or the source tree;
 *   4. the configured directory, when not already listed.
 */
#ifndef SVP_COMMON_INSTALL_H
#define SVP_COMMON_INSTALL_H

#include "common/status.h"

#include <limits.h>
#include <stddef.h>

#define SVP_INSTALL_MAX_DIRS 3

typedef enum {
    SVP_INSTALL_MODULES, /* backend modules; $SVP_MODULE_DIR */
    SVP_INSTALL_DATA     /* etc/, slurm/; $SVP_DATADIR */
} svp_install_kind_t;

/* The directories to look in, best first (see above).  A value filled by
 * svp_install_dirs_get(); nothing to free. */
typedef struct svp_install_dirs {
    int  count;
    int  from_env; /* dir[0] is the environment variable's, alone */
    char dir[SVP_INSTALL_MAX_DIRS][PATH_MAX];
} svp_install_dirs_t;

/* The environment variable that overrides KIND's directories. */
const char *svp_install_env_name(svp_install_kind_t kind);

/* Fills *dirs_p with KIND's directories for this process. */
void svp_install_dirs_get(svp_install_kind_t kind, svp_install_dirs_t *dirs_p);

/*
 * Finds RELPATH (a file or a folder, e.g. "etc/models/svd-mini") in KIND's
 * directories: writes the first existing DIR/RELPATH to path (len bytes)
 * and returns SVP_OK; else returns SVP_ERR_NOT_FOUND and writes to looked
 * (looked_len bytes; may be NULL) every path it tried, comma-separated, so
 * that the caller's message can say where it looked.  Logs nothing.
 */
svp_status_t svp_install_find(svp_install_kind_t kind, const char *relpath,
                              char *path, size_t len, char *looked,
                              size_t looked_len);

#endif
