/*
 * comm.gpu_direct: which path a device frame takes (src/comm/comm_path.h),
 * and what the UCX context here reports it can move.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "comm/comm.h"
#include "comm/comm_path.h"
#include "rt/rt.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(comm_path, host_frames_ignore_the_key)
{
    svp_comm_gpu_direct_t modes[] = {SVP_COMM_GPU_DIRECT_AUTO,
                                     SVP_COMM_GPU_DIRECT_ON,
                                     SVP_COMM_GPU_DIRECT_OFF};
    svp_comm_path_t       path;
    char                  err[256];
    int                   m, cuda;

    /* the CPU backend is unchanged: host, whatever UCX can do */
    for (m = 0; m < 3; ++m) {
        for (cuda = 0; cuda < 2; ++cuda) {
            path = SVP_COMM_PATH_STAGED;
            cr_assert_eq(svp_comm_path_select(modes[m], 0, cuda, &path, err,
                                              sizeof(err)),
                         SVP_OK);
            cr_assert_eq(path, SVP_COMM_PATH_HOST);
        }
    }
}

Test(comm_path, device_frames)
{
    svp_comm_path_t path;
    char            err[256] = "";

    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_AUTO, 1, 1, &path, err,
                                      sizeof(err)),
                 SVP_OK);
    cr_assert_eq(path, SVP_COMM_PATH_DEVICE);
    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_AUTO, 1, 0, &path, err,
                                      sizeof(err)),
                 SVP_OK);
    cr_assert_eq(path, SVP_COMM_PATH_STAGED);
    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_ON, 1, 1, &path, err,
                                      sizeof(err)),
                 SVP_OK);
    cr_assert_eq(path, SVP_COMM_PATH_DEVICE);
    /* off stages even where UCX could move device memory */
    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_OFF, 1, 1, &path, err,
                                      sizeof(err)),
                 SVP_OK);
    cr_assert_eq(path, SVP_COMM_PATH_STAGED);
    cr_assert_str_eq(svp_comm_path_name(SVP_COMM_PATH_STAGED), "staged");
    cr_assert_str_eq(svp_comm_path_name(SVP_COMM_PATH_DEVICE), "device");
}

Test(comm_path, on_without_ucx_cuda_is_an_error)
{
    svp_comm_path_t path     = SVP_COMM_PATH_HOST;
    char            err[256] = "";

    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_ON, 1, 0, &path, err,
                                      sizeof(err)),
                 SVP_ERR_UNSUPPORTED);
    cr_assert(strstr(err,
                     "comm.gpu_direct is on but this UCX cannot move cuda memory") !=
                  NULL,
              "%s", err);
    cr_assert_eq(path, SVP_COMM_PATH_HOST, "path written on failure");
}

/* The context's own answer agrees with what ucx_info lists: a cuda memory
 * domain or not. */
Test(comm_path, ucx_reports_its_memory_types)
{
    svp_comm_params_t params = {.field_mask = SVP_COMM_PARAM_FIELD_JOB_ID,
                                .job_id     = 1};
    svp_rt_h          rt;
    svp_comm_h        comm;
    FILE             *f;
    char              line[512];
    int               cuda_md = 0;

    f = popen("ucx_info -d 2>/dev/null", "r");
    if (f == NULL) {
        cr_skip_test("cannot run ucx_info");
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, "Memory domain:") != NULL && strstr(line, "cuda") != NULL) {
            cuda_md = 1;
        }
    }
    if (pclose(f) != 0) {
        cr_skip_test("ucx_info -d failed");
    }
    unsetenv("PMIX_NAMESPACE");
    unsetenv("UCX_TLS");
    cr_assert_eq(svp_rt_init(NULL, &rt), SVP_OK);
    cr_assert_eq(svp_comm_create(rt, &params, &comm), SVP_OK);
    cr_assert_eq(svp_comm_ucx_cuda(comm), cuda_md,
                 "ucx_info %s a cuda memory domain", cuda_md ? "lists" : "lists no");
    svp_comm_destroy(comm);
    svp_rt_cleanup(rt);
}

/*
 * A stand-in for device memory, so that the staging path runs on the CPU:
 * "device" buffers are host buffers the test tracks, and only the copy
 * functions may move bytes between them and the frame's host copy.
 */
typedef struct {
    int    allocs, frees, to_host, to_device;
    size_t bytes_up, bytes_down;
} fake_dev_t;

static svp_status_t fake_alloc(void *ctx, size_t bytes, void **ptr_p)
{
    fake_dev_t *d = ctx;

    ++d->allocs;
    return (posix_memalign(ptr_p, 64, bytes) == 0) ? SVP_OK : SVP_ERR_NO_MEMORY;
}

static void fake_free(void *ctx, void *ptr)
{
    ++((fake_dev_t *)ctx)->frees;
    free(ptr);
}

static svp_status_t fake_to_host(void *ctx, void *host, const void *dev, size_t n)
{
    fake_dev_t *d = ctx;

    ++d->to_host;
    d->bytes_down += n;
    memcpy(host, dev, n);
    return SVP_OK;
}

static svp_status_t fake_to_device(void *ctx, void *dev, const void *host, size_t n)
{
    fake_dev_t *d = ctx;

    ++d->to_device;
    d->bytes_up += n;
    memcpy(dev, host, n);
    return SVP_OK;
}

static svp_comm_h device_comm(fake_dev_t *d, svp_comm_gpu_direct_t mode,
                              svp_rt_h *rt_p, svp_status_t *status_p)
{
    static svp_devmem_t mem;
    svp_comm_params_t   params = {
          .field_mask = SVP_COMM_PARAM_FIELD_JOB_ID | SVP_COMM_PARAM_FIELD_TRANSPORT |
                        SVP_COMM_PARAM_FIELD_DEVICE,
          .job_id     = 0x5eed,
          .transport  = "self,posix",
          .device     = &mem,
          .gpu_direct = mode,
    };
    svp_comm_h comm = NULL;

    mem = (svp_devmem_t){.ctx       = d,
                         .alloc     = fake_alloc,
                         .free      = fake_free,
                         .to_host   = fake_to_host,
                         .to_device = fake_to_device};
    unsetenv("PMIX_NAMESPACE");
    unsetenv("UCX_TLS");
    cr_assert_eq(svp_rt_init(NULL, rt_p), SVP_OK);
    *status_p = svp_comm_create(*rt_p, &params, &comm);
    return comm;
}

static svp_comm_frame_desc_t small_desc(void)
{
    svp_comm_frame_desc_t desc = {.num_tensors = 2};

    desc.tensors[0] = (svp_comm_tensor_desc_t){.dtype = 1,
                                               .ndim  = 3,
                                               .shape = {2, 5, 7},
                                               .bytes = 2 * 5 * 7 * 4};
    desc.tensors[1] = (svp_comm_tensor_desc_t){.dtype = 1,
                                               .ndim  = 1,
                                               .shape = {33},
                                               .bytes = 33 * 4};
    return desc;
}

Test(comm_path, staged_device_frames_cross_intact)
{
    fake_dev_t   d = {0};
    svp_rt_h     rt;
    svp_status_t status;
    svp_comm_h   comm = device_comm(&d, SVP_COMM_GPU_DIRECT_OFF, &rt, &status);
    svp_comm_frame_desc_t desc = small_desc();
    svp_comm_frame_h      out, in;
    svp_comm_req_h        sreq, rreq;
    float                *x, *y;
    size_t                i, n = desc.tensors[0].bytes / 4;

    cr_assert_eq(status, SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_CUDA,
                                       &out),
                 SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_CUDA, &in),
                 SVP_OK);
    cr_assert_eq(d.allocs, 2);
    /* the tensors are the "device" buffer: written as a kernel would */
    x = svp_comm_frame_data(out, 0);
    for (i = 0; i < n; ++i) {
        x[i] = (float)i * 0.5f - 3.0f;
    }
    d.to_host = d.to_device = 0;
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 9, 4, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 9, 4, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 5.0), SVP_OK);
    /* staged: one copy down on the sender, one up on the receiver */
    cr_assert_eq(d.to_host, 1);
    cr_assert_eq(d.to_device, 1);
    y = svp_comm_frame_data(in, 0);
    cr_assert_eq(memcmp(x, y, desc.tensors[0].bytes), 0);

    /* the same frames again: the staged payload replaces what was there */
    memset(y, 0, desc.tensors[0].bytes);
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 9, 5, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 9, 5, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 5.0), SVP_OK);
    cr_assert_eq(memcmp(x, y, desc.tensors[0].bytes), 0);

    svp_comm_frame_destroy(in);
    svp_comm_frame_destroy(out);
    cr_assert_eq(d.frees, 2);
    svp_comm_destroy(comm);
    svp_rt_cleanup(rt);
}

Test(comm_path, staged_mismatch_leaves_device_untouched)
{
    fake_dev_t   d = {0};
    svp_rt_h     rt;
    svp_status_t status;
    svp_comm_h   comm = device_comm(&d, SVP_COMM_GPU_DIRECT_AUTO, &rt, &status);
    svp_comm_frame_desc_t desc = small_desc();
    svp_comm_frame_h      in;
    svp_comm_req_h        sreq, rreq;
    void                 *raw;
    size_t                len = svp_comm_frame_size(&desc);
    svp_comm_frame_h      out;

    /* auto without UCX cuda support (this UCX, self/posix) stages */
    cr_assert_eq(status, SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_CUDA, &in),
                 SVP_OK);
    /* header checks hold on this path: a frame of another step is refused
     * (named field by field) before anything is copied to the device */
    cr_assert_eq(posix_memalign(&raw, 64, len), 0);
    memset(raw, 0x5a, len);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, raw, len, SVP_COMM_MEM_HOST,
                                       &out),
                 SVP_OK);
    memset(svp_comm_frame_data(in, 1), 0x11, desc.tensors[1].bytes);
    d.to_device = 0;
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 1, 2, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 1, 3, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);
    cr_assert_neq(svp_comm_wait(comm, rreq, 0.5), SVP_OK);
    cr_assert_eq(d.to_device, 0, "a refused frame reached the device");
    cr_assert_eq(((unsigned char *)svp_comm_frame_data(in, 1))[0], 0x11);
    svp_comm_frame_destroy(out);
    svp_comm_frame_destroy(in);
    svp_comm_destroy(comm);
    svp_rt_cleanup(rt);
    free(raw);
}

Test(comm_path, gpu_direct_on_needs_ucx_cuda)
{
    fake_dev_t   d = {0};
    svp_rt_h     rt;
    svp_status_t status;
    svp_comm_h   comm = device_comm(&d, SVP_COMM_GPU_DIRECT_ON, &rt, &status);

    if (status == SVP_OK) {
        svp_comm_destroy(comm);
        svp_rt_cleanup(rt);
        cr_skip_test("this UCX moves cuda memory: on is honoured");
    }
    cr_assert_eq(status, SVP_ERR_UNSUPPORTED);
    svp_rt_cleanup(rt);
}

Test(comm_path, device_frame_needs_device_services)
{
    svp_comm_params_t     params = {.field_mask = SVP_COMM_PARAM_FIELD_TRANSPORT,
                                    .transport  = "self,posix"};
    svp_comm_frame_desc_t desc   = small_desc();
    svp_comm_frame_h      f;
    svp_rt_h              rt;
    svp_comm_h            comm;

    unsetenv("PMIX_NAMESPACE");
    cr_assert_eq(svp_rt_init(NULL, &rt), SVP_OK);
    cr_assert_eq(svp_comm_create(rt, &params, &comm), SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_CUDA, &f),
                 SVP_ERR_INVALID_PARAM);
    svp_comm_destroy(comm);
    svp_rt_cleanup(rt);
}
