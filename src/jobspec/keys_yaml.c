/*
 * The YAML key reader (keys.h): the composed document (keys_compose.c)
 * walked against the reader's key table, each value checked and set, and
 * the errors in the compiler's form.  The job spec and the hardware tables
 * are read here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/keys.h"
#include "jobspec/keys_int.h"
#include "jobspec/spec.h"
#include "common/str.h"
#include "common/errf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

svp_status_t svp_spec_reader_fail(svp_spec_reader_t *ctx, int line, int col,
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

        svp_str_escape(full, strlen(full), esc, sizeof(esc),
                       SVP_STR_ESCAPE_TERMINAL);
        fprintf(stderr, "%s\n", esc);
    }
    return SVP_ERR_SPEC;
}

svp_status_t svp_spec_reader_no_memory(svp_spec_reader_t *ctx, int line, int col,
                                       const char *what)
{
    svp_spec_reader_fail(ctx, line, col, "out of memory while %s", what);
    return SVP_ERR_NO_MEMORY;
}

/* The nearest known key or section, for suggestions. */
static const char *svp_spec_suggest(const svp_spec_reader_t *ctx, const char *path)
{
    const char *best = NULL, *cand;
    int         i, d, best_d = 4;

    for (i = 0;; ++i) {
        if (i < ctx->num_keys) {
            cand = ctx->keys[i].path;
        } else if (ctx->sections[i - ctx->num_keys] != NULL) {
            cand = ctx->sections[i - ctx->num_keys];
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

svp_status_t svp_spec_reader_unknown(svp_spec_reader_t *ctx, int line, int col,
                                     const char *path)
{
    const char *hint = svp_spec_suggest(ctx, path);

    if (hint != NULL) {
        return svp_spec_reader_fail(ctx, line, col,
                                    "unknown key '%s' (did you "
                                    "mean '%s'?)",
                                    path, hint);
    }
    return svp_spec_reader_fail(ctx, line, col, "unknown key '%s'", path);
}

/* The table's key at path, or NULL. */
static const svp_spec_key_t *svp_spec_reader_key(const svp_spec_reader_t *ctx,
                                                 const char              *path)
{
    for (int i = 0; i < ctx->num_keys; ++i) {
        if (!strcmp(ctx->keys[i].path, path)) {
            return &ctx->keys[i];
        }
    }
    return NULL;
}

static int svp_spec_reader_section(const svp_spec_reader_t *ctx, const char *path)
{
    for (int i = 0; ctx->sections[i] != NULL; ++i) {
        if (!strcmp(ctx->sections[i], path)) {
            return 1;
        }
    }
    return 0;
}

/* After a key was set: the caller's hook. */
static svp_status_t svp_spec_reader_after(svp_spec_reader_t    *ctx,
                                          const svp_spec_key_t *key,
                                          const yaml_node_t    *value)
{
    return (ctx->after != NULL)
               ? ctx->after(ctx, key, (int)value->start_mark.line + 1,
                            (int)value->start_mark.column + 1)
               : SVP_OK;
}

static const char *svp_spec_node_kind(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

static svp_status_t svp_spec_walk(svp_spec_reader_t *ctx, yaml_document_t *doc,
                                  yaml_node_t *map, const char *prefix, int plain,
                                  void *base);

/*
 * YAML 1.2 (core schema): a quoted or block scalar is a string, whatever
 * it spells.  A key that takes a number refuses one, rather than reading
 * "5" or " -1" as a number the way a plain scalar is read; a word an
 * integer key takes (pipeline.stages: "auto") is text and stays allowed.
 */
static int svp_spec_number_refuses(const svp_spec_key_t *key,
                                   const yaml_node_t    *node)
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

static svp_status_t svp_spec_quoted_number(svp_spec_reader_t    *ctx,
                                           const svp_spec_key_t *key,
                                           const yaml_node_t    *node)
{
    return svp_spec_reader_fail(
        ctx, MARK_LINE(node), MARK_COL(node),
        "key '%s': expected %s, found the quoted string '%s' "
        "(quotes make text in YAML: write the number "
        "without them)",
        key->path, (key->type == SVP_SPEC_T_DOUBLE) ? "a number" : "an integer",
        (const char *)node->data.scalar.value);
}

static svp_status_t svp_spec_set_node(svp_spec_reader_t *ctx, yaml_document_t *doc,
                                      const svp_spec_key_t *key, yaml_node_t *value,
                                      void *base)
{
    char              why[512];
    const char       *scalar;
    yaml_node_item_t *item;
    yaml_node_pair_t *pair;
    yaml_node_t      *elem, *k, *v;
    svp_status_t      status;
    char              joined[4096];
    int               n;

    switch (value->type) {
    case YAML_SCALAR_NODE:
        if (svp_spec_number_refuses(key, value)) {
            return svp_spec_quoted_number(ctx, key, value);
        }
        scalar = (const char *)value->data.scalar.value;
        if (key->type == SVP_SPEC_T_STR_LIST || key->type == SVP_SPEC_T_INT_LIST) {
            /* a single scalar is a one-element list */
            svp_spec_key_clear(base, key);
            status = svp_spec_key_append(base, key, NULL, scalar, why, sizeof(why));
        } else {
            status = svp_spec_key_set(base, key, scalar, why, sizeof(why));
        }
        break;
    case YAML_SEQUENCE_NODE:
        if (key->type == SVP_SPEC_T_SHAPE5) {
            n         = 0;
            joined[0] = '\0';
            for (item = value->data.sequence.items.start;
                 item < value->data.sequence.items.top; ++item) {
                elem = yaml_document_get_node(doc, *item);
                if (elem->type != YAML_SCALAR_NODE) {
                    return svp_spec_reader_fail(
                        ctx, MARK_LINE(elem), MARK_COL(elem),
                        "key '%s': expected an integer, found %s", key->path,
                        svp_spec_node_kind(elem));
                }
                if (svp_spec_number_refuses(key, elem)) {
                    return svp_spec_quoted_number(ctx, key, elem);
                }
                n += snprintf(joined + n, sizeof(joined) - n, "%s%s",
                              (n > 0) ? "," : "", elem->data.scalar.value);
                if (n >= (int)sizeof(joined)) {
                    /* five integers never come near: stop before writing
                     * past the end */
                    return svp_spec_reader_fail(
                        ctx, MARK_LINE(value), MARK_COL(value),
                        "key '%s': expected 5 integers [B, F, C, H, W], "
                        "found a list of %d bytes or more",
                        key->path, n);
                }
            }
            status = svp_spec_key_set(base, key, joined, why, sizeof(why));
            break;
        }
        if (key->type != SVP_SPEC_T_STR_LIST && key->type != SVP_SPEC_T_INT_LIST) {
            return svp_spec_reader_fail(ctx, MARK_LINE(value), MARK_COL(value),
                                        "key '%s': expected a scalar, found a list",
                                        key->path);
        }
        svp_spec_key_clear(base, key);
        for (item = value->data.sequence.items.start;
             item < value->data.sequence.items.top; ++item) {
            elem = yaml_document_get_node(doc, *item);
            if (elem->type != YAML_SCALAR_NODE) {
                return svp_spec_reader_fail(
                    ctx, MARK_LINE(elem), MARK_COL(elem),
                    "key '%s': expected a list of scalars, found %s", key->path,
                    svp_spec_node_kind(elem));
            }
            if (svp_spec_number_refuses(key, elem)) {
                return svp_spec_quoted_number(ctx, key, elem);
            }
            status = svp_spec_key_append(base, key, NULL,
                                         (const char *)elem->data.scalar.value, why,
                                         sizeof(why));
            if (status != SVP_OK) {
                return svp_spec_reader_fail(ctx, MARK_LINE(elem), MARK_COL(elem),
                                            "key '%s': %s", key->path, why);
            }
        }
        return svp_spec_reader_after(ctx, key, value);
    case YAML_MAPPING_NODE:
        if (key->type != SVP_SPEC_T_STR_MAP) {
            return svp_spec_reader_fail(ctx, MARK_LINE(value), MARK_COL(value),
                                        "key '%s': expected %s, found a mapping",
                                        key->path,
                                        (key->type == SVP_SPEC_T_STR_LIST ||
                                         key->type == SVP_SPEC_T_INT_LIST ||
                                         key->type == SVP_SPEC_T_SHAPE5)
                                            ? "a list"
                                            : "a scalar");
        }
        svp_spec_key_clear(base, key);
        for (pair = value->data.mapping.pairs.start;
             pair < value->data.mapping.pairs.top; ++pair) {
            k = yaml_document_get_node(doc, pair->key);
            v = yaml_document_get_node(doc, pair->value);
            if (k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE) {
                return svp_spec_reader_fail(
                    ctx, MARK_LINE(v), MARK_COL(v),
                    "key '%s': expected NAME: value pairs, found %s", key->path,
                    svp_spec_node_kind(v));
            }
            status =
                svp_spec_key_append(base, key, (const char *)k->data.scalar.value,
                                    (const char *)v->data.scalar.value, why,
                                    sizeof(why));
            if (status != SVP_OK) {
                return svp_spec_reader_fail(ctx, MARK_LINE(v), MARK_COL(v),
                                            "key '%s.%s': %s", key->path,
                                            k->data.scalar.value, why);
            }
        }
        return SVP_OK;
    default:
        return svp_spec_reader_fail(ctx, MARK_LINE(value), MARK_COL(value),
                                    "key '%s': unexpected YAML node", key->path);
    }

    if (status != SVP_OK) {
        return svp_spec_reader_fail(ctx, MARK_LINE(value), MARK_COL(value),
                                    "key '%s': %s", key->path, why);
    }
    return svp_spec_reader_after(ctx, key, value);
}

/* Whether a path names what a key so written holds: a path splits at '.'
 * and '[' (svp_spec_reader_mark_cb_t). */
static int svp_spec_plain(const yaml_node_t *k)
{
    return strpbrk((const char *)k->data.scalar.value, ".[") == NULL;
}

/* Tells the mark hook where the value of path is: the key's own (item -1,
 * entry NULL), its list's item, or its mapping's entry. */
static svp_status_t svp_spec_reader_mark(svp_spec_reader_t *ctx, const char *path,
                                         int item, const char *entry,
                                         const yaml_node_t *value)
{
    const char  *text = NULL;
    size_t       len = 0, size = strlen(path) + (entry ? strlen(entry) : 0) + 24;
    char        *full;
    svp_status_t status;

    if (value->type == YAML_SCALAR_NODE) {
        text = (const char *)value->data.scalar.value;
        len  = value->data.scalar.length;
    }
    full = malloc(size);
    if (full == NULL) {
        return svp_spec_reader_no_memory(ctx, MARK_LINE(value), MARK_COL(value),
                                         "noting where a value is");
    }
    if (item >= 0) {
        snprintf(full, size, "%s[%d]", path, item);
    } else if (entry != NULL) {
        snprintf(full, size, "%s.%s", path, entry);
    } else {
        snprintf(full, size, "%s", path);
    }
    status = ctx->mark(ctx, full, text, len, MARK_LINE(value), MARK_COL(value));
    free(full);
    return status;
}

/* After key was set from value: its marks, the items' and entries' too. */
static svp_status_t svp_spec_reader_marks(svp_spec_reader_t    *ctx,
                                          yaml_document_t      *doc,
                                          const svp_spec_key_t *key,
                                          const yaml_node_t    *value)
{
    yaml_node_item_t *item;
    yaml_node_pair_t *pair;
    yaml_node_t      *k;
    svp_status_t      status;

    if (ctx->mark == NULL) {
        return SVP_OK;
    }
    status = svp_spec_reader_mark(ctx, key->path, -1, NULL, value);
    if (value->type == YAML_SEQUENCE_NODE) {
        for (item = value->data.sequence.items.start;
             status == SVP_OK && item < value->data.sequence.items.top; ++item) {
            status =
                svp_spec_reader_mark(ctx, key->path,
                                     (int)(item - value->data.sequence.items.start),
                                     NULL, yaml_document_get_node(doc, *item));
        }
    } else if (value->type == YAML_MAPPING_NODE) {
        for (pair = value->data.mapping.pairs.start;
             status == SVP_OK && pair < value->data.mapping.pairs.top; ++pair) {
            k = yaml_document_get_node(doc, pair->key);
            if (svp_spec_plain(k)) {
                status =
                    svp_spec_reader_mark(ctx, key->path, -1,
                                         (const char *)k->data.scalar.value,
                                         yaml_document_get_node(doc, pair->value));
            }
        }
    }
    return status;
}

/*
 * Reads the keys of map (under prefix) into base.  plain: every key on the
 * way to map was written without '.' or '[' (svp_spec_reader_mark_cb_t).
 */
static svp_status_t svp_spec_walk(svp_spec_reader_t *ctx, yaml_document_t *doc,
                                  yaml_node_t *map, const char *prefix, int plain,
                                  void *base)
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
            return svp_spec_reader_fail(ctx, MARK_LINE(k), MARK_COL(k),
                                        "expected a key name, found %s",
                                        svp_spec_node_kind(k));
        }
        n = snprintf(path, sizeof(path), "%s%s%s", prefix,
                     (prefix[0] != '\0') ? "." : "",
                     (const char *)k->data.scalar.value);
        if ((size_t)n >= sizeof(path)) {
            return svp_spec_reader_fail(
                ctx, MARK_LINE(k), MARK_COL(k),
                "a key of %d "
                "bytes: over the key length limit of %zu bytes",
                n, sizeof(path) - 1);
        }

        for (prev = map->data.mapping.pairs.start; prev < pair; ++prev) {
            pk = yaml_document_get_node(doc, prev->key);
            if (pk->type == YAML_SCALAR_NODE &&
                strcmp((const char *)pk->data.scalar.value,
                       (const char *)k->data.scalar.value) == 0) {
                return svp_spec_reader_fail(ctx, MARK_LINE(k), MARK_COL(k),
                                            "duplicate key '%s' (first at line %d)",
                                            path, MARK_LINE(pk));
            }
        }

        if (svp_spec_reader_section(ctx, path)) {
            if (v->type != YAML_MAPPING_NODE) {
                /* "model:" with nothing under it is an empty section */
                if (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0) {
                    continue;
                }
                return svp_spec_reader_fail(
                    ctx, MARK_LINE(v), MARK_COL(v),
                    "key '%s': expected a mapping (a section), found %s", path,
                    svp_spec_node_kind(v));
            }
            status =
                svp_spec_walk(ctx, doc, v, path, plain && svp_spec_plain(k), base);
        } else if ((key = svp_spec_reader_key(ctx, path)) != NULL) {
            status = svp_spec_set_node(ctx, doc, key, v, base);
            if (status == SVP_OK && plain && svp_spec_plain(k)) {
                status = svp_spec_reader_marks(ctx, doc, key, v);
            }
        } else {
            status = svp_spec_reader_unknown(ctx, MARK_LINE(k), MARK_COL(k), path);
        }
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

svp_status_t svp_spec_reader_read(svp_spec_reader_t *ctx, const char *yaml,
                                  size_t len)
{
    yaml_parser_t   parser;
    yaml_document_t doc;
    yaml_node_t    *root;
    svp_status_t    status = SVP_OK;

    ctx->text = yaml;
    ctx->len  = len;
    if (len > SVP_SPEC_LIMIT_BYTES) {
        return svp_spec_reader_fail(ctx, 0, 0,
                                    "a %s of %zu bytes: over the size "
                                    "limit of %d bytes",
                                    ctx->what, len, SVP_SPEC_LIMIT_BYTES);
    }
    if (len >= 3 && !memcmp(yaml, "\xef\xbb\xbf", 3)) {
        /* a UTF-8 BOM some editors write: not part of the text, and not
         * counted in a column (an editor does not show it) */
        ctx->text = yaml + 3;
        ctx->len  = len - 3;
    }
    if (!yaml_parser_initialize(&parser)) {
        return svp_spec_reader_no_memory(ctx, 0, 0, "starting the YAML parser");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)ctx->text,
                                 ctx->len);
    /* UTF-8 only (libyaml would follow a UTF-16 BOM): the text, the marks
     * counted from it and what the messages quote are UTF-8 */
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    status = svp_spec_compose(ctx, &parser, &doc);
    if (status != SVP_OK) {
        yaml_parser_delete(&parser);
        return status;
    }
    root = yaml_document_get_root_node(&doc);
    if (root != NULL &&
        !(root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0)) {
        if (root->type != YAML_MAPPING_NODE) {
            status = svp_spec_reader_fail(ctx, MARK_LINE(root), MARK_COL(root),
                                          "expected a mapping of keys at the "
                                          "top, found %s",
                                          svp_spec_node_kind(root));
        } else {
            status = svp_spec_walk(ctx, &doc, root, "", 1, ctx->base);
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return status;
}
