/*
 * The hardware table reader: the whole file is loaded as a libyaml document,
 * then walked against a table of known key paths, so that every value is
 * checked where it was found and reported with its mark.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/hardware.h"
#include "launch/launch_int.h"
#include "common/util.h"
#include "tensor/tensor.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef enum {
    HW_STR,
    HW_INT,
    HW_DOUBLE
} hw_type_t;

typedef struct {
    const char *path;
    hw_type_t   type;
    size_t      offset;
    int         required;
    double      min, max;          /* numbers only */
} hw_key_t;

#define HW_FIELD(_f) offsetof(svp_hw_t, _f)

static const hw_key_t hw_keys[] = {
    {"name",                  HW_STR,    HW_FIELD(name),            1, 0, 0},
    {"description",           HW_STR,    HW_FIELD(description),     0, 0, 0},
    {"memory_gb",             HW_DOUBLE, HW_FIELD(memory_gb),       0, 0, 1e6},
    {"peak_tflops",           HW_DOUBLE, HW_FIELD(peak_tflops),     0, 0, 1e6},
    {"svd.reference.batch",   HW_INT,    HW_FIELD(svd.batch),       0, 1, 64},
    {"svd.reference.frames",  HW_INT,    HW_FIELD(svd.frames),      0, 1, 1024},
    {"svd.reference.height",  HW_INT,    HW_FIELD(svd.height),      0, 8, 65536},
    {"svd.reference.width",   HW_INT,    HW_FIELD(svd.width),       0, 8, 65536},
    {"svd.unet_step_s",       HW_DOUBLE, HW_FIELD(svd.unet_step_s), 0, 0, 1e6},
    {"svd.encode_s",          HW_DOUBLE, HW_FIELD(svd.encode_s),    0, 0, 1e6},
    {"svd.decode_s",          HW_DOUBLE, HW_FIELD(svd.decode_s),    0, 0, 1e6},
    {"links.intra_node_gbps", HW_DOUBLE, HW_FIELD(intra_node_gbps), 1, 1e-6, 1e6},
    {"links.inter_node_gbps", HW_DOUBLE, HW_FIELD(inter_node_gbps), 1, 1e-6, 1e6},
    {"links.latency_us",      HW_DOUBLE, HW_FIELD(latency_us),      1, 0, 1e9},
    {"links.setup_ms",        HW_DOUBLE, HW_FIELD(setup_ms),        0, 0, 1e6},
    {"svd.source",            HW_STR,    HW_FIELD(svd.source),      0, 0, 0},
    {"svd.dtype",             HW_STR,    HW_FIELD(svd.dtype),       0, 0, 0},
    {"links.source",          HW_STR,    HW_FIELD(links_source),    0, 0, 0},
};

/* The values a string key may take (NULL: any). */
static const char *const hw_sources[] = {"measured", "quoted", NULL};
/* the tensor layer's names of the dtypes weights may be held in */
static const char *const hw_dtypes[]  = {SVP_DTYPE_WEIGHT_NAMES NULL};

static const char *const *hw_key_values(const hw_key_t *key)
{
    if (!strcmp(key->path, "svd.source") || !strcmp(key->path, "links.source")) {
        return hw_sources;
    }
    if (!strcmp(key->path, "svd.dtype")) {
        return hw_dtypes;
    }
    return NULL;
}

#define HW_NUM_KEYS ((int)(sizeof(hw_keys) / sizeof(hw_keys[0])))

typedef struct {
    const char    *file;
    yaml_document_t doc;
    char          *errbuf;
    int            errlen;
    svp_hw_t      *hw;
    int            seen[HW_NUM_KEYS];
    int            partial;        /* a results file: no key is required */
} hw_reader_t;

static svp_status_t hw_error(hw_reader_t *r, const yaml_node_t *node,
                             const char *path, const char *expected,
                             const char *found)
{
    char esc[128];

    svp_launch_escape(found, esc, sizeof(esc));
    svp_errf(r->errbuf, r->errlen, "%s:%zu:%zu: %s: expected %s, "
                    "found %s", r->file, node->start_mark.line + 1,
                    node->start_mark.column + 1, path, expected, esc);
    return SVP_ERR_BAD_FILE;
}

static const char *hw_node_text(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_SCALAR_NODE:
        return (const char *)node->data.scalar.value;
    case YAML_MAPPING_NODE:
        return "a mapping";
    case YAML_SEQUENCE_NODE:
        return "a list";
    default:
        return "nothing";
    }
}

static svp_status_t hw_set(hw_reader_t *r, int k, const yaml_node_t *node,
                           const char *path)
{
    const hw_key_t *key = &hw_keys[k];
    void           *field = (char *)r->hw + key->offset;
    const char     *text;
    char           *end;
    double          v;

    if (node->type != YAML_SCALAR_NODE) {
        return hw_error(r, node, path, key->type == HW_STR ? "a string" :
                        "a number", hw_node_text(node));
    }
    text = (const char *)node->data.scalar.value;
    if (key->type == HW_STR) {
        const char *const *values = hw_key_values(key);
        char              *copy;
        int                i;

        if (values != NULL) {
            for (i = 0; values[i] != NULL && strcmp(values[i], text); ++i) {
            }
            if (values[i] == NULL) {
                char expected[96];

                snprintf(expected, sizeof(expected), "one of %s%s%s%s%s",
                         values[0], values[1] ? ", " : "",
                         values[1] ? values[1] : "", values[1] && values[2] ?
                         ", " : "", values[1] && values[2] ? values[2] : "");
                return hw_error(r, node, path, expected, text);
            }
        }
        copy = svp_strdup(text);

        if (copy == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        free(*(char **)field);
        *(char **)field = copy;
        return SVP_OK;
    }

    errno = 0;
    v = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || errno != 0 || !isfinite(v)) {
        return hw_error(r, node, path, "a number", text);
    }
    if (key->type == HW_INT && v != floor(v)) {
        return hw_error(r, node, path, "an integer", text);
    }
    if (v < key->min || v > key->max) {
        char expected[96];

        snprintf(expected, sizeof(expected), "a value in [%g, %g]", key->min,
                 key->max);
        return hw_error(r, node, path, expected, text);
    }
    if (key->type == HW_INT) {
        *(int *)field = (int)v;
    } else {
        *(double *)field = v;
    }
    return SVP_OK;
}

static svp_status_t hw_walk(hw_reader_t *r, const yaml_node_t *map,
                            const char *prefix)
{
    yaml_node_pair_t *pair;
    svp_status_t      status;

    for (pair = map->data.mapping.pairs.start;
         pair < map->data.mapping.pairs.top; ++pair) {
        yaml_node_t *knode = yaml_document_get_node(&r->doc, pair->key);
        yaml_node_t *vnode = yaml_document_get_node(&r->doc, pair->value);
        const char  *best = NULL;
        char         path[256];
        int          k, best_dist = 1 << 30, is_prefix = 0;
        size_t       plen;

        if (knode->type != YAML_SCALAR_NODE) {
            return hw_error(r, knode, prefix[0] ? prefix : "(top)",
                            "a key", hw_node_text(knode));
        }
        snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "",
                 (const char *)knode->data.scalar.value);
        plen = strlen(path);

        for (k = 0; k < HW_NUM_KEYS; ++k) {
            int d;

            if (!strcmp(hw_keys[k].path, path)) {
                break;
            }
            if (!strncmp(hw_keys[k].path, path, plen) &&
                hw_keys[k].path[plen] == '.') {
                is_prefix = 1;
            }
            d = svp_str_distance(hw_keys[k].path, path);
            if (d < best_dist) {
                best_dist = d;
                best      = hw_keys[k].path;
            }
        }

        if (k < HW_NUM_KEYS) {
            if (r->seen[k]) {
                return hw_error(r, knode, path, "each key once",
                                "a second definition");
            }
            r->seen[k] = 1;
            status = hw_set(r, k, vnode, path);
        } else if (is_prefix) {
            if (vnode->type != YAML_MAPPING_NODE) {
                return hw_error(r, vnode, path, "a mapping",
                                hw_node_text(vnode));
            }
            status = hw_walk(r, vnode, path);
        } else {
            char expected[160];

            snprintf(expected, sizeof(expected), "a known key (did you mean "
                     "'%s'?)", best);
            return hw_error(r, knode, path, expected, "an unknown key");
        }
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

void svp_hw_destroy(svp_hw_t *hw)
{
    if (hw == NULL) {
        return;
    }
    free(hw->file);
    free(hw->name);
    free(hw->description);
    free(hw->svd.source);
    free(hw->svd.dtype);
    free(hw->links_source);
    free(hw->measured_file);
    free(hw);
}

static svp_status_t hw_load_string(const char *yaml, const char *file,
                                   int partial, char *errbuf, int errlen,
                                   svp_hw_t **hw_p)
{
    yaml_parser_t parser;
    yaml_node_t  *root;
    hw_reader_t   r = {.file = file, .errbuf = errbuf, .errlen = errlen,
                       .partial = partial};
    svp_status_t  status;
    int           k;

    r.hw = calloc(1, sizeof(*r.hw));
    if (r.hw == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    r.hw->file = svp_strdup(file);
    if (r.hw->file == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto err_free_hw;
    }

    if (!yaml_parser_initialize(&parser)) {
        status = SVP_ERR_NO_MEMORY;
        goto err_free_hw;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml,
                                 strlen(yaml));
    if (!yaml_parser_load(&parser, &r.doc)) {
        svp_errf(errbuf, errlen, "%s:%zu:%zu: %s", file,
                        parser.problem_mark.line + 1,
                        parser.problem_mark.column + 1,
                        parser.problem ? parser.problem : "malformed YAML");
        status = SVP_ERR_BAD_FILE;
        goto err_delete_parser;
    }

    root = yaml_document_get_root_node(&r.doc);
    if (root == NULL || root->type != YAML_MAPPING_NODE) {
        svp_errf(errbuf, errlen, "%s:1:1: (top): expected a mapping, "
                        "found %s", file, root ? hw_node_text(root) :
                        "an empty file");
        status = SVP_ERR_BAD_FILE;
        goto err_delete_doc;
    }
    status = hw_walk(&r, root, "");
    if (status != SVP_OK) {
        goto err_delete_doc;
    }
    for (k = 0; k < HW_NUM_KEYS; ++k) {
        if (hw_keys[k].required && !r.seen[k] && !r.partial) {
            svp_errf(errbuf, errlen, "%s:%zu:%zu: %s: expected a "
                            "value, found nothing (the key is required)",
                            file, root->end_mark.line + 1,
                            root->end_mark.column + 1, hw_keys[k].path);
            status = SVP_ERR_BAD_FILE;
            goto err_delete_doc;
        }
    }
    /* the svd section is all or nothing: a partial one cannot be scaled */
    if (r.hw->svd.unet_step_s > 0 &&
        (r.hw->svd.batch == 0 || r.hw->svd.frames == 0 ||
         r.hw->svd.height == 0 || r.hw->svd.width == 0)) {
        svp_errf(errbuf, errlen, "%s: svd.reference: expected batch, "
                        "frames, height and width with svd.unet_step_s, found "
                        "some missing", file);
        status = SVP_ERR_BAD_FILE;
        goto err_delete_doc;
    }

    yaml_document_delete(&r.doc);
    yaml_parser_delete(&parser);
    *hw_p = r.hw;
    return SVP_OK;

err_delete_doc:
    yaml_document_delete(&r.doc);
err_delete_parser:
    yaml_parser_delete(&parser);
err_free_hw:
    svp_hw_destroy(r.hw);
    return status;
}

svp_status_t svp_hw_load_string(const char *yaml, const char *file,
                                char *errbuf, int errlen, svp_hw_t **hw_p)
{
    return hw_load_string(yaml, file, 0, errbuf, errlen, hw_p);
}

static svp_status_t hw_load_file(const char *file, int partial, char *errbuf,
                                 int errlen, svp_hw_t **hw_p)
{
    svp_status_t status;
    char        *text;
    size_t       len;

    status = svp_file_read_all(file, &text, &len);
    if (status != SVP_OK) {
        svp_errf(errbuf, errlen, "%s: cannot read the %s (%s)", file,
                        partial ? "results file" : "hardware table",
                        svp_status_string(status));
        return status;
    }
    status = hw_load_string(text, file, partial, errbuf, errlen, hw_p);
    free(text);
    return status;
}

svp_status_t svp_hw_load(const char *file, char *errbuf, int errlen,
                         svp_hw_t **hw_p)
{
    return hw_load_file(file, 0, errbuf, errlen, hw_p);
}

static void hw_take_str(char **dst, char **src)
{
    if (*src != NULL) {
        free(*dst);
        *dst = *src;
        *src = NULL;
    }
}

#define HW_TAKE(_f) do { if (m->_f > 0) { hw->_f = m->_f; } } while (0)

svp_status_t svp_hw_overlay_measured(svp_hw_t *hw, const char *file,
                                     char *errbuf, int errlen)
{
    svp_hw_t     *m;
    char         *copy;
    svp_status_t  status;
    int           has_svd, has_links;

    status = hw_load_file(file, 1, errbuf, errlen, &m);
    if (status != SVP_OK) {
        return status;
    }
    has_svd   = m->svd.unet_step_s > 0 || m->svd.encode_s > 0 ||
                m->svd.decode_s > 0;
    has_links = m->intra_node_gbps > 0 || m->inter_node_gbps > 0 ||
                m->latency_us > 0 || m->setup_ms > 0;
    if ((has_svd && (m->svd.source == NULL ||
                     strcmp(m->svd.source, "measured"))) ||
        (has_links && (m->links_source == NULL ||
                       strcmp(m->links_source, "measured")))) {
        svp_errf(errbuf, errlen, "%s: %s.source: expected measured, "
                        "found %s (a results file holds measured figures "
                        "only)", file, has_svd && (m->svd.source == NULL ||
                        strcmp(m->svd.source, "measured")) ? "svd" : "links",
                        "another value or nothing");
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    if (!has_svd && !has_links && m->memory_gb <= 0) {
        svp_errf(errbuf, errlen, "%s: expected measured svd or links "
                        "figures, found none", file);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    copy = svp_strdup(file);
    if (copy == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    if (m->svd.unet_step_s > 0) {
        if (hw->svd.height > 0 && hw->svd.width > 0 && hw->svd.frames > 0) {
            /* the table's encode and decode times, moved to the new
             * reference the planner will scale them from */
            double pix = (double)m->svd.height * m->svd.width /
                         ((double)hw->svd.height * hw->svd.width);

            hw->svd.encode_s *= pix;
            hw->svd.decode_s *= pix * m->svd.frames / hw->svd.frames;
        }
        hw->svd.batch  = m->svd.batch;     /* whole, checked by the reader */
        hw->svd.frames = m->svd.frames;
        hw->svd.height = m->svd.height;
        hw->svd.width  = m->svd.width;
        HW_TAKE(svd.unet_step_s);
        /* encode and decode at the table's reference unless measured too */
    }
    HW_TAKE(svd.encode_s);
    HW_TAKE(svd.decode_s);
    HW_TAKE(memory_gb);
    HW_TAKE(intra_node_gbps);
    HW_TAKE(inter_node_gbps);
    HW_TAKE(latency_us);
    HW_TAKE(setup_ms);
    if (has_svd) {
        hw_take_str(&hw->svd.source, &m->svd.source);
        hw_take_str(&hw->svd.dtype, &m->svd.dtype);
    }
    if (has_links) {
        hw_take_str(&hw->links_source, &m->links_source);
    }
    free(hw->measured_file);
    hw->measured_file = copy;
out:
    svp_hw_destroy(m);
    return status;
}
