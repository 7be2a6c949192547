/*
 * svdtool compare: how far one tensor is from a reference, the way the tests
 * measure it (max |a - ref| / max |ref|), so a user can check a run against
 * diffusers' output with the same yardstick.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_compare.h"
#include "tensor/safetensors.h"
#include "common/log.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void svdtool_compare_usage(FILE *out)
{
    fprintf(
        out,
        "usage: svdtool compare A.safetensors[:TENSOR] REF.safetensors[:TENSOR] "
        "[--tol REL]\n"
        "Prints max|a-ref|, max|ref| and their ratio; with --tol exits 1 when the\n"
        "ratio exceeds REL.  TENSOR defaults to the file's only tensor.\n");
}

static svp_status_t svdtool_compare_open(const char *arg, svp_safetensors_h *st_p,
                                         svp_tensor_t **t_p)
{
    char                   path[4096], *colon;
    const char            *name;
    svp_safetensors_info_t info;
    svp_status_t           status;

    snprintf(path, sizeof(path), "%s", arg);
    colon = strrchr(path, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    status = svp_safetensors_open(path, st_p);
    if (status != SVP_OK) {
        return status;
    }
    if (colon != NULL) {
        name = colon + 1;
    } else if (svp_safetensors_count(*st_p) == 1) {
        svp_safetensors_info(*st_p, 0, &info);
        name = info.name;
    } else {
        svp_error("%s holds %d tensors: name one as %s:TENSOR", path,
                  svp_safetensors_count(*st_p), path);
        svp_safetensors_close(*st_p);
        return SVP_ERR_INVALID_PARAM;
    }
    status = svp_safetensors_load(*st_p, name, SVP_DTYPE_F32, t_p);
    if (status != SVP_OK) {
        svp_safetensors_close(*st_p);
    }
    return status;
}

int svdtool_compare_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tol", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    svp_safetensors_h sa = NULL, sr = NULL;
    svp_tensor_t     *a = NULL, *r = NULL;
    double            tol = -1, d = 0, m = 0, rel;
    int64_t           i, n;
    int               c, rc = SVP_EXIT_BAD_INPUT;
    char              s1[96], s2[96];

    while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            tol = strtod(optarg, NULL);
            break;
        case 'h':
            svdtool_compare_usage(stdout);
            return 0;
        default:
            svdtool_compare_usage(stderr);
            return SVP_EXIT_BAD_INPUT;
        }
    }
    if (argc - optind != 2) {
        svdtool_compare_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    if (svdtool_compare_open(argv[optind], &sa, &a) != SVP_OK ||
        svdtool_compare_open(argv[optind + 1], &sr, &r) != SVP_OK) {
        goto out;
    }
    n = svp_tensor_numel(a);
    if (n != svp_tensor_numel(r)) {
        svp_error("shapes differ: %s vs %s", svp_tensor_shape_str(a, s1, sizeof(s1)),
                  svp_tensor_shape_str(r, s2, sizeof(s2)));
        goto out;
    }
    for (i = 0; i < n; ++i) {
        d = fmax(d, fabs((double)((float *)a->data)[i] - ((float *)r->data)[i]));
        m = fmax(m, fabs((double)((float *)r->data)[i]));
    }
    rel = (m > 0) ? d / m : d;
    printf("max_abs_diff %.6g max_abs_ref %.6g rel %.6g%s\n", d, m, rel,
           (tol < 0) ? "" : (rel <= tol ? " ok" : " EXCEEDS"));
    rc = (tol >= 0 && !(rel <= tol)) ? SVP_EXIT_FAILURE : 0;
out:
    svp_tensor_destroy(a);
    svp_tensor_destroy(r);
    if (sa) {
        svp_safetensors_close(sa);
    }
    if (sr) {
        svp_safetensors_close(sr);
    }
    return rc;
}
