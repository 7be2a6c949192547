/*
 * The output directory: stale temporaries and the up-front check (outdir.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/outdir.h"
#include "common/log.h"
#include "common/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

/*
 * Parses "sample_<digits>[.safetensors|.tar].<kind>.<pid>[@<host>]" where kind is
 * "tmp" (or "old", only for a directory's name without an extension) and
 * the host is the writer's (file.h svp_tmp_tag; none before 0.4).  Returns
 * 1 with the sample, the pid, the host (pointing into name, "" when none)
 * and the final name's length; 0 otherwise.
 */
static int svp_job_outdir_parse(const char *name, int *sample_p, long *pid_p,
                                const char **host_p, size_t *final_len_p, int *old_p)
{
    const char *p = name, *q;
    long        sample, pid;
    int         has_ext = 0;

    if (strncmp(p, "sample_", 7) != 0) {
        return 0;
    }
    p += 7;
    for (q = p; *q >= '0' && *q <= '9'; ++q) {
    }
    if (q - p < 6 || q - p > 9) {
        return 0;
    }
    sample = strtol(p, NULL, 10);
    p      = q;
    if (strncmp(p, ".safetensors", 12) == 0) {
        has_ext = 1;
        p += 12;
    } else if (strncmp(p, ".tar.", 5) == 0) {
        has_ext = 1; /* a staged sample (job/wds.h) */
        p += 4;
    }
    *final_len_p = (size_t)(p - name);
    if (strncmp(p, ".tmp.", 5) == 0) {
        *old_p = 0;
    } else if (!has_ext && strncmp(p, ".old.", 5) == 0) {
        *old_p = 1;
    } else {
        return 0;
    }
    p += 5;
    for (q = p; *q >= '0' && *q <= '9'; ++q) {
    }
    if (q == p || q - p > 10 || (*q != '\0' && (*q != '@' || q[1] == '\0'))) {
        return 0;
    }
    pid       = strtol(p, NULL, 10);
    *sample_p = (int)sample;
    *pid_p    = pid;
    *host_p   = (*q == '@') ? q + 1 : "";
    return 1;
}

/*
 * Whether a temporary's writer may still be writing it: a live process of
 * this host other than this one.  A writer on another host is the lease's
 * earlier holder (job/lease.h), gone by the time this job holds it.
 */
static int svp_job_outdir_live_writer(long pid, const char *host)
{
    if (host[0] != '\0' && strcmp(host, svp_log_hostname()) != 0) {
        return 0;
    }
    return (pid != (long)getpid()) &&
           ((kill((pid_t)pid, 0) == 0) || (errno == EPERM));
}

int svp_job_outdir_tmp_live(const char *name)
{
    const char *p = strstr(name, ".tmp."), *q;

    if (p == NULL) {
        return -1;
    }
    p += 5;
    for (q = p; *q >= '0' && *q <= '9'; ++q) {
    }
    if (q == p || q - p > 10 || (*q != '\0' && (*q != '@' || q[1] == '\0'))) {
        return -1;
    }
    return svp_job_outdir_live_writer(strtol(p, NULL, 10), (*q == '@') ? q + 1 : "");
}

svp_status_t svp_job_outdir_clean(const char *dir, long                    pid,
                                  int (*own)(int sample, void *arg), void *arg,
                                  int *removed_p)
{
    struct dirent *de;
    struct stat    sb;
    DIR           *d;
    char           path[4096], final[4096];
    size_t         flen;
    const char    *host;
    long           epid;
    int            sample, old, removed = 0;
    svp_status_t   status = SVP_OK;

    d = opendir(dir);
    if (d == NULL) {
        if (removed_p != NULL) {
            *removed_p = 0;
        }
        return (errno == ENOENT) ? SVP_OK : SVP_ERR_IO;
    }
    while ((de = readdir(d)) != NULL) {
        if (!svp_job_outdir_parse(de->d_name, &sample, &epid, &host, &flen, &old) ||
            (pid > 0 && (epid != pid || (host[0] != '\0' &&
                                         strcmp(host, svp_log_hostname()) != 0))) ||
            (own != NULL && !own(sample, arg))) {
            continue;
        }
        if (pid == 0 && svp_job_outdir_live_writer(epid, host)) {
            svp_warn("left %s/%s: its writer, process %ld of this host, is running",
                     dir, de->d_name, epid);
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (old) {
            snprintf(final, sizeof(final), "%s/%.*s", dir, (int)flen, de->d_name);
            if (lstat(final, &sb) != 0 && errno == ENOENT) {
                /* killed between moving the old result aside and renaming
                 * the new one in: the old one is still a finished sample */
                if (rename(path, final) == 0) {
                    svp_info("put back %s (an interrupted replacement)", final);
                    ++removed;
                    continue;
                }
            }
        }
        if (svp_rmtree(path) != SVP_OK) {
            svp_warn("cannot remove the leftover %s", path);
            status = SVP_ERR_IO;
            continue;
        }
        svp_debug("removed the leftover %s", path);
        ++removed;
    }
    closedir(d);
    if (removed_p != NULL) {
        *removed_p = removed;
    }
    return status;
}

/* bytes in the largest unit that keeps the figure at 1 or more, so that a
 * nearly full disk does not read "0.0 MB free, one sample needs 0.0 MB" */
static void svp_job_outdir_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = {"kB", "MB", "GB", "TB"};
    double                   v       = (double)bytes;
    int                      u       = -1;

    while ((v >= 1e3) && (u + 1 < (int)(sizeof(units) / sizeof(units[0])))) {
        v /= 1e3;
        ++u;
    }
    if (u < 0) {
        snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
    } else {
        snprintf(buf, len, "%.1f %s", v, units[u]);
    }
}

svp_status_t svp_job_outdir_check(const char *dir, uint64_t bytes)
{
    struct statvfs vfs;
    char           probe[4096], moved[4096];
    uint64_t       avail;
    char           buf1[32], buf2[32];
    int            fd;

    if (svp_mkdir_p(dir, 0755) != SVP_OK) {
        svp_error("output directory %s cannot be created", dir);
        return SVP_ERR_IO;
    }
    snprintf(probe, sizeof(probe), "%s/.svdpipe-probe.tmp.%d", dir, (int)getpid());
    snprintf(moved, sizeof(moved), "%s/.svdpipe-probe.%d", dir, (int)getpid());
    fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        svp_error("output directory %s: cannot create a file in it: %m", dir);
        return SVP_ERR_IO;
    }
    close(fd);
    if (rename(probe, moved) != 0) {
        svp_error("output directory %s: cannot rename a file in it: %m", dir);
        unlink(probe);
        return SVP_ERR_IO;
    }
    unlink(moved);

    if (statvfs(dir, &vfs) != 0) {
        svp_error("output directory %s: statvfs failed: %m", dir);
        return SVP_ERR_IO;
    }
    avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    if (avail < bytes) {
        svp_job_outdir_fmt_bytes(buf1, sizeof(buf1), avail);
        svp_job_outdir_fmt_bytes(buf2, sizeof(buf2), bytes);
        svp_error("output directory %s: %s free, one sample needs about %s", dir,
                  buf1, buf2);
        return SVP_ERR_IO;
    }
    return SVP_OK;
}
