/*
 * Small helpers shared by every layer: files written atomically, directory
 * creation, string distance for "did you mean" suggestions.
 */
#ifndef SVP_COMMON_UTIL_H
#define SVP_COMMON_UTIL_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

#define SVP_ARRAY_SIZE(_a) (sizeof(_a) / sizeof((_a)[0]))
#define SVP_MIN(_a, _b)    (((_a) < (_b)) ? (_a) : (_b))
#define SVP_MAX(_a, _b)    (((_a) > (_b)) ? (_a) : (_b))

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

/*
 * Formats an error message into errbuf (errlen bytes, always terminated);
 * nothing when errbuf is NULL or errlen is not positive.  The one shape of
 * the "errbuf, errlen" out-parameters the spec, sample-list and launcher
 * checks fill.  The message is escaped (svp_str_escape): what it quotes
 * from a spec, a manifest or a command line is printed safely.
 */
void svp_errf(char *errbuf, int errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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

/* Levenshtein distance, for "unknown key 'stpes', did you mean 'steps'?". */
int svp_str_distance(const char *a, const char *b);

/* 1 when s[0..len) is well-formed UTF-8 (no overlong forms, surrogates or
 * code points past U+10FFFF); else 0 with the first bad byte's offset in
 * *bad_p (may be NULL). */
int svp_utf8_valid(const char *s, size_t len, size_t *bad_p);

/*
 * Copies the len bytes of s into out (outlen bytes, always terminated) as
 * text that is safe to print on a terminal or in one log line: a byte that
 * is not UTF-8 becomes \xHH, a control character \n, \t, \r or \xHH (C0,
 * DEL) or \uHHHH (C1), and so do the invisible characters that hide or
 * reorder text (bidirectional controls, U+2028/9, U+FEFF: a BOM).
 * Everything else, backslashes included, is copied as it is, so escaping
 * twice changes nothing.  Stops before a character or escape that would
 * not fit.  Returns the length written.  svp_errf() and the log escape
 * every message this way: the user's text they carry cannot reach a
 * terminal raw.
 */
size_t svp_str_escape(const char *s, size_t len, char *out, size_t outlen);

/* 1 when a and b name the same file (the same device and inode; as
 * strings where either does not exist). */
int svp_same_file(const char *a, const char *b);

/* strdup that returns NULL only when s is NULL or memory is exhausted. */
char *svp_strdup(const char *s);

/* 64-bit FNV-1a, used for message checksums and job ids. */
uint64_t svp_hash_fnv1a(const void *data, size_t len, uint64_t seed);

/*
 * The CPU threads a process runs by default: $SVP_THREADS when set, else
 * the first count of $OMP_NUM_THREADS, else the CPUs of the process's
 * affinity mask (what Slurm's --cpus-per-task, taskset or a cgroup's
 * cpuset gave it), else the node's online CPUs.  *from_p (may be NULL) is
 * set to a static phrase naming the source, "the CPU affinity mask", ...
 * A set variable that is not a positive count is warned about and skipped.
 */
int svp_threads_default(const char **from_p);

#endif
