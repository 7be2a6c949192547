/*
 * diffusers/transformers config.json files (config_json.h): loaded with
 * jansson once, then typed lookups by key, each error naming the file, the
 * key, what was expected and what was found.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "tensor/config_json.h"
#include "common/log.h"
#include "common/file.h"
#include "common/str.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct svp_config {
    char   *path;
    json_t *root;
};

static const char *svp_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a float";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

static svp_status_t svp_config_create(json_t *root, const char *name,
                                      svp_config_h *cfg_p)
{
    svp_config_h cfg;

    if (!json_is_object(root)) {
        svp_error("%s: top level is %s, expected an object", name,
                  svp_json_type_name(root));
        json_decref(root);
        return SVP_ERR_BAD_FILE;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL) {
        json_decref(root);
        return SVP_ERR_NO_MEMORY;
    }
    cfg->path = svp_strdup(name);
    if (cfg->path == NULL) {
        free(cfg);
        json_decref(root);
        return SVP_ERR_NO_MEMORY;
    }
    cfg->root = root;
    *cfg_p    = cfg;
    return SVP_OK;
}

svp_status_t svp_config_load(const char *path, svp_config_h *cfg_p)
{
    json_error_t jerr;
    json_t      *root;
    svp_status_t status;
    char        *text;
    size_t       len;

    status = svp_file_read_limit(path, SVP_CONFIG_LIMIT_BYTES, "a JSON config",
                                 &text, &len);
    if (status != SVP_OK) {
        return status;
    }
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (root == NULL) {
        svp_error("%s:%d:%d: invalid JSON: %s", path, jerr.line, jerr.column,
                  jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    return svp_config_create(root, path, cfg_p);
}

svp_status_t svp_config_parse(const char *text, const char *name,
                              svp_config_h *cfg_p)
{
    json_error_t jerr;
    json_t      *root;

    root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        svp_error("%s:%d:%d: invalid JSON: %s", name, jerr.line, jerr.column,
                  jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    return svp_config_create(root, name, cfg_p);
}

void svp_config_destroy(svp_config_h cfg)
{
    if (cfg == NULL) {
        return;
    }
    json_decref(cfg->root);
    free(cfg->path);
    free(cfg);
}

const char *svp_config_path(svp_config_h cfg)
{
    return cfg->path;
}

/* The value for key, or NULL when absent or null. */
static json_t *svp_config_value(svp_config_h cfg, const char *key)
{
    json_t *v = json_object_get(cfg->root, key);

    return json_is_null(v) ? NULL : v;
}

static svp_status_t svp_config_type_error(svp_config_h cfg, const char *key,
                                          const char *expected, const json_t *found)
{
    svp_error("%s: key '%s': expected %s, found %s", cfg->path, key, expected,
              svp_json_type_name(found));
    return SVP_ERR_BAD_FILE;
}

int svp_config_has(svp_config_h cfg, const char *key)
{
    return svp_config_value(cfg, key) != NULL;
}

svp_status_t svp_config_require(svp_config_h cfg, const char *const *keys)
{
    for (; *keys != NULL; ++keys) {
        if (!svp_config_has(cfg, *keys)) {
            svp_error("%s: missing required key '%s'", cfg->path, *keys);
            return SVP_ERR_BAD_FILE;
        }
    }
    return SVP_OK;
}

/* Integer value of v, accepting an integral float; 0 on success. */
static int svp_json_to_int(const json_t *v, int64_t *value)
{
    double d;

    if (json_is_integer(v)) {
        *value = (int64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        d = json_real_value(v);
        /* 2^63 is exact in a double; anything at or beyond it is not an int64 */
        if (d == floor(d) && d >= -9223372036854775808.0 &&
            d < 9223372036854775808.0) {
            *value = (int64_t)d;
            return 0;
        }
    }
    return -1;
}

svp_status_t svp_config_get_int(svp_config_h cfg, const char *key, int64_t def,
                                int64_t *value_p)
{
    json_t *v = svp_config_value(cfg, key);
    int64_t value;

    if (v == NULL) {
        *value_p = def;
        return SVP_OK;
    }
    if (svp_json_to_int(v, &value) != 0) {
        return svp_config_type_error(cfg, key, "an integer", v);
    }
    *value_p = value;
    return SVP_OK;
}

svp_status_t svp_config_get_count(svp_config_h cfg, const char *key, int def,
                                  int max, int *value_p)
{
    int64_t      v;
    svp_status_t status = svp_config_get_int(cfg, key, def, &v);

    if (status != SVP_OK) {
        return status;
    }
    if (v <= 0 || v > max) {
        if (max == INT_MAX) {
            svp_error("%s: '%s' must be positive, found %lld", cfg->path, key,
                      (long long)v);
        } else {
            svp_error("%s: '%s' must be in [1, %d], found %lld", cfg->path, key, max,
                      (long long)v);
        }
        return SVP_ERR_BAD_FILE;
    }
    *value_p = (int)v;
    return SVP_OK;
}

svp_status_t svp_config_get_double(svp_config_h cfg, const char *key, double def,
                                   double *value_p)
{
    json_t *v = svp_config_value(cfg, key);

    if (v == NULL) {
        *value_p = def;
        return SVP_OK;
    }
    if (!json_is_number(v)) {
        return svp_config_type_error(cfg, key, "a number", v);
    }
    *value_p = json_number_value(v);
    return SVP_OK;
}

svp_status_t svp_config_get_bool(svp_config_h cfg, const char *key, int def,
                                 int *value_p)
{
    json_t *v = svp_config_value(cfg, key);

    if (v == NULL) {
        *value_p = def;
        return SVP_OK;
    }
    if (!json_is_boolean(v)) {
        return svp_config_type_error(cfg, key, "true or false", v);
    }
    *value_p = json_is_true(v);
    return SVP_OK;
}

svp_status_t svp_config_get_string(svp_config_h cfg, const char *key,
                                   const char *def, const char **value_p)
{
    json_t *v = svp_config_value(cfg, key);

    if (v == NULL) {
        *value_p = def;
        return SVP_OK;
    }
    if (!json_is_string(v)) {
        return svp_config_type_error(cfg, key, "a string", v);
    }
    *value_p = json_string_value(v);
    return SVP_OK;
}

/* The elements of an array value (or the single scalar) of key: 0, or a
 * logged SVP_ERR_BAD_FILE when there are more than max. */
static svp_status_t svp_config_array(svp_config_h cfg, const char *key, int max,
                                     json_t **v_p, int *count_p)
{
    json_t *v = svp_config_value(cfg, key);
    size_t  n;

    if (v == NULL) {
        n = 0;
    } else if (json_is_array(v)) {
        n = json_array_size(v);
    } else {
        n = 1;
    }
    if (n > (size_t)max) {
        svp_error("%s: key '%s': %zu elements, at most %d supported", cfg->path, key,
                  n, max);
        return SVP_ERR_BAD_FILE;
    }
    *v_p     = v;
    *count_p = (int)n;
    return SVP_OK;
}

static json_t *svp_config_elem(json_t *v, int i)
{
    return json_is_array(v) ? json_array_get(v, (size_t)i) : v;
}

svp_status_t svp_config_get_int_array(svp_config_h cfg, const char *key,
                                      int64_t *values, int max, int *count_p)
{
    json_t      *v;
    svp_status_t status;
    int64_t      tmp;
    int          i, n;

    status = svp_config_array(cfg, key, max, &v, &n);
    if (status != SVP_OK) {
        return status;
    }
    /* check every element before writing any output */
    for (i = 0; i < n; ++i) {
        if (svp_json_to_int(svp_config_elem(v, i), &tmp) != 0) {
            svp_error("%s: key '%s': element %d is %s, expected an integer",
                      cfg->path, key, i, svp_json_type_name(svp_config_elem(v, i)));
            return SVP_ERR_BAD_FILE;
        }
    }
    for (i = 0; i < n; ++i) {
        svp_json_to_int(svp_config_elem(v, i), &values[i]);
    }
    *count_p = n;
    return SVP_OK;
}

svp_status_t svp_config_get_string_array(svp_config_h cfg, const char *key,
                                         const char **values, int max, int *count_p)
{
    json_t      *v;
    svp_status_t status;
    int          i, n;

    status = svp_config_array(cfg, key, max, &v, &n);
    if (status != SVP_OK) {
        return status;
    }
    for (i = 0; i < n; ++i) {
        if (!json_is_string(svp_config_elem(v, i))) {
            svp_error("%s: key '%s': element %d is %s, expected a string", cfg->path,
                      key, i, svp_json_type_name(svp_config_elem(v, i)));
            return SVP_ERR_BAD_FILE;
        }
    }
    for (i = 0; i < n; ++i) {
        values[i] = json_string_value(svp_config_elem(v, i));
    }
    *count_p = n;
    return SVP_OK;
}
