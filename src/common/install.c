/*
 * Where a program finds svdpipe's own files (install.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/install.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set by Makefile.am (SVP_INSTALL_CPPFLAGS): the configured directories and
 * the build's own, expanded by make. */
#ifndef SVP_INSTALL_BINDIR
#define SVP_INSTALL_BINDIR ""
#endif
#ifndef SVP_INSTALL_PKGLIBDIR
#define SVP_INSTALL_PKGLIBDIR ""
#endif
#ifndef SVP_INSTALL_PKGDATADIR
#define SVP_INSTALL_PKGDATADIR ""
#endif
#ifndef SVP_BUILD_MODULEDIR
#define SVP_BUILD_MODULEDIR ""
#endif
#ifndef SVP_BUILD_SRCDIR
#define SVP_BUILD_SRCDIR ""
#endif

const char *svp_install_env_name(svp_install_kind_t kind)
{
    return (kind == SVP_INSTALL_MODULES) ? "SVP_MODULE_DIR" : "SVP_DATADIR";
}

/* An absolute path with doubled and trailing slashes dropped ("/" stays);
 * 0 when it is not absolute or does not fit. */
static int install_path_clean(const char *in, char *out, size_t len)
{
    size_t n = 0;

    if (in[0] != '/') {
        return 0;
    }
    for (; *in != '\0'; in++) {
        if (*in == '/' && n > 0 && out[n - 1] == '/') {
            continue;
        }
        if (n + 1 >= len) {
            return 0;
        }
        out[n++] = *in;
    }
    while (n > 1 && out[n - 1] == '/') {
        n--;
    }
    out[n] = '\0';
    return 1;
}

/* The folder of this program's executable, symlinks resolved; 0 when the
 * kernel does not say (no /proc). */
static int install_exe_dir(char *out, size_t len)
{
    char    buf[PATH_MAX];
    ssize_t n;
    char   *slash;

    n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0 || (size_t)n >= sizeof(buf) - 1) {
        return 0;
    }
    buf[n] = '\0';
    slash  = strrchr(buf, '/');
    if (slash == NULL) {
        return 0;
    }
    *((slash == buf) ? slash + 1 : slash) = '\0';
    return install_path_clean(buf, out, len);
}

/*
 * TARGET where this program's installed tree is now.  The configured
 * bindir and TARGET part at their longest common folder (the prefix, for
 * the usual layout: "/usr/local" + "/bin", "/lib/svdpipe"); when this
 * program's folder ends with bindir's part, the prefix is what precedes
 * it here, and TARGET is that followed by TARGET's part.  Returns 0 when
 * the program does not run from an installed tree (the build tree).
 */
static int install_relocate(const char *exe_dir, const char *bindir_cfg,
                            const char *target_cfg, char *out, size_t len)
{
    char   bindir[PATH_MAX], target[PATH_MAX];
    size_t i, common = 0, exe_len, rel_len;

    if (!install_path_clean(bindir_cfg, bindir, sizeof(bindir)) ||
        !install_path_clean(target_cfg, target, sizeof(target))) {
        return 0;
    }
    for (i = 0; bindir[i] != '\0' && bindir[i] == target[i]; i++) {
        if (bindir[i] == '/') {
            common = i;
        }
    }
    if ((bindir[i] == '\0' || bindir[i] == '/') &&
        (target[i] == '\0' || target[i] == '/')) {
        common = i;
    }
    /* bindir's part: "/bin"; empty when TARGET is inside bindir, which no
     * program's folder could tell from the build tree's */
    rel_len = strlen(bindir + common);
    exe_len = strlen(exe_dir);
    if (rel_len == 0 || exe_len < rel_len ||
        strcmp(exe_dir + exe_len - rel_len, bindir + common) != 0) {
        return 0;
    }
    if (snprintf(out, len, "%.*s%s", (int)(exe_len - rel_len), exe_dir,
                 target + common) >= (int)len) {
        return 0;
    }
    if (out[0] == '\0') {
        snprintf(out, len, "/");
    }
    return 1;
}

static void install_dirs_add(svp_install_dirs_t *dirs, const char *dir)
{
    int i;

    if (dir[0] == '\0' || dirs->count >= SVP_INSTALL_MAX_DIRS) {
        return;
    }
    for (i = 0; i < dirs->count; i++) {
        if (strcmp(dirs->dir[i], dir) == 0) {
            return;
        }
    }
    snprintf(dirs->dir[dirs->count++], sizeof(dirs->dir[0]), "%s", dir);
}

void svp_install_dirs_get(svp_install_kind_t kind, svp_install_dirs_t *dirs_p)
{
    const char *env = getenv(svp_install_env_name(kind));
    const char *configured, *build;
    char        exe_dir[PATH_MAX], here[PATH_MAX];
    int         installed = 0;

    dirs_p->count    = 0;
    dirs_p->from_env = 0;
    if (env != NULL && *env != '\0') {
        dirs_p->from_env = 1;
        install_dirs_add(dirs_p, env);
        return;
    }
    configured = (kind == SVP_INSTALL_MODULES) ? SVP_INSTALL_PKGLIBDIR
                                               : SVP_INSTALL_PKGDATADIR;
    build = (kind == SVP_INSTALL_MODULES) ? SVP_BUILD_MODULEDIR : SVP_BUILD_SRCDIR;
    if (install_exe_dir(exe_dir, sizeof(exe_dir)) &&
        install_relocate(exe_dir, SVP_INSTALL_BINDIR, configured, here,
                         sizeof(here))) {
        installed = 1;
        install_dirs_add(dirs_p, here);
    }
    if (!installed) {
        install_dirs_add(dirs_p, build);
    }
    install_dirs_add(dirs_p, configured);
}

svp_status_t svp_install_find(svp_install_kind_t kind, const char *relpath,
                              char *path, size_t len, char *looked,
                              size_t looked_len)
{
    svp_install_dirs_t dirs;
    size_t             used = 0;
    int                i;

    svp_install_dirs_get(kind, &dirs);
    if (looked != NULL && looked_len > 0) {
        looked[0] = '\0';
    }
    for (i = 0; i < dirs.count; i++) {
        char candidate[PATH_MAX];

        if (snprintf(candidate, sizeof(candidate), "%s/%s", dirs.dir[i], relpath) >=
            (int)sizeof(candidate)) {
            continue;
        }
        if (access(candidate, F_OK) == 0) {
            if (snprintf(path, len, "%s", candidate) >= (int)len) {
                return SVP_ERR_INVALID_PARAM;
            }
            return SVP_OK;
        }
        if (looked != NULL && used < looked_len) {
            used += (size_t)snprintf(looked + used, looked_len - used, "%s%s",
                                     (i > 0) ? ", " : "", candidate);
        }
    }
    return SVP_ERR_NOT_FOUND;
}
