/*
 * What the key reader's two files share (keys.h is the interface): the
 * bounded composer (keys_compose.c) that the reader (keys_yaml.c) walks.
 */
#ifndef SVP_JOBSPEC_KEYS_INT_H
#define SVP_JOBSPEC_KEYS_INT_H

#include "jobspec/keys.h"

#include <yaml.h>

/* A node's line and column, 1-based as in the messages. */
#define MARK_LINE(_n) ((int)(_n)->start_mark.line + 1)
#define MARK_COL(_n)  ((int)(_n)->start_mark.column + 1)

/*
 * Composes the stream's only document into *doc (initialized here; on
 * success the caller deletes it with yaml_document_delete, on failure it
 * is deleted), checking the SVP_SPEC_LIMIT_* (spec.h) on each event.  An
 * empty stream gives a document with no root, as yaml_parser_load() does.
 * Errors are reported through ctx (svp_spec_reader_fail).
 */
svp_status_t svp_spec_compose(svp_spec_reader_t *ctx, yaml_parser_t *parser,
                              yaml_document_t *doc);

#endif
