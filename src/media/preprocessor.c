/*
 * CLIPImageProcessor's preprocessor_config.json; see preprocessor.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/preprocessor.h"
#include "common/log.h"
#include "common/file.h"
#include "tensor/config_json.h"

#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

/* Three numbers of key into out; std must be positive. */
static svp_status_t preprocessor_triple(const char *path, json_t *root,
                                        const char *key, int positive, float out[3])
{
    json_t *arr = json_object_get(root, key), *v;
    size_t  i;

    if (!json_is_array(arr) || json_array_size(arr) != 3) {
        svp_error("%s: '%s' must be an array of 3 numbers", path, key);
        return SVP_ERR_BAD_FILE;
    }
    for (i = 0; i < 3; i++) {
        v = json_array_get(arr, i);
        if (!json_is_number(v) || (positive && json_number_value(v) <= 0.0)) {
            svp_error("%s: '%s'[%zu] must be a %snumber", path, key, i,
                      positive ? "positive " : "");
            return SVP_ERR_BAD_FILE;
        }
        out[i] = (float)json_number_value(v);
    }
    return SVP_OK;
}

/* A positive integer member of obj, or -1 when absent. */
static svp_status_t preprocessor_dim(const char *path, const char *key, json_t *obj,
                                     const char *member, int *value_p)
{
    json_t *v = json_object_get(obj, member);

    if (v == NULL) {
        *value_p = -1;
        return SVP_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
        json_integer_value(v) > 65536) {
        svp_error("%s: '%s.%s' must be a positive integer", path, key, member);
        return SVP_ERR_BAD_FILE;
    }
    *value_p = (int)json_integer_value(v);
    return SVP_OK;
}

/*
 * The size under key: an integer, {"height", "width"} or
 * {"shortest_edge"}.  *found_p is 0 when the key is absent or null.
 */
static svp_status_t preprocessor_size(const char *path, json_t *root,
                                      const char *key, int *h_p, int *w_p,
                                      int *found_p)
{
    json_t      *v = json_object_get(root, key);
    int          h, w, edge;
    svp_status_t status;

    *found_p = 0;
    if (v == NULL || json_is_null(v)) {
        return SVP_OK;
    }
    if (json_is_integer(v) && json_integer_value(v) > 0 &&
        json_integer_value(v) <= 65536) {
        *h_p = *w_p = (int)json_integer_value(v);
        *found_p    = 1;
        return SVP_OK;
    }
    if (!json_is_object(v)) {
        svp_error("%s: '%s' must be an integer or an object", path, key);
        return SVP_ERR_BAD_FILE;
    }
    status = preprocessor_dim(path, key, v, "height", &h);
    if (status == SVP_OK) {
        status = preprocessor_dim(path, key, v, "width", &w);
    }
    if (status == SVP_OK) {
        status = preprocessor_dim(path, key, v, "shortest_edge", &edge);
    }
    if (status != SVP_OK) {
        return status;
    }
    if (h > 0 && w > 0) {
        *h_p = h;
        *w_p = w;
    } else if (edge > 0 && h < 0 && w < 0) {
        *h_p = *w_p = edge;
    } else {
        svp_error("%s: '%s' needs 'height' and 'width', or 'shortest_edge'", path,
                  key);
        return SVP_ERR_BAD_FILE;
    }
    *found_p = 1;
    return SVP_OK;
}

svp_status_t svp_media_clip_params_load(const char              *path,
                                        svp_media_clip_params_t *params_p)
{
    svp_media_clip_params_t params;
    json_error_t            jerr;
    json_t                 *root;
    int                     found;
    svp_status_t            status;
    char                   *text;
    size_t                  len;

    if (access(path, R_OK) != 0) {
        svp_error("cannot open %s: %m", path);
        return SVP_ERR_NOT_FOUND;
    }
    /* a model folder's config: within the limit of config.json's */
    status = svp_file_read_limit(path, SVP_CONFIG_LIMIT_BYTES, "a JSON config",
                                 &text, &len);
    if (status != SVP_OK) {
        return status;
    }
    root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (root == NULL) {
        svp_error("%s:%d: %s", path, jerr.line, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    if (!json_is_object(root)) {
        svp_error("%s: not a JSON object", path);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    status = preprocessor_triple(path, root, "image_mean", 0, params.mean);
    if (status == SVP_OK) {
        status = preprocessor_triple(path, root, "image_std", 1, params.std);
    }
    if (status == SVP_OK) {
        status = preprocessor_size(path, root, "crop_size", &params.height,
                                   &params.width, &found);
    }
    if (status == SVP_OK && !found) {
        status = preprocessor_size(path, root, "size", &params.height, &params.width,
                                   &found);
    }
    if (status == SVP_OK && !found) {
        svp_error("%s: neither 'crop_size' nor 'size' gives the input size", path);
        status = SVP_ERR_BAD_FILE;
    }
    if (status == SVP_OK) {
        *params_p = params;
    }
out:
    json_decref(root);
    return status;
}
