/*
 * Files and directories: files written atomically and read whole within a
 * limit, the tag of this process's temporaries, directories made and
 * removed, two paths compared.
 */
#ifndef SVP_COMMON_FILE_H
#define SVP_COMMON_FILE_H

#include "common/status.h"

#include <stddef.h>

/*
 * The tag of this process's temporaries, "<pid>@<host>": a temporary is
 * "<final>.tmp.<tag>" (a directory moved aside, "<final>.old.<tag>"), so
 * that a start-up tells a dead writer's leftovers from a live writer's
 * work on another node or in another container, where pids repeat.
 */
const char *svp_tmp_tag(void);

/*
 * Writes len bytes to path atomically: the data goes to "path.tmp.TAG" in the
 * same directory, is fsync'ed, then renamed over path.  On failure nothing is
 * left at path (an older file there stays intact) and the temporary is
 * removed.  Errors are logged with the path and %m.
 */
svp_status_t svp_file_write_atomic(const char *path, const void *data, size_t len);

/* Reads a whole file into a malloc'ed, NUL-terminated buffer; caller frees. */
svp_status_t svp_file_read_all(const char *path, char **data_p, size_t *len_p);

/*
 * svp_file_read_all for a file of at most max bytes (0: no limit): a larger
 * one is refused before it is read, SVP_ERR_BAD_FILE, with an error naming
 * the file, what it is ("a config.json") and the limit.
 */
svp_status_t svp_file_read_limit(const char *path, size_t max, const char *what,
                                 char **data_p, size_t *len_p);

/* mkdir -p; existing directories are fine. */
svp_status_t svp_mkdir_p(const char *path, int mode);

/* Removes a directory tree (used to discard half-built sample dirs). */
svp_status_t svp_rmtree(const char *path);

/* 1 when a and b name the same file (the same device and inode; as
 * strings where either does not exist). */
int svp_same_file(const char *a, const char *b);

#endif
