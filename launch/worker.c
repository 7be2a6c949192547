/*
 * The worker as the job's script names it: cluster.worker resolved from
 * here, for the script (render.c) and for the check that the path it names
 * works (validate.c), so that both read it the same way.  Its own file:
 * the script's writer uses the checks, and the checks use this, which
 * uses only the effective values (helpers.c) and the mounts (container.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int svp_launch_worker_path(const svp_spec_t *spec, char *out, size_t len, char *why,
                           size_t whylen)
{
    const char *worker = svp_launch_worker(spec);
    char        cwd[4096], host[8192];

    if (worker[0] == '/' || strchr(worker, '/') == NULL) {
        snprintf(out, len, "%s", worker);
        return 1;
    }
    /*
     * Relative: the spec reader joined a spec's own value to the spec's
     * folder, and a --set value is the working directory's, so both name
     * the file from here.  The job runs srun in its own working directory
     * (sbatch's, or --chdir's), where the same text named another file
     * ("execve(): sub/bin/svdworker: No such file or directory"): the
     * script names it from the root.
     */
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        snprintf(why, whylen,
                 "an absolute path (the working directory, "
                 "which a relative one is resolved from, is unknown: %s)",
                 strerror(errno));
        return 0;
    }
    snprintf(host, sizeof(host), "%s/%s", strcmp(cwd, "/") ? cwd : "", worker);
    {
        /* "sub/../bin" read once: its folder resolved where it exists, the
         * name kept (a link named svdworker stays what is run) */
        char  *slash = strrchr(host, '/'), dir[PATH_MAX], name[PATH_MAX];
        size_t used;

        snprintf(name, sizeof(name), "%s", slash + 1);
        *slash = '\0';
        used   = (realpath(host, dir) == NULL) ? sizeof(host)
                 : strcmp(dir, "/")            ? strlen(dir)
                                               : 0;
        if (used + 1 + strlen(name) < sizeof(host)) {
            memcpy(host, dir, used);
            host[used] = '/';
            memcpy(host + used + 1, name, strlen(name) + 1);
        } else {
            *slash = '/'; /* as joined */
        }
    }
    if (!svp_launch_in_container(spec)) {
        if (strlen(host) >= len) {
            snprintf(why, whylen,
                     "a path of at most %zu bytes, resolved from "
                     "the spec's folder",
                     len - 1);
            return 0;
        }
        snprintf(out, len, "%s", host);
        return 1;
    }
    /* srun starts it inside the container: the host path through a mount */
    if (!svp_launch_container_path(spec, host, out, len)) {
        snprintf(why, whylen,
                 "an absolute path in the container, or a path "
                 "relative to the spec's folder that a mount shows (%s is "
                 "under no mount's SRC)",
                 host);
        return 0;
    }
    return 1;
}
