/*
 * Small helpers every layer shares (util.h): files written atomically and
 * read within a limit, directories made and removed, UTF-8 checked and
 * escaped for a terminal, "did you mean" distances, thread counts from the
 * environment.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/util.h"
#include "common/log.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

svp_status_t svp_file_write_atomic(const char *path, const void *data, size_t len)
{
    const char *p = data;
    char        tmp[4096];
    ssize_t     n;
    int         fd;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%s", path, svp_tmp_tag()) >=
        (int)sizeof(tmp)) {
        svp_error("path too long: %s", path);
        return SVP_ERR_INVALID_PARAM;
    }

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        svp_error("cannot create %s: %m", tmp);
        return SVP_ERR_IO;
    }

    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            svp_error("write to %s failed: %m", tmp);
            goto err_unlink;
        }
        p += n;
        len -= (size_t)n;
    }

    if (fsync(fd) != 0) {
        svp_error("fsync of %s failed: %m", tmp);
        goto err_unlink;
    }
    if (close(fd) != 0) {
        fd = -1;
        svp_error("close of %s failed: %m", tmp);
        goto err_unlink;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        svp_error("rename %s -> %s failed: %m", tmp, path);
        goto err_unlink;
    }
    return SVP_OK;

err_unlink:
    if (fd >= 0) {
        close(fd);
    }
    unlink(tmp);
    return SVP_ERR_IO;
}

svp_status_t svp_file_read_all(const char *path, char **data_p, size_t *len_p)
{
    return svp_file_read_limit(path, 0, NULL, data_p, len_p);
}

svp_status_t svp_file_read_limit(const char *path, size_t max, const char *what,
                                 char **data_p, size_t *len_p)
{
    FILE       *f;
    char       *buf;
    long        size;
    size_t      got;
    struct stat st;
    int         fd;

    /* O_NONBLOCK: a FIFO with no writer would block the open; only a
     * regular file is read (a FIFO, a device or /dev/zero is refused) */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        svp_error("cannot open %s: %m", path);
        return (errno == ENOENT) ? SVP_ERR_NOT_FOUND : SVP_ERR_IO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        svp_error("cannot read %s: not a regular file", path);
        close(fd);
        return SVP_ERR_IO;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    f = fdopen(fd, "rb");
    if (f == NULL) {
        svp_error("cannot open %s: %m", path);
        close(fd);
        return SVP_ERR_IO;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        svp_error("cannot size %s: %m", path);
        fclose(f);
        return SVP_ERR_IO;
    }
    if (max > 0 && (unsigned long)size > max) {
        svp_error("%s: %s of %ld bytes: over the size limit of %zu bytes", path,
                  what ? what : "a file", size, max);
        fclose(f);
        return SVP_ERR_BAD_FILE;
    }
    buf = malloc((size_t)size + 1);
    if (buf == NULL) {
        fclose(f);
        return SVP_ERR_NO_MEMORY;
    }
    got = fread(buf, 1, (size_t)size, f);
    fclose(f);
    if (got != (size_t)size) {
        svp_error("short read on %s", path);
        free(buf);
        return SVP_ERR_IO;
    }
    buf[size] = '\0';
    *data_p   = buf;
    if (len_p != NULL) {
        *len_p = (size_t)size;
    }
    return SVP_OK;
}

svp_status_t svp_mkdir_p(const char *path, int mode)
{
    char   buf[4096];
    size_t i, len = strlen(path);

    if (len == 0 || len >= sizeof(buf)) {
        return SVP_ERR_INVALID_PARAM;
    }
    memcpy(buf, path, len + 1);
    for (i = 1; i <= len; ++i) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, mode) != 0 && errno != EEXIST) {
                svp_error("cannot create directory %s: %m", buf);
                return SVP_ERR_IO;
            }
            buf[i] = c;
        }
    }
    return SVP_OK;
}

svp_status_t svp_rmtree(const char *path)
{
    DIR           *dir;
    struct dirent *de;
    char           child[4096];
    struct stat    st;

    if (lstat(path, &st) != 0) {
        return (errno == ENOENT) ? SVP_OK : SVP_ERR_IO;
    }
    if (!S_ISDIR(st.st_mode)) {
        return (unlink(path) == 0) ? SVP_OK : SVP_ERR_IO;
    }
    dir = opendir(path);
    if (dir == NULL) {
        return SVP_ERR_IO;
    }
    while ((de = readdir(dir)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
            continue;
        }
        snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
        svp_rmtree(child);
    }
    closedir(dir);
    return (rmdir(path) == 0) ? SVP_OK : SVP_ERR_IO;
}

int svp_str_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i, j;
    int    row[128], prev, tmp, best;

    if (lb >= SVP_ARRAY_SIZE(row)) {
        return 1000;
    }
    for (j = 0; j <= lb; ++j) {
        row[j] = (int)j;
    }
    for (i = 1; i <= la; ++i) {
        prev   = row[0];
        row[0] = (int)i;
        for (j = 1; j <= lb; ++j) {
            tmp    = row[j];
            best   = prev + (a[i - 1] != b[j - 1]);
            best   = SVP_MIN(best, row[j] + 1);
            best   = SVP_MIN(best, row[j - 1] + 1);
            row[j] = best;
            prev   = tmp;
        }
    }
    return row[lb];
}

char *svp_strdup(const char *s)
{
    return (s == NULL) ? NULL : strdup(s);
}

uint64_t svp_hash_fnv1a(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t             h = 1469598103934665603ULL ^ seed;
    size_t               i;

    for (i = 0; i < len; ++i) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

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

void svp_errf(char *errbuf, int errlen, const char *fmt, ...)
{
    char    raw[8192];
    va_list ap;

    if (errbuf == NULL || errlen <= 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* the values in a message are the user's text: safe to print */
    svp_str_escape(raw, strlen(raw), errbuf, (size_t)errlen);
}

int svp_same_file(const char *a, const char *b)
{
    struct stat sa, sb;

    if ((stat(a, &sa) == 0) && (stat(b, &sb) == 0)) {
        return (sa.st_dev == sb.st_dev) && (sa.st_ino == sb.st_ino);
    }
    return strcmp(a, b) == 0;
}

/*
 * The character at u[0..len): its length in bytes with its code point in
 * *cp_p, or 0 when u does not start with well-formed UTF-8 (a stray or
 * missing continuation byte, an overlong form, a surrogate, a code point
 * past U+10FFFF, or a sequence cut short by len).
 */
static size_t svp_utf8_decode(const unsigned char *u, size_t len, uint32_t *cp_p)
{
    size_t   n, k;
    uint32_t cp, min;

    if (u[0] < 0x80) {
        *cp_p = u[0];
        return 1;
    }
    if ((u[0] & 0xe0) == 0xc0) {
        n = 1, cp = u[0] & 0x1f, min = 0x80;
    } else if ((u[0] & 0xf0) == 0xe0) {
        n = 2, cp = u[0] & 0x0f, min = 0x800;
    } else if ((u[0] & 0xf8) == 0xf0) {
        n = 3, cp = u[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n >= len) {
        return 0; /* cut short */
    }
    for (k = 1; k <= n; ++k) {
        if ((u[k] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (u[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    *cp_p = cp;
    return n + 1;
}

int svp_utf8_valid(const char *s, size_t len, size_t *bad_p)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t               i = 0, n;
    uint32_t             cp;

    while (i < len) {
        n = svp_utf8_decode(u + i, len - i, &cp);
        if (n == 0) {
            if (bad_p != NULL) {
                *bad_p = i;
            }
            return 0;
        }
        i += n;
    }
    return 1;
}

/*
 * Characters a terminal does not show as themselves: C0 and C1 controls
 * and DEL act (ESC starts the sequences that recolour, retitle or clear a
 * terminal; U+009B is CSI on a terminal that honours C1), and the
 * invisible format characters hide or reorder the text around them (the
 * bidirectional embeddings, overrides and isolates, the marks, the
 * separators, U+FEFF, which a UTF-8 BOM decodes to).
 */
static int svp_str_hidden(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
           cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

size_t svp_str_escape(const char *s, size_t len, char *out, size_t outlen)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t               i = 0, o = 0, n, w;
    uint32_t             cp;
    char                 esc[8];

    if (outlen == 0) {
        return 0;
    }
    while (i < len) {
        n = svp_utf8_decode(u + i, len - i, &cp);
        if (n == 0) {
            w = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
            n = 1;
        } else if (cp == '\n' || cp == '\t' || cp == '\r') {
            w = (size_t)snprintf(esc, sizeof(esc), "\\%c",
                                 cp == '\n'   ? 'n'
                                 : cp == '\t' ? 't'
                                              : 'r');
        } else if (cp < 0x80 && svp_str_hidden(cp)) {
            w = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", (unsigned)cp);
        } else if (svp_str_hidden(cp)) {
            w = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
        } else {
            w = 0;
        }
        /* whole characters and whole escapes only */
        if (o + (w ? w : n) >= outlen) {
            break;
        }
        if (w > 0) {
            memcpy(out + o, esc, w);
            o += w;
        } else {
            memcpy(out + o, u + i, n);
            o += n;
        }
        i += n;
    }
    out[o] = '\0';
    return o;
}

const char *svp_tmp_tag(void)
{
    static char tag[300];
    static int  pid;

    /* a fork gets its own; the host does not change */
    if (pid != (int)getpid()) {
        snprintf(tag, sizeof(tag), "%d@%s", (int)getpid(), svp_log_hostname());
        pid = (int)getpid();
    }
    return tag;
}
