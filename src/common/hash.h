/*
 * The hash of message checksums and job ids.
 */
#ifndef SVP_COMMON_HASH_H
#define SVP_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a, used for message checksums and job ids. */
uint64_t svp_hash_fnv1a(const void *data, size_t len, uint64_t seed);

#endif
