/*
 * What the model tests share; see golden.h.
 */
#include "golden.h"
#include "common/file.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Where a case is: $SVP_GOLDEN_DIR (make sets it, see tests/golden-dir.sh),
 * else the larger set beside the source tree, then the compact set shipped
 * in tests/data, which holds every case the tests need, unet_small and
 * clip_preprocess in smaller versions of their own and image_resize without
 * its largest image (tests/data/README.md).
 */
void golden_dir(const char *name, char *buf, size_t len)
{
    const char *root = getenv("SVP_GOLDEN_DIR");
    const char *top  = getenv("SVP_TOP_SRCDIR");
    struct stat sb;

    if (root != NULL) {
        snprintf(buf, len, "%s/%s", root, name);
        if (stat(buf, &sb) == 0) {
            return;
        }
    }
    snprintf(buf, len, "%s/../shared/golden/%s", top ? top : "..", name);
    if (stat(buf, &sb) == 0) {
        return;
    }
    snprintf(buf, len, "%s/tests/data/%s", top ? top : "..", name);
    if (stat(buf, &sb) != 0) {
        cr_skip_test("golden case %s is in neither $SVP_GOLDEN_DIR (%s), "
                     "../shared/golden nor tests/data: it is in the larger "
                     "reference set only",
                     name, root ? root : "unset");
    }
}

svp_safetensors_h golden_open(const char *dir, const char *file)
{
    char              path[4096];
    svp_safetensors_h st;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK, "cannot open %s", path);
    return st;
}

svp_tensor_t *golden_load(svp_safetensors_h st, const char *name)
{
    svp_tensor_t *t;

    cr_assert_eq(svp_safetensors_load(st, name, SVP_DTYPE_F32, &t), SVP_OK,
                 "%s: no tensor '%s'", svp_safetensors_path(st), name);
    return t;
}

double golden_rel_err(const float *got, const float *ref, int64_t n,
                      int64_t *worst_p)
{
    double  max_ref = 0.0, max_err = 0.0;
    int64_t i;

    *worst_p = 0;
    for (i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]);
        max_ref    = fmax(max_ref, fabs(ref[i]));
        if (!(err <= max_err)) {
            max_err  = err;
            *worst_p = i;
        }
    }
    cr_assert(max_ref > 0.0, "the reference is all zeros");
    return max_err / max_ref;
}

double golden_rms_err(const float *got, const float *ref, int64_t n)
{
    double  err2 = 0.0, ref2 = 0.0;
    int64_t i;

    for (i = 0; i < n; i++) {
        double d = (double)got[i] - ref[i];

        err2 += d * d;
        ref2 += (double)ref[i] * ref[i];
    }
    cr_assert(ref2 > 0.0, "the reference is all zeros");
    return sqrt(err2 / ref2);
}

void golden_assert_close(const char *what, const float *got, const float *ref,
                         int64_t n, double tol)
{
    int64_t worst;
    double  rel = golden_rel_err(got, ref, n, &worst);

    cr_assert(rel <= tol,
              "%s: max |err| %.3g relative (bound %.3g) at %ld: got %.8g, want %.8g",
              what, rel, tol, (long)worst, got[worst], ref[worst]);
}

void golden_make_tmp(const char *what, char *tmp, size_t len)
{
    snprintf(tmp, len, "/tmp/svp_%s_XXXXXX", what);
    cr_assert_not_null(mkdtemp(tmp));
}

/* ---- captured intermediates ---- */

golden_captures_t *golden_captures_new(void)
{
    golden_captures_t *caps = calloc(1, sizeof(*caps));

    cr_assert_not_null(caps);
    return caps;
}

void golden_captures_free(golden_captures_t *caps)
{
    int i;

    for (i = 0; i < caps->n; i++) {
        free(caps->items[i].name);
        free(caps->items[i].data);
    }
    free(caps);
}

void golden_capture_cb(const char *name, const float *data, int ndim,
                       const int64_t *shape, void *arg)
{
    golden_captures_t *caps = arg;
    golden_capture_t  *c;
    int64_t            count = 1;
    int                i;

    cr_assert_lt(caps->n, GOLDEN_MAX_CAPTURES);
    for (i = 0; i < ndim; i++) {
        count *= shape[i];
    }
    c        = &caps->items[caps->n++];
    c->name  = strdup(name);
    c->count = count;
    c->data  = malloc(count * sizeof(float));
    memcpy(c->data, data, count * sizeof(float));
}

const golden_capture_t *golden_captures_find(const golden_captures_t *caps,
                                             const char              *name)
{
    int i;

    for (i = 0; i < caps->n; i++) {
        if (strcmp(caps->items[i].name, name) == 0) {
            return &caps->items[i];
        }
    }
    return NULL;
}

/* ---- weight files ---- */

void golden_rewrite_weights(const char *dir, const char *src_file, const char *tmp,
                            const char *file, svp_dtype_t dtype, const char *skip,
                            const char *bad)
{
    char                     path[4096], *text;
    size_t                   len;
    svp_safetensors_h        st = golden_open(dir, src_file);
    svp_safetensors_writer_h wr;
    svp_tensor_t           **keep;
    int                      i, n, kept = 0;

    n    = svp_safetensors_count(st);
    keep = calloc(n, sizeof(*keep));
    cr_assert_eq(svp_safetensors_writer_create(&wr), SVP_OK);
    for (i = 0; i < n; i++) {
        svp_safetensors_info_t info;
        svp_tensor_t          *t;

        cr_assert_eq(svp_safetensors_info(st, i, &info), SVP_OK);
        if (skip && strcmp(info.name, skip) == 0) {
            continue;
        }
        cr_assert_eq(svp_safetensors_load(st, info.name, dtype, &t), SVP_OK);
        if (bad && strcmp(info.name, bad) == 0) {
            t->ndim     = 1;
            t->shape[0] = 1;
        }
        keep[kept++] = t;
        cr_assert_eq(svp_safetensors_writer_add(wr, info.name, t), SVP_OK);
    }
    snprintf(path, sizeof(path), "%s/%s", tmp, file);
    cr_assert_eq(svp_safetensors_writer_commit(wr, path), SVP_OK);
    svp_safetensors_writer_destroy(wr);
    for (i = 0; i < kept; i++) {
        svp_tensor_destroy(keep[i]);
    }
    free(keep);
    svp_safetensors_close(st);

    snprintf(path, sizeof(path), "%s/config.json", dir);
    cr_assert_eq(svp_file_read_all(path, &text, &len), SVP_OK);
    snprintf(path, sizeof(path), "%s/config.json", tmp);
    cr_assert_eq(svp_file_write_atomic(path, text, len), SVP_OK);
    free(text);
}

void golden_write_hollow(const char *path, json_t *hdr, uint64_t data_bytes)
{
    char    *text = json_dumps(hdr, JSON_COMPACT);
    size_t   len, padded;
    uint64_t hlen;
    int      fd;

    cr_assert_not_null(text);
    len    = strlen(text);
    padded = (len + 7) / 8 * 8;
    hlen   = padded; /* little-endian host, as the tests' machines are */
    fd     = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0, "cannot create %s", path);
    cr_assert_eq(write(fd, &hlen, 8), 8);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    cr_assert_eq(write(fd, "        ", padded - len), (ssize_t)(padded - len));
    cr_assert_eq(ftruncate(fd, (off_t)(8 + padded + data_bytes)), 0);
    close(fd);
    free(text);
}

int golden_write_sparse_layout(const char *tensors_json, const char *path,
                               const char *extra)
{
    json_error_t err;
    json_t      *root = json_load_file(tensors_json, 0, &err), *tensors, *hdr;
    const char **names;
    const char  *key;
    json_t      *shape;
    size_t       n      = 0, i;
    uint64_t     offset = 0;
    int          count;

    cr_assert_not_null(root, "%s: %s", tensors_json, err.text);
    tensors = json_object_get(root, "tensors");
    cr_assert(json_is_object(tensors));
    count = (int)json_object_size(tensors);
    names = calloc(count + 1, sizeof(*names));
    json_object_foreach(tensors, key, shape)
    {
        names[n++] = key;
    }
    names[n++] = extra;
    hdr        = json_object();
    for (i = n; i-- > 0;) {
        json_t  *t = json_object(), *shp = json_object_get(tensors, names[i]);
        uint64_t numel = 1;
        size_t   k;

        if (shp == NULL) {
            shp = json_pack("[i]", 3);
        } else {
            json_incref(shp);
        }
        for (k = 0; k < json_array_size(shp); k++) {
            numel *= (uint64_t)json_integer_value(json_array_get(shp, k));
        }
        json_object_set_new(t, "dtype", json_string("F16"));
        json_object_set_new(t, "shape", shp);
        json_object_set_new(t, "data_offsets",
                            json_pack("[I,I]", (json_int_t)offset,
                                      (json_int_t)(offset + 2 * numel)));
        json_object_set_new(hdr, names[i], t);
        offset += 2 * numel;
    }
    golden_write_hollow(path, hdr, offset);
    free(names);
    json_decref(hdr);
    json_decref(root);
    return count;
}
