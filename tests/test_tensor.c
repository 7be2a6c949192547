/* Tests for src/tensor: dtypes, conversions, safetensors read/write. */
#include "tensor/tensor.h"
#include "tensor/safetensors.h"
#include "tensor/config_json.h"
#include "common/log.h"
#include "common/file.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

static char test_dir[64];

static void setup_dir(void)
{
    strcpy(test_dir, "/tmp/svp_tensor_XXXXXX");
    cr_assert_not_null(mkdtemp(test_dir));
}

static void teardown_dir(void)
{
    svp_rmtree(test_dir);
}

static const char *golden_dir(void)
{
    const char *dir = getenv("SVP_GOLDEN_DIR");

    if (dir == NULL || access(dir, R_OK) != 0) {
        cr_skip_test("golden data not found at %s (set SVP_GOLDEN_DIR)",
                     dir ? dir : "(unset)");
    }
    return dir;
}

/* ---- f16 / bf16 ------------------------------------------------------- */

static float f32_from_bits(uint32_t b)
{
    float f;

    memcpy(&f, &b, 4);
    return f;
}

Test(dtype, names_and_sizes)
{
    cr_assert_eq(svp_dtype_size(SVP_DTYPE_BF16), 2);
    cr_assert_eq(svp_dtype_size(SVP_DTYPE_I64), 8);
    cr_assert_eq(svp_dtype_size(SVP_DTYPE_LAST), 0);
    cr_assert_str_eq(svp_dtype_name(SVP_DTYPE_F16), "F16");
    cr_assert_eq(svp_dtype_parse("BF16"), SVP_DTYPE_BF16);
    cr_assert_eq(svp_dtype_parse("U8"), SVP_DTYPE_U8);
    cr_assert_eq(svp_dtype_parse("F8_E4M3"), -1);
}

/* One table: every dtype's two names parse back to it, and the weight
 * dtypes are exactly f32, f16 and bf16, first in the enum. */
Test(dtype, one_table_of_names)
{
    static const char *const weights[] = {SVP_DTYPE_WEIGHT_NAMES NULL};
    int                      i;

    for (i = 0; i < SVP_DTYPE_LAST; ++i) {
        cr_assert_eq(svp_dtype_parse(svp_dtype_name((svp_dtype_t)i)), i);
        cr_assert_eq(svp_dtype_parse_short(svp_dtype_short_name((svp_dtype_t)i)), i);
        cr_assert_eq(svp_dtype_is_weight((svp_dtype_t)i),
                     i == SVP_DTYPE_F32 || i == SVP_DTYPE_F16 || i == SVP_DTYPE_BF16,
                     "%s", svp_dtype_short_name((svp_dtype_t)i));
    }
    for (i = 0; weights[i] != NULL; ++i) {
        cr_assert_eq(svp_dtype_parse_short(weights[i]), i, "%s", weights[i]);
    }
    cr_assert_eq(i, 3);
    cr_assert_str_eq(svp_dtype_short_name(SVP_DTYPE_BF16), "bf16");
    cr_assert_str_eq(svp_dtype_short_name(SVP_DTYPE_LAST), "?");
    cr_assert_eq(svp_dtype_parse_short("F32"), -1, "the short names are lower-case");
    cr_assert_eq(svp_dtype_parse_short(NULL), -1);
    cr_assert_eq(svp_dtype_is_weight(SVP_DTYPE_LAST), 0);
}

Test(dtype, f16_known_values)
{
    cr_assert_eq(svp_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(svp_f32_to_f16(-2.0f), 0xc000);
    cr_assert_eq(svp_f32_to_f16(65504.0f), 0x7bff);
    /* 65520 is halfway between 65504 and 65536 (= inf): even is inf */
    cr_assert_eq(svp_f32_to_f16(65520.0f), 0x7c00);
    cr_assert_eq(svp_f32_to_f16(65519.0f), 0x7bff);
    cr_assert_eq(svp_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    /* half the smallest subnormal ties to even (0); a bit more rounds up */
    cr_assert_eq(svp_f32_to_f16(ldexpf(1.0f, -25)), 0x0000);
    cr_assert_eq(svp_f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
    /* 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even mantissa wins */
    cr_assert_eq(svp_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    cr_assert_eq(svp_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
    /* largest subnormal + rounding carries into the smallest normal */
    cr_assert_eq(svp_f32_to_f16(ldexpf(1.0f, -14) - ldexpf(1.0f, -26)), 0x0400);
    cr_assert_eq(svp_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(svp_f32_to_f16(INFINITY), 0x7c00);
    cr_assert(isnan(svp_f16_to_f32(svp_f32_to_f16(NAN))));
    cr_assert_eq(svp_f16_to_f32(0x0001), ldexpf(1.0f, -24));
    cr_assert_eq(svp_f16_to_f32(0x3555), 0.333251953125f);
}

Test(dtype, f16_every_value_round_trips)
{
    uint32_t h;

    for (h = 0; h < 0x10000; ++h) {
        float f = svp_f16_to_f32((uint16_t)h);

        if (isnan(f)) {
            cr_assert(isnan(svp_f16_to_f32(svp_f32_to_f16(f))));
            continue;
        }
        cr_assert_eq(svp_f32_to_f16(f), h, "f16 0x%04x -> %g -> 0x%04x", h,
                     (double)f, svp_f32_to_f16(f));
    }
}

/*
 * The bulk widening (vectorised where the CPU has F16C, threaded) gives the
 * scalar conversion's bits for every f16 value, NaN payloads included, at
 * every alignment and with a tail that is not a whole vector.
 */
Test(dtype, f16_bulk_widening_matches_scalar)
{
    enum { N = 0x10000 + 5 };
    uint16_t *src = malloc((N + 1) * sizeof(*src));
    float    *dst = malloc((N + 1) * sizeof(*dst));
    uint32_t  want, got;
    int64_t   i;
    int       off;

    cr_assert(src != NULL && dst != NULL);
    for (i = 0; i <= N; ++i) {
        src[i] = (uint16_t)(i * 40503u); /* every value, shuffled */
    }
    for (off = 0; off < 2; ++off) {
        memset(dst, 0xff, (N + 1) * sizeof(*dst));
        cr_assert_eq(svp_convert_elements(SVP_DTYPE_F16, (char *)src + 2 * off,
                                          SVP_DTYPE_F32, (char *)dst + 4 * off, N),
                     SVP_OK);
        for (i = 0; i < N; ++i) {
            uint16_t h;
            float    f;

            memcpy(&h, (char *)src + 2 * off + 2 * i, 2);
            f = svp_f16_to_f32(h);
            memcpy(&want, &f, 4);
            memcpy(&got, (char *)dst + 4 * off + 4 * i, 4);
            cr_assert_eq(got, want,
                         "offset %d, element %lld: f16 0x%04x -> 0x%08x, "
                         "want 0x%08x",
                         off, (long long)i, h, got, want);
        }
    }
    free(src);
    free(dst);
}

/* Checks the f32 -> f16/bf16 result is the nearest (ties to even) for
 * random finite inputs, against exact double arithmetic. */
static void check_nearest(float f, uint16_t h, float (*to_f32)(uint16_t),
                          const char *what)
{
    double   got = to_f32(h), err = fabs(got - (double)f);
    uint16_t up = (uint16_t)(h + 1), down = (uint16_t)(h - 1);
    float    fu = to_f32(up), fd = to_f32(down);

    if (isinf(got)) {
        return;
    }
    if (!isnan(fu) && !isinf(fu) && (fu > 0) == (got > 0)) {
        cr_assert(err < fabs(fu - (double)f) ||
                      (err == fabs(fu - (double)f) && (h & 1) == 0),
                  "%s of %a not nearest even", what, (double)f);
    }
    if ((h & 0x7fff) != 0 && !isnan(fd) && (fd > 0) == (got > 0)) {
        cr_assert(err < fabs(fd - (double)f) ||
                      (err == fabs(fd - (double)f) && (h & 1) == 0),
                  "%s of %a not nearest even", what, (double)f);
    }
}

Test(dtype, random_values_round_to_nearest_even)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int      i;

    for (i = 0; i < 200000; ++i) {
        uint32_t bits;
        float    f;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* exponents around the f16 range, including subnormals */
        bits = (uint32_t)(x & 0x807fffffu) | (uint32_t)(((x >> 32) % 48 + 96) << 23);
        f    = f32_from_bits(bits);
        check_nearest(f, svp_f32_to_f16(f), svp_f16_to_f32, "f16");
        f = f32_from_bits((uint32_t)(x >> 32));
        if (!isnan(f) && !isinf(f)) {
            check_nearest(f, svp_f32_to_bf16(f), svp_bf16_to_f32, "bf16");
        }
    }
}

Test(dtype, bf16_known_values)
{
    cr_assert_eq(svp_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(svp_f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3f80);
    cr_assert_eq(svp_f32_to_bf16(1.0f + 3 * ldexpf(1.0f, -8)), 0x3f82);
    cr_assert_eq(svp_bf16_to_f32(0xc040), -3.0f);
    cr_assert(isnan(svp_bf16_to_f32(svp_f32_to_bf16(f32_from_bits(0x7f800001u)))));
    cr_assert_eq(svp_f32_to_bf16(3.4e38f), 0x7f80); /* rounds past max: inf */
}

/* ---- tensors ---------------------------------------------------------- */

Test(tensor, create_wrap_convert)
{
    int64_t       shape[3] = {2, 3, 4};
    float         buf[24];
    svp_tensor_t *t, *w, *h, *back;
    char          s[64];
    int           i;

    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 3, shape, &t), SVP_OK);
    cr_assert_eq(svp_tensor_numel(t), 24);
    cr_assert_eq(svp_tensor_nbytes(t), 96);
    cr_assert_str_eq(svp_tensor_shape_str(t, s, sizeof(s)), "[2,3,4]");
    for (i = 0; i < 24; ++i) {
        cr_assert_eq(((float *)t->data)[i], 0.0f, "create must zero");
        buf[i] = (float)i / 7.0f - 1.0f;
    }
    cr_assert_eq(svp_tensor_wrap(SVP_DTYPE_F32, 3, shape, buf, &w), SVP_OK);
    cr_assert_eq(w->data, buf);
    cr_assert_eq(svp_tensor_convert(w, SVP_DTYPE_F16, &h), SVP_OK);
    cr_assert_eq(h->dtype, SVP_DTYPE_F16);
    cr_assert_eq(svp_tensor_convert(h, SVP_DTYPE_F32, &back), SVP_OK);
    for (i = 0; i < 24; ++i) {
        cr_assert_eq(((uint16_t *)h->data)[i], svp_f32_to_f16(buf[i]));
        /* f16 has 11 significant bits: relative error <= 2^-11 */
        cr_assert(fabsf(((float *)back->data)[i] - buf[i]) <=
                  ldexpf(fabsf(buf[i]), -11));
    }
    svp_tensor_destroy(back);
    svp_tensor_destroy(h);
    cr_assert_eq(svp_tensor_convert(w, SVP_DTYPE_BF16, &h), SVP_OK);
    cr_assert_eq(svp_tensor_convert(w, SVP_DTYPE_F64, &back), SVP_OK);
    for (i = 0; i < 24; ++i) {
        cr_assert_eq(((uint16_t *)h->data)[i], svp_f32_to_bf16(buf[i]));
        cr_assert_eq(((double *)back->data)[i], (double)buf[i]);
    }
    svp_tensor_destroy(back);
    svp_tensor_destroy(h);
    svp_tensor_destroy(w); /* borrowed data stays */
    buf[0] = 1.0f;
    svp_tensor_destroy(t);
}

Test(tensor, rejects_bad_shapes)
{
    int64_t       neg[2] = {3, -1}, huge[3] = {1ll << 40, 1ll << 20, 16};
    svp_tensor_t *t = NULL;

    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 2, neg, &t),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 3, huge, &t),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 9, neg, &t),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_LAST, 1, neg, &t),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_null(t, "output written on failure");
}

/* ---- safetensors round trip ------------------------------------------- */

Test(safetensors, round_trip_dtypes_and_metadata, .init = setup_dir,
     .fini = teardown_dir)
{
    svp_safetensors_writer_h wr;
    svp_safetensors_h        st;
    svp_safetensors_info_t   info;
    svp_tensor_t            *a, *h, *b, *u, *loaded, *raw;
    int64_t                  sa[2] = {3, 5}, su[1] = {3}, sb[3] = {1, 2, 3};
    char                     path[128];
    int                      i;

    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 2, sa, &a), SVP_OK);
    for (i = 0; i < 15; ++i) {
        ((float *)a->data)[i] = sinf((float)i) * 100.0f;
    }
    cr_assert_eq(svp_tensor_convert(a, SVP_DTYPE_F16, &h), SVP_OK);
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_BF16, 3, sb, &b), SVP_OK);
    for (i = 0; i < 6; ++i) {
        ((uint16_t *)b->data)[i] = svp_f32_to_bf16(-1.5f * (float)i);
    }
    /* 3 bytes of U8 first in name order: every later tensor is unaligned */
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_U8, 1, su, &u), SVP_OK);
    memcpy(u->data, "\x01\x02\xff", 3);

    cr_assert_eq(svp_safetensors_writer_create(&wr), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "z.f32", a), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "m.f16", h), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "b.bf16", b), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "a.u8", u), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "a.u8", u), SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_safetensors_writer_add_metadata(wr, "num_frames", "3"), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add_metadata(wr, "note", "x\"y"), SVP_OK);
    snprintf(path, sizeof(path), "%s/rt.safetensors", test_dir);
    cr_assert_eq(svp_safetensors_writer_commit(wr, path), SVP_OK);
    svp_safetensors_writer_destroy(wr);

    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    cr_assert_str_eq(svp_safetensors_path(st), path);
    cr_assert_eq(svp_safetensors_count(st), 4);
    cr_assert_str_eq(svp_safetensors_metadata(st, "num_frames"), "3");
    cr_assert_str_eq(svp_safetensors_metadata(st, "note"), "x\"y");
    cr_assert_null(svp_safetensors_metadata(st, "absent"));

    /* index order is name order */
    cr_assert_eq(svp_safetensors_info(st, 0, &info), SVP_OK);
    cr_assert_str_eq(info.name, "a.u8");
    cr_assert_eq(svp_safetensors_load(st, "a.u8", SVP_DTYPE_U8, &raw), SVP_OK);
    cr_assert_eq(memcmp(raw->data, "\x01\x02\xff", 3), 0);
    svp_tensor_destroy(raw);
    cr_assert_eq(svp_safetensors_info(st, 4, &info), SVP_ERR_INVALID_PARAM);

    cr_assert_eq(svp_safetensors_find(st, "b.bf16", &info), SVP_OK);
    cr_assert_eq(info.dtype, SVP_DTYPE_BF16);
    cr_assert_eq(info.ndim, 3);
    cr_assert_eq(info.shape[2], 3);
    cr_assert_eq(info.nbytes, 12);
    cr_assert_eq(svp_safetensors_load(st, "b.bf16", SVP_DTYPE_BF16, &raw), SVP_OK);
    cr_assert_eq(memcmp(raw->data, b->data, 12), 0);
    svp_tensor_destroy(raw);
    cr_assert_eq(svp_safetensors_find(st, "nope", &info), SVP_ERR_NOT_FOUND);

    cr_assert_eq(svp_safetensors_load(st, "z.f32", SVP_DTYPE_F32, &loaded), SVP_OK);
    cr_assert_eq(memcmp(loaded->data, a->data, 60), 0, "F32 not bit exact");
    svp_tensor_destroy(loaded);
    cr_assert_eq(svp_safetensors_load(st, "m.f16", SVP_DTYPE_F16, &loaded), SVP_OK);
    cr_assert_eq(memcmp(loaded->data, h->data, 30), 0, "F16 not bit exact");
    svp_tensor_destroy(loaded);
    /* F16 file data loaded as F32 equals the exact f16 values */
    cr_assert_eq(svp_safetensors_load(st, "m.f16", SVP_DTYPE_F32, &loaded), SVP_OK);
    for (i = 0; i < 15; ++i) {
        cr_assert_eq(((float *)loaded->data)[i],
                     svp_f16_to_f32(((uint16_t *)h->data)[i]));
    }
    svp_tensor_destroy(loaded);
    cr_assert_eq(svp_safetensors_load(st, "b.bf16", SVP_DTYPE_F32, &loaded), SVP_OK);
    cr_assert_eq(((float *)loaded->data)[5], -7.5f);
    svp_tensor_destroy(loaded);
    cr_assert_eq(svp_safetensors_load(st, "z.f32", SVP_DTYPE_U8, &loaded),
                 SVP_ERR_UNSUPPORTED);
    svp_safetensors_close(st);

    svp_tensor_destroy(a);
    svp_tensor_destroy(h);
    svp_tensor_destroy(b);
    svp_tensor_destroy(u);
}

Test(safetensors, header_is_sorted_and_padded, .init = setup_dir,
     .fini = teardown_dir)
{
    svp_safetensors_writer_h wr;
    svp_tensor_t            *t;
    int64_t                  shape[1] = {1};
    char                     path[128], *data;
    size_t                   len;
    uint64_t                 hlen;

    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 1, shape, &t), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_create(&wr), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "b", t), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "a", t), SVP_OK);
    snprintf(path, sizeof(path), "%s/s.safetensors", test_dir);
    cr_assert_eq(svp_safetensors_writer_commit(wr, path), SVP_OK);
    svp_safetensors_writer_destroy(wr);
    svp_tensor_destroy(t);

    cr_assert_eq(svp_file_read_all(path, &data, &len), SVP_OK);
    memcpy(&hlen, data, 8);
    cr_assert_eq(hlen % 8, 0);
    cr_assert_eq(len, 8 + hlen + 8);
    cr_assert(strstr(data + 8, "{\"a\":") == data + 8, "header: %.*s", (int)hlen,
              data + 8);
    cr_assert_eq(data[8 + hlen - 1] == ' ' || data[8 + hlen - 1] == '}', 1);
    free(data);
}

/* ---- golden files ----------------------------------------------------- */

Test(safetensors, golden_unet_io)
{
    const char            *dir = golden_dir();
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    svp_tensor_t          *t;
    char                   path[1024];

    snprintf(path, sizeof(path), "%s/unet_tiny/io.safetensors", dir);
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    cr_assert_eq(svp_safetensors_find(st, "out", &info), SVP_OK);
    cr_assert_eq(info.dtype, SVP_DTYPE_F32);
    cr_assert_eq(info.ndim, 5);
    cr_assert_eq(info.shape[0], 2);
    cr_assert_eq(info.shape[1], 3);
    cr_assert_eq(info.shape[2], 4);
    cr_assert_eq(info.shape[3], 8);
    cr_assert_eq(info.shape[4], 12);
    cr_assert_str_eq(svp_safetensors_metadata(st, "case"), "unet_tiny");
    cr_assert_eq(svp_safetensors_load(st, "timestep", SVP_DTYPE_F64, &t), SVP_OK);
    cr_assert_eq(t->ndim, 1);
    cr_assert(isfinite(((double *)t->data)[0]));
    svp_tensor_destroy(t);
    svp_safetensors_close(st);
}

/* image_resize mixes U8 and F32 tensors: F32 data sits at odd offsets. */
Test(safetensors, golden_unaligned_tensors)
{
    const char            *dir = golden_dir();
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    svp_tensor_t          *t;
    char                   path[1024];
    unsigned char         *raw8;
    int                    i, fd, unaligned = 0;

    snprintf(path, sizeof(path), "%s/image_resize/resize.safetensors", dir);
    if (access(path, R_OK) != 0) {
        cr_skip_test("%s is in the larger reference set only", path);
    }
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    for (i = 0; i < svp_safetensors_count(st); ++i) {
        cr_assert_eq(svp_safetensors_info(st, i, &info), SVP_OK);
        if (info.dtype != SVP_DTYPE_F32 || (info.offset & 3) == 0) {
            continue;
        }
        ++unaligned;
        cr_assert_eq(svp_safetensors_load(st, info.name, SVP_DTYPE_F32, &t), SVP_OK);
        /* the bytes at that offset, read by hand */
        raw8 = malloc(info.nbytes);
        cr_assert(raw8 != NULL);
        cr_assert_eq(pread(fd, raw8, info.nbytes, (off_t)info.offset),
                     (ssize_t)info.nbytes);
        cr_assert_eq(memcmp(t->data, raw8, info.nbytes), 0);
        free(raw8);
        cr_assert_eq(((uintptr_t)t->data & 3), 0);
        svp_tensor_destroy(t);
    }
    cr_assert_gt(unaligned, 0, "expected unaligned F32 tensors in %s", path);
    close(fd);
    svp_safetensors_close(st);
}

/*
 * The real SVD-XT UNet layout (svd_xt_layout/unet/tensors.json: 1428 names
 * and shapes, 3 GB of F16) as a sparse file: the data region is a hole, so
 * this costs no disk.  Offsets follow registration order, not name order, so
 * the reader must not rely on the order of keys.
 */
Test(safetensors, golden_svd_xt_unet_layout, .init = setup_dir, .fini = teardown_dir)
{
    const char            *dir = golden_dir();
    json_t                *layout, *tensors, *shape, *header, *dim;
    json_error_t           jerr;
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    svp_tensor_t          *t;
    const char            *name;
    char                   path[1024], *text;
    uint64_t               offset = 0, hlen, total = 0;
    int64_t                numel;
    size_t                 d, len;
    FILE                  *f;
    int                    i;

    snprintf(path, sizeof(path), "%s/svd_xt_layout/unet/tensors.json", dir);
    layout = json_load_file(path, 0, &jerr);
    cr_assert_not_null(layout, "%s: %s", path, jerr.text);
    tensors = json_object_get(layout, "tensors");
    header  = json_object();
    json_object_foreach(tensors, name, shape)
    {
        numel = 1;
        json_array_foreach(shape, d, dim)
        {
            numel *= json_integer_value(dim);
        }
        json_object_set_new(header, name,
                            json_pack("{s:s, s:O, s:[I,I]}", "dtype", "F16", "shape",
                                      shape, "data_offsets", (json_int_t)offset,
                                      (json_int_t)(offset + 2 * numel)));
        offset += 2 * (uint64_t)numel;
    }
    text = json_dumps(header, JSON_COMPACT);
    len  = strlen(text);
    hlen = (len + 7) & ~(uint64_t)7;

    snprintf(path, sizeof(path), "%s/unet.fp16.safetensors", test_dir);
    f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite(&hlen, 8, 1, f);
    fwrite(text, 1, len, f);
    fprintf(f, "%*s", (int)(hlen - len), "");
    cr_assert_eq(fflush(f), 0);
    cr_assert_eq(ftruncate(fileno(f), (off_t)(8 + hlen + offset)), 0);
    fclose(f);
    free(text);

    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    cr_assert_eq(svp_safetensors_count(st),
                 json_integer_value(
                     json_object_get(json_object_get(layout, "totals"), "tensors")));
    for (i = 0; i < svp_safetensors_count(st); ++i) {
        cr_assert_eq(svp_safetensors_info(st, i, &info), SVP_OK);
        total += info.nbytes;
    }
    cr_assert_eq(total, json_integer_value(
                            json_object_get(json_object_get(layout, "totals"),
                                            "bytes_fp16")));
    cr_assert_eq(svp_safetensors_find(st, "conv_in.weight", &info), SVP_OK);
    cr_assert_eq(info.ndim, 4);
    cr_assert_eq(info.shape[0], 320);
    cr_assert_eq(info.shape[1], 8);
    cr_assert_eq(svp_safetensors_load(st, "conv_in.bias", SVP_DTYPE_F32, &t),
                 SVP_OK);
    cr_assert_eq(svp_tensor_numel(t), 320);
    cr_assert_eq(((float *)t->data)[319], 0.0f);
    svp_tensor_destroy(t);
    svp_safetensors_close(st);
    json_decref(header);
    json_decref(layout);
}

/* ---- hostile files ---------------------------------------------------- */

/* Writes a file: u64 header length (hlen_override when >= 0), the header
 * text, then ndata bytes of data. */
static void write_raw(const char *path, const char *header, long long hlen_override,
                      size_t ndata)
{
    FILE    *f = fopen(path, "wb");
    uint64_t hlen =
        hlen_override >= 0 ? (uint64_t)hlen_override : (uint64_t)strlen(header);
    size_t i;

    cr_assert_not_null(f);
    cr_assert_eq(fwrite(&hlen, 8, 1, f), 1);
    fputs(header, f);
    for (i = 0; i < ndata; ++i) {
        fputc((int)(i * 37), f);
    }
    fclose(f);
}

static svp_status_t open_raw(const char *header, long long hlen, size_t ndata)
{
    svp_safetensors_h st = NULL;
    svp_status_t      status;
    char              path[128];

    snprintf(path, sizeof(path), "%s/h.safetensors", test_dir);
    write_raw(path, header, hlen, ndata);
    status = svp_safetensors_open(path, &st);
    if (status == SVP_OK) {
        svp_safetensors_close(st);
    } else {
        cr_assert_null(st, "output written on failure");
    }
    return status;
}

#define GOOD "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}"

Test(safetensors, hostile_files, .init = setup_dir, .fini = teardown_dir)
{
    svp_safetensors_h st;
    char              path[128];
    FILE             *f;

    cr_assert_eq(open_raw(GOOD, -1, 8), SVP_OK, "the control file must open");
    cr_assert_eq(open_raw("{}", -1, 0), SVP_OK, "an empty file is valid");

    /* shorter than the length field */
    snprintf(path, sizeof(path), "%s/short.safetensors", test_dir);
    f = fopen(path, "wb");
    fwrite("\x10\x00\x00", 1, 3, f);
    fclose(f);
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_ERR_BAD_FILE);
    /* absent file */
    snprintf(path, sizeof(path), "%s/absent.safetensors", test_dir);
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_ERR_NOT_FOUND);

    /* header cut short / length beyond the file / absurd length */
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",", -1, 0), SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw(GOOD, 4096, 8), SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw(GOOD, (long long)1 << 62, 8), SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw(GOOD, -1, 7), SVP_ERR_BAD_FILE, "truncated data");
    /* bad JSON, not an object, trailing garbage, duplicate names */
    cr_assert_eq(open_raw("{\"a\":", -1, 8), SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("[1,2]", -1, 8), SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw(GOOD "xx", -1, 8), SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                          "\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\","
                          "\"shape\":[1],\"data_offsets\":[4,8]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    /* offsets out of range, reversed, negative, not integers */
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[8,16]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],"
                          "\"data_offsets\":[8,0]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[-8,0]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0.0,8]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0,18446744073709551615]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    /* overlapping tensors */
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\","
                          "\"shape\":[1],\"data_offsets\":[4,8]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    /* size mismatch, negative dim, overflowing shape, too many dims */
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],"
                          "\"data_offsets\":[0,8]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],"
                          "\"data_offsets\":[0,8]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,"
                          "4294967296,4],\"data_offsets\":[0,0]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                          "\"data_offsets\":[0,1]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    /* unknown dtype, missing field, extra field */
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F8_E5M2\",\"shape\":[8],"
                          "\"data_offsets\":[0,8]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", -1,
                          8),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"x\":1,"
                          "\"data_offsets\":[0,8]}}",
                          -1, 8),
                 SVP_ERR_BAD_FILE);
    /* metadata must be an object of strings */
    cr_assert_eq(open_raw("{\"__metadata__\":{\"k\":1}}", -1, 0), SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"__metadata__\":[\"k\"]}", -1, 0), SVP_ERR_BAD_FILE);
    cr_assert_eq(open_raw("{\"__metadata__\":{\"k\":\"v\"}}", -1, 0), SVP_OK);
}

/* Flipping any single header byte of a valid file must give OK or
 * SVP_ERR_BAD_FILE, never a crash (Criterion reports a crash as a failure). */
Test(safetensors, every_header_byte_corrupted, .init = setup_dir,
     .fini = teardown_dir)
{
    const char *header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                         "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"U8\","
                         "\"shape\":[1,3],\"data_offsets\":[8,11]}}";
    char        mutated[256];
    size_t      i, len = strlen(header);
    const char  subst[] = {'9', '-', '"', '}', '\0' + 1, ']'};
    size_t      k;

    cr_assert_eq(open_raw(header, -1, 11), SVP_OK);
    for (i = 0; i < len; ++i) {
        for (k = 0; k < sizeof(subst); ++k) {
            svp_status_t status;

            strcpy(mutated, header);
            mutated[i] = subst[k];
            status     = open_raw(mutated, -1, 11);
            cr_assert(status == SVP_OK || status == SVP_ERR_BAD_FILE,
                      "byte %zu -> 0x%02x gave %s", i, subst[k],
                      svp_status_name(status));
        }
    }
}

/* ---- config.json ------------------------------------------------------ */

Test(config, typed_getters_and_defaults)
{
    static const char text[] =
        "{\"in_channels\": 8, \"sigma_max\": 700.0, \"sigma_min\": 0.002,"
        " \"steps\": 1000.0, \"karras\": true, \"name\": \"Euler\","
        " \"trained_betas\": null, \"heads\": 8, \"blocks\": [32, 64],"
        " \"types\": [\"A\", \"B\"]}";
    static const char *const required[] = {"in_channels", "name", NULL};
    static const char *const missing[]  = {"in_channels", "trained_betas", NULL};
    svp_config_h             cfg;
    int64_t                  i64, arr[4];
    double                   d;
    int                      b, n;
    const char              *s, *strs[4];

    cr_assert_eq(svp_config_parse(text, "t.json", &cfg), SVP_OK);
    cr_assert_str_eq(svp_config_path(cfg), "t.json");
    cr_assert_eq(svp_config_get_int(cfg, "in_channels", 4, &i64), SVP_OK);
    cr_assert_eq(i64, 8);
    cr_assert_eq(svp_config_get_int(cfg, "steps", 0, &i64), SVP_OK);
    cr_assert_eq(i64, 1000, "an integral float is an integer");
    cr_assert_eq(svp_config_get_int(cfg, "absent", 42, &i64), SVP_OK);
    cr_assert_eq(i64, 42);
    cr_assert_eq(svp_config_get_double(cfg, "sigma_min", 1.0, &d), SVP_OK);
    cr_assert_eq(d, 0.002);
    cr_assert_eq(svp_config_get_double(cfg, "in_channels", 1.0, &d), SVP_OK);
    cr_assert_eq(d, 8.0);
    cr_assert_eq(svp_config_get_bool(cfg, "karras", 0, &b), SVP_OK);
    cr_assert_eq(b, 1);
    cr_assert_eq(svp_config_get_string(cfg, "name", NULL, &s), SVP_OK);
    cr_assert_str_eq(s, "Euler");
    cr_assert_eq(svp_config_get_string(cfg, "trained_betas", "dflt", &s), SVP_OK);
    cr_assert_str_eq(s, "dflt", "null means the default");
    cr_assert_eq(svp_config_has(cfg, "trained_betas"), 0);
    cr_assert_eq(svp_config_require(cfg, required), SVP_OK);
    cr_assert_eq(svp_config_require(cfg, missing), SVP_ERR_BAD_FILE);

    cr_assert_eq(svp_config_get_int_array(cfg, "blocks", arr, 4, &n), SVP_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(arr[1], 64);
    cr_assert_eq(svp_config_get_int_array(cfg, "heads", arr, 4, &n), SVP_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(arr[0], 8);
    cr_assert_eq(svp_config_get_int_array(cfg, "absent", arr, 4, &n), SVP_OK);
    cr_assert_eq(n, 0);
    cr_assert_eq(svp_config_get_int_array(cfg, "blocks", arr, 1, &n),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(svp_config_get_string_array(cfg, "types", strs, 4, &n), SVP_OK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(strs[1], "B");

    /* wrong types: errors, outputs untouched */
    i64 = -7;
    cr_assert_eq(svp_config_get_int(cfg, "sigma_min", 0, &i64), SVP_ERR_BAD_FILE);
    cr_assert_eq(i64, -7);
    cr_assert_eq(svp_config_get_int(cfg, "name", 0, &i64), SVP_ERR_BAD_FILE);
    cr_assert_eq(svp_config_get_double(cfg, "name", 0, &d), SVP_ERR_BAD_FILE);
    cr_assert_eq(svp_config_get_bool(cfg, "in_channels", 0, &b), SVP_ERR_BAD_FILE);
    cr_assert_eq(svp_config_get_string(cfg, "blocks", NULL, &s), SVP_ERR_BAD_FILE);
    cr_assert_eq(svp_config_get_int_array(cfg, "types", arr, 4, &n),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(svp_config_get_string_array(cfg, "blocks", strs, 4, &n),
                 SVP_ERR_BAD_FILE);
    svp_config_destroy(cfg);
}

Test(config, rejects_malformed)
{
    svp_config_h cfg = NULL;

    cr_assert_eq(svp_config_parse("{\"a\": 1,}", "bad.json", &cfg),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(svp_config_parse("[1]", "arr.json", &cfg), SVP_ERR_BAD_FILE);
    cr_assert_eq(svp_config_parse("{\"a\": 1, \"a\": 2}", "dup.json", &cfg),
                 SVP_ERR_BAD_FILE);
    cr_assert_null(cfg);
    cr_assert_eq(svp_config_load("/nonexistent/config.json", &cfg),
                 SVP_ERR_NOT_FOUND);
}

Test(config, golden_unet_config)
{
    const char  *dir = golden_dir();
    svp_config_h cfg;
    char         path[1024];
    int64_t      blocks[8], heads[8];
    const char  *types[8];
    int          n, nh, nt;

    snprintf(path, sizeof(path), "%s/pipeline_tiny/unet/config.json", dir);
    cr_assert_eq(svp_config_load(path, &cfg), SVP_OK);
    cr_assert_eq(svp_config_get_int_array(cfg, "block_out_channels", blocks, 8, &n),
                 SVP_OK);
    cr_assert_gt(n, 0);
    cr_assert_eq(svp_config_get_int_array(cfg, "num_attention_heads", heads, 8, &nh),
                 SVP_OK);
    cr_assert(nh == 1 || nh == n);
    cr_assert_eq(svp_config_get_string_array(cfg, "down_block_types", types, 8, &nt),
                 SVP_OK);
    cr_assert_eq(nt, n);
    cr_assert(strstr(types[0], "SpatioTemporal") != NULL);
    svp_config_destroy(cfg);
}

/*
 * A file truncated after open (another process rewriting it) must not kill
 * the reader with SIGBUS, as touching a page past the end of a mapping
 * would: a tensor still whole in the file loads intact, one cut by the
 * truncation is a clean error naming the file and the tensor.
 */
Test(safetensors, truncated_after_open_no_sigbus, .init = setup_dir,
     .fini = teardown_dir)
{
    svp_safetensors_writer_h wr;
    svp_safetensors_h        st;
    svp_safetensors_info_t   ia, ib;
    svp_tensor_t            *a, *b, *loaded = NULL;
    int64_t                  sa[1] = {65536}; /* 256 KiB: many pages */
    char                     path[128];
    int                      i;

    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 1, sa, &a), SVP_OK);
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 1, sa, &b), SVP_OK);
    for (i = 0; i < 65536; ++i) {
        ((float *)a->data)[i] = (float)i;
        ((float *)b->data)[i] = -(float)i;
    }
    cr_assert_eq(svp_safetensors_writer_create(&wr), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "a", a), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr, "b", b), SVP_OK);
    snprintf(path, sizeof(path), "%s/trunc.safetensors", test_dir);
    cr_assert_eq(svp_safetensors_writer_commit(wr, path), SVP_OK);
    svp_safetensors_writer_destroy(wr);

    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    cr_assert_eq(svp_safetensors_find(st, "a", &ia), SVP_OK);
    cr_assert_eq(svp_safetensors_find(st, "b", &ib), SVP_OK);
    cr_assert_lt(ia.offset, ib.offset, "the writer keeps name order");
    /* cut in the middle of b */
    cr_assert_eq(truncate(path, (off_t)(ib.offset + ib.nbytes / 2)), 0);
    cr_assert_eq(svp_safetensors_load(st, "a", SVP_DTYPE_F32, &loaded), SVP_OK);
    cr_assert_eq(memcmp(loaded->data, a->data, 65536 * sizeof(float)), 0);
    svp_tensor_destroy(loaded);
    loaded = NULL;
    cr_assert_eq(svp_safetensors_load(st, "b", SVP_DTYPE_F32, &loaded),
                 SVP_ERR_BAD_FILE);
    cr_assert_null(loaded);
    svp_safetensors_close(st);

    /* opened after the truncation: a clean error, not a crash */
    cr_assert_neq(svp_safetensors_open(path, &st), SVP_OK);
    svp_tensor_destroy(a);
    svp_tensor_destroy(b);
}

/*
 * A config.json past SVP_CONFIG_LIMIT_BYTES is refused before it is read
 * (a 50 MB one took 13.4 s and 4.0 GB to parse), and the message names the
 * limit; one at the limit loads.
 */
Test(config, size_limit_named, .init = setup_dir, .fini = teardown_dir)
{
    char         path[512], log[1024] = "", *text;
    svp_config_h cfg = NULL;
    FILE        *f, *logf = tmpfile();
    size_t       n;

    cr_assert_not_null(logf);
    svp_log_set_stream(logf);
    text = malloc(SVP_CONFIG_LIMIT_BYTES + 1);
    cr_assert_not_null(text);
    memset(text, ' ', SVP_CONFIG_LIMIT_BYTES + 1);
    memcpy(text, "{\"a\": 1}", 8);
    snprintf(path, sizeof(path), "%s/config.json", test_dir);
    for (int over = 1; over >= 0; --over) {
        f = fopen(path, "w");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(text, 1, SVP_CONFIG_LIMIT_BYTES + over, f),
                     (size_t)SVP_CONFIG_LIMIT_BYTES + over);
        fclose(f);
        cr_expect_eq(svp_config_load(path, &cfg), over ? SVP_ERR_BAD_FILE : SVP_OK);
        svp_config_destroy(cfg);
        cfg = NULL;
    }
    free(text);
    rewind(logf);
    n      = fread(log, 1, sizeof(log) - 1, logf);
    log[n] = '\0';
    cr_expect_not_null(strstr(log, "a JSON config of 1048577 bytes: over the "
                                   "size limit of 1048576 bytes"),
                       "%s", log);
    svp_log_set_stream(NULL);
    fclose(logf);
}
