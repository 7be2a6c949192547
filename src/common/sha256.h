/*
 * SHA-256 (FIPS 180-4) of a byte stream or a file: what identifies a
 * sample's input image wherever the file is seen from (another working
 * directory, a symlink, a container's mount), so that resume recognises a
 * sample by what it was made from, not by how its path was typed.
 */
#ifndef SVP_COMMON_SHA256_H
#define SVP_COMMON_SHA256_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes; /* hashed so far */
    uint8_t  block[64];
    size_t   fill; /* bytes of block in use */
} svp_sha256_t;

void svp_sha256_init(svp_sha256_t *s);
void svp_sha256_update(svp_sha256_t *s, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL. */
void svp_sha256_final(svp_sha256_t *s, char hex[65]);

/* The digest of a regular file's bytes; SVP_ERR_IO (errno kept) if it
 * cannot be read. */
svp_status_t svp_sha256_file(const char *path, char hex[65]);

#endif
