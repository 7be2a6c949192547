/*
 * Backends loaded at run time.  A device backend (today: CUDA) is built as a
 * shared module, svdpipe_<name>.so, that the core opens with dlopen only when
 * a job asks for that device, so a CPU run maps no device library and one
 * binary serves GPU and CPU-only nodes.
 *
 * A module exports one symbol, SVP_OPS_MODULE_QUERY, a function returning a
 * pointer to a static svp_ops_module_t.  The table lives as long as the
 * process: a loaded module is never closed (its libraries keep driver state
 * and atexit handlers that would outlive an unmapped module).
 *
 * Where a module is looked for (common/install.h, SVP_INSTALL_MODULES):
 *   1. $SVP_MODULE_DIR, when set: there only (a test or an admin can then
 *      say exactly which module, or none, a run gets);
 *   2. the lib/svdpipe of the installed tree the program runs from, found
 *      from its own path, so that a prefix other than the configured one
 *      (`make install prefix=P`, a moved tree) finds its own module;
 *   3. the build tree, for a program that runs from it;
 *   4. the configured $(pkglibdir).
 */
#ifndef SVP_OPS_OPS_MODULE_H
#define SVP_OPS_OPS_MODULE_H

#include "common/devmem.h"
#include "ops/ops_backend.h"

/* Bumped whenever svp_ops_module_t or svp_ops_ops_t changes layout. */
#define SVP_OPS_MODULE_ABI   4
#define SVP_OPS_MODULE_QUERY "svp_ops_module_query"


typedef struct svp_ops_module {
    unsigned    abi;  /* SVP_OPS_MODULE_ABI of the module's build */
    const char *name; /* "cuda" */
    /* Devices the runtime shows this process (after CUDA_VISIBLE_DEVICES).
     * SVP_ERR_DEVICE, logged, when there is no driver. */
    svp_status_t (*device_count)(int *count_p);
    /* Fills ops->vt and ops->impl (see ops_backend.h) on device ops->device,
     * chosen by the core (ops_gpu.h), and logs the device.  Fails with
     * SVP_ERR_DEVICE, having logged why, when there is no driver or device. */
    svp_status_t (*init)(svp_ops_h ops);
    /* Device memory on the device init made current. */
    const svp_devmem_t *devmem;
} svp_ops_module_t;

typedef const svp_ops_module_t *(*svp_ops_module_query_fn_t)(void);

/*
 * Open the module of backend NAME (once per process) and return its table.
 * Fails with SVP_ERR_UNSUPPORTED, logging every place looked in, when no
 * module file is found, and with SVP_ERR_DEVICE, logging dlopen's reason
 * (typically a missing libcudart or driver), when it is found but cannot be
 * loaded.  *module_p is written only on success.
 */
svp_status_t svp_ops_module_load(const char              *name,
                                 const svp_ops_module_t **module_p);

#endif
