/*
 * diffusers/transformers config.json files: typed lookups by key.
 * (Named config_json.h: a "config.h" here would shadow autoconf's config.h
 * for every source file of this directory.)
 *
 * A loaded config owns the parsed JSON; strings returned by the getters point
 * into it and stay valid until svp_config_destroy().
 *
 * Getters: an absent key or a JSON null gives the default (diffusers writes
 * null for "use the class default", e.g. "trained_betas": null).  A value of
 * the wrong type is SVP_ERR_BAD_FILE, logged with the file and the key, what
 * was expected and what was found.  Output parameters are written only on
 * success.  Unknown keys are ignored: real configs carry bookkeeping keys
 * ("_class_name", "_use_default_values", ...) that no model needs.
 */
#ifndef SVP_TENSOR_CONFIG_JSON_H
#define SVP_TENSOR_CONFIG_JSON_H

#include "common/status.h"

#include <stdint.h>

typedef struct svp_config *svp_config_h;

/*
 * The largest JSON config a model folder may hold (config.json,
 * scheduler_config.json, preprocessor_config.json, model_index.json).
 * Real ones are 0.4 to 5 KB; a 50 MB one took 13.4 s and 4.0 GB to parse.
 * One over it is refused before it is read, naming the limit.
 */
#define SVP_CONFIG_LIMIT_BYTES (1 << 20)

/* Reads and parses path (at most SVP_CONFIG_LIMIT_BYTES); the top level
 * must be a JSON object. */
svp_status_t svp_config_load(const char *path, svp_config_h *cfg_p);

/* Parses text; name is used in messages in place of a path. */
svp_status_t svp_config_parse(const char *text, const char *name,
                              svp_config_h *cfg_p);

void svp_config_destroy(svp_config_h cfg);

/* The path (or name) given at load time. */
const char *svp_config_path(svp_config_h cfg);

/* 1 when key is present and not null. */
int svp_config_has(svp_config_h cfg, const char *key);

/* SVP_ERR_BAD_FILE, naming the first one, unless every key in the
 * NULL-terminated list is present and not null. */
svp_status_t svp_config_require(svp_config_h cfg, const char *const *keys);

/* An integer; a float with an integral value (1000.0) is accepted. */
svp_status_t svp_config_get_int(svp_config_h cfg, const char *key, int64_t def,
                                int64_t *value_p);

/*
 * A count: an integer in [1, max] (def when absent) into *value_p; outside
 * it, SVP_ERR_BAD_FILE and an error naming the file and the key ("must be
 * positive" when max is INT_MAX).  The models' config readers read their
 * sizes with it.
 */
svp_status_t svp_config_get_count(svp_config_h cfg, const char *key, int def,
                                  int max, int *value_p);

/* A number (integer or float). */
svp_status_t svp_config_get_double(svp_config_h cfg, const char *key, double def,
                                   double *value_p);

/* true/false only: 0/1 and strings are rejected. */
svp_status_t svp_config_get_bool(svp_config_h cfg, const char *key, int def,
                                 int *value_p);

/* def may be NULL; the result points into cfg (or is def). */
svp_status_t svp_config_get_string(svp_config_h cfg, const char *key,
                                   const char *def, const char **value_p);

/*
 * An array of integers into values[0..max).  A single integer is accepted as
 * an array of one (diffusers allows `num_attention_heads: 8` as well as a
 * per-level list): callers broadcast it.  Absent or null: *count_p = 0.
 * More than max elements is SVP_ERR_BAD_FILE.
 */
svp_status_t svp_config_get_int_array(svp_config_h cfg, const char *key,
                                      int64_t *values, int max, int *count_p);

/* An array of strings (pointers into cfg); same rules as the int array. */
svp_status_t svp_config_get_string_array(svp_config_h cfg, const char *key,
                                         const char **values, int max, int *count_p);

#endif
