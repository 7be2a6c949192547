/*
 * Private to src/spec: the key table that drives parsing, defaults, --set
 * overrides and the dump.
 */
#ifndef SVP_SPEC_SPEC_INT_H
#define SVP_SPEC_SPEC_INT_H

#include "spec/spec.h"

#include <stddef.h>

typedef enum {
    SVP_SPEC_T_INT = 0,
    SVP_SPEC_T_U64,
    SVP_SPEC_T_DOUBLE,
    SVP_SPEC_T_STRING,
    SVP_SPEC_T_BOOL,
    SVP_SPEC_T_ENUM,
    SVP_SPEC_T_SHAPE5,     /* exactly five positive integers */
    SVP_SPEC_T_INT_LIST,   /* svp_spec_intlist_t */
    SVP_SPEC_T_STR_LIST,   /* svp_spec_strlist_t */
    SVP_SPEC_T_STR_MAP     /* svp_spec_strmap_t: a mapping of scalars */
} svp_spec_type_t;

typedef struct {
    const char        *path;       /* "comm.deadline" */
    svp_spec_type_t    type;
    size_t             offset;     /* into svp_spec_t */
    const char        *def;        /* default, parsed like a YAML scalar */
    double             min, max;   /* numeric limits (inclusive) */
    const char *const *names;      /* enum names, NULL-terminated */
    const char        *doc;        /* one line, for the man page and errors */
    unsigned           flags;      /* SVP_SPEC_KEY_F_* */
} svp_spec_key_t;

/* The key cannot change results or the pipeline's shape (log level, trace
 * prefix, output directory): ranks of one job may differ in it. */
#define SVP_SPEC_KEY_F_PER_RANK 0x1u

extern const svp_spec_key_t svp_spec_keys[];
extern const int            svp_spec_num_keys;
extern const char *const    svp_spec_sections[];   /* NULL-terminated */

const svp_spec_key_t *svp_spec_key_find(const char *path);
int                   svp_spec_is_section(const char *path);

/*
 * Sets one key from a scalar string.  On failure writes "expected ..., found
 * ..." into why and returns SVP_ERR_SPEC, or "out of memory" and
 * SVP_ERR_NO_MEMORY: why is written whenever the result is not SVP_OK.
 */
svp_status_t svp_spec_key_set(svp_spec_t *spec, const svp_spec_key_t *key,
                              const char *value, char *why, int whylen);

/* Appends one element to a list key, or one entry to a map key; why as for
 * svp_spec_key_set(). */
svp_status_t svp_spec_key_append(svp_spec_t *spec, const svp_spec_key_t *key,
                                 const char *map_key, const char *value,
                                 char *why, int whylen);

/* Clears a list or map (before a sequence replaces the default). */
void svp_spec_key_clear(svp_spec_t *spec, const svp_spec_key_t *key);

/* Checks across keys, after parsing; message in why. */
svp_status_t svp_spec_validate(const svp_spec_t *spec, char *why, int whylen,
                               const char **key_p);

#endif
