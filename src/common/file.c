/*
 * Files and directories (file.h): files written atomically and read whole
 * within a limit, the tag of this process's temporaries, directories made
 * and removed, two paths compared.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/file.h"
#include "common/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int svp_same_file(const char *a, const char *b)
{
    struct stat sa, sb;

    if ((stat(a, &sa) == 0) && (stat(b, &sb) == 0)) {
        return (sa.st_dev == sb.st_dev) && (sa.st_ino == sb.st_ino);
    }
    return strcmp(a, b) == 0;
}
