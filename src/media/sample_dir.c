/*
 * Atomic sample directories: build under a temporary name, then rename.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/sample_dir.h"
#include "common/log.h"
#include "common/file.h"
#include "common/str.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct svp_media_sample_dir {
    char *path; /* the final name */
    char *tmp;  /* "<path>.tmp.<pid>" */
};

static void svp_media_sample_dir_free(svp_media_sample_dir_h dir)
{
    free(dir->tmp);
    free(dir->path);
    free(dir);
}

/* fsync a directory so the entries created or renamed in it are durable. */
static svp_status_t svp_media_fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0) {
        svp_error("cannot open directory %s: %m", path);
        return SVP_ERR_IO;
    }
    if (fsync(fd) != 0) {
        svp_error("fsync of directory %s failed: %m", path);
        close(fd);
        return SVP_ERR_IO;
    }
    close(fd);
    return SVP_OK;
}

static svp_status_t svp_media_fsync_parent(const char *path)
{
    char        *copy = svp_strdup(path);
    svp_status_t status;

    if (copy == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_media_fsync_dir(dirname(copy));
    free(copy);
    return status;
}

svp_status_t svp_media_sample_dir_begin(const char             *path,
                                        svp_media_sample_dir_h *dir_p)
{
    svp_media_sample_dir_h dir;
    char                  *parent;
    svp_status_t           status;

    dir = calloc(1, sizeof(*dir));
    if (dir == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    dir->path = svp_strdup(path);
    if (dir->path == NULL ||
        asprintf(&dir->tmp, "%s.tmp.%s", path, svp_tmp_tag()) < 0) {
        dir->tmp = NULL;
        status   = SVP_ERR_NO_MEMORY;
        goto err_free_dir;
    }

    parent = svp_strdup(path);
    if (parent == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto err_free_dir;
    }
    status = svp_mkdir_p(dirname(parent), 0755);
    free(parent);
    if (status != SVP_OK) {
        goto err_free_dir;
    }

    /* only our own pid's leftover: another process may be building its
     * own temporary of the same sample right now */
    svp_rmtree(dir->tmp);
    if (mkdir(dir->tmp, 0755) != 0) {
        svp_error("cannot create sample directory %s: %m", dir->tmp);
        status = SVP_ERR_IO;
        goto err_free_dir;
    }
    *dir_p = dir;
    return SVP_OK;

err_free_dir:
    svp_media_sample_dir_free(dir);
    return status;
}

const char *svp_media_sample_dir_path(svp_media_sample_dir_h dir)
{
    return dir->tmp;
}

svp_status_t svp_media_sample_dir_commit(svp_media_sample_dir_h dir)
{
    struct stat  st;
    char        *old = NULL;
    svp_status_t status;

    status = svp_media_fsync_dir(dir->tmp);
    if (status != SVP_OK) {
        goto err_remove_tmp;
    }

    /* rename() will not replace a non-empty directory: move an earlier
     * result aside first.  The final path is absent (never partial) in
     * between. */
    if (lstat(dir->path, &st) == 0) {
        if (asprintf(&old, "%s.old.%s", dir->path, svp_tmp_tag()) < 0) {
            old    = NULL;
            status = SVP_ERR_NO_MEMORY;
            goto err_remove_tmp;
        }
        svp_rmtree(old);
        if (rename(dir->path, old) != 0) {
            svp_error("cannot move %s aside to %s: %m", dir->path, old);
            status = SVP_ERR_IO;
            goto err_remove_tmp;
        }
    }
    if (rename(dir->tmp, dir->path) != 0) {
        svp_error("cannot rename %s to %s: %m", dir->tmp, dir->path);
        status = SVP_ERR_IO;
        goto err_restore_old;
    }
    status = svp_media_fsync_parent(dir->path);
    if (old != NULL) {
        svp_rmtree(old);
    }
    free(old);
    svp_media_sample_dir_free(dir);
    return status;

err_restore_old:
    if (old != NULL && rename(old, dir->path) != 0) {
        svp_error("cannot move %s back to %s: %m", old, dir->path);
    }
err_remove_tmp:
    free(old);
    svp_media_sample_dir_abort(dir);
    return status;
}

void svp_media_sample_dir_abort(svp_media_sample_dir_h dir)
{
    if (dir == NULL) {
        return;
    }
    if (svp_rmtree(dir->tmp) != SVP_OK) {
        svp_warn("cannot remove unfinished sample directory %s", dir->tmp);
    }
    svp_media_sample_dir_free(dir);
}

svp_status_t svp_media_sample_write(const char                     *path,
                                    const svp_media_frames_t       *frames,
                                    const svp_media_video_params_t *video)
{
    svp_media_sample_dir_h dir;
    char                  *mp4;
    svp_status_t           status;

    status = svp_media_sample_dir_begin(path, &dir);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_media_frames_write_png(frames, svp_media_sample_dir_path(dir));
    if (status != SVP_OK) {
        goto err_abort;
    }
    if (video != NULL) {
        if (asprintf(&mp4, "%s/%s", svp_media_sample_dir_path(dir),
                     SVP_MEDIA_SAMPLE_VIDEO) < 0) {
            status = SVP_ERR_NO_MEMORY;
            goto err_abort;
        }
        status = svp_media_video_write_mp4(mp4, frames, video);
        free(mp4);
        if (status != SVP_OK) {
            goto err_abort;
        }
    }
    return svp_media_sample_dir_commit(dir);

err_abort:
    svp_media_sample_dir_abort(dir);
    return status;
}
