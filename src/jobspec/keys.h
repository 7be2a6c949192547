/*
 * The table-driven YAML key reader: a table of key paths ("comm.deadline"),
 * each with its type, limits and the offset of its field in a struct, read
 * from a YAML document into that struct.  The job spec (spec_keys.c) and
 * the planner's hardware tables (src/plan/hardware.c) are read by it, so
 * both take numbers, names and mappings by the same rules (YAML 1.2's core
 * schema), within the same limits (SVP_SPEC_LIMIT_* in spec.h), and report
 * an error the same way:
 *
 *   job.yaml:4:10: key 'comm.deadline': expected a number in [0.1, 86400], found 'soon'
 *
 * Unknown keys are errors with the nearest known key as a suggestion.
 */
#ifndef SVP_JOBSPEC_KEYS_H
#define SVP_JOBSPEC_KEYS_H

#include "common/status.h"

#include <stddef.h>

typedef enum {
    SVP_SPEC_T_INT = 0,
    SVP_SPEC_T_U64,
    SVP_SPEC_T_DOUBLE,
    SVP_SPEC_T_STRING,
    SVP_SPEC_T_BOOL,
    SVP_SPEC_T_ENUM,     /* int: the index of the name in names */
    SVP_SPEC_T_SHAPE5,   /* exactly five positive integers */
    SVP_SPEC_T_INT_LIST, /* svp_spec_intlist_t */
    SVP_SPEC_T_STR_LIST, /* svp_spec_strlist_t */
    SVP_SPEC_T_STR_MAP   /* svp_spec_strmap_t: a mapping of scalars */
} svp_spec_type_t;

typedef struct {
    const char        *path; /* "comm.deadline" */
    svp_spec_type_t    type;
    size_t             offset;   /* into the struct read */
    const char        *def;      /* default, parsed like a YAML scalar */
    double             min, max; /* numeric limits (inclusive) */
    const char *const *names;    /* enum names, NULL-terminated */
    const char        *doc;      /* one line, for the man page and errors */
    unsigned           flags;    /* SVP_SPEC_KEY_F_* */
} svp_spec_key_t;

/* The key cannot change results or the pipeline's shape (log level, trace
 * prefix, output directory): ranks of one job may differ in it. */
#define SVP_SPEC_KEY_F_PER_RANK 0x1u
/* The file must give the key (the reader's caller checks it). */
#define SVP_SPEC_KEY_F_REQUIRED 0x2u

/*
 * Sets one key of the struct at base from a scalar string.  On failure
 * writes "expected ..., found ..." into why and returns SVP_ERR_SPEC, or
 * "out of memory" and SVP_ERR_NO_MEMORY: why is written whenever the result
 * is not SVP_OK.  A string key's old value is freed.
 */
svp_status_t svp_spec_key_set(void *base, const svp_spec_key_t *key,
                              const char *value, char *why, int whylen);

/* Appends one element to a list key, or one entry to a map key; why as for
 * svp_spec_key_set(). */
svp_status_t svp_spec_key_append(void *base, const svp_spec_key_t *key,
                                 const char *map_key, const char *value, char *why,
                                 int whylen);

/* Clears a list or map (before a sequence replaces the default). */
void svp_spec_key_clear(void *base, const svp_spec_key_t *key);

typedef struct svp_spec_reader svp_spec_reader_t;

/* Called after a key was set from the file, with the mark of its value. */
typedef svp_status_t (*svp_spec_reader_cb_t)(svp_spec_reader_t    *r,
                                             const svp_spec_key_t *key, int line,
                                             int col);

/*
 * Called for each value the reader takes from the file, in the document's
 * order, with the value's mark: a key's value (path "cluster.partition"),
 * each item of a list ("cluster.setup[1]") and each entry of a mapping
 * ("cluster.env.NAME").  text is a scalar's text as written (len bytes),
 * NULL for a list or a mapping.  Only values such a path names are told:
 * none under a key written with '.' or '[' in it ("cluster.partition: x"
 * at the top), nor an entry so named.  path and text last for the call.
 */
typedef svp_status_t (*svp_spec_reader_mark_cb_t)(svp_spec_reader_t *r,
                                                  const char *path, const char *text,
                                                  size_t len, int line, int col);

/* One read: the caller fills in the first fields, the reader the rest. */
struct svp_spec_reader {
    const svp_spec_key_t     *keys; /* the table */
    int                       num_keys;
    const char *const        *sections; /* mappings that hold keys, NULL-ended */
    const char               *what;     /* "job spec": for messages */
    const char               *file;     /* the name in messages */
    char                     *errbuf;   /* the message; NULL: on stderr */
    int                       errlen;
    void                     *base;  /* the struct the offsets are into */
    svp_spec_reader_cb_t      after; /* NULL: nothing */
    void                     *arg;   /* for after */
    svp_spec_reader_mark_cb_t mark;  /* NULL: nothing */
    const char               *text;  /* the YAML being read, for the line */
    size_t                    len;   /* and column of an encoding error */
};

/*
 * Reads the YAML text (len bytes, within SVP_SPEC_LIMIT_BYTES; a UTF-8 BOM
 * is skipped) into r->base: one document whose top is a mapping of the
 * table's keys and sections (an empty document sets nothing).  The first
 * error stops the read: SVP_ERR_SPEC (or SVP_ERR_NO_MEMORY) with
 * "FILE:LINE:COLUMN: ..." in r->errbuf.
 */
svp_status_t svp_spec_reader_read(svp_spec_reader_t *r, const char *yaml,
                                  size_t len);

/*
 * The message "FILE:LINE:COLUMN: ..." (line 0: "FILE: ...") into r->errbuf,
 * escaped (svp_errf), or on stderr; returns SVP_ERR_SPEC.
 */
svp_status_t svp_spec_reader_fail(svp_spec_reader_t *r, int line, int col,
                                  const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "out of memory while WHAT" as above; returns SVP_ERR_NO_MEMORY. */
svp_status_t svp_spec_reader_no_memory(svp_spec_reader_t *r, int line, int col,
                                       const char *what);

/* "unknown key 'PATH' (did you mean '...'?)" as above. */
svp_status_t svp_spec_reader_unknown(svp_spec_reader_t *r, int line, int col,
                                     const char *path);

#endif
