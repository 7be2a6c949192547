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
#include "spec/spec.h"
#include "spec/spec_int.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

typedef struct {
    const char *file;
    char       *errbuf;
    int         errlen;
    const char *base;   /* the spec file's folder: relative paths in the file
                           resolve against it; NULL or "." leaves them as is */
    const char *text;   /* the YAML being parsed (NULL: none), for the line */
    size_t      len;    /* and column of an encoding error */
} svp_spec_ctx_t;

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
static const char *const svp_spec_path_keys[] = {
    "model.path", "model.conditioning", "video.inputs", "video.manifest",
    "cluster.worker", NULL
};

static svp_status_t svp_spec_fail(svp_spec_ctx_t *ctx, int line, int col,
                                  const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static svp_status_t svp_spec_fail(svp_spec_ctx_t *ctx, int line, int col,
                                  const char *fmt, ...)
{
    char    msg[1024], full[1400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line > 0) {
        snprintf(full, sizeof(full), "%s:%d:%d: %s", ctx->file, line, col, msg);
    } else {
        snprintf(full, sizeof(full), "%s: %s", ctx->file, msg);
    }
    /* a user-facing message in the compiler's form, without the log prefix:
     * the caller that asked for it in errbuf prints it.  It quotes the
     * spec and --set: escaped (svp_str_escape), never raw. */
    if (ctx->errbuf != NULL && ctx->errlen > 0) {
        svp_errf(ctx->errbuf, ctx->errlen, "%s", full);
    } else {
        char esc[4096];

        svp_str_escape(full, strlen(full), esc, sizeof(esc));
        fprintf(stderr, "%s\n", esc);
    }
    return SVP_ERR_SPEC;
}

/* base/rel into a new string, or rel unchanged (absolute, empty, no base). */
static svp_status_t svp_spec_join(const svp_spec_ctx_t *ctx, int bare_ok,
                                  char **value)
{
    char  *joined;
    size_t len;

    if (ctx->base == NULL || !strcmp(ctx->base, ".") || *value == NULL ||
        (*value)[0] == '\0' || (*value)[0] == '/' ||
        (bare_ok && strchr(*value, '/') == NULL)) {
        return SVP_OK;
    }
    len    = strlen(ctx->base) + strlen(*value) + 2;
    joined = malloc(len);
    if (joined == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    snprintf(joined, len, "%s/%s", ctx->base, *value);
    free(*value);
    *value = joined;
    return SVP_OK;
}

/* After a path key was set from the file: resolve it against the file's
 * folder. */
static svp_status_t svp_spec_resolve(const svp_spec_ctx_t *ctx,
                                     const svp_spec_key_t *key,
                                     svp_spec_t *spec)
{
    void               *field = (char *)spec + key->offset;
    svp_spec_strlist_t *list;
    svp_status_t        status = SVP_OK;
    int                 i, bare_ok;

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

/* The nearest known key or section under the same parent, for suggestions. */
static const char *svp_spec_suggest(const char *path)
{
    const char *best = NULL, *cand;
    int         i, d, best_d = 4;

    for (i = 0; i < svp_spec_num_keys + 16; ++i) {
        if (i < svp_spec_num_keys) {
            cand = svp_spec_keys[i].path;
        } else if (svp_spec_sections[i - svp_spec_num_keys] != NULL) {
            cand = svp_spec_sections[i - svp_spec_num_keys];
        } else {
            break;
        }
        d = svp_str_distance(path, cand);
        if (d < best_d) {
            best_d = d;
            best   = cand;
        }
    }
    return best;
}

static svp_status_t svp_spec_unknown(svp_spec_ctx_t *ctx, int line, int col,
                                     const char *path)
{
    const char *hint = svp_spec_suggest(path);

    if (hint != NULL) {
        return svp_spec_fail(ctx, line, col, "unknown key '%s' (did you mean '%s'?)",
                             path, hint);
    }
    return svp_spec_fail(ctx, line, col, "unknown key '%s'", path);
}

static const char *svp_spec_node_kind(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_SCALAR_NODE:   return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE:  return "a mapping";
    default:                 return "nothing";
    }
}

#define MARK_LINE(_n) ((int)(_n)->start_mark.line + 1)
#define MARK_COL(_n)  ((int)(_n)->start_mark.column + 1)

static svp_status_t svp_spec_walk(svp_spec_ctx_t *ctx, yaml_document_t *doc,
                                  yaml_node_t *map, const char *prefix,
                                  svp_spec_t *spec);

/*
 * YAML 1.2 (core schema): a quoted or block scalar is a string, whatever
 * it spells.  A key that takes a number refuses one, rather than reading
 * "5" or " -1" as a number the way a plain scalar is read; a word an
 * integer key takes (pipeline.stages: "auto") is text and stays allowed.
 */
static int svp_spec_number_refuses(const svp_spec_key_t *key,
                                   const yaml_node_t *node)
{
    const char *value = (const char *)node->data.scalar.value;

    if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
        node->data.scalar.style == YAML_ANY_SCALAR_STYLE) {
        return 0;
    }
    switch (key->type) {
    case SVP_SPEC_T_INT:
        for (int i = 0; key->names != NULL && key->names[i] != NULL; ++i) {
            if (!strcmp(value, key->names[i])) {
                return 0;
            }
        }
        return 1;
    case SVP_SPEC_T_U64:
    case SVP_SPEC_T_DOUBLE:
    case SVP_SPEC_T_SHAPE5:
    case SVP_SPEC_T_INT_LIST:
        return 1;
    default:
        return 0;
    }
}

static svp_status_t svp_spec_quoted_number(svp_spec_ctx_t *ctx,
                                           const svp_spec_key_t *key,
                                           const yaml_node_t *node)
{
    return svp_spec_fail(ctx, MARK_LINE(node), MARK_COL(node),
                         "key '%s': expected %s, found the quoted string '%s' "
                         "(quotes make text in YAML: write the number "
                         "without them)", key->path,
                         (key->type == SVP_SPEC_T_DOUBLE) ? "a number"
                                                          : "an integer",
                         (const char *)node->data.scalar.value);
}

static svp_status_t svp_spec_set_node(svp_spec_ctx_t *ctx, yaml_document_t *doc,
                                      const svp_spec_key_t *key,
                                      yaml_node_t *value, svp_spec_t *spec)
{
    char                why[512];
    const char         *scalar;
    yaml_node_item_t   *item;
    yaml_node_pair_t   *pair;
    yaml_node_t        *elem, *k, *v;
    svp_status_t        status;
    char                joined[4096];
    int                 n;

    switch (value->type) {
    case YAML_SCALAR_NODE:
        if (svp_spec_number_refuses(key, value)) {
            return svp_spec_quoted_number(ctx, key, value);
        }
        scalar = (const char *)value->data.scalar.value;
        if (key->type == SVP_SPEC_T_STR_LIST || key->type == SVP_SPEC_T_INT_LIST) {
            /* a single scalar is a one-element list */
            svp_spec_key_clear(spec, key);
            status = svp_spec_key_append(spec, key, NULL, scalar, why, sizeof(why));
        } else {
            status = svp_spec_key_set(spec, key, scalar, why, sizeof(why));
        }
        break;
    case YAML_SEQUENCE_NODE:
        if (key->type == SVP_SPEC_T_SHAPE5) {
            n = 0;
            joined[0] = '\0';
            for (item = value->data.sequence.items.start;
                 item < value->data.sequence.items.top; ++item) {
                elem = yaml_document_get_node(doc, *item);
                if (elem->type != YAML_SCALAR_NODE) {
                    return svp_spec_fail(ctx, MARK_LINE(elem), MARK_COL(elem),
                                         "key '%s': expected an integer, found %s",
                                         key->path, svp_spec_node_kind(elem));
                }
                if (svp_spec_number_refuses(key, elem)) {
                    return svp_spec_quoted_number(ctx, key, elem);
                }
                n += snprintf(joined + n, sizeof(joined) - n, "%s%s",
                              (n > 0) ? "," : "", elem->data.scalar.value);
                if (n >= (int)sizeof(joined)) {
                    /* five integers never come near: stop before writing
                     * past the end */
                    return svp_spec_fail(ctx, MARK_LINE(value), MARK_COL(value),
                                         "key '%s': expected 5 integers [B, F, C, H, W], "
                                         "found a list of %d bytes or more",
                                         key->path, n);
                }
            }
            status = svp_spec_key_set(spec, key, joined, why, sizeof(why));
            break;
        }
        if (key->type != SVP_SPEC_T_STR_LIST && key->type != SVP_SPEC_T_INT_LIST) {
            return svp_spec_fail(ctx, MARK_LINE(value), MARK_COL(value),
                                 "key '%s': expected a scalar, found a list",
                                 key->path);
        }
        svp_spec_key_clear(spec, key);
        for (item = value->data.sequence.items.start;
             item < value->data.sequence.items.top; ++item) {
            elem = yaml_document_get_node(doc, *item);
            if (elem->type != YAML_SCALAR_NODE) {
                return svp_spec_fail(ctx, MARK_LINE(elem), MARK_COL(elem),
                                     "key '%s': expected a list of scalars, found %s",
                                     key->path, svp_spec_node_kind(elem));
            }
            if (svp_spec_number_refuses(key, elem)) {
                return svp_spec_quoted_number(ctx, key, elem);
            }
            status = svp_spec_key_append(spec, key, NULL,
                                         (const char *)elem->data.scalar.value,
                                         why, sizeof(why));
            if (status != SVP_OK) {
                return svp_spec_fail(ctx, MARK_LINE(elem), MARK_COL(elem),
                                     "key '%s': %s", key->path, why);
            }
        }
        return svp_spec_resolve(ctx, key, spec);
    case YAML_MAPPING_NODE:
        if (key->type != SVP_SPEC_T_STR_MAP) {
            return svp_spec_fail(ctx, MARK_LINE(value), MARK_COL(value),
                                 "key '%s': expected %s, found a mapping",
                                 key->path,
                                 (key->type == SVP_SPEC_T_STR_LIST ||
                                  key->type == SVP_SPEC_T_INT_LIST ||
                                  key->type == SVP_SPEC_T_SHAPE5) ? "a list"
                                                                  : "a scalar");
        }
        svp_spec_key_clear(spec, key);
        for (pair = value->data.mapping.pairs.start;
             pair < value->data.mapping.pairs.top; ++pair) {
            k = yaml_document_get_node(doc, pair->key);
            v = yaml_document_get_node(doc, pair->value);
            if (k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE) {
                return svp_spec_fail(ctx, MARK_LINE(v), MARK_COL(v),
                                     "key '%s': expected NAME: value pairs, found %s",
                                     key->path, svp_spec_node_kind(v));
            }
            status = svp_spec_key_append(spec, key, (const char *)k->data.scalar.value,
                                         (const char *)v->data.scalar.value, why,
                                         sizeof(why));
            if (status != SVP_OK) {
                return svp_spec_fail(ctx, MARK_LINE(v), MARK_COL(v), "key '%s.%s': %s",
                                     key->path, k->data.scalar.value, why);
            }
        }
        return SVP_OK;
    default:
        return svp_spec_fail(ctx, MARK_LINE(value), MARK_COL(value),
                             "key '%s': unexpected YAML node", key->path);
    }

    if (status != SVP_OK) {
        return svp_spec_fail(ctx, MARK_LINE(value), MARK_COL(value), "key '%s': %s",
                             key->path, why);
    }
    return svp_spec_resolve(ctx, key, spec);
}

static svp_status_t svp_spec_walk(svp_spec_ctx_t *ctx, yaml_document_t *doc,
                                  yaml_node_t *map, const char *prefix,
                                  svp_spec_t *spec)
{
    yaml_node_pair_t     *pair, *prev;
    yaml_node_t          *k, *v, *pk;
    const svp_spec_key_t *key;
    char                  path[256];
    svp_status_t          status;
    int                   n;

    for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         ++pair) {
        k = yaml_document_get_node(doc, pair->key);
        v = yaml_document_get_node(doc, pair->value);
        if (k->type != YAML_SCALAR_NODE) {
            return svp_spec_fail(ctx, MARK_LINE(k), MARK_COL(k),
                                 "expected a key name, found %s",
                                 svp_spec_node_kind(k));
        }
        n = snprintf(path, sizeof(path), "%s%s%s", prefix,
                     (prefix[0] != '\0') ? "." : "",
                     (const char *)k->data.scalar.value);
        if ((size_t)n >= sizeof(path)) {
            return svp_spec_fail(ctx, MARK_LINE(k), MARK_COL(k), "a key of %d "
                                 "bytes: over the key length limit of %zu bytes",
                                 n, sizeof(path) - 1);
        }

        for (prev = map->data.mapping.pairs.start; prev < pair; ++prev) {
            pk = yaml_document_get_node(doc, prev->key);
            if (pk->type == YAML_SCALAR_NODE &&
                strcmp((const char *)pk->data.scalar.value,
                       (const char *)k->data.scalar.value) == 0) {
                return svp_spec_fail(ctx, MARK_LINE(k), MARK_COL(k),
                                     "duplicate key '%s' (first at line %d)", path,
                                     MARK_LINE(pk));
            }
        }

        if (svp_spec_is_section(path)) {
            if (v->type != YAML_MAPPING_NODE) {
                /* "model:" with nothing under it is an empty section */
                if (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0) {
                    continue;
                }
                return svp_spec_fail(ctx, MARK_LINE(v), MARK_COL(v),
                                     "key '%s': expected a mapping (a section), found %s",
                                     path, svp_spec_node_kind(v));
            }
            status = svp_spec_walk(ctx, doc, v, path, spec);
        } else if ((key = svp_spec_key_find(path)) != NULL) {
            status = svp_spec_set_node(ctx, doc, key, v, spec);
        } else {
            status = svp_spec_unknown(ctx, MARK_LINE(k), MARK_COL(k), path);
        }
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

/*
 * The document is composed from the parser's events here rather than by
 * yaml_parser_load(), so that the SVP_SPEC_LIMIT_* (spec.h) are checked on
 * each event, before the loader would spend the time or memory: libyaml's
 * scanner keeps one possible simple key per open flow level and walks them
 * all on every token, so time grows with the square of the depth, and its
 * loader shares an aliased node where the key table copies its strings each
 * time.  What is built is what yaml_parser_load() builds (the first
 * document, a mark per node, aliases sharing their anchor's node), so the
 * walk above reads it unchanged; the same two composer errors (an undefined
 * alias, a duplicate anchor) are reported in the same words.
 */
typedef struct {
    yaml_char_t *name;
    uint64_t     hash;    /* of name: compared first, names may be long */
    int          node;
    size_t       nodes;   /* nodes under it, itself included */
    size_t       bytes;   /* value bytes under it */
} svp_spec_anchor_t;

/* A list or mapping still open: its anchor is registered when it closes,
 * with what it holds, which an alias repeats. */
typedef struct {
    int          node;
    int          events;  /* children so far: items, or keys and values */
    int          key;     /* a mapping's key waiting for its value */
    size_t       nodes, bytes; /* the composer's counts when it opened */
    yaml_char_t *anchor;  /* owned */
    yaml_mark_t  mark;    /* where it opened */
} svp_spec_open_t;

typedef struct {
    svp_spec_ctx_t    *ctx;
    yaml_document_t   *doc;
    svp_spec_open_t    open[SVP_SPEC_LIMIT_DEPTH];
    int                depth;
    svp_spec_anchor_t *anchors;
    int                num_anchors, max_anchors;
    size_t             nodes;       /* as the walk sees them: aliases expanded */
    size_t             bytes;       /* value bytes, the same way */
    size_t             alias_bytes; /* of which repeated by aliases */
    int                aliases;
} svp_spec_composer_t;

#define EV_LINE(_e) ((int)(_e)->start_mark.line + 1)
#define EV_COL(_e)  ((int)(_e)->start_mark.column + 1)

static svp_status_t svp_spec_no_memory(svp_spec_ctx_t *ctx, int line, int col,
                                       const char *what)
{
    svp_spec_fail(ctx, line, col, "out of memory while %s", what);
    return SVP_ERR_NO_MEMORY;
}

/*
 * The line and column of byte offset in the text (1-based; the column
 * counts characters, as libyaml's marks do).  The bytes before an encoding
 * error are well-formed UTF-8: libyaml's reader decoded them.
 */
static void svp_spec_offset_mark(const svp_spec_ctx_t *ctx, size_t offset,
                                 int *line_p, int *col_p)
{
    size_t i;
    int    line = 1, col = 1;

    for (i = 0; i < offset && i < ctx->len; ++i) {
        unsigned char c = (unsigned char)ctx->text[i];

        if (c == '\n' || (c == '\r' && (i + 1 >= ctx->len ||
                                         ctx->text[i + 1] != '\n'))) {
            ++line;
            col = 1;
        } else if ((c & 0xc0) != 0x80) {
            ++col;
        }
    }
    *line_p = line;
    *col_p  = col;
}

static svp_status_t svp_spec_yaml_fail(svp_spec_ctx_t *ctx,
                                       const yaml_parser_t *parser)
{
    int line, col;

    if (parser->error == YAML_MEMORY_ERROR) {
        return svp_spec_no_memory(ctx, 0, 0, "parsing the YAML");
    }
    /*
     * libyaml's reader (bytes that are not UTF-8, control characters, NUL)
     * says where by byte offset and leaves problem_mark at 0:0: the mark is
     * counted here from the text.  The byte itself is named, escaped.
     */
    if (parser->error == YAML_READER_ERROR && ctx->text != NULL) {
        size_t off = parser->problem_offset;

        svp_spec_offset_mark(ctx, off, &line, &col);
        if (off < ctx->len) {
            return svp_spec_fail(ctx, line, col, "invalid YAML: %s (the byte "
                                 "0x%02x): a job spec is UTF-8 text",
                                 parser->problem ? parser->problem : "bad input",
                                 (unsigned char)ctx->text[off]);
        }
        return svp_spec_fail(ctx, line, col, "invalid YAML: %s at the end: a "
                             "job spec is UTF-8 text",
                             parser->problem ? parser->problem : "bad input");
    }
    /* libyaml keeps the position of the problem in problem_mark */
    return svp_spec_fail(ctx, (int)parser->problem_mark.line + 1,
                         (int)parser->problem_mark.column + 1,
                         "invalid YAML: %s%s%s",
                         parser->problem ? parser->problem : "parse error",
                         parser->context ? " " : "",
                         parser->context ? parser->context : "");
}

/* Counts one node (or an alias's expansion) against the limits. */
static svp_status_t svp_spec_compose_count(svp_spec_composer_t *c,
                                           const yaml_event_t *ev,
                                           size_t nodes, size_t bytes)
{
    if (nodes > SVP_SPEC_LIMIT_NODES - c->nodes) {
        return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                             "more than %d YAML nodes (aliases counted each "
                             "time used): over the node limit of %d",
                             SVP_SPEC_LIMIT_NODES, SVP_SPEC_LIMIT_NODES);
    }
    c->nodes += nodes;
    c->bytes += bytes;
    return SVP_OK;
}

/* Adds node id to the collection open at the top, or leaves it as the root. */
static svp_status_t svp_spec_compose_attach(svp_spec_composer_t *c,
                                            const yaml_event_t *ev, int id)
{
    svp_spec_open_t *top;
    yaml_node_t     *parent;
    int              ok;

    if (c->depth == 0) {
        return SVP_OK; /* the root: the document's first node */
    }
    top    = &c->open[c->depth - 1];
    parent = yaml_document_get_node(c->doc, top->node);
    if (parent->type == YAML_SEQUENCE_NODE) {
        if (top->events == SVP_SPEC_LIMIT_ENTRIES) {
            return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                                 "a list of more than %d entries: over the "
                                 "list length limit of %d",
                                 SVP_SPEC_LIMIT_ENTRIES, SVP_SPEC_LIMIT_ENTRIES);
        }
        ok = yaml_document_append_sequence_item(c->doc, top->node, id);
    } else if (top->events % 2 == 0) {
        if (top->events / 2 == SVP_SPEC_LIMIT_ENTRIES) {
            return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                                 "a mapping of more than %d entries: over the "
                                 "list length limit of %d",
                                 SVP_SPEC_LIMIT_ENTRIES, SVP_SPEC_LIMIT_ENTRIES);
        }
        top->key = id;
        ok       = 1;
    } else {
        ok = yaml_document_append_mapping_pair(c->doc, top->node, top->key, id);
    }
    if (!ok) {
        return svp_spec_no_memory(c->ctx, EV_LINE(ev), EV_COL(ev),
                                  "composing the YAML");
    }
    top->events++;
    return SVP_OK;
}

static svp_status_t svp_spec_compose_check_name(svp_spec_composer_t *c,
                                                const yaml_event_t *ev,
                                                const yaml_char_t *name)
{
    if (name != NULL && strlen((const char *)name) > SVP_SPEC_LIMIT_STRING) {
        return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                             "an anchor name of %zu bytes: over the string "
                             "length limit of %d bytes",
                             strlen((const char *)name), SVP_SPEC_LIMIT_STRING);
    }
    return SVP_OK;
}

/* FNV-1a: an anchor or alias name is hashed once, and a lookup among the
 * anchors compares hashes; names of 12 KB that differ only at the end took
 * 1.8 s to register 256 of by strcmp under AddressSanitizer. */
static uint64_t svp_spec_name_hash(const yaml_char_t *name)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (; *name != '\0'; ++name) {
        h = (h ^ *name) * 0x100000001b3ull;
    }
    return h;
}

static const svp_spec_anchor_t *svp_spec_anchor_find(const svp_spec_composer_t *c,
                                                     const yaml_char_t *name,
                                                     uint64_t hash)
{
    int i;

    for (i = 0; i < c->num_anchors; ++i) {
        if (c->anchors[i].hash == hash &&
            !strcmp((const char *)c->anchors[i].name, (const char *)name)) {
            return &c->anchors[i];
        }
    }
    return NULL;
}

/* Registers an anchor; takes name. */
static svp_status_t svp_spec_compose_anchor(svp_spec_composer_t *c,
                                            yaml_mark_t mark, yaml_char_t *name,
                                            int node, size_t nodes, size_t bytes)
{
    const svp_spec_anchor_t *dup;
    svp_spec_anchor_t       *grown;
    uint64_t                 hash = svp_spec_name_hash(name);

    dup = svp_spec_anchor_find(c, name, hash);
    if (dup != NULL) {
        free(name);
        return svp_spec_fail(c->ctx, (int)mark.line + 1, (int)mark.column + 1,
                             "invalid YAML: found duplicate anchor (first at "
                             "line %d)",
                             MARK_LINE(yaml_document_get_node(c->doc, dup->node)));
    }
    /* also bounds the lookups: each anchor and alias is looked up among all
     * the anchors */
    if (c->num_anchors == SVP_SPEC_LIMIT_ANCHORS) {
        free(name);
        return svp_spec_fail(c->ctx, (int)mark.line + 1, (int)mark.column + 1,
                             "more than %d anchors: over the anchor limit of %d",
                             SVP_SPEC_LIMIT_ANCHORS, SVP_SPEC_LIMIT_ANCHORS);
    }
    if (c->num_anchors == c->max_anchors) {
        grown = realloc(c->anchors, (c->max_anchors * 2 + 8) * sizeof(*grown));
        if (grown == NULL) {
            free(name);
            return svp_spec_no_memory(c->ctx, (int)mark.line + 1,
                                      (int)mark.column + 1, "composing the YAML");
        }
        c->anchors     = grown;
        c->max_anchors = c->max_anchors * 2 + 8;
    }
    c->anchors[c->num_anchors++] = (svp_spec_anchor_t){name, hash, node, nodes,
                                                       bytes};
    return SVP_OK;
}

static svp_status_t svp_spec_compose_alias(svp_spec_composer_t *c,
                                           const yaml_event_t *ev)
{
    const char              *name = (const char *)ev->data.alias.anchor;
    const svp_spec_anchor_t *a;
    svp_status_t             status;
    int                      i;

    a = svp_spec_anchor_find(c, ev->data.alias.anchor,
                             svp_spec_name_hash(ev->data.alias.anchor));
    if (a == NULL) {
        for (i = 0; i < c->depth; ++i) {
            if (c->open[i].anchor != NULL &&
                !strcmp((const char *)c->open[i].anchor, name)) {
                return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                                     "alias *%.64s inside the node it names",
                                     name);
            }
        }
        return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                             "invalid YAML: found undefined alias");
    }
    if (c->aliases == SVP_SPEC_LIMIT_ALIASES) {
        return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                             "alias *%.64s: more than %d uses of aliases: over "
                             "the alias limit of %d", name,
                             SVP_SPEC_LIMIT_ALIASES, SVP_SPEC_LIMIT_ALIASES);
    }
    if (a->bytes > SVP_SPEC_LIMIT_ALIAS_BYTES - c->alias_bytes) {
        return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                             "alias *%.64s: aliases repeat more than %d bytes "
                             "of values: over the alias expansion limit of %d "
                             "bytes", name, SVP_SPEC_LIMIT_ALIAS_BYTES,
                             SVP_SPEC_LIMIT_ALIAS_BYTES);
    }
    status = svp_spec_compose_count(c, ev, a->nodes, a->bytes);
    if (status != SVP_OK) {
        return status;
    }
    c->aliases++;
    c->alias_bytes += a->bytes;
    return svp_spec_compose_attach(c, ev, a->node);
}

static svp_status_t svp_spec_compose_scalar(svp_spec_composer_t *c,
                                            yaml_event_t *ev)
{
    size_t       len = ev->data.scalar.length;
    svp_status_t status;
    int          id;

    if (len > SVP_SPEC_LIMIT_STRING) {
        return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                             "a value of %zu bytes: over the string length "
                             "limit of %d bytes", len, SVP_SPEC_LIMIT_STRING);
    }
    status = svp_spec_compose_check_name(c, ev, ev->data.scalar.anchor);
    if (status == SVP_OK) {
        status = svp_spec_compose_count(c, ev, 1, len);
    }
    if (status != SVP_OK) {
        return status;
    }
    /* tags are not kept: the keys read every value as text */
    id = yaml_document_add_scalar(c->doc, NULL, ev->data.scalar.value, (int)len,
                                  ev->data.scalar.style);
    if (id == 0) {
        return svp_spec_no_memory(c->ctx, EV_LINE(ev), EV_COL(ev),
                                  "composing the YAML");
    }
    yaml_document_get_node(c->doc, id)->start_mark = ev->start_mark;
    yaml_document_get_node(c->doc, id)->end_mark   = ev->end_mark;
    if (ev->data.scalar.anchor != NULL) {
        status = svp_spec_compose_anchor(c, ev->start_mark, ev->data.scalar.anchor,
                                         id, 1, len);
        ev->data.scalar.anchor = NULL; /* taken */
        if (status != SVP_OK) {
            return status;
        }
    }
    return svp_spec_compose_attach(c, ev, id);
}

static svp_status_t svp_spec_compose_open(svp_spec_composer_t *c,
                                          yaml_event_t *ev)
{
    int              is_seq = (ev->type == YAML_SEQUENCE_START_EVENT);
    yaml_char_t    **anchor = is_seq ? &ev->data.sequence_start.anchor
                                     : &ev->data.mapping_start.anchor;
    svp_spec_open_t *top;
    svp_status_t     status;
    int              id;

    if (c->depth == SVP_SPEC_LIMIT_DEPTH) {
        return svp_spec_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                             "lists and mappings nested more than %d deep: "
                             "over the nesting depth limit of %d",
                             SVP_SPEC_LIMIT_DEPTH, SVP_SPEC_LIMIT_DEPTH);
    }
    status = svp_spec_compose_check_name(c, ev, *anchor);
    if (status == SVP_OK) {
        status = svp_spec_compose_count(c, ev, 1, 0);
    }
    if (status != SVP_OK) {
        return status;
    }
    id = is_seq ? yaml_document_add_sequence(c->doc, NULL,
                                             ev->data.sequence_start.style)
                : yaml_document_add_mapping(c->doc, NULL,
                                            ev->data.mapping_start.style);
    if (id == 0) {
        return svp_spec_no_memory(c->ctx, EV_LINE(ev), EV_COL(ev),
                                  "composing the YAML");
    }
    yaml_document_get_node(c->doc, id)->start_mark = ev->start_mark;
    status = svp_spec_compose_attach(c, ev, id);
    if (status != SVP_OK) {
        return status;
    }
    top         = &c->open[c->depth++];
    top->node   = id;
    top->events = 0;
    top->key    = 0;
    top->nodes  = c->nodes - 1;
    top->bytes  = c->bytes;
    top->anchor = *anchor;
    top->mark   = ev->start_mark;
    *anchor     = NULL; /* taken */
    return SVP_OK;
}

static svp_status_t svp_spec_compose_close(svp_spec_composer_t *c,
                                           const yaml_event_t *ev)
{
    svp_spec_open_t *top = &c->open[--c->depth];
    yaml_char_t     *anchor = top->anchor;

    yaml_document_get_node(c->doc, top->node)->end_mark = ev->end_mark;
    if (anchor == NULL) {
        return SVP_OK;
    }
    top->anchor = NULL;
    return svp_spec_compose_anchor(c, top->mark, anchor, top->node,
                                   c->nodes - top->nodes, c->bytes - top->bytes);
}

/*
 * After the document: the stream must end.  yaml_parser_load() would read
 * the first document and leave the rest unread, so a second one (a
 * spec pasted twice, a "---" before notes that are not YAML) was silently
 * ignored; it is refused, at its start.
 */
static svp_status_t svp_spec_compose_end(svp_spec_ctx_t *ctx,
                                         yaml_parser_t *parser)
{
    yaml_event_t ev;
    svp_status_t status = SVP_OK;

    if (!yaml_parser_parse(parser, &ev)) {
        return svp_spec_yaml_fail(ctx, parser);
    }
    if (ev.type != YAML_STREAM_END_EVENT) {
        status = svp_spec_fail(ctx, EV_LINE(&ev), EV_COL(&ev),
                               "a second YAML document: a job spec is one "
                               "document (remove the '---' and what follows, "
                               "or merge the two)");
    }
    yaml_event_delete(&ev);
    return status;
}

/*
 * Composes the stream's only document into *doc (initialized here; on
 * success the caller deletes it, on failure it is deleted).  An empty
 * stream gives a document with no root, as yaml_parser_load() does.
 */
static svp_status_t svp_spec_compose(svp_spec_ctx_t *ctx, yaml_parser_t *parser,
                                     yaml_document_t *doc)
{
    svp_spec_composer_t c = {.ctx = ctx, .doc = doc};
    yaml_event_t        ev;
    svp_status_t        status = SVP_OK;
    int                 done = 0, i;

    if (!yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1)) {
        return svp_spec_no_memory(ctx, 0, 0, "composing the YAML");
    }
    while (!done && status == SVP_OK) {
        if (!yaml_parser_parse(parser, &ev)) {
            status = svp_spec_yaml_fail(ctx, parser);
            break;
        }
        switch (ev.type) {
        case YAML_SCALAR_EVENT:
            status = svp_spec_compose_scalar(&c, &ev);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            status = svp_spec_compose_open(&c, &ev);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            status = svp_spec_compose_close(&c, &ev);
            break;
        case YAML_ALIAS_EVENT:
            status = svp_spec_compose_alias(&c, &ev);
            break;
        case YAML_DOCUMENT_END_EVENT:
            status = svp_spec_compose_end(ctx, parser);
            done   = 1;
            break;
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }

    for (i = 0; i < c.depth; ++i) {
        free(c.open[i].anchor);
    }
    for (i = 0; i < c.num_anchors; ++i) {
        free(c.anchors[i].name);
    }
    free(c.anchors);
    if (status != SVP_OK) {
        yaml_document_delete(doc);
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

static svp_status_t svp_spec_apply_override(svp_spec_ctx_t *ctx, svp_spec_t *spec,
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
        return svp_spec_fail(ctx, 0, 0, "--set: expected UTF-8 text, found the "
                             "byte 0x%02x at offset %zu", (unsigned char)ov[bad], bad);
    }
    if (eq == NULL || eq == ov) {
        return svp_spec_fail(ctx, 0, 0, "--set '%s': expected key=value", ov);
    }
    if ((size_t)(eq - ov) >= sizeof(path)) {
        return svp_spec_fail(ctx, 0, 0, "--set: a key of %zu bytes: over the "
                             "key length limit of %zu bytes", (size_t)(eq - ov),
                             sizeof(path) - 1);
    }
    memcpy(path, ov, eq - ov);
    path[eq - ov] = '\0';
    if (strlen(eq + 1) > SVP_SPEC_LIMIT_STRING) {
        return svp_spec_fail(ctx, 0, 0, "--set %s: a value of %zu bytes: over the "
                             "string length limit of %d bytes", path,
                             strlen(eq + 1), SVP_SPEC_LIMIT_STRING);
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
            return svp_spec_fail(ctx, 0, 0, "--set %s: '%s' is a section, not a key",
                                 ov, path);
        }
        return svp_spec_unknown(ctx, 0, 0, path);
    }
    if (status != SVP_OK) {
        return svp_spec_fail(ctx, 0, 0, "--set %s: key '%s': %s", ov, path, why);
    }
    return SVP_OK;
}

static svp_status_t svp_spec_finish(svp_spec_ctx_t *ctx, svp_spec_t *spec,
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
        return svp_spec_fail(ctx, 0, 0, "key '%s': %s", key, why);
    }
    if (spec->name[0] == '\0') {
        copy = svp_strdup(ctx->file);
        if (copy == NULL) {
            return svp_spec_no_memory(ctx, 0, 0, "naming the job");
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
        return svp_spec_no_memory(ctx, 0, 0, "naming the job");
    }
    return SVP_OK;
}

static svp_status_t svp_spec_load_text(const char *yaml, size_t len,
                                       const char *file, const char *base,
                                       const char *const *overrides,
                                       int num_overrides, char *errbuf,
                                       int errlen, svp_spec_t **spec_p)
{
    svp_spec_ctx_t  ctx = {file, errbuf, errlen, base, yaml, len};
    yaml_parser_t   parser;
    yaml_document_t doc;
    yaml_node_t    *root;
    svp_spec_t     *spec;
    svp_status_t    status;

    if (len > SVP_SPEC_LIMIT_BYTES) {
        return svp_spec_fail(&ctx, 0, 0, "a job spec of %zu bytes: over the size "
                             "limit of %d bytes", len, SVP_SPEC_LIMIT_BYTES);
    }
    if (len >= 3 && !memcmp(yaml, "\xef\xbb\xbf", 3)) {
        /* a UTF-8 BOM some editors write: not part of the text, and not
         * counted in a column (an editor does not show it) */
        yaml += 3;
        len  -= 3;
        ctx.text = yaml;
        ctx.len  = len;
    }
    status = svp_spec_alloc_defaults(&spec);
    if (status == SVP_ERR_NO_MEMORY) {
        return svp_spec_no_memory(&ctx, 0, 0, "setting the defaults");
    } else if (status != SVP_OK) {
        return status;
    }

    if (!yaml_parser_initialize(&parser)) {
        status = svp_spec_no_memory(&ctx, 0, 0, "starting the YAML parser");
        goto err_free_spec;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    /* UTF-8 only (libyaml would follow a UTF-16 BOM): the text, the marks
     * counted from it and what the messages quote are UTF-8 */
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    status = svp_spec_compose(&ctx, &parser, &doc);
    if (status != SVP_OK) {
        goto err_delete_parser;
    }

    root = yaml_document_get_root_node(&doc);
    if (root != NULL && !(root->type == YAML_SCALAR_NODE &&
                          root->data.scalar.length == 0)) {
        if (root->type != YAML_MAPPING_NODE) {
            status = svp_spec_fail(&ctx, MARK_LINE(root), MARK_COL(root),
                                   "expected a mapping of keys at the top, found %s",
                                   svp_spec_node_kind(root));
            goto err_delete_doc;
        }
        status = svp_spec_walk(&ctx, &doc, root, "", spec);
        if (status != SVP_OK) {
            goto err_delete_doc;
        }
    }

    status = svp_spec_finish(&ctx, spec, overrides, num_overrides);
    if (status != SVP_OK) {
        goto err_delete_doc;
    }

    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    *spec_p = spec;
    return SVP_OK;

err_delete_doc:
    yaml_document_delete(&doc);
err_delete_parser:
    yaml_parser_delete(&parser);
err_free_spec:
    svp_spec_destroy(spec);
    return status;
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
    svp_spec_ctx_t ctx = {file, errbuf, errlen, base, NULL, 0};
    svp_status_t   status;

    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    status = svp_spec_load_text(yaml, len, file, base, overrides, num_overrides,
                                errbuf, errlen, spec_p);
    if (status != SVP_OK && errbuf != NULL && errlen > 0 && errbuf[0] == '\0') {
        svp_spec_fail(&ctx, 0, 0, "%s", svp_status_string(status));
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
    return S_ISDIR(mode)  ? "a directory" :
           S_ISFIFO(mode) ? "a FIFO" :
           S_ISCHR(mode)  ? "a character device" :
           S_ISBLK(mode)  ? "a block device" :
           S_ISSOCK(mode) ? "a socket" : "not a file";
}

/*
 * Reads the spec file, only if it is a regular file within the size limit.
 * O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise, and
 * then the read waits for its data; the fstat that refuses it comes after
 * the open.  A device such as /dev/zero has no size to check and never
 * ends.
 */
static svp_status_t svp_spec_read_file(svp_spec_ctx_t *ctx, char **text_p,
                                       size_t *len_p)
{
    struct stat st;
    char       *text;
    size_t      got = 0;
    ssize_t     n;
    int         fd, err;

    fd = open(ctx->file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return svp_spec_fail(ctx, 0, 0, "cannot read the job spec: %s",
                             strerror(errno));
    }
    if (fstat(fd, &st) != 0) {
        err = errno;
        close(fd);
        return svp_spec_fail(ctx, 0, 0, "cannot read the job spec: %s",
                             strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return svp_spec_fail(ctx, 0, 0, "cannot read the job spec: not a regular "
                             "file (%s)", svp_spec_file_kind(st.st_mode));
    }
    if (st.st_size > SVP_SPEC_LIMIT_BYTES) {
        close(fd);
        return svp_spec_fail(ctx, 0, 0, "a job spec of %lld bytes: over the size "
                             "limit of %d bytes", (long long)st.st_size,
                             SVP_SPEC_LIMIT_BYTES);
    }
    text = malloc((size_t)st.st_size + 1);
    if (text == NULL) {
        close(fd);
        return svp_spec_no_memory(ctx, 0, 0, "reading the job spec");
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
            return svp_spec_fail(ctx, 0, 0, "cannot read the job spec: %s",
                                 err ? strerror(err) : "it shrank while read");
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
    svp_spec_ctx_t ctx = {file, errbuf, errlen, NULL, NULL, 0};
    char          *text = NULL, *copy;
    size_t         len = 0;
    svp_status_t   status;

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
        return svp_spec_no_memory(&ctx, 0, 0, "reading the job spec");
    }
    status = svp_spec_load_checked(text, len, file, dirname(copy), overrides,
                                   num_overrides, errbuf, errlen, spec_p);
    free(copy);
    free(text);
    return status;
}

svp_status_t svp_spec_defaults(svp_spec_t **spec_p)
{
    svp_spec_ctx_t ctx = {"<defaults>", NULL, 0, NULL, NULL, 0};
    svp_spec_t    *spec;
    svp_status_t   status;

    status = svp_spec_alloc_defaults(&spec);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_spec_finish(&ctx, spec, NULL, 0);
    if (status != SVP_OK) {
        svp_spec_destroy(spec);
        return status;
    }
    *spec_p = spec;
    return SVP_OK;
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
    free(spec->file);
    free(spec);
}

/*
 * Double-quoted YAML scalar with escapes: the dump must parse back, and is
 * printed (--print-spec, logs), so what svp_str_escape escapes is escaped
 * too; its \n, \t, \r, \xHH and \uHHHH are YAML's own escapes (a spec's
 * text is UTF-8: no byte escapes of invalid bytes reach here).
 */
static int svp_spec_dump_str(char *buf, size_t len, const char *s)
{
    size_t n = 0, run;

    n += snprintf(buf + n, len - n, "\"");
    while (*s != '\0' && n + 8 < len) {
        if (*s == '"' || *s == '\\') {
            n += snprintf(buf + n, len - n, "\\%c", *s++);
            continue;
        }
        run = strcspn(s, "\"\\");
        n += svp_str_escape(s, run, buf + n, len - n - 2);
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
        field = (const char *)spec + key->offset;
        val[0] = '\0';
        switch (key->type) {
        case SVP_SPEC_T_INT:
            if (*(const int *)field < 0 && key->names != NULL) {
                snprintf(val, sizeof(val), "%s", key->names[-*(const int *)field - 1]);
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
