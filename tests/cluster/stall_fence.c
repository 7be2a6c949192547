/*
 * stall_fence: an LD_PRELOAD shim for the start-up tests.  The first
 * PMIx_Fence_nb a process calls never returns: the rank has published its
 * address (PMIx_Commit came first) and stalls before the fence, as a rank
 * whose node hangs at that moment would.  Its other threads run on, so it
 * is alive but absent from the fence.
 */
#include <stddef.h>
#include <unistd.h>

int PMIx_Fence_nb(const void *procs, size_t nprocs, const void *info, size_t ninfo,
                  void *cbfunc, void *cbdata);

int PMIx_Fence_nb(const void *procs, size_t nprocs, const void *info, size_t ninfo,
                  void *cbfunc, void *cbdata)
{
    (void)procs;
    (void)nprocs;
    (void)info;
    (void)ninfo;
    (void)cbfunc;
    (void)cbdata;
    for (;;) {
        pause();
    }
    return 0;
}
