/*
 * The CPU threads a process runs by default (threads.h): from the
 * environment, the affinity mask or the online CPUs.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/threads.h"
#include "common/log.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

/* A thread count from an environment variable: > 0, or 0 when unset or bad
 * (named once per process and variable: the count is asked more than once). */
static int svp_threads_env(const char *name, int *warned)
{
    const char *env = getenv(name);
    char       *end;
    long        n;

    if (env == NULL || *env == '\0') {
        return 0;
    }
    /* OMP_NUM_THREADS may list a count per nesting level: "4,2" */
    n = strtol(env, &end, 10);
    if (n > 0 && n < 4096 && (*end == '\0' || *end == ',')) {
        return (int)n;
    }
    if (!*warned) {
        *warned = 1;
        svp_warn("ignoring %s='%s': not a positive thread count", name, env);
    }
    return 0;
}

int svp_threads_default(const char **from_p)
{
    static int  warned_svp, warned_omp;
    const char *from;
    cpu_set_t   mask;
    long        n;

    if ((n = svp_threads_env("SVP_THREADS", &warned_svp)) > 0) {
        from = "SVP_THREADS";
    } else if ((n = svp_threads_env("OMP_NUM_THREADS", &warned_omp)) > 0) {
        from = "OMP_NUM_THREADS";
    } else if (sched_getaffinity(0, sizeof(mask), &mask) == 0 &&
               (n = CPU_COUNT(&mask)) > 0) {
        /*
         * Slurm binds each task to --cpus-per-task CPUs (1 unless asked):
         * the node's count would start every core's worth of threads in
         * each of its ranks, and they would fight over the task's CPUs.
         * A mask wider than cpu_set_t's 1024 CPUs fails and falls through.
         */
        from = "the CPU affinity mask";
    } else {
        n    = sysconf(_SC_NPROCESSORS_ONLN);
        n    = (n > 0) ? n : 1;
        from = "the online CPUs";
    }
    if (from_p != NULL) {
        *from_p = from;
    }
    return (int)n;
}
