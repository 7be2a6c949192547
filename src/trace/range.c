/*
 * Named ranges around work (range.h): NVTX where a CUDA build has it, the
 * nesting that log.profile sums per block and op, and the trace events.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "trace/range.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/file.h"
#include "common/util.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

#define SVP_RANGE_NAME_MAX 96
#define SVP_RANGE_PATH_MAX 512

typedef struct {
    char  *name; /* full path */
    int    depth;
    long   count;
    double s, flops;
} svp_range_entry_t;

typedef struct {
    const char *kind;
    char        root[SVP_RANGE_NAME_MAX]; /* the outermost profiled range */
    long        count;
    double      s, flops;
} svp_range_opkind_t;

typedef struct {
    size_t path_len; /* length of the path before this range */
    double t0;
    int    entry; /* profile entry, -1 when not profiling */
    int    nvtx;  /* an NVTX range was pushed */
} svp_range_frame_t;

static struct {
    int checked, tool; /* NVTX tool attached */
    int profile;
    void (*sync)(void *);
    void              *sync_arg;
    int                depth;
    svp_range_frame_t  stack[SVP_RANGE_MAX_DEPTH];
    char               path[SVP_RANGE_PATH_MAX];
    svp_range_entry_t *entries;
    int                nentries, cap;
    svp_range_opkind_t ops[128];
    int                nops;
} svp_range;

int svp_range_active(void)
{
    if (!svp_range.checked) {
        svp_range.checked = 1;
#ifdef HAVE_CUDA
        /* nsys and ncu load their injection library through this variable;
         * without it every NVTX call is a no-op and names are not needed */
        svp_range.tool = (getenv("NVTX_INJECTION64_PATH") != NULL);
#endif
    }
    return svp_range.tool || svp_range.profile;
}

static double svp_range_stamp(void)
{
    if (svp_range.sync != NULL) {
        svp_range.sync(svp_range.sync_arg);
    }
    return svp_clock_now();
}

static int svp_range_entry(const char *path, int depth)
{
    svp_range_entry_t *e;
    int                i, cap;

    /* a UNet has ~100 distinct paths; a linear scan from the end finds a
     * repeated block in a few compares */
    for (i = svp_range.nentries - 1; i >= 0; --i) {
        if (!strcmp(svp_range.entries[i].name, path)) {
            return i;
        }
    }
    if (svp_range.nentries == svp_range.cap) {
        cap = svp_range.cap ? 2 * svp_range.cap : 256;
        e   = realloc(svp_range.entries, cap * sizeof(*e));
        if (e == NULL) {
            return -1;
        }
        svp_range.entries = e;
        svp_range.cap     = cap;
    }
    e = &svp_range.entries[svp_range.nentries];
    memset(e, 0, sizeof(*e));
    e->name  = strdup(path);
    e->depth = depth;
    if (e->name == NULL) {
        return -1;
    }
    return svp_range.nentries++;
}

static int svp_range_levels(const char *path)
{
    int n = 0;

    for (; *path; ++path) {
        n += (*path == '/');
    }
    return n;
}

static int svp_range_vpush(int profiled, const char *fmt, va_list ap)
{
    int                depth = svp_range.depth;
    svp_range_frame_t *fr;
    char               name[SVP_RANGE_NAME_MAX];
    size_t             len;

    if (!svp_range_active() || depth == SVP_RANGE_MAX_DEPTH) {
        /* counted anyway, so that pops stay matched */
        if (depth < SVP_RANGE_MAX_DEPTH) {
            svp_range.stack[depth] =
                (svp_range_frame_t){strlen(svp_range.path), 0, -1, 0};
        }
        svp_range.depth++;
        return depth;
    }
    vsnprintf(name, sizeof(name), fmt, ap);

    fr           = &svp_range.stack[depth];
    fr->path_len = strlen(svp_range.path);
    fr->entry    = -1;
    fr->nvtx     = 0;
#ifdef HAVE_CUDA
    if (svp_range.tool) {
        nvtxRangePushA(name);
        fr->nvtx = 1;
    }
#endif
    if (svp_range.profile && profiled) {
        len = fr->path_len;
        snprintf(svp_range.path + len, sizeof(svp_range.path) - len, "%s%s",
                 len ? "/" : "", name);
        /* the entry's depth is its level in the path, context ranges not counted */
        fr->entry =
            svp_range_entry(svp_range.path, svp_range_levels(svp_range.path));
        fr->t0 = svp_range_stamp();
    }
    svp_range.depth++;
    return depth;
}

int svp_range_push(const char *fmt, ...)
{
    va_list ap;
    int     depth;

    va_start(ap, fmt);
    depth = svp_range_vpush(1, fmt, ap);
    va_end(ap);
    return depth;
}

int svp_range_push_ctx(const char *fmt, ...)
{
    va_list ap;
    int     depth;

    va_start(ap, fmt);
    depth = svp_range_vpush(0, fmt, ap);
    va_end(ap);
    return depth;
}

void svp_range_pop(void)
{
    svp_range_frame_t *fr;

    if (svp_range.depth == 0) {
        return;
    }
    svp_range.depth--;
    if (svp_range.depth >= SVP_RANGE_MAX_DEPTH) {
        return;
    }
    fr = &svp_range.stack[svp_range.depth];
    if (fr->entry >= 0) {
        svp_range.entries[fr->entry].s += svp_range_stamp() - fr->t0;
        svp_range.entries[fr->entry].count++;
    }
#ifdef HAVE_CUDA
    if (fr->nvtx) {
        nvtxRangePop();
    }
#endif
    svp_range.path[fr->path_len] = '\0';
}

void svp_range_pop_to(int depth)
{
    while (svp_range.depth > depth) {
        svp_range_pop();
    }
}

void svp_range_profile_enable(int on, void (*sync)(void *arg), void *arg)
{
    svp_range.profile  = on;
    svp_range.sync     = on ? sync : NULL;
    svp_range.sync_arg = arg;
}

int svp_range_profile_enabled(void)
{
    return svp_range.profile;
}

void svp_range_profile_reset(void)
{
    int i;

    for (i = 0; i < svp_range.nentries; ++i) {
        free(svp_range.entries[i].name);
    }
    free(svp_range.entries);
    svp_range.entries  = NULL;
    svp_range.nentries = svp_range.cap = 0;
    svp_range.nops                     = 0;
}

void svp_range_op(const char *kind, double seconds, double flops)
{
    svp_range_opkind_t *k    = NULL;
    size_t              rlen = strcspn(svp_range.path, "/");
    int                 i;

    if (!svp_range.profile) {
        return;
    }
    /* per kind and per outermost range: the UNet's ops apart from the VAE's */
    rlen = SVP_MIN(rlen, SVP_RANGE_NAME_MAX - 1);
    for (i = 0; i < svp_range.nops; ++i) {
        if ((svp_range.ops[i].kind == kind ||
             !strcmp(svp_range.ops[i].kind, kind)) &&
            !strncmp(svp_range.ops[i].root, svp_range.path, rlen) &&
            svp_range.ops[i].root[rlen] == '\0') {
            k = &svp_range.ops[i];
            break;
        }
    }
    if (k == NULL) {
        if (svp_range.nops ==
            (int)(sizeof(svp_range.ops) / sizeof(svp_range.ops[0]))) {
            return;
        }
        k = &svp_range.ops[svp_range.nops++];
        memset(k, 0, sizeof(*k));
        k->kind = kind;
        memcpy(k->root, svp_range.path, rlen);
    }
    k->count++;
    k->s += seconds;
    k->flops += flops;
    /* the FLOPs count in every open range: a block's include its children's */
    for (i = 0; i < svp_range.depth && i < SVP_RANGE_MAX_DEPTH; ++i) {
        if (svp_range.stack[i].entry >= 0) {
            svp_range.entries[svp_range.stack[i].entry].flops += flops;
        }
    }
}

/* What was collected, as svp_range_profile_write writes it; NULL when out
 * of memory. */
static json_t *svp_range_profile_json(void)
{
    json_t *ranges = json_array(), *ops = json_array();
    int     i, failed                   = (ranges == NULL || ops == NULL);

    for (i = 0; !failed && i < svp_range.nentries; ++i) {
        const svp_range_entry_t *e = &svp_range.entries[i];

        failed = json_array_append_new(ranges,
                                       json_pack("{s:s, s:i, s:I, s:f, s:f}", "name",
                                                 e->name, "depth", e->depth, "count",
                                                 (json_int_t)e->count, "s", e->s,
                                                 "flops", e->flops)) != 0;
    }
    for (i = 0; !failed && i < svp_range.nops; ++i) {
        const svp_range_opkind_t *k = &svp_range.ops[i];

        failed =
            json_array_append_new(ops, json_pack("{s:s, s:s, s:I, s:f, s:f}", "root",
                                                 k->root, "kind", k->kind, "count",
                                                 (json_int_t)k->count, "s", k->s,
                                                 "flops", k->flops)) != 0;
    }
    if (failed) {
        json_decref(ranges);
        json_decref(ops);
        return NULL;
    }
    return json_pack("{s:o, s:o}", "ranges", ranges, "ops", ops);
}

/* One line of JSON and its newline. */
#define SVP_RANGE_JSON_FLAGS \
    (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9))

svp_status_t svp_range_profile_write(FILE *out)
{
    json_t      *doc    = svp_range_profile_json();
    svp_status_t status = SVP_OK;

    if (doc == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    if (json_dumpf(doc, out, SVP_RANGE_JSON_FLAGS) != 0 || fputc('\n', out) == EOF ||
        ferror(out)) {
        status = SVP_ERR_IO;
    }
    json_decref(doc);
    return status;
}

svp_status_t svp_range_profile_save(const char *path, json_t *about)
{
    char        *text    = NULL, *line;
    json_t      *profile = svp_range_profile_json();
    size_t       len;
    svp_status_t status = SVP_ERR_NO_MEMORY;

    /* json_object_set_new takes profile, set or not */
    if (about != NULL && profile != NULL &&
        json_object_set_new(about, "profile", profile) == 0) {
        text = json_dumps(about, SVP_RANGE_JSON_FLAGS);
    } else if (about == NULL) {
        json_decref(profile);
    }
    len  = (text != NULL) ? strlen(text) : 0;
    line = (text != NULL) ? realloc(text, len + 2) : NULL;
    if (line != NULL) {
        text      = line;
        text[len] = '\n';
        status    = svp_file_write_atomic(path, text, len + 1);
    }
    if (status == SVP_OK) {
        svp_info("profile written to %s", path);
    } else {
        svp_error("cannot write the profile %s: %s", path,
                  svp_status_string(status));
    }
    json_decref(about);
    free(text);
    return status;
}
