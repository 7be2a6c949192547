/*
 * The hardware table reader: a table of known key paths read by the spec's
 * YAML key reader (jobspec/keys.h), so that every value is checked where it
 * was found and reported with its mark, by the job spec's own rules.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plan/hardware.h"
#include "common/util.h"
#include "jobspec/keys.h"
#include "jobspec/spec.h" /* SVP_SPEC_LIMIT_BYTES */
#include "tensor/tensor.h"
#include "common/str.h"
#include "common/file.h"
#include "common/errf.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define HW_FIELD(_f) offsetof(svp_hw_t, _f)
#define HW_NOLIM     0, 0
#define HW_REQUIRED  SVP_SPEC_KEY_F_REQUIRED

/* the tensor layer's names of the dtypes weights may be held in, indexed
 * by svp_dtype_t */
static const char *const hw_dtypes[] = {SVP_DTYPE_WEIGHT_NAMES NULL};

/* clang-format off */
static const svp_spec_key_t hw_keys[] = {
    {"name", SVP_SPEC_T_STRING, HW_FIELD(name), NULL, HW_NOLIM, NULL,
     "the device", HW_REQUIRED},
    {"description", SVP_SPEC_T_STRING, HW_FIELD(description), NULL, HW_NOLIM,
     NULL, "the device and its links, in words", 0},
    {"memory_gb", SVP_SPEC_T_DOUBLE, HW_FIELD(memory_gb), NULL, 0, 1e6, NULL,
     "device memory, GB", 0},
    {"peak_tflops", SVP_SPEC_T_DOUBLE, HW_FIELD(peak_tflops), NULL, 0, 1e6, NULL,
     "dense peak of the dtype run, for MFU", 0},
    {"svd.reference.batch", SVP_SPEC_T_INT, HW_FIELD(svd.batch), NULL, 1, 64,
     NULL, "UNet batch the times are for", 0},
    {"svd.reference.frames", SVP_SPEC_T_INT, HW_FIELD(svd.frames), NULL, 1, 1024,
     NULL, "frames the times are for", 0},
    {"svd.reference.height", SVP_SPEC_T_INT, HW_FIELD(svd.height), NULL, 8, 65536,
     NULL, "height the times are for", 0},
    {"svd.reference.width", SVP_SPEC_T_INT, HW_FIELD(svd.width), NULL, 8, 65536,
     NULL, "width the times are for", 0},
    {"svd.unet_step_s", SVP_SPEC_T_DOUBLE, HW_FIELD(svd.unet_step_s), NULL, 0, 1e6,
     NULL, "one UNet call at the reference", 0},
    {"svd.encode_s", SVP_SPEC_T_DOUBLE, HW_FIELD(svd.encode_s), NULL, 0, 1e6,
     NULL, "CLIP and VAE encode of one sample", 0},
    {"svd.decode_s", SVP_SPEC_T_DOUBLE, HW_FIELD(svd.decode_s), NULL, 0, 1e6,
     NULL, "VAE decode of one sample", 0},
    {"links.intra_node_gbps", SVP_SPEC_T_DOUBLE, HW_FIELD(intra_node_gbps), NULL,
     1e-6, 1e6, NULL, "GB/s between two ranks on one node", HW_REQUIRED},
    {"links.inter_node_gbps", SVP_SPEC_T_DOUBLE, HW_FIELD(inter_node_gbps), NULL,
     1e-6, 1e6, NULL, "GB/s between nodes", HW_REQUIRED},
    {"links.latency_us", SVP_SPEC_T_DOUBLE, HW_FIELD(latency_us), NULL, 0, 1e9,
     NULL, "per message", HW_REQUIRED},
    {"links.setup_ms", SVP_SPEC_T_DOUBLE, HW_FIELD(setup_ms), NULL, 0, 1e6, NULL,
     "the first message on a link", 0},
    {"svd.source", SVP_SPEC_T_STRING, HW_FIELD(svd.source), NULL, HW_NOLIM, NULL,
     "measured or quoted", 0},
    {"svd.dtype", SVP_SPEC_T_ENUM, HW_FIELD(svd.dtype), NULL, HW_NOLIM, hw_dtypes,
     "the spec dtype the svd times are for", 0},
    {"links.source", SVP_SPEC_T_STRING, HW_FIELD(links_source), NULL, HW_NOLIM,
     NULL, "measured or quoted", 0},
};
/* clang-format on */

#define HW_NUM_KEYS ((int)(sizeof(hw_keys) / sizeof(hw_keys[0])))

static const char *const hw_sections[] = {"svd", "svd.reference", "links", NULL};

typedef struct {
    int seen[HW_NUM_KEYS];
} hw_reader_t;

/* After a key was read: counted, and a source held to its two words. */
static svp_status_t hw_after(svp_spec_reader_t *r, const svp_spec_key_t *key,
                             int line, int col)
{
    hw_reader_t *h = r->arg;
    const char  *text;

    h->seen[key - hw_keys] = 1;
    if (strcmp(key->path, "svd.source") != 0 &&
        strcmp(key->path, "links.source") != 0) {
        return SVP_OK;
    }
    text = *(char **)((char *)r->base + key->offset);
    if (strcmp(text, "measured") != 0 && strcmp(text, "quoted") != 0) {
        return svp_spec_reader_fail(r, line, col,
                                    "key '%s': expected one of "
                                    "measured, quoted, found '%s'",
                                    key->path, text);
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
    free(hw->links_source);
    free(hw->measured_file);
    free(hw);
}

static svp_status_t hw_load_string(const char *yaml, size_t len, const char *file,
                                   int partial, char *errbuf, int errlen,
                                   svp_hw_t **hw_p)
{
    svp_spec_reader_t r = {.keys     = hw_keys,
                           .num_keys = HW_NUM_KEYS,
                           .sections = hw_sections,
                           .what     = "hardware table",
                           .file     = file,
                           .errbuf   = errbuf,
                           .errlen   = errlen,
                           .after    = hw_after};
    hw_reader_t       h = {{0}};
    svp_hw_t         *hw;
    svp_status_t      status;

    hw = calloc(1, sizeof(*hw));
    if (hw == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    hw->svd.dtype = SVP_DTYPE_LAST; /* not stated */
    hw->file      = svp_strdup(file);
    if (hw->file == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto err_free_hw;
    }
    r.base = hw;
    r.arg  = &h;
    status = svp_spec_reader_read(&r, yaml, len);
    if (status == SVP_ERR_SPEC) {
        status = SVP_ERR_BAD_FILE;
    }
    if (status != SVP_OK) {
        goto err_free_hw;
    }
    for (int k = 0; k < HW_NUM_KEYS && !partial; ++k) {
        if ((hw_keys[k].flags & SVP_SPEC_KEY_F_REQUIRED) && !h.seen[k]) {
            svp_errf(errbuf, errlen,
                     "%s: key '%s': expected a value, found "
                     "nothing (the key is required)",
                     file, hw_keys[k].path);
            status = SVP_ERR_BAD_FILE;
            goto err_free_hw;
        }
    }
    /* the svd section is all or nothing: a partial one cannot be scaled */
    if (hw->svd.unet_step_s > 0 && (hw->svd.batch == 0 || hw->svd.frames == 0 ||
                                    hw->svd.height == 0 || hw->svd.width == 0)) {
        svp_errf(errbuf, errlen,
                 "%s: svd.reference: expected batch, "
                 "frames, height and width with svd.unet_step_s, found "
                 "some missing",
                 file);
        status = SVP_ERR_BAD_FILE;
        goto err_free_hw;
    }
    *hw_p = hw;
    return SVP_OK;

err_free_hw:
    svp_hw_destroy(hw);
    return status;
}

svp_status_t svp_hw_load_string(const char *yaml, const char *file, char *errbuf,
                                int errlen, svp_hw_t **hw_p)
{
    return hw_load_string(yaml, strlen(yaml), file, 0, errbuf, errlen, hw_p);
}

static svp_status_t hw_load_file(const char *file, int partial, char *errbuf,
                                 int errlen, svp_hw_t **hw_p)
{
    svp_status_t status;
    char        *text;
    size_t       len;

    status = svp_file_read_limit(file, SVP_SPEC_LIMIT_BYTES,
                                 partial ? "a results file" : "a hardware table",
                                 &text, &len);
    if (status != SVP_OK) {
        svp_errf(errbuf, errlen, "%s: cannot read the %s (%s)", file,
                 partial ? "results file" : "hardware table",
                 svp_status_string(status));
        return status;
    }
    status = hw_load_string(text, len, file, partial, errbuf, errlen, hw_p);
    free(text);
    return status;
}

svp_status_t svp_hw_load(const char *file, char *errbuf, int errlen, svp_hw_t **hw_p)
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

#define HW_TAKE(_f) \
    do { \
        if (m->_f > 0) { \
            hw->_f = m->_f; \
        } \
    } while (0)

svp_status_t svp_hw_overlay_measured(svp_hw_t *hw, const char *file, char *errbuf,
                                     int errlen)
{
    svp_hw_t    *m;
    char        *copy;
    svp_status_t status;
    int          has_svd, has_links;

    status = hw_load_file(file, 1, errbuf, errlen, &m);
    if (status != SVP_OK) {
        return status;
    }
    has_svd   = m->svd.unet_step_s > 0 || m->svd.encode_s > 0 || m->svd.decode_s > 0;
    has_links = m->intra_node_gbps > 0 || m->inter_node_gbps > 0 ||
                m->latency_us > 0 || m->setup_ms > 0;
    if ((has_svd &&
         (m->svd.source == NULL || strcmp(m->svd.source, "measured") != 0)) ||
        (has_links &&
         (m->links_source == NULL || strcmp(m->links_source, "measured") != 0))) {
        svp_errf(errbuf, errlen,
                 "%s: %s.source: expected measured, "
                 "found %s (a results file holds measured figures "
                 "only)",
                 file,
                 has_svd && (m->svd.source == NULL ||
                             strcmp(m->svd.source, "measured") != 0)
                     ? "svd"
                     : "links",
                 "another value or nothing");
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    if (!has_svd && !has_links && m->memory_gb <= 0) {
        svp_errf(errbuf, errlen,
                 "%s: expected measured svd or links "
                 "figures, found none",
                 file);
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
        hw->svd.batch  = m->svd.batch; /* whole, checked by the reader */
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
        hw->svd.dtype =
            (m->svd.dtype != SVP_DTYPE_LAST) ? m->svd.dtype : hw->svd.dtype;
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
