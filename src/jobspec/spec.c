/*
 * Job spec loading: YAML (libyaml's events, composed into its document
 * API's nodes, which keep a mark each, under the limits in spec.h) ->
 * svp_spec_t, driven by the key table in spec_keys.c.
 *
 * Order: every key gets its default, then the file's values, then --set
 * overrides, then cross-key validation.  The first error stops parsing and is
 * reported as
 *
 *   job.yaml:4:10: key 'comm.deadline': expected a number in [0.1, 86400], found 'soon'
 *
 * Unknown keys are errors with the nearest known key as a suggestion, since a
 * misspelt key silently taking its default is the worst kind of surprise on a
 * cluster (the job runs for hours with the wrong settings).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/spec.h"
#include "jobspec/spec_int.h"
#include "common/log.h"
#include "common/str.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The reader of a spec: its arg is the spec file's folder, which relative
 * paths in the file resolve against (NULL or "." leaves them as they are).
 */
static void svp_spec_reader_init(svp_spec_reader_t *r, const char *file,
                                 char *errbuf, int errlen, const char *folder)
{
    memset(r, 0, sizeof(*r));
    r->keys     = svp_spec_keys;
    r->num_keys = svp_spec_num_keys;
    r->sections = svp_spec_sections;
    r->what     = "job spec";
    r->file     = file;
    r->errbuf   = errbuf;
    r->errlen   = errlen;
    r->arg      = (void *)folder;
}

/*
 * Keys whose values are paths a job reads.  A relative one written in the
 * spec file names a file beside the spec, wherever the tool runs from, so a
 * spec travels (or is installed) with its model and images; a --set value
 * stays relative to the working directory, like any command-line path.
 * What a job writes (output.dir, log.trace) stays relative to the directory
 * the job runs in: an installed spec's folder is not writable.
 * cluster.worker is a path only when it has a '/': a bare name is looked up
 * on PATH.
 */
static const char *const svp_spec_path_keys[] = {"model.path",
                                                 "model.conditioning",
                                                 "video.inputs",
                                                 "video.manifest",
                                                 "cluster.worker",
                                                 NULL};

/* base/rel into a new string, or rel unchanged (absolute, empty, no base). */
static svp_status_t svp_spec_join(const svp_spec_reader_t *ctx, int bare_ok,
                                  char **value)
{
    const char *base = ctx->arg;
    char       *joined;
    size_t      len;

    if (base == NULL || !strcmp(base, ".") || *value == NULL ||
        (*value)[0] == '\0' || (*value)[0] == '/' ||
        (bare_ok && strchr(*value, '/') == NULL)) {
        return SVP_OK;
    }
    len    = strlen(base) + strlen(*value) + 2;
    joined = malloc(len);
    if (joined == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    snprintf(joined, len, "%s/%s", base, *value);
    free(*value);
    *value = joined;
    return SVP_OK;
}

/* After a path key was set from the file: resolve it against the file's
 * folder (the reader's after hook). */
static svp_status_t svp_spec_resolve(svp_spec_reader_t    *ctx,
                                     const svp_spec_key_t *key, int line, int col)
{
    void               *field = (char *)ctx->base + key->offset;
    svp_spec_strlist_t *list;
    svp_status_t        status = SVP_OK;
    int                 i, bare_ok;

    (void)line;
    (void)col;
    for (i = 0; svp_spec_path_keys[i] != NULL; ++i) {
        if (!strcmp(svp_spec_path_keys[i], key->path)) {
            break;
        }
    }
    if (svp_spec_path_keys[i] == NULL) {
        return SVP_OK;
    }
    bare_ok = !strcmp(key->path, "cluster.worker");
    if (key->type == SVP_SPEC_T_STRING) {
        return svp_spec_join(ctx, bare_ok, (char **)field);
    }
    if (key->type == SVP_SPEC_T_STR_LIST) {
        list = field;
        for (i = 0; i < list->count && status == SVP_OK; ++i) {
            status = svp_spec_join(ctx, bare_ok, &list->items[i]);
        }
    }
    return status;
}


static svp_status_t svp_spec_alloc_defaults(svp_spec_t **spec_p)
{
    svp_spec_t  *spec;
    char         why[256];
    int          i;
    svp_status_t status;

    spec = calloc(1, sizeof(*spec));
    if (spec == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < svp_spec_num_keys; ++i) {
        const svp_spec_key_t *key = &svp_spec_keys[i];
        if (key->type == SVP_SPEC_T_STR_LIST || key->type == SVP_SPEC_T_INT_LIST ||
            (key->type == SVP_SPEC_T_STR_MAP)) {
            continue; /* empty by default */
        }
        status = svp_spec_key_set(spec, key, key->def, why, sizeof(why));
        if (status != SVP_OK) {
            svp_error("internal: default of %s: %s", key->path, why);
            svp_spec_destroy(spec);
            return SVP_ERR_INTERNAL;
        }
    }
    *spec_p = spec;
    return SVP_OK;
}

static svp_status_t svp_spec_apply_override(svp_spec_reader_t *ctx, svp_spec_t *spec,
                                            const char *ov)
{
    const svp_spec_key_t *key;
    const char           *eq = strchr(ov, '=');
    char                  path[256], why[512], *dot;
    svp_status_t          status;
    size_t                bad;

    if (!svp_utf8_valid(ov, strlen(ov), &bad)) {
        /* text keys (the job's name among them) go into file names,
         * JSON records and logs: UTF-8 only, as a spec file must be */
        return svp_spec_reader_fail(ctx, 0, 0,
                                    "--set: expected UTF-8 text, found the "
                                    "byte 0x%02x at offset %zu",
                                    (unsigned char)ov[bad], bad);
    }
    if (eq == NULL || eq == ov) {
        return svp_spec_reader_fail(ctx, 0, 0, "--set '%s': expected key=value", ov);
    }
    if ((size_t)(eq - ov) >= sizeof(path)) {
        return svp_spec_reader_fail(ctx, 0, 0,
                                    "--set: a key of %zu bytes: over the "
                                    "key length limit of %zu bytes",
                                    (size_t)(eq - ov), sizeof(path) - 1);
    }
    memcpy(path, ov, eq - ov);
    path[eq - ov] = '\0';
    if (strlen(eq + 1) > SVP_SPEC_LIMIT_STRING) {
        return svp_spec_reader_fail(ctx, 0, 0,
                                    "--set %s: a value of %zu bytes: over the "
                                    "string length limit of %d bytes",
                                    path, strlen(eq + 1), SVP_SPEC_LIMIT_STRING);
    }

    key = svp_spec_key_find(path);
    if (key != NULL) {
        status = svp_spec_key_set(spec, key, eq + 1, why, sizeof(why));
    } else if ((dot = strrchr(path, '.')) != NULL &&
               (*dot = '\0', key = svp_spec_key_find(path)) != NULL &&
               key->type == SVP_SPEC_T_STR_MAP) {
        /* --set cluster.env.UCX_TLS=posix,self */
        status = svp_spec_key_append(spec, key, dot + 1, eq + 1, why, sizeof(why));
        *dot   = '.';
    } else {
        if (dot != NULL) {
            *dot = '.';
        }
        if (svp_spec_is_section(path)) {
            return svp_spec_reader_fail(ctx, 0, 0,
                                        "--set %s: '%s' is a section, not a key", ov,
                                        path);
        }
        return svp_spec_reader_unknown(ctx, 0, 0, path);
    }
    if (status != SVP_OK) {
        return svp_spec_reader_fail(ctx, 0, 0, "--set %s: key '%s': %s", ov, path,
                                    why);
    }
    return SVP_OK;
}

static svp_status_t svp_spec_finish(svp_spec_reader_t *ctx, svp_spec_t *spec,
                                    const char *const *overrides, int num_overrides)
{
    char         why[512], *copy;
    const char  *key = NULL;
    svp_status_t status;
    int          i;

    for (i = 0; i < num_overrides; ++i) {
        status = svp_spec_apply_override(ctx, spec, overrides[i]);
        if (status != SVP_OK) {
            return status;
        }
    }
    status = svp_spec_validate(spec, why, sizeof(why), &key);
    if (status != SVP_OK) {
        return svp_spec_reader_fail(ctx, 0, 0, "key '%s': %s", key, why);
    }
    if (spec->name[0] == '\0') {
        copy = svp_strdup(ctx->file);
        if (copy == NULL) {
            return svp_spec_reader_no_memory(ctx, 0, 0, "naming the job");
        }
        free(spec->name);
        spec->name = svp_strdup(basename(copy));
        free(copy);
        if ((copy = strrchr(spec->name, '.')) != NULL && copy != spec->name) {
            *copy = '\0';
        }
    }
    spec->file = svp_strdup(ctx->file);
    if (spec->file == NULL || spec->name == NULL) {
        return svp_spec_reader_no_memory(ctx, 0, 0, "naming the job");
    }
    return SVP_OK;
}

/* The reader's mark hook: keeps where the file wrote each value
 * (svp_spec_mark_find). */
static svp_status_t svp_spec_mark_add(svp_spec_reader_t *ctx, const char *path,
                                      const char *text, size_t len, int line,
                                      int col)
{
    svp_spec_t      *spec = ctx->base;
    svp_spec_mark_t *grown, *m;
    int              max;

    if (spec->num_marks == spec->max_marks) {
        max   = (spec->max_marks > 0) ? 2 * spec->max_marks : 64;
        grown = realloc(spec->marks, (size_t)max * sizeof(*grown));
        if (grown == NULL) {
            return svp_spec_reader_no_memory(ctx, line, col,
                                             "noting where a value is");
        }
        spec->marks     = grown;
        spec->max_marks = max;
    }
    m       = &spec->marks[spec->num_marks];
    m->path = svp_strdup(path);
    m->text = (text != NULL) ? malloc(len + 1) : NULL;
    if (m->path == NULL || (text != NULL && m->text == NULL)) {
        free(m->path);
        free(m->text);
        return svp_spec_reader_no_memory(ctx, line, col, "noting where a value is");
    }
    if (text != NULL) {
        memcpy(m->text, text, len);
        m->text[len] = '\0';
    }
    m->len    = len;
    m->line   = line;
    m->column = col;
    ++spec->num_marks;
    return SVP_OK;
}

const svp_spec_mark_t *svp_spec_mark_find(const svp_spec_t *spec, const char *path)
{
    int i;

    for (i = 0; i < spec->num_marks; ++i) {
        if (!strcmp(spec->marks[i].path, path)) {
            return &spec->marks[i];
        }
    }
    return NULL;
}

static svp_status_t svp_spec_load_text(const char *yaml, size_t len,
                                       const char *file, const char *base,
                                       const char *const *overrides,
                                       int num_overrides, char *errbuf, int errlen,
                                       svp_spec_t **spec_p)
{
    svp_spec_reader_t ctx;
    svp_spec_t       *spec;
    svp_status_t      status;

    svp_spec_reader_init(&ctx, file, errbuf, errlen, base);
    if (len > SVP_SPEC_LIMIT_BYTES) {
        /* refused before the defaults are set */
        return svp_spec_reader_read(&ctx, yaml, len);
    }
    status = svp_spec_alloc_defaults(&spec);
    if (status == SVP_ERR_NO_MEMORY) {
        return svp_spec_reader_no_memory(&ctx, 0, 0, "setting the defaults");
    } else if (status != SVP_OK) {
        return status;
    }
    ctx.base  = spec;
    ctx.after = svp_spec_resolve;
    /* a text read from its file (base: the file's folder) keeps where the
     * file wrote each value, for the checks after parsing */
    ctx.mark = (base != NULL) ? svp_spec_mark_add : NULL;
    status   = svp_spec_reader_read(&ctx, yaml, len);
    if (status == SVP_OK) {
        status = svp_spec_finish(&ctx, spec, overrides, num_overrides);
    }
    if (status != SVP_OK) {
        svp_spec_destroy(spec);
        return status;
    }
    *spec_p = spec;
    return SVP_OK;
}

/*
 * Every failure leaves a message: the few paths that return a status
 * without one (running out of memory deep in a key's copy) get the status's
 * own words, never what the caller's buffer held before.
 */
static svp_status_t svp_spec_load_checked(const char *yaml, size_t len,
                                          const char *file, const char *base,
                                          const char *const *overrides,
                                          int num_overrides, char *errbuf,
                                          int errlen, svp_spec_t **spec_p)
{
    svp_spec_reader_t ctx;
    svp_status_t      status;

    svp_spec_reader_init(&ctx, file, errbuf, errlen, base);
    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    status = svp_spec_load_text(yaml, len, file, base, overrides, num_overrides,
                                errbuf, errlen, spec_p);
    if (status != SVP_OK && errbuf != NULL && errlen > 0 && errbuf[0] == '\0') {
        svp_spec_reader_fail(&ctx, 0, 0, "%s", svp_status_string(status));
    }
    return status;
}

svp_status_t svp_spec_load_string(const char *yaml, const char *file,
                                  const char *const *overrides, int num_overrides,
                                  char *errbuf, int errlen, svp_spec_t **spec_p)
{
    return svp_spec_load_checked(yaml, strlen(yaml), file, NULL, overrides,
                                 num_overrides, errbuf, errlen, spec_p);
}

static const char *svp_spec_file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a file";
}

/*
 * Reads the spec file, only if it is a regular file within the size limit.
 * O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise, and
 * then the read waits for its data; the fstat that refuses it comes after
 * the open.  A device such as /dev/zero has no size to check and never
 * ends.
 */
static svp_status_t svp_spec_read_file(svp_spec_reader_t *ctx, char **text_p,
                                       size_t *len_p)
{
    struct stat st;
    char       *text;
    size_t      got = 0;
    ssize_t     n;
    int         fd, err;

    fd = open(ctx->file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return svp_spec_reader_fail(ctx, 0, 0, "cannot read the job spec: %s",
                                    strerror(errno));
    }
    if (fstat(fd, &st) != 0) {
        err = errno;
        close(fd);
        return svp_spec_reader_fail(ctx, 0, 0, "cannot read the job spec: %s",
                                    strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return svp_spec_reader_fail(ctx, 0, 0,
                                    "cannot read the job spec: not a regular "
                                    "file (%s)",
                                    svp_spec_file_kind(st.st_mode));
    }
    if (st.st_size > SVP_SPEC_LIMIT_BYTES) {
        close(fd);
        return svp_spec_reader_fail(ctx, 0, 0,
                                    "a job spec of %lld bytes: over the size "
                                    "limit of %d bytes",
                                    (long long)st.st_size, SVP_SPEC_LIMIT_BYTES);
    }
    text = malloc((size_t)st.st_size + 1);
    if (text == NULL) {
        close(fd);
        return svp_spec_reader_no_memory(ctx, 0, 0, "reading the job spec");
    }
    /* what the size said; a file that grows meanwhile is read as it was */
    while (got < (size_t)st.st_size) {
        n = read(fd, text + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            err = (n < 0) ? errno : 0;
            close(fd);
            free(text);
            return svp_spec_reader_fail(ctx, 0, 0, "cannot read the job spec: %s",
                                        err ? strerror(err)
                                            : "it shrank while read");
        }
        got += (size_t)n;
    }
    close(fd);
    text[got] = '\0';
    *text_p   = text;
    *len_p    = got;
    return SVP_OK;
}

svp_status_t svp_spec_load(const char *file, const char *const *overrides,
                           int num_overrides, char *errbuf, int errlen,
                           svp_spec_t **spec_p)
{
    svp_spec_reader_t ctx;
    char             *text = NULL, *copy;
    size_t            len  = 0;
    svp_status_t      status;

    svp_spec_reader_init(&ctx, file, errbuf, errlen, NULL);
    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    status = svp_spec_read_file(&ctx, &text, &len);
    if (status != SVP_OK) {
        return status;
    }
    copy = svp_strdup(file);
    if (copy == NULL) {
        free(text);
        return svp_spec_reader_no_memory(&ctx, 0, 0, "reading the job spec");
    }
    status = svp_spec_load_checked(text, len, file, dirname(copy), overrides,
                                   num_overrides, errbuf, errlen, spec_p);
    free(copy);
    free(text);
    return status;
}

void svp_spec_destroy(svp_spec_t *spec)
{
    int i;

    if (spec == NULL) {
        return;
    }
    for (i = 0; i < svp_spec_num_keys; ++i) {
        const svp_spec_key_t *key = &svp_spec_keys[i];
        if (key->type == SVP_SPEC_T_STRING) {
            free(*(char **)((char *)spec + key->offset));
        } else {
            svp_spec_key_clear(spec, key);
        }
    }
    for (i = 0; i < spec->num_marks; ++i) {
        free(spec->marks[i].path);
        free(spec->marks[i].text);
    }
    free(spec->marks);
    free(spec->file);
    free(spec);
}

/*
 * Double-quoted YAML scalar with escapes: the dump must parse back, and is
 * printed (--print-spec, logs), so what svp_str_escape escapes is escaped
 * too; its \n, \t, \r, \xHH and \uHHHH are YAML's own escapes (a spec's
 * text is UTF-8: no byte escapes of invalid bytes reach here).
 */
int svp_spec_dump_str(char *buf, size_t len, const char *s)
{
    size_t n = 0, run;

    n += snprintf(buf + n, len - n, "\"");
    while (*s != '\0' && n + 8 < len) {
        if (*s == '"' || *s == '\\') {
            n += snprintf(buf + n, len - n, "\\%c", *s++);
            continue;
        }
        run = strcspn(s, "\"\\");
        n += svp_str_escape(s, run, buf + n, len - n - 2, SVP_STR_ESCAPE_TERMINAL);
        s += run;
    }
    n += snprintf(buf + n, len - n, "\"");
    return (int)n;
}

svp_status_t svp_spec_dump(const svp_spec_t *spec, char **yaml_p)
{
    size_t      cap = 65536, n = 0;
    char       *out = malloc(cap), val[4096];
    const void *field;
    int         i, j;

    if (out == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    out[0] = '\0';
    for (i = 0; i < svp_spec_num_keys && n + 8192 < cap; ++i) {
        const svp_spec_key_t *key = &svp_spec_keys[i];
        field                     = (const char *)spec + key->offset;
        val[0]                    = '\0';
        switch (key->type) {
        case SVP_SPEC_T_INT:
            if (*(const int *)field < 0 && key->names != NULL) {
                snprintf(val, sizeof(val), "%s",
                         key->names[-*(const int *)field - 1]);
            } else {
                snprintf(val, sizeof(val), "%d", *(const int *)field);
            }
            break;
        case SVP_SPEC_T_U64:
            snprintf(val, sizeof(val), "%llu",
                     (unsigned long long)*(const uint64_t *)field);
            break;
        case SVP_SPEC_T_DOUBLE:
            snprintf(val, sizeof(val), "%.17g", *(const double *)field);
            break;
        case SVP_SPEC_T_STRING:
            svp_spec_dump_str(val, sizeof(val), *(char *const *)field);
            break;
        case SVP_SPEC_T_BOOL:
            snprintf(val, sizeof(val), "%s", *(const int *)field ? "true" : "false");
            break;
        case SVP_SPEC_T_ENUM:
            snprintf(val, sizeof(val), "%s", key->names[*(const int *)field]);
            break;
        case SVP_SPEC_T_SHAPE5: {
            const int64_t *s = field;
            snprintf(val, sizeof(val), "[%lld, %lld, %lld, %lld, %lld]",
                     (long long)s[0], (long long)s[1], (long long)s[2],
                     (long long)s[3], (long long)s[4]);
            break;
        }
        case SVP_SPEC_T_INT_LIST: {
            const svp_spec_intlist_t *l = field;
            int                       m = snprintf(val, sizeof(val), "[");
            for (j = 0; j < l->count && m < (int)sizeof(val) - 32; ++j) {
                m += snprintf(val + m, sizeof(val) - m, "%s%lld", j ? ", " : "",
                              (long long)l->items[j]);
            }
            snprintf(val + m, sizeof(val) - m, "]");
            break;
        }
        case SVP_SPEC_T_STR_LIST: {
            const svp_spec_strlist_t *l = field;
            int                       m = snprintf(val, sizeof(val), "[");
            for (j = 0; j < l->count && m < (int)sizeof(val) - 600; ++j) {
                m += snprintf(val + m, sizeof(val) - m, "%s", j ? ", " : "");
                m += svp_spec_dump_str(val + m, sizeof(val) - m, l->items[j]);
            }
            snprintf(val + m, sizeof(val) - m, "]");
            break;
        }
        case SVP_SPEC_T_STR_MAP: {
            const svp_spec_strmap_t *m = field;
            int                      k = snprintf(val, sizeof(val), "{");
            for (j = 0; j < m->count && k < (int)sizeof(val) - 1200; ++j) {
                k += snprintf(val + k, sizeof(val) - k, "%s", j ? ", " : "");
                k += svp_spec_dump_str(val + k, sizeof(val) - k, m->keys[j]);
                k += snprintf(val + k, sizeof(val) - k, ": ");
                k += svp_spec_dump_str(val + k, sizeof(val) - k, m->values[j]);
            }
            snprintf(val + k, sizeof(val) - k, "}");
            break;
        }
        }
        n += snprintf(out + n, cap - n, "%s: %s\n", key->path, val);
    }
    *yaml_p = out;
    return SVP_OK;
}

const char *svp_spec_model_kind_name(svp_model_kind_t kind)
{
    return (kind == SVP_MODEL_SVD) ? "svd" : "dummy";
}

const char *svp_spec_placement_name(svp_placement_t placement)
{
    return (placement == SVP_PLACEMENT_SPREAD) ? "spread" : "ends";
}
