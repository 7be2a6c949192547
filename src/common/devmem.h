/*
 * Device memory services: what the CUDA module offers the core (hand-off
 * frames in device memory, src/comm) through one table.  alloc/free: device
 * memory; to_host / to_device: synchronous copies; host_alloc/host_free:
 * pinned host memory (NULL: ordinary host memory).  ctx is passed to every
 * call (the CUDA module needs none and leaves it NULL; a test may pass host
 * functions with a context of its own).
 */
#ifndef SVP_COMMON_DEVMEM_H
#define SVP_COMMON_DEVMEM_H

#include "common/status.h"

#include <stddef.h>

typedef struct {
    void *ctx;
    svp_status_t (*alloc)(void *ctx, size_t bytes, void **ptr_p);
    void (*free)(void *ctx, void *ptr);
    svp_status_t (*to_host)(void *ctx, void *host, const void *dev, size_t bytes);
    svp_status_t (*to_device)(void *ctx, void *dev, const void *host, size_t bytes);
    svp_status_t (*host_alloc)(void *ctx, size_t bytes, void **ptr_p);
    void (*host_free)(void *ctx, void *ptr);
} svp_devmem_t;

#endif
