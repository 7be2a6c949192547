/*
 * Where a key is written in the job spec, for the launcher's messages.  The
 * launcher's checks run after parsing: the marks are those the key reader
 * noted as it read the file (svp_spec_mark_find).  A value that came from
 * --set or a default is in no file: then there is no mark and the message
 * names the file alone.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"

#include <stdio.h>
#include <string.h>

/*
 * A --set override replaces the file's value: the mark is the file's only
 * when it holds what was found (or its end: a relative path is joined to
 * the spec's folder at load).
 */
static int mark_holds(const svp_spec_mark_t *m, const char *found)
{
    size_t flen;

    if (found == NULL || found[0] == '\0' || m->text == NULL) {
        return 1;
    }
    flen = strlen(found);
    return m->len > 0 && m->len <= flen &&
           memcmp(found + flen - m->len, m->text, m->len) == 0;
}

void svp_launch_mark(const svp_spec_t *spec, const char *key, const char *found,
                     char *out, size_t len)
{
    const char            *file = spec->file ? spec->file : "<spec>";
    const svp_spec_mark_t *m    = svp_spec_mark_find(spec, key);

    if (spec->file != NULL && m != NULL && mark_holds(m, found)) {
        snprintf(out, len, "%s:%d:%d", file, m->line, m->column);
    } else {
        snprintf(out, len, "%s", file);
    }
}
