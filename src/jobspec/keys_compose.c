/*
 * The bounded YAML composer (keys_int.h): libyaml's events composed into
 * its document API's nodes, which keep a mark each, under the
 * SVP_SPEC_LIMIT_* (spec.h), with libyaml's own errors given their line
 * and column.  The key reader (keys_yaml.c) walks what it builds.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/keys_int.h"
#include "jobspec/spec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/*
 * The document is composed from the parser's events here rather than by
 * yaml_parser_load(), so that the SVP_SPEC_LIMIT_* (spec.h) are checked on
 * each event, before the loader would spend the time or memory: libyaml's
 * scanner keeps one possible simple key per open flow level and walks them
 * all on every token, so time grows with the square of the depth, and its
 * loader shares an aliased node where the key table copies its strings each
 * time.  What is built is what yaml_parser_load() builds (the first
 * document, a mark per node, aliases sharing their anchor's node), so the
 * walk (keys_yaml.c) reads it unchanged; the same two composer errors (an
 * undefined alias, a duplicate anchor) are reported in the same words.
 */
typedef struct {
    yaml_char_t *name;
    uint64_t     hash; /* of name: compared first, names may be long */
    int          node;
    size_t       nodes; /* nodes under it, itself included */
    size_t       bytes; /* value bytes under it */
} svp_spec_anchor_t;

/* A list or mapping still open: its anchor is registered when it closes,
 * with what it holds, which an alias repeats. */
typedef struct {
    int          node;
    int          events;       /* children so far: items, or keys and values */
    int          key;          /* a mapping's key waiting for its value */
    size_t       nodes, bytes; /* the composer's counts when it opened */
    yaml_char_t *anchor;       /* owned */
    yaml_mark_t  mark;         /* where it opened */
} svp_spec_open_t;

typedef struct {
    svp_spec_reader_t *ctx;
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

/*
 * The line and column of byte offset in the text (1-based; the column
 * counts characters, as libyaml's marks do).  The bytes before an encoding
 * error are well-formed UTF-8: libyaml's reader decoded them.
 */
static void svp_spec_offset_mark(const svp_spec_reader_t *ctx, size_t offset,
                                 int *line_p, int *col_p)
{
    size_t i;
    int    line = 1, col = 1;

    for (i = 0; i < offset && i < ctx->len; ++i) {
        unsigned char c = (unsigned char)ctx->text[i];

        if (c == '\n' ||
            (c == '\r' && (i + 1 >= ctx->len || ctx->text[i + 1] != '\n'))) {
            ++line;
            col = 1;
        } else if ((c & 0xc0) != 0x80) {
            ++col;
        }
    }
    *line_p = line;
    *col_p  = col;
}

static svp_status_t svp_spec_yaml_fail(svp_spec_reader_t   *ctx,
                                       const yaml_parser_t *parser)
{
    int line, col;

    if (parser->error == YAML_MEMORY_ERROR) {
        return svp_spec_reader_no_memory(ctx, 0, 0, "parsing the YAML");
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
            return svp_spec_reader_fail(ctx, line, col,
                                        "invalid YAML: %s (the byte "
                                        "0x%02x): a %s is UTF-8 text",
                                        parser->problem ? parser->problem
                                                        : "bad input",
                                        (unsigned char)ctx->text[off], ctx->what);
        }
        return svp_spec_reader_fail(ctx, line, col,
                                    "invalid YAML: %s at the end: a "
                                    "%s is UTF-8 text",
                                    parser->problem ? parser->problem : "bad input",
                                    ctx->what);
    }
    /* libyaml keeps the position of the problem in problem_mark */
    return svp_spec_reader_fail(ctx, (int)parser->problem_mark.line + 1,
                                (int)parser->problem_mark.column + 1,
                                "invalid YAML: %s%s%s",
                                parser->problem ? parser->problem : "parse error",
                                parser->context ? " " : "",
                                parser->context ? parser->context : "");
}

/* Counts one node (or an alias's expansion) against the limits. */
static svp_status_t svp_spec_compose_count(svp_spec_composer_t *c,
                                           const yaml_event_t *ev, size_t nodes,
                                           size_t bytes)
{
    if (nodes > SVP_SPEC_LIMIT_NODES - c->nodes) {
        return svp_spec_reader_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
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
            return svp_spec_reader_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                                        "a list of more than %d entries: over the "
                                        "list length limit of %d",
                                        SVP_SPEC_LIMIT_ENTRIES,
                                        SVP_SPEC_LIMIT_ENTRIES);
        }
        ok = yaml_document_append_sequence_item(c->doc, top->node, id);
    } else if (top->events % 2 == 0) {
        if (top->events / 2 == SVP_SPEC_LIMIT_ENTRIES) {
            return svp_spec_reader_fail(
                c->ctx, EV_LINE(ev), EV_COL(ev),
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
        return svp_spec_reader_no_memory(c->ctx, EV_LINE(ev), EV_COL(ev),
                                         "composing the YAML");
    }
    top->events++;
    return SVP_OK;
}

static svp_status_t svp_spec_compose_check_name(svp_spec_composer_t *c,
                                                const yaml_event_t  *ev,
                                                const yaml_char_t   *name)
{
    if (name != NULL && strlen((const char *)name) > SVP_SPEC_LIMIT_STRING) {
        return svp_spec_reader_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                                    "an anchor name of %zu bytes: over the string "
                                    "length limit of %d bytes",
                                    strlen((const char *)name),
                                    SVP_SPEC_LIMIT_STRING);
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
                                                     const yaml_char_t         *name,
                                                     uint64_t                   hash)
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
static svp_status_t svp_spec_compose_anchor(svp_spec_composer_t *c, yaml_mark_t mark,
                                            yaml_char_t *name, int node,
                                            size_t nodes, size_t bytes)
{
    const svp_spec_anchor_t *dup;
    svp_spec_anchor_t       *grown;
    uint64_t                 hash = svp_spec_name_hash(name);

    dup = svp_spec_anchor_find(c, name, hash);
    if (dup != NULL) {
        free(name);
        return svp_spec_reader_fail(c->ctx, (int)mark.line + 1, (int)mark.column + 1,
                                    "invalid YAML: found duplicate anchor (first at "
                                    "line %d)",
                                    MARK_LINE(
                                        yaml_document_get_node(c->doc, dup->node)));
    }
    /* also bounds the lookups: each anchor and alias is looked up among all
     * the anchors */
    if (c->num_anchors == SVP_SPEC_LIMIT_ANCHORS) {
        free(name);
        return svp_spec_reader_fail(
            c->ctx, (int)mark.line + 1, (int)mark.column + 1,
            "more than %d anchors: over the anchor limit of %d",
            SVP_SPEC_LIMIT_ANCHORS, SVP_SPEC_LIMIT_ANCHORS);
    }
    if (c->num_anchors == c->max_anchors) {
        grown = realloc(c->anchors, (c->max_anchors * 2 + 8) * sizeof(*grown));
        if (grown == NULL) {
            free(name);
            return svp_spec_reader_no_memory(c->ctx, (int)mark.line + 1,
                                             (int)mark.column + 1,
                                             "composing the YAML");
        }
        c->anchors     = grown;
        c->max_anchors = c->max_anchors * 2 + 8;
    }
    c->anchors[c->num_anchors++] =
        (svp_spec_anchor_t){name, hash, node, nodes, bytes};
    return SVP_OK;
}

static svp_status_t svp_spec_compose_alias(svp_spec_composer_t *c,
                                           const yaml_event_t  *ev)
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
                return svp_spec_reader_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                                            "alias *%.64s inside the node it names",
                                            name);
            }
        }
        return svp_spec_reader_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                                    "invalid YAML: found undefined alias");
    }
    if (c->aliases == SVP_SPEC_LIMIT_ALIASES) {
        return svp_spec_reader_fail(
            c->ctx, EV_LINE(ev), EV_COL(ev),
            "alias *%.64s: more than %d uses of aliases: over "
            "the alias limit of %d",
            name, SVP_SPEC_LIMIT_ALIASES, SVP_SPEC_LIMIT_ALIASES);
    }
    if (a->bytes > SVP_SPEC_LIMIT_ALIAS_BYTES - c->alias_bytes) {
        return svp_spec_reader_fail(
            c->ctx, EV_LINE(ev), EV_COL(ev),
            "alias *%.64s: aliases repeat more than %d bytes "
            "of values: over the alias expansion limit of %d "
            "bytes",
            name, SVP_SPEC_LIMIT_ALIAS_BYTES, SVP_SPEC_LIMIT_ALIAS_BYTES);
    }
    status = svp_spec_compose_count(c, ev, a->nodes, a->bytes);
    if (status != SVP_OK) {
        return status;
    }
    c->aliases++;
    c->alias_bytes += a->bytes;
    return svp_spec_compose_attach(c, ev, a->node);
}

static svp_status_t svp_spec_compose_scalar(svp_spec_composer_t *c, yaml_event_t *ev)
{
    size_t       len = ev->data.scalar.length;
    svp_status_t status;
    int          id;

    if (len > SVP_SPEC_LIMIT_STRING) {
        return svp_spec_reader_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
                                    "a value of %zu bytes: over the string length "
                                    "limit of %d bytes",
                                    len, SVP_SPEC_LIMIT_STRING);
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
        return svp_spec_reader_no_memory(c->ctx, EV_LINE(ev), EV_COL(ev),
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

static svp_status_t svp_spec_compose_open(svp_spec_composer_t *c, yaml_event_t *ev)
{
    int           is_seq = (ev->type == YAML_SEQUENCE_START_EVENT);
    yaml_char_t **anchor =
        is_seq ? &ev->data.sequence_start.anchor : &ev->data.mapping_start.anchor;
    svp_spec_open_t *top;
    svp_status_t     status;
    int              id;

    if (c->depth == SVP_SPEC_LIMIT_DEPTH) {
        return svp_spec_reader_fail(c->ctx, EV_LINE(ev), EV_COL(ev),
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
    id =
        is_seq
            ? yaml_document_add_sequence(c->doc, NULL, ev->data.sequence_start.style)
            : yaml_document_add_mapping(c->doc, NULL, ev->data.mapping_start.style);
    if (id == 0) {
        return svp_spec_reader_no_memory(c->ctx, EV_LINE(ev), EV_COL(ev),
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
                                           const yaml_event_t  *ev)
{
    svp_spec_open_t *top    = &c->open[--c->depth];
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
 * file pasted twice, a "---" before notes that are not YAML) was silently
 * ignored; it is refused, at its start.
 */
static svp_status_t svp_spec_compose_end(svp_spec_reader_t *ctx,
                                         yaml_parser_t     *parser)
{
    yaml_event_t ev;
    svp_status_t status = SVP_OK;

    if (!yaml_parser_parse(parser, &ev)) {
        return svp_spec_yaml_fail(ctx, parser);
    }
    if (ev.type != YAML_STREAM_END_EVENT) {
        status = svp_spec_reader_fail(ctx, EV_LINE(&ev), EV_COL(&ev),
                                      "a second YAML document: a %s is one "
                                      "document (remove the '---' and what follows, "
                                      "or merge the two)",
                                      ctx->what);
    }
    yaml_event_delete(&ev);
    return status;
}

/*
 * Composes the stream's only document into *doc (initialized here; on
 * success the caller deletes it, on failure it is deleted).  An empty
 * stream gives a document with no root, as yaml_parser_load() does.
 */
svp_status_t svp_spec_compose(svp_spec_reader_t *ctx, yaml_parser_t *parser,
                              yaml_document_t *doc)
{
    svp_spec_composer_t c = {.ctx = ctx, .doc = doc};
    yaml_event_t        ev;
    svp_status_t        status = SVP_OK;
    int                 done   = 0, i;

    if (!yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1)) {
        return svp_spec_reader_no_memory(ctx, 0, 0, "composing the YAML");
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
