/*
 * Where a key is written in the job spec, for the launcher's messages.  The
 * spec keeps values, not their marks, and the launcher's checks run after
 * parsing, so on an error the file is read once more and the key's path
 * followed to its value.  A value that came from --set or a default is in
 * no file: then there is no mark and the message names the file alone.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* The value of key name in mapping node, or NULL. */
static yaml_node_t *mark_lookup(yaml_document_t *doc, yaml_node_t *node,
                                const char *name, size_t len)
{
    yaml_node_pair_t *pair;

    if (node == NULL || node->type != YAML_MAPPING_NODE) {
        return NULL;
    }
    for (pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top;
         ++pair) {
        yaml_node_t *k = yaml_document_get_node(doc, pair->key);

        if (k != NULL && k->type == YAML_SCALAR_NODE &&
            k->data.scalar.length == len &&
            !memcmp(k->data.scalar.value, name, len)) {
            return yaml_document_get_node(doc, pair->value);
        }
    }
    return NULL;
}

/*
 * Follows "cluster.env.A" or "cluster.sbatch_args[1]" from the root; the
 * last mapping key's value is the mark.  Returns 1 with *line_p, *col_p
 * (1-based) when the path is in the file.
 */
static int mark_find(yaml_document_t *doc, const char *path, const char *found,
                     int *line_p, int *col_p)
{
    yaml_node_t *node = yaml_document_get_root_node(doc);
    const char  *p    = path;

    while (node != NULL && *p != '\0') {
        size_t len = strcspn(p, ".[");

        if (len > 0) {
            node = mark_lookup(doc, node, p, len);
            p += len;
        }
        if (node != NULL && *p == '[') {
            char             *end;
            long              i = strtol(p + 1, &end, 10);
            yaml_node_item_t *item;

            if (*end != ']' || node->type != YAML_SEQUENCE_NODE) {
                return 0;
            }
            item = node->data.sequence.items.start + i;
            if (i < 0 || item >= node->data.sequence.items.top) {
                return 0;
            }
            node = yaml_document_get_node(doc, *item);
            p    = end + 1;
        }
        if (*p == '.') {
            ++p;
        }
    }
    if (node == NULL) {
        return 0;
    }
    /*
     * A --set override replaces the file's value: the mark is the file's
     * only when it holds what was found (or its end: a relative path is
     * joined to the spec's folder at load).
     */
    if (found != NULL && found[0] != '\0' && node->type == YAML_SCALAR_NODE) {
        size_t flen = strlen(found), vlen = node->data.scalar.length;

        if (vlen > flen || vlen == 0 ||
            memcmp(found + flen - vlen, node->data.scalar.value, vlen) != 0) {
            return 0;
        }
    }
    *line_p = (int)node->start_mark.line + 1;
    *col_p  = (int)node->start_mark.column + 1;
    return 1;
}

void svp_launch_mark(const svp_spec_t *spec, const char *key, const char *found,
                     char *out, size_t len)
{
    const char     *file = spec->file ? spec->file : "<spec>";
    FILE           *f;
    yaml_parser_t   parser;
    yaml_document_t doc;
    int             line = 0, col = 0;

    snprintf(out, len, "%s", file);
    f = spec->file ? fopen(spec->file, "rb") : NULL;
    if (f == NULL) {
        return;
    }
    if (yaml_parser_initialize(&parser)) {
        yaml_parser_set_input_file(&parser, f);
        if (yaml_parser_load(&parser, &doc)) {
            if (mark_find(&doc, key, found, &line, &col)) {
                snprintf(out, len, "%s:%d:%d", file, line, col);
            }
            yaml_document_delete(&doc);
        }
        yaml_parser_delete(&parser);
    }
    fclose(f);
}
