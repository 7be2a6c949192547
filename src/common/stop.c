/*
 * SIGTERM/SIGINT: a flag, a self-pipe and a watchdog (see stop.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/stop.h"
#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t svp_stop_signo;
static int                   svp_stop_pipe[2] = {-1, -1};
static int                   svp_stop_done, svp_stop_inflight;
static int                   svp_stop_reported;
static int                   svp_stop_test;
static svp_stop_params_t     svp_stop_params;
static double                svp_stop_deadline_at;
static int                   svp_stop_req_code; /* a request's exit code */
static char                  svp_stop_req_why[256];

static void svp_stop_handler(int signo)
{
    int  saved = errno;
    char c     = 1;

    if (svp_stop_signo == 0 &&
        __atomic_load_n(&svp_stop_req_code, __ATOMIC_ACQUIRE) == 0) {
        svp_stop_signo = signo;
        /* never drained: the pipe stays readable, like a level */
        if (write(svp_stop_pipe[1], &c, 1) < 0) {
            /* nothing to do in a handler */
        }
    }
    errno = saved;
}

static void *svp_stop_watchdog(void *arg)
{
    struct pollfd pfd = {.fd = svp_stop_pipe[0], .events = POLLIN};
    double        deadline;
    int           signo;

    (void)arg;
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
    }
    deadline = svp_clock_now() + svp_stop_params.grace;
    __atomic_store(&svp_stop_deadline_at, &deadline, __ATOMIC_RELEASE);
    if (svp_stop_test) {
        return NULL;
    }
    /* the main thread gets the grace period to unwind by itself */
    usleep((useconds_t)(svp_stop_params.grace * 1e6));
    signo = svp_stop_signo;
    if (svp_stop_params.force != NULL) {
        svp_stop_params.force(signo, svp_stop_params.arg);
    }
    _exit(svp_stop_exit_code());
    return NULL;
}

svp_status_t svp_stop_init(const svp_stop_params_t *params)
{
    struct sigaction sa;
    pthread_attr_t   attr;
    pthread_t        tid;
    sigset_t         all, old;
    int              rc;

    if (svp_stop_pipe[0] >= 0) {
        return SVP_ERR_INVALID_PARAM;
    }
    if (pipe(svp_stop_pipe) != 0) {
        svp_error("pipe failed: %m");
        return SVP_ERR_IO;
    }
    fcntl(svp_stop_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(svp_stop_pipe[1], F_SETFD, FD_CLOEXEC);
    fcntl(svp_stop_pipe[1], F_SETFL, O_NONBLOCK);
    svp_stop_params = *params;

    /* the watchdog takes no signals: they go to the threads that wait */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&tid, &attr, svp_stop_watchdog, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        svp_error("cannot start the stop watchdog: %s", strerror(rc));
        return SVP_ERR_INTERNAL;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = svp_stop_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0) {
        svp_error("sigaction failed: %m");
        return SVP_ERR_INTERNAL;
    }
    return SVP_OK;
}

int svp_stop_signal(void)
{
    return svp_stop_signo;
}

void svp_stop_request(int exit_code, const char *why)
{
    static int claimed;
    char       c = 1;

    if (exit_code == 0 || svp_stop_signo != 0 ||
        __atomic_exchange_n(&claimed, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    snprintf(svp_stop_req_why, sizeof(svp_stop_req_why), "%s",
             why != NULL ? why : "");
    __atomic_store_n(&svp_stop_req_code, exit_code, __ATOMIC_RELEASE);
    if (svp_stop_pipe[1] >= 0 && write(svp_stop_pipe[1], &c, 1) < 0) {
        /* the flag alone still stops the pipeline between steps */
    }
}

int svp_stop_requested(void)
{
    return __atomic_load_n(&svp_stop_req_code, __ATOMIC_ACQUIRE);
}

const char *svp_stop_request_why(void)
{
    return svp_stop_requested() ? svp_stop_req_why : "";
}

int svp_stop_pending(void)
{
    return svp_stop_signo != 0 || svp_stop_requested() != 0;
}

int svp_stop_fd(void)
{
    return svp_stop_pipe[0];
}

void svp_stop_progress(int done, int inflight)
{
    __atomic_store_n(&svp_stop_done, done, __ATOMIC_RELAXED);
    __atomic_store_n(&svp_stop_inflight, inflight, __ATOMIC_RELAXED);
}

void svp_stop_report(void)
{
    int signo = svp_stop_signo;

    if (signo == 0 || __atomic_exchange_n(&svp_stop_reported, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    svp_warn("stopping on %s: %d samples done, %d in flight abandoned",
             (signo == SIGTERM)  ? "SIGTERM"
             : (signo == SIGINT) ? "SIGINT"
                                 : "a signal",
             __atomic_load_n(&svp_stop_done, __ATOMIC_RELAXED),
             __atomic_load_n(&svp_stop_inflight, __ATOMIC_RELAXED));
}

double svp_stop_deadline(void)
{
    double deadline;

    __atomic_load(&svp_stop_deadline_at, &deadline, __ATOMIC_ACQUIRE);
    return deadline;
}

int svp_stop_exit_code(void)
{
    return svp_stop_signo ? 128 + svp_stop_signo : svp_stop_requested();
}

void svp_stop_raise_for_test(int signo)
{
    svp_stop_test = 1;
    if (svp_stop_pipe[0] < 0) {
        if (pipe(svp_stop_pipe) != 0) {
            return;
        }
    }
    svp_stop_handler(signo);
}
