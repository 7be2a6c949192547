/*
 * The output directory's lease: exclusive create, renewal, takeover of a
 * gone holder (lease.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/lease.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/stop.h"
#include "common/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct svp_job_lease {
    char            path[4096];
    json_t         *doc; /* the holder: this job's rank 0 */
    int             own; /* this process holds it (rank 0) */
    double          beat_s;
    pthread_mutex_t lock;      /* the beat's renewal beside the guard */
    double          checked;   /* wall time it was last found this job's */
    int             lost;      /* another job holds it now: never again ours */
    int             told;      /* the loss was logged and the stop asked */
    char            why[6144]; /* how it was lost */
};

/* The state of a handle made by take or view. */
static void svp_job_lease_init(svp_job_lease_t *lease, double beat_s)
{
    pthread_mutex_init(&lease->lock, NULL);
    lease->beat_s  = (beat_s > 0) ? beat_s : 30;
    lease->checked = svp_clock_wall();
}

static void svp_job_lease_free(svp_job_lease_t *lease)
{
    pthread_mutex_destroy(&lease->lock);
    json_decref(lease->doc);
    free(lease);
}

static const char *svp_job_lease_env(const char *name)
{
    const char *v = getenv(name);

    return (v != NULL) ? v : "";
}

/* Who this process is, as a lease says it. */
static json_t *svp_job_lease_doc(const svp_job_shard_t *shard, const char *job,
                                 const char *spec_file, const char *spec_key,
                                 double beat_s)
{
    double now = svp_clock_wall();

    return json_pack(
        "{s:s, s:s, s:s, s:[i, i], s:s, s:s, s:s, s:s, s:I, s:f, s:f, s:f}", "job",
        job, "spec_file", spec_file, "spec_key", spec_key, "shard", shard->index,
        shard->count, "slurm_job", svp_job_lease_env("SLURM_JOB_ID"), "array_job",
        svp_job_lease_env("SLURM_ARRAY_JOB_ID"), "array_task",
        svp_job_lease_env("SLURM_ARRAY_TASK_ID"), "host", svp_log_hostname(), "pid",
        (json_int_t)getpid(), "started", now, "renewed", now, "beat_s", beat_s);
}

static const char *svp_job_lease_str(json_t *doc, const char *key)
{
    const char *s = json_string_value(json_object_get(doc, key));

    return (s != NULL) ? s : "";
}

/*
 * Whether the holder in doc is gone; *why_p says how (a static phrase), or
 * what makes it live.
 */
static int svp_job_lease_gone(json_t *doc, const char **why_p)
{
    const char *host = svp_job_lease_str(doc, "host");
    const char *job  = svp_job_lease_str(doc, "slurm_job");
    const char *task = svp_job_lease_str(doc, "array_task");
    double      beat = json_number_value(json_object_get(doc, "beat_s"));
    double      age =
        svp_clock_wall() - json_number_value(json_object_get(doc, "renewed"));
    pid_t pid = (pid_t)json_integer_value(json_object_get(doc, "pid"));

    if (!json_is_object(doc) || host[0] == '\0' || pid <= 0) {
        *why_p = "its lease does not say who holds it";
        return 1;
    }
    if (job[0] != '\0' && strcmp(job, svp_job_lease_env("SLURM_JOB_ID")) == 0 &&
        strcmp(task, svp_job_lease_env("SLURM_ARRAY_TASK_ID")) == 0) {
        *why_p = "it was this Slurm job's earlier attempt (a requeue or a restart)";
        return 1;
    }
    if (strcmp(host, svp_log_hostname()) == 0) {
        if (kill(pid, 0) != 0 && errno == ESRCH) {
            *why_p = "its process no longer exists on this host";
            return 1;
        }
        *why_p = "its process is running on this host";
        return 0;
    }
    if (beat <= 0) {
        beat = 30;
    }
    if (age > SVP_JOB_LEASE_BEATS * beat) {
        *why_p = "it was not renewed for longer than 4 beats";
        return 1;
    }
    *why_p = "it was renewed lately from another host";
    return 0;
}

/* "job 'x' (Slurm job 123, array task 4) on n1, pid 567, started ...,
 * renewed 3 s ago" */
static void svp_job_lease_holder(json_t *doc, char *buf, size_t len)
{
    char        when[64] = "?", slurm[96] = "";
    time_t      t = (time_t)json_number_value(json_object_get(doc, "started"));
    struct tm   tm;
    const char *job  = svp_job_lease_str(doc, "slurm_job");
    const char *task = svp_job_lease_str(doc, "array_task");

    if (gmtime_r(&t, &tm) != NULL) {
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    if (job[0] != '\0') {
        snprintf(slurm, sizeof(slurm), ", Slurm job %s%s%s", job,
                 task[0] ? ", array task " : "", task);
    }
    snprintf(buf, len,
             "job '%s' (%s%s) on %s, pid %lld, started %s, renewed %.0f s ago",
             svp_job_lease_str(doc, "job"), svp_job_lease_str(doc, "spec_file"),
             slurm, svp_job_lease_str(doc, "host"),
             (long long)json_integer_value(json_object_get(doc, "pid")), when,
             svp_clock_wall() - json_number_value(json_object_get(doc, "renewed")));
}

static svp_status_t svp_job_lease_write(const char *path, json_t *doc)
{
    char        *text = json_dumps(doc, JSON_INDENT(1));
    svp_status_t status;

    if (text == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_file_write_atomic(path, text, strlen(text));
    free(text);
    return status;
}

/* Creates path exclusively with doc; 1 when created, 0 when it exists, -1
 * on another error (errno set). */
static int svp_job_lease_create(const char *path, json_t *doc)
{
    char   *text = json_dumps(doc, JSON_INDENT(1));
    size_t  n;
    ssize_t w;
    int     fd, err;

    if (text == NULL) {
        errno = ENOMEM;
        return -1;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        err = errno;
        free(text);
        errno = err;
        return (err == EEXIST) ? 0 : -1;
    }
    n   = strlen(text);
    w   = write(fd, text, n);
    err = errno;
    if (w != (ssize_t)n || fsync(fd) != 0) {
        close(fd);
        unlink(path);
        free(text);
        errno = (w < 0) ? err : EIO;
        return -1;
    }
    close(fd);
    free(text);
    return 1;
}

/*
 * Another task's live lease in dir that excludes this one: a lease of
 * another layout (the whole job against a shard, another N).  Siblings of
 * the same N hold other shards at once.
 */
static int svp_job_lease_conflict(const char *dir, const char *mine,
                                  const svp_job_shard_t *shard, const char *spec_key,
                                  char *holder, size_t len)
{
    struct dirent *de;
    DIR           *d = opendir(dir);
    char           path[4096];
    const char    *why;
    json_t        *doc, *sh;
    int            found = 0;

    if (d == NULL) {
        return 0;
    }
    while (!found && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "lease", 5) != 0 || strcmp(de->d_name, mine) == 0 ||
            strstr(de->d_name, ".tmp.") != NULL ||
            strcmp(de->d_name + strlen(de->d_name) - 5, ".json") != 0) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        doc = json_load_file(path, 0, NULL);
        sh  = json_object_get(doc, "shard");
        if (json_is_array(sh) &&
            (json_integer_value(json_array_get(sh, 1)) != shard->count ||
             strcmp(svp_job_lease_str(doc, "spec_key"), spec_key) != 0) &&
            !svp_job_lease_gone(doc, &why)) {
            svp_job_lease_holder(doc, holder, len);
            found = 1;
        }
        json_decref(doc);
    }
    closedir(d);
    return found;
}

svp_status_t svp_job_lease_take(const char *dir, const svp_job_shard_t *shard,
                                const char *job, const char *spec_file,
                                const char *spec_key, double beat_s, char *why,
                                size_t len, svp_job_lease_t **lease_p)
{
    svp_job_lease_t *lease;
    char             name[64], holder[768];
    const char      *gone;
    json_t          *old, *now;
    int              rc, tries;
    svp_status_t     status;

    status = svp_mkdir_p(dir, 0755);
    if (status != SVP_OK) {
        snprintf(why, len, "output directory %s cannot be created: %s", dir,
                 strerror(errno));
        return SVP_ERR_IO;
    }
    lease = calloc(1, sizeof(*lease));
    if (lease == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    svp_job_shard_file(shard, "lease", ".json", name, sizeof(name));
    snprintf(lease->path, sizeof(lease->path), "%s/%s", dir, name);
    lease->doc = svp_job_lease_doc(shard, job, spec_file, spec_key, beat_s);
    if (lease->doc == NULL) {
        free(lease);
        return SVP_ERR_NO_MEMORY;
    }
    if (svp_job_lease_conflict(dir, name, shard, spec_key, holder, sizeof(holder))) {
        snprintf(why, len,
                 "output.dir %s is in use by %s, a job of another spec or "
                 "array layout: one job per output directory (use another "
                 "output.dir, or wait for that job)",
                 dir, holder);
        status = SVP_ERR_SPEC;
        goto err;
    }
    for (tries = 0; tries < 3; ++tries) {
        rc = svp_job_lease_create(lease->path, lease->doc);
        if (rc > 0) {
            lease->own = 1;
            svp_job_lease_init(lease, beat_s);
            *lease_p = lease;
            return SVP_OK;
        }
        if (rc < 0) {
            snprintf(why, len,
                     "output directory %s: cannot create a file in it (%s): "
                     "%s",
                     dir, name, strerror(errno));
            status = SVP_ERR_IO;
            goto err;
        }
        old = json_load_file(lease->path, 0, NULL);
        if (old == NULL) {
            /* being replaced this instant, or removed: look again */
            usleep(100000);
            continue;
        }
        svp_job_lease_holder(old, holder, sizeof(holder));
        if (!svp_job_lease_gone(old, &gone)) {
            snprintf(why, len,
                     "output.dir %s is in use: its %s is held by %s (%s). "
                     "One job per output directory: wait for that job, use another "
                     "output.dir, or, if that job is gone, remove %s",
                     dir, name, holder, gone, lease->path);
            json_decref(old);
            status = SVP_ERR_SPEC;
            goto err;
        }
        /* the holder is gone: take over, then read back, since another job
         * may be taking it over at the same moment (the last rename wins) */
        json_decref(old);
        status = svp_job_lease_write(lease->path, lease->doc);
        if (status != SVP_OK) {
            snprintf(why, len, "output.dir %s: cannot write %s", dir, name);
            goto err;
        }
        usleep(50000);
        now = json_load_file(lease->path, 0, NULL);
        rc  = json_equal(now, lease->doc);
        json_decref(now);
        if (rc) {
            svp_warn("output.dir %s: took over the lease of %s: %s", dir, holder,
                     gone);
            lease->own = 1;
            svp_job_lease_init(lease, beat_s);
            *lease_p = lease;
            return SVP_OK;
        }
    }
    snprintf(why, len, "output.dir %s: another job took %s at the same moment", dir,
             name);
    status = SVP_ERR_SPEC;
err:
    json_decref(lease->doc);
    free(lease);
    return status;
}

/* Whether doc names the same holder as the lease's own record. */
static int svp_job_lease_same(json_t *doc, json_t *mine)
{
    return json_is_object(doc) &&
           json_integer_value(json_object_get(doc, "pid")) ==
               json_integer_value(json_object_get(mine, "pid")) &&
           strcmp(svp_job_lease_str(doc, "host"), svp_job_lease_str(mine, "host")) ==
               0 &&
           json_number_value(json_object_get(doc, "started")) ==
               json_number_value(json_object_get(mine, "started"));
}

/*
 * Reads the lease file; when it is no longer this job's, marks the lease
 * lost with why.  Called with the lock held.  Returns 1 while it is this
 * job's.  A file that cannot be read for a moment (being replaced) is read
 * again; a missing one is lost too: only a job that took it over removes it
 * (when it ends), or a person who was told the holder is gone.
 */
static int svp_job_lease_still_mine(svp_job_lease_t *lease)
{
    json_t *now = NULL;
    char    holder[768];
    double  gap = svp_clock_wall() - lease->checked;
    int     tries;

    if (lease->lost) {
        return 0;
    }
    for (tries = 0; tries < 5 && now == NULL; ++tries) {
        now = json_load_file(lease->path, 0, NULL);
        if (now == NULL && access(lease->path, F_OK) != 0 && errno == ENOENT) {
            break;
        }
        if (now == NULL) {
            usleep(20000);
        }
    }
    if (svp_job_lease_same(now, lease->doc)) {
        json_decref(now);
        lease->checked = svp_clock_wall();
        return 1;
    }
    lease->lost = 1;
    if (now == NULL) {
        snprintf(lease->why, sizeof(lease->why),
                 "%s was removed or cannot be read "
                 "(this job last found it its own %.*f s ago): another job may have "
                 "taken the directory over and ended",
                 lease->path, gap < 10 ? 1 : 0, gap);
    } else {
        svp_job_lease_holder(now, holder, sizeof(holder));
        if (gap > SVP_JOB_LEASE_BEATS * lease->beat_s) {
            snprintf(
                lease->why, sizeof(lease->why),
                "this job was suspended for "
                "%.*f s (or its clock jumped), past the takeover threshold of "
                "%d beats of %g s, and another job took the directory over: %s; "
                "%s is that job's now",
                gap < 10 ? 1 : 0, gap, SVP_JOB_LEASE_BEATS, lease->beat_s, holder,
                lease->path);
        } else {
            snprintf(
                lease->why, sizeof(lease->why),
                "another job took the directory "
                "over (this job last found the lease its own %.*f s ago): %s; %s "
                "is that job's now",
                gap < 10 ? 1 : 0, gap, holder, lease->path);
        }
    }
    json_decref(now);
    return 0;
}

/*
 * The lease is lost: said once, and this process stops.  The holder (rank
 * 0) says it at error level; another rank that finds it first (its guard
 * before a publish) at warn level, since rank 0 will say it too: one error
 * line per cause.
 */
static void svp_job_lease_fence(svp_job_lease_t *lease)
{
    if (lease->told) {
        return;
    }
    lease->told = 1;
    svp_log(
        lease->own ? SVP_LOG_LEVEL_ERROR : SVP_LOG_LEVEL_WARN,
        "output.dir's lease is lost: %s; this %s stops now and writes nothing more "
        "there",
        lease->why, lease->own ? "job" : "rank");
    svp_stop_request(SVP_EXIT_BAD_INPUT, SVP_JOB_LEASE_LOST_CAUSE);
}

svp_status_t svp_job_lease_renew(svp_job_lease_t *lease)
{
    svp_status_t status = SVP_OK;

    if (lease == NULL) {
        return SVP_OK;
    }
    pthread_mutex_lock(&lease->lock);
    if (!svp_job_lease_still_mine(lease)) {
        status = SVP_ERR_SPEC;
    } else if (lease->own) {
        json_object_set_new(lease->doc, "renewed", json_real(svp_clock_wall()));
        status = svp_job_lease_write(lease->path, lease->doc);
        if (status != SVP_OK) {
            svp_warn("cannot renew the lease %s: another job may take the directory "
                     "over after %d beats",
                     lease->path, SVP_JOB_LEASE_BEATS);
        } else {
            lease->checked = svp_clock_wall();
        }
    }
    if (lease->lost) {
        svp_job_lease_fence(lease);
        status = SVP_ERR_SPEC;
    }
    pthread_mutex_unlock(&lease->lock);
    return status;
}

svp_status_t svp_job_lease_guard(svp_job_lease_t *lease)
{
    svp_status_t status = SVP_OK;

    if (lease == NULL) {
        return SVP_OK;
    }
    pthread_mutex_lock(&lease->lock);
    if (lease->lost ||
        svp_clock_wall() - lease->checked > SVP_JOB_LEASE_BEATS * lease->beat_s) {
        if (!svp_job_lease_still_mine(lease)) {
            svp_job_lease_fence(lease);
            status = SVP_ERR_SPEC;
        }
    }
    pthread_mutex_unlock(&lease->lock);
    return status;
}

int svp_job_lease_lost(svp_job_lease_t *lease, char *why, size_t len)
{
    int lost;

    if (lease == NULL) {
        return 0;
    }
    pthread_mutex_lock(&lease->lock);
    lost = !svp_job_lease_still_mine(lease);
    if (lost && len > 0) {
        snprintf(why, len, "%s", lease->why);
    }
    if (lost && lease->own && !lease->told) {
        /* the job ends for another rank's finding: the holder still says
         * it, once (no stop to ask for: this one is under way) */
        lease->told = 1;
        svp_error("output.dir's lease is lost: %s; this job stops now and writes "
                  "nothing more there",
                  lease->why);
    }
    pthread_mutex_unlock(&lease->lock);
    return lost;
}

char *svp_job_lease_identity(const svp_job_lease_t *lease)
{
    return (lease != NULL) ? json_dumps(lease->doc, JSON_COMPACT) : NULL;
}

svp_status_t svp_job_lease_view(const char *dir, const svp_job_shard_t *shard,
                                const char *identity, svp_job_lease_t **lease_p)
{
    svp_job_lease_t *lease;
    char             name[64];
    json_t          *doc = json_loads(identity, 0, NULL);

    if (!json_is_object(doc)) {
        json_decref(doc);
        return SVP_ERR_MESSAGE;
    }
    lease = calloc(1, sizeof(*lease));
    if (lease == NULL) {
        json_decref(doc);
        return SVP_ERR_NO_MEMORY;
    }
    svp_job_shard_file(shard, "lease", ".json", name, sizeof(name));
    snprintf(lease->path, sizeof(lease->path), "%s/%s", dir, name);
    lease->doc = doc;
    svp_job_lease_init(lease, json_number_value(json_object_get(doc, "beat_s")));
    *lease_p = lease;
    return SVP_OK;
}

void svp_job_lease_release(svp_job_lease_t *lease)
{
    json_t *now;

    if (lease == NULL) {
        return;
    }
    /* only our own: a job that took it over after we were thought gone
     * keeps it */
    now = lease->own ? json_load_file(lease->path, 0, NULL) : NULL;
    if (now != NULL && svp_job_lease_same(now, lease->doc)) {
        if (unlink(lease->path) != 0) {
            svp_warn("cannot remove the lease %s: %m", lease->path);
        }
    }
    json_decref(now);
    svp_job_lease_free(lease);
}
