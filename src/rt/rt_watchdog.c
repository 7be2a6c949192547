/*
 * The watchdog of the runtime's blocking PMIx calls (rt_int.h): one thread
 * that ends the process, naming the call, when PMIx_Abort or PMIx_Finalize
 * outlives its bound.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/rt_int.h"
#include "common/clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * The bound on PMIx calls that wait on the launcher and cannot be made
 * non-blocking: PMIx_Abort and PMIx_Finalize.  With one rank of 4 exited
 * before PMIx_Init on a 3-node Slurm 22.05 cluster, both ranks of another
 * node sat in PMIx_Abort (their slurmstepd failed to forward it) until
 * srun -W killed them 25 s later.  A watchdog thread, armed around such a
 * call, ends the process with the exit status it was given once the bound
 * has passed, naming the call.
 */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    pthread_t       thread;
    int             started;
    unsigned        armed; /* generation armed, 0: none */
    unsigned        generation;
    double          until;
    int             exit_status;
    const char     *what;
} svp_rt_watchdog_t;

static svp_rt_watchdog_t svp_rt_watchdog = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static void *svp_rt_watchdog_thread(void *arg)
{
    svp_rt_watchdog_t *wd = arg;
    struct timespec    ts;
    double             now;

    pthread_mutex_lock(&wd->lock);
    for (;;) {
        while (wd->armed == 0) {
            pthread_cond_wait(&wd->cond, &wd->lock);
        }
        now = svp_clock_now();
        if (now >= wd->until) {
            svp_error("%s did not return within its bound: exiting with "
                      "status %d",
                      wd->what, wd->exit_status);
            _exit(wd->exit_status);
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now        = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + (wd->until - now);
        ts.tv_sec  = (time_t)now;
        ts.tv_nsec = (long)((now - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&wd->cond, &wd->lock, &ts);
    }
    return NULL;
}

/* Arms the watchdog for `seconds`; returns the generation to disarm. */
unsigned svp_rt_watchdog_arm(double seconds, const char *what, int exit_status)
{
    svp_rt_watchdog_t *wd = &svp_rt_watchdog;
    pthread_condattr_t attr;
    unsigned           gen;

    pthread_mutex_lock(&wd->lock);
    if (!wd->started) {
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&wd->cond, &attr);
        pthread_condattr_destroy(&attr);
        if (pthread_create(&wd->thread, NULL, svp_rt_watchdog_thread, wd) != 0) {
            pthread_mutex_unlock(&wd->lock);
            svp_warn("cannot start the runtime watchdog: %s is not bounded", what);
            return 0;
        }
        pthread_detach(wd->thread);
        wd->started = 1;
    }
    gen = ++wd->generation;
    if (gen == 0) {
        gen = ++wd->generation;
    }
    wd->armed       = gen;
    wd->until       = svp_clock_now() + seconds;
    wd->what        = what;
    wd->exit_status = exit_status;
    pthread_cond_signal(&wd->cond);
    pthread_mutex_unlock(&wd->lock);
    return gen;
}

void svp_rt_watchdog_disarm(unsigned gen)
{
    svp_rt_watchdog_t *wd = &svp_rt_watchdog;

    pthread_mutex_lock(&wd->lock);
    if ((gen != 0) && (wd->armed == gen)) {
        wd->armed = 0;
    }
    pthread_mutex_unlock(&wd->lock);
}
