/*
 * SHA-256 as FIPS 180-4 defines it: 64-byte blocks, eight 32-bit words of
 * state, 64 rounds.  Small and plain; it hashes a sample's input image once
 * per output written or checked.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint32_t svp_sha256_k[64] =
    {0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
     0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
     0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
     0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
     0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
     0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
     0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
     0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
     0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
     0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
     0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t svp_sha256_ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void svp_sha256_block(svp_sha256_t *s, const uint8_t *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
    int      i;

    for (i = 0; i < 16; ++i) {
        w[i] = ((uint32_t)p[4 * i] << 24) | ((uint32_t)p[4 * i + 1] << 16) |
               ((uint32_t)p[4 * i + 2] << 8) | (uint32_t)p[4 * i + 3];
    }
    for (i = 16; i < 64; ++i) {
        w[i] = w[i - 16] + w[i - 7] +
               (svp_sha256_ror(w[i - 15], 7) ^ svp_sha256_ror(w[i - 15], 18) ^
                (w[i - 15] >> 3)) +
               (svp_sha256_ror(w[i - 2], 17) ^ svp_sha256_ror(w[i - 2], 19) ^
                (w[i - 2] >> 10));
    }
    a = s->h[0];
    b = s->h[1];
    c = s->h[2];
    d = s->h[3];
    e = s->h[4];
    f = s->h[5];
    g = s->h[6];
    h = s->h[7];
    for (i = 0; i < 64; ++i) {
        t1 = h +
             (svp_sha256_ror(e, 6) ^ svp_sha256_ror(e, 11) ^ svp_sha256_ror(e, 25)) +
             ((e & f) ^ (~e & g)) + svp_sha256_k[i] + w[i];
        t2 = (svp_sha256_ror(a, 2) ^ svp_sha256_ror(a, 13) ^ svp_sha256_ror(a, 22)) +
             ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
    s->h[5] += f;
    s->h[6] += g;
    s->h[7] += h;
}

void svp_sha256_init(svp_sha256_t *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

    memcpy(s->h, h0, sizeof(h0));
    s->bytes = 0;
    s->fill  = 0;
}

void svp_sha256_update(svp_sha256_t *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t         n;

    s->bytes += len;
    while (len > 0) {
        n = 64 - s->fill;
        n = (len < n) ? len : n;
        memcpy(s->block + s->fill, p, n);
        s->fill += n;
        p += n;
        len -= n;
        if (s->fill == 64) {
            svp_sha256_block(s, s->block);
            s->fill = 0;
        }
    }
}

void svp_sha256_final(svp_sha256_t *s, char hex[65])
{
    uint64_t bits = s->bytes * 8;
    uint8_t  pad = 0x80, zero = 0, len[8];
    int      i;

    svp_sha256_update(s, &pad, 1);
    while (s->fill != 56) {
        svp_sha256_update(s, &zero, 1);
    }
    for (i = 0; i < 8; ++i) {
        len[i] = (uint8_t)(bits >> (56 - 8 * i));
    }
    svp_sha256_update(s, len, 8);
    for (i = 0; i < 8; ++i) {
        snprintf(hex + 8 * i, 9, "%08x", s->h[i]);
    }
}

svp_status_t svp_sha256_file(const char *path, char hex[65])
{
    svp_sha256_t s;
    char         buf[65536];
    struct stat  sb;
    ssize_t      got;
    int          fd, err;

    errno = 0;
    fd    = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return SVP_ERR_IO;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        err = (errno != 0) ? errno : EINVAL;
        close(fd);
        errno = err;
        return SVP_ERR_IO;
    }
    svp_sha256_init(&s);
    while ((got = read(fd, buf, sizeof(buf))) != 0) {
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            err = errno;
            close(fd);
            errno = err;
            return SVP_ERR_IO;
        }
        svp_sha256_update(&s, buf, (size_t)got);
    }
    close(fd);
    svp_sha256_final(&s, hex);
    return SVP_OK;
}
