/*
 * Private to src/jobspec: the key table that drives parsing, defaults, --set
 * overrides and the dump.
 */
#ifndef SVP_JOBSPEC_SPEC_INT_H
#define SVP_JOBSPEC_SPEC_INT_H

#include "jobspec/spec.h"
#include "jobspec/keys.h"

#include <stddef.h>

extern const svp_spec_key_t svp_spec_keys[];
extern const int            svp_spec_num_keys;
extern const char *const    svp_spec_sections[]; /* NULL-terminated */

const svp_spec_key_t *svp_spec_key_find(const char *path);
int                   svp_spec_is_section(const char *path);

/*
 * s as a double-quoted YAML scalar into buf (len bytes): the dump's form of
 * a text value, which parses back to s (spec.c).  Returns the length
 * written; stops before an escape that would not fit.
 */
int svp_spec_dump_str(char *buf, size_t len, const char *s);

/* Checks across keys, after parsing; message in why. */
svp_status_t svp_spec_validate(const svp_spec_t *spec, char *why, int whylen,
                               const char **key_p);

#endif
