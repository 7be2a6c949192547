/*
 * Macros every layer shares: array sizes, minimum and maximum.  The
 * helpers that used to sit beside them have a header each: files
 * (common/file.h), strings (common/str.h), error messages
 * (common/errf.h), thread counts (common/threads.h), hashing
 * (common/hash.h).
 */
#ifndef SVP_COMMON_UTIL_H
#define SVP_COMMON_UTIL_H

#define SVP_ARRAY_SIZE(_a) (sizeof(_a) / sizeof((_a)[0]))
#define SVP_MIN(_a, _b)    (((_a) < (_b)) ? (_a) : (_b))
#define SVP_MAX(_a, _b)    (((_a) > (_b)) ? (_a) : (_b))

#endif
