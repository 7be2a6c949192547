/* Tests for the neighbour watch (src/rt/watch.c): a ring of two ranks, one
 * in a forked child, so that the child can leave, stop or compute while the
 * parent watches. */
#include "rt/watch.h"
#include "common/clock.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lost_lock = PTHREAD_MUTEX_INITIALIZER;
static int             lost_rank = -1;
static char            lost_why[256];
static double          lost_at;
static int             lost_reason = -2;

/* what the child's goodbye carries besides its reason */
static int         child_signo;
static const char *child_text;

static void on_lost(void *arg, int rank, svp_rt_watch_bye_t reason, const char *why)
{
    (void)arg;
    pthread_mutex_lock(&lost_lock);
    if (lost_rank < 0) {
        lost_rank   = rank;
        lost_reason = (int)reason;
        snprintf(lost_why, sizeof(lost_why), "%s", why);
        lost_at = svp_clock_now();
    }
    pthread_mutex_unlock(&lost_lock);
}

/* Waits up to `for_s` seconds for a loss; returns the lost rank or -1. */
static int wait_lost(double for_s)
{
    double until = svp_clock_now() + for_s;
    int    rank;

    for (;;) {
        pthread_mutex_lock(&lost_lock);
        rank = lost_rank;
        pthread_mutex_unlock(&lost_lock);
        if ((rank >= 0) || (svp_clock_now() > until)) {
            return rank;
        }
        usleep(20000);
    }
}

typedef enum { CHILD_LEAVE, CHILD_STOP, CHILD_COMPUTE } child_act_t;

/* A watch's address, whole, through a pipe. */
static void send_addr(int fd, const char *addr)
{
    char buf[1024] = {0};

    snprintf(buf, sizeof(buf), "%s", addr);
    if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
        _exit(3);
    }
}

static void recv_addr(int fd, char *buf)
{
    size_t  got = 0;
    ssize_t r;

    while (got < 1024 && (r = read(fd, buf + got, 1024 - got)) > 0) {
        got += (size_t)r;
    }
    if (got != 1024) {
        _exit(3);
    }
    buf[1023] = '\0';
}

/*
 * Rank 0 runs in a child, which after `after_s` seconds does `act`: leave
 * with `reason`, or sit still (to be stopped), or keep its main thread busy
 * for `after_s` seconds and then leave with `reason`.  The parent is rank 1
 * and watches; *w1_p is its watch.  The fork comes before either side
 * listens: a watch runs a thread from its listen on, and a child forked
 * beside a running thread can inherit a lock that thread held (a malloc's)
 * and hang on it.  The two sides trade their addresses through pipes, and
 * the child dies with its parent (a failed assertion ends the test before
 * end_ring).
 */
static pid_t start_ring(child_act_t act, double after_s, svp_rt_watch_bye_t reason,
                        svp_rt_watch_t **w1_p)
{
    svp_rt_watch_t *w0, *w1;
    const char     *a0, *a1;
    char            addr0[1024], addr1[1024];
    volatile double x = 0;
    double          until;
    int             up[2], down[2];
    pid_t           pid;

    cr_assert_eq(pipe(up), 0);
    cr_assert_eq(pipe(down), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (svp_rt_watch_listen(&w0, &a0) != SVP_OK) {
            _exit(1);
        }
        send_addr(up[1], a0);
        recv_addr(down[0], addr1);
        if (svp_rt_watch_start(w0, 0, 2, 1, 1, addr1, 10, on_lost, NULL) != SVP_OK) {
            _exit(1);
        }
        if (act == CHILD_STOP) {
            for (;;) {
                pause();
            }
        }
        until = svp_clock_now() + after_s;
        while (svp_clock_now() < until) {
            if (act == CHILD_COMPUTE) {
                x += 1.0; /* the main thread never sleeps */
            } else {
                usleep(10000);
            }
        }
        svp_rt_watch_stop(w0, reason, child_signo, child_text);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    cr_assert_eq(svp_rt_watch_listen(&w1, &a1), SVP_OK);
    send_addr(down[1], a1);
    recv_addr(up[0], addr0);
    close(up[0]);
    close(down[1]);
    cr_assert_eq(svp_rt_watch_start(w1, 1, 2, 0, 0, addr0, 10, on_lost, NULL),
                 SVP_OK);
    *w1_p = w1;
    return pid;
}

static void end_ring(pid_t pid, svp_rt_watch_t *w1)
{
    kill(pid, SIGKILL);
    kill(pid, SIGCONT);
    waitpid(pid, NULL, 0);
    svp_rt_watch_stop(w1, SVP_RT_WATCH_BYE_DONE, 0, NULL);
}

Test(watch, early_goodbye_is_named_at_once)
{
    svp_rt_watch_t *w1;
    pid_t           pid = start_ring(CHILD_LEAVE, 0.3, SVP_RT_WATCH_BYE_EARLY, &w1);
    double          t0  = svp_clock_now();

    cr_assert_eq(wait_lost(3), 0, "the early goodbye of rank 0 was not reported");
    cr_assert(strstr(lost_why, "left before its work was done") != NULL, "%s",
              lost_why);
    cr_assert_lt(lost_at - t0, 1.5, "reported %.2f s after start", lost_at - t0);
    end_ring(pid, w1);
}

Test(watch, error_goodbye_names_the_reason)
{
    svp_rt_watch_t *w1;
    pid_t           pid = start_ring(CHILD_LEAVE, 0.2, SVP_RT_WATCH_BYE_ERROR, &w1);

    cr_assert_eq(wait_lost(3), 0);
    cr_assert(strstr(lost_why, "said goodbye: failed") != NULL, "%s", lost_why);
    end_ring(pid, w1);
}

Test(watch, error_goodbye_carries_the_error_text)
{
    svp_rt_watch_t *w1;
    pid_t           pid;

    child_text = "timed out";
    pid        = start_ring(CHILD_LEAVE, 0.2, SVP_RT_WATCH_BYE_ERROR, &w1);
    cr_assert_eq(wait_lost(3), 0);
    cr_assert_str_eq(lost_why, "it said goodbye: failed: timed out");
    cr_assert_eq(lost_reason, SVP_RT_WATCH_BYE_ERROR);
    end_ring(pid, w1);
}

/* longer text than a goodbye holds is cut, not lost, and nothing after it
 * is taken for a second message */
Test(watch, error_goodbye_text_is_cut_at_its_limit)
{
    static char     text[400];
    svp_rt_watch_t *w1;
    pid_t           pid;

    memset(text, 'x', sizeof(text) - 1);
    child_text = text;
    pid        = start_ring(CHILD_LEAVE, 0.2, SVP_RT_WATCH_BYE_ERROR, &w1);
    cr_assert_eq(wait_lost(3), 0);
    cr_assert_eq(strlen(lost_why),
                 strlen("it said goodbye: failed: ") + SVP_RT_WATCH_BYE_TEXT_MAX,
                 "%s", lost_why);
    end_ring(pid, w1);
}

Test(watch, signal_goodbye_names_the_signal)
{
    svp_rt_watch_t *w1;
    pid_t           pid;

    child_signo = SIGTERM;
    pid         = start_ring(CHILD_LEAVE, 0.2, SVP_RT_WATCH_BYE_SIGNAL, &w1);
    cr_assert_eq(wait_lost(3), 0);
    cr_assert_str_eq(lost_why, "stopped by SIGTERM");
    cr_assert_eq(lost_reason, SVP_RT_WATCH_BYE_SIGNAL);
    end_ring(pid, w1);
}

Test(watch, done_goodbye_is_no_loss)
{
    svp_rt_watch_t *w1;
    pid_t           pid = start_ring(CHILD_LEAVE, 0.2, SVP_RT_WATCH_BYE_DONE, &w1);

    cr_assert_eq(wait_lost(1.5), -1, "a normal end was reported: %s", lost_why);
    end_ring(pid, w1);
}

Test(watch, stopped_process_is_caught_by_the_heartbeat)
{
    svp_rt_watch_t *w1;
    pid_t           pid = start_ring(CHILD_STOP, 0, SVP_RT_WATCH_BYE_DONE, &w1);
    double          t0;

    usleep(200000);
    t0 = svp_clock_now();
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    cr_assert_eq(wait_lost(SVP_RT_WATCH_SILENT_S + 4), 0, "SIGSTOP not caught");
    cr_assert(strstr(lost_why, "no heartbeat") != NULL, "%s", lost_why);
    /* silence bound, plus one beat of poll granularity and slack for a
     * loaded machine; well inside a 10 s budget */
    cr_assert_lt(lost_at - t0, SVP_RT_WATCH_SILENT_S + 2.5, "caught after %.2f s",
                 lost_at - t0);
    end_ring(pid, w1);
}

Test(watch, long_compute_step_keeps_the_heartbeat)
{
    svp_rt_watch_t *w1;
    /* a "step" longer than the silence bound, on the child's main thread */
    pid_t pid = start_ring(CHILD_COMPUTE, SVP_RT_WATCH_SILENT_S + 1.5,
                           SVP_RT_WATCH_BYE_DONE, &w1);

    cr_assert_eq(wait_lost(SVP_RT_WATCH_SILENT_S + 2.5), -1,
                 "a busy but live rank was reported: %s", lost_why);
    end_ring(pid, w1);
}

/* ---- notices: a ring of four in this process ------------------------- */

typedef struct {
    svp_rt_watch_t *w;
    const char     *next_addr;
    int             rank;
    svp_status_t    status;
    /* what this rank heard: the first departure */
    pthread_mutex_t lock;
    int             heard;
    int             rank_heard, reason;
    char            why[256];
} ring_member_t;

static void on_ring_lost(void *arg, int rank, svp_rt_watch_bye_t reason,
                         const char *why)
{
    ring_member_t *m = arg;

    pthread_mutex_lock(&m->lock);
    if (m->heard++ == 0) {
        m->rank_heard = rank;
        m->reason     = (int)reason;
        snprintf(m->why, sizeof(m->why), "%s", why);
    }
    pthread_mutex_unlock(&m->lock);
}

static void *ring_start(void *arg)
{
    ring_member_t *m = arg;

    m->status =
        svp_rt_watch_start(m->w, m->rank, 4, (m->rank + 3) % 4, (m->rank + 1) % 4,
                           m->next_addr, 10, on_ring_lost, m);
    return NULL;
}

static int ring_heard(ring_member_t *m)
{
    int n;

    pthread_mutex_lock(&m->lock);
    n = m->heard;
    pthread_mutex_unlock(&m->lock);
    return n;
}

Test(watch, a_stop_is_heard_by_every_rank_of_the_ring)
{
    ring_member_t m[4];
    const char   *addr[4];
    pthread_t     th[4];
    double        until;
    int           i;

    memset(m, 0, sizeof(m));
    for (i = 0; i < 4; ++i) {
        cr_assert_eq(svp_rt_watch_listen(&m[i].w, &addr[i]), SVP_OK);
        pthread_mutex_init(&m[i].lock, NULL);
        m[i].rank = i;
    }
    for (i = 0; i < 4; ++i) {
        m[i].next_addr = addr[(i + 1) % 4];
        cr_assert_eq(pthread_create(&th[i], NULL, ring_start, &m[i]), 0);
    }
    for (i = 0; i < 4; ++i) {
        pthread_join(th[i], NULL);
        cr_assert_eq(m[i].status, SVP_OK, "rank %d's watch did not start", i);
    }
    /* rank 1 leaves on SIGTERM: rank 3, no neighbour of it, hears it too,
     * through both sides of the ring, once */
    svp_rt_watch_stop(m[1].w, SVP_RT_WATCH_BYE_SIGNAL, SIGTERM, NULL);
    until = svp_clock_now() + 3;
    while ((ring_heard(&m[0]) == 0 || ring_heard(&m[2]) == 0 ||
            ring_heard(&m[3]) == 0) &&
           svp_clock_now() < until) {
        usleep(10000);
    }
    usleep(200000); /* room for a second report, which must not come */
    for (i = 0; i < 4; ++i) {
        if (i == 1) {
            continue;
        }
        cr_assert_eq(ring_heard(&m[i]), 1, "rank %d heard %d departures", i,
                     ring_heard(&m[i]));
        cr_assert_eq(m[i].rank_heard, 1);
        cr_assert_eq(m[i].reason, SVP_RT_WATCH_BYE_SIGNAL,
                     "rank %d heard reason %d: %s", i, m[i].reason, m[i].why);
        cr_assert_str_eq(m[i].why, "stopped by SIGTERM");
        cr_assert(svp_rt_watch_gone(m[i].w, 1), "rank %d does not hold rank 1 gone",
                  i);
        for (int r = 0; r < 4; ++r) {
            cr_assert(r == 1 || !svp_rt_watch_gone(m[i].w, r),
                      "rank %d holds rank %d gone", i, r);
        }
    }
    /* an ending rank says why, and a rank that heard the stop takes it as
     * no news (no second report of rank 1, one of rank 3 with its cause) */
    svp_rt_watch_stop(m[3].w, SVP_RT_WATCH_BYE_ENDING, 0,
                      "rank 1 was stopped by SIGTERM");
    until = svp_clock_now() + 3;
    while ((ring_heard(&m[0]) < 2 || ring_heard(&m[2]) < 2) &&
           svp_clock_now() < until) {
        usleep(10000);
    }
    cr_assert_eq(ring_heard(&m[0]), 2);
    cr_assert_eq(ring_heard(&m[2]), 2,
                 "rank 2 did not hear of rank 3 through rank 0");
    cr_assert(svp_rt_watch_gone(m[2].w, 3));
    svp_rt_watch_stop(m[0].w, SVP_RT_WATCH_BYE_DONE, 0, NULL);
    svp_rt_watch_stop(m[2].w, SVP_RT_WATCH_BYE_DONE, 0, NULL);
}
