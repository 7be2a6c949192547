/*
 * The run-time loader of backend modules (ops_module.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_module.h"
#include "common/install.h"
#include "common/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t svp_ops_module_lock = PTHREAD_MUTEX_INITIALIZER;

static svp_status_t svp_ops_module_open(const char              *name,
                                        const svp_ops_module_t **module_p)
{
    svp_install_dirs_t        dirs;
    char                      path[PATH_MAX];
    char                      looked[SVP_INSTALL_MAX_DIRS * PATH_MAX] = "";
    svp_ops_module_query_fn_t query;
    const svp_ops_module_t   *module;
    void                     *handle;
    int                       i;

    svp_install_dirs_get(SVP_INSTALL_MODULES, &dirs);
    for (i = 0; i < dirs.count; i++) {
        snprintf(path, sizeof(path), "%s/svdpipe_%s.so", dirs.dir[i], name);
        snprintf(looked + strlen(looked), sizeof(looked) - strlen(looked), "%s%s",
                 (i > 0) ? ", " : "", dirs.dir[i]);
        if (access(path, F_OK) != 0) {
            continue;
        }
        /* RTLD_LOCAL: the module's CUDA libraries stay out of the global
         * namespace; RTLD_NOW: a missing library fails here, not at the
         * first op */
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            svp_error("cannot load the %s backend module %s: %s (no %s "
                      "driver or runtime on this node?)",
                      name, path, dlerror(), name);
            return SVP_ERR_DEVICE;
        }
        query = (svp_ops_module_query_fn_t)dlsym(handle, SVP_OPS_MODULE_QUERY);
        if (query == NULL) {
            svp_error("%s is not an svdpipe backend module: no symbol %s", path,
                      SVP_OPS_MODULE_QUERY);
            dlclose(handle);
            return SVP_ERR_DEVICE;
        }
        module = query();
        if (module == NULL || module->abi != SVP_OPS_MODULE_ABI ||
            module->name == NULL || strcmp(module->name, name) != 0) {
            svp_error("%s was built for another svdpipe (module abi %u, "
                      "expected %u): rebuild or reinstall it",
                      path, (module != NULL) ? module->abi : 0, SVP_OPS_MODULE_ABI);
            dlclose(handle);
            return SVP_ERR_DEVICE;
        }
        svp_debug("loaded the %s backend module %s", name, path);
        *module_p = module;
        return SVP_OK;
    }
    svp_error("%s backend module not found (looked for svdpipe_%s.so in %s%s)", name,
              name, (dirs.count > 0) ? looked : "no directory",
              dirs.from_env ? ", from SVP_MODULE_DIR"
                            : "; SVP_MODULE_DIR names the folder that holds it");
    return SVP_ERR_UNSUPPORTED;
}

svp_status_t svp_ops_module_load(const char *name, const svp_ops_module_t **module_p)
{
    /* one slot: the only module today is cuda */
    static const svp_ops_module_t *loaded;
    svp_status_t                   status = SVP_OK;

    pthread_mutex_lock(&svp_ops_module_lock);
    if (loaded == NULL || strcmp(loaded->name, name) != 0) {
        status = svp_ops_module_open(name, &loaded);
    }
    if (status == SVP_OK) {
        *module_p = loaded;
    }
    pthread_mutex_unlock(&svp_ops_module_lock);
    return status;
}
