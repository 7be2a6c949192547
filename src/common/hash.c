/*
 * The hash of message checksums and job ids (hash.h): 64-bit FNV-1a.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/hash.h"

uint64_t svp_hash_fnv1a(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t             h = 1469598103934665603ULL ^ seed;
    size_t               i;

    for (i = 0; i < len; ++i) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}
