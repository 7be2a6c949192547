/*
 * A plain driver for the fuzz targets where libFuzzer is not used: runs
 * every seed file given, then a bounded number of mutations of them
 * (bit flips, byte overwrites with boundary values, truncations, inserted
 * and duplicated runs), from a fixed PRNG seed so that a failure repeats.
 *
 *   fuzz_X [-n RUNS] [-s SEED] SEED_FILE_OR_DIR...
 *
 * A crash or a sanitizer report ends the process; otherwise it exits 0 and
 * prints how many inputs ran.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SVP_FUZZ_MAX_SEEDS 256
#define SVP_FUZZ_MAX_LEN   (1u << 20)

typedef struct {
    uint8_t *data;
    size_t   len;
} svp_fuzz_input_t;

static svp_fuzz_input_t seeds[SVP_FUZZ_MAX_SEEDS];
static int              num_seeds;
static uint64_t         rng = 0x9e3779b97f4a7c15ull;

static uint64_t svp_fuzz_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void svp_fuzz_add_file(const char *path)
{
    FILE    *f;
    uint8_t *buf;
    size_t   len;

    if (num_seeds == SVP_FUZZ_MAX_SEEDS) {
        return;
    }
    f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    buf = malloc(SVP_FUZZ_MAX_LEN);
    len = fread(buf, 1, SVP_FUZZ_MAX_LEN, f);
    fclose(f);
    seeds[num_seeds].data = buf;
    seeds[num_seeds].len  = len;
    ++num_seeds;
}

static void svp_fuzz_add(const char *path)
{
    struct stat    sb;
    struct dirent *de;
    DIR           *dir;
    char           sub[4096];

    if (stat(path, &sb) != 0) {
        perror(path);
        exit(2);
    }
    if (!S_ISDIR(sb.st_mode)) {
        svp_fuzz_add_file(path);
        return;
    }
    dir = opendir(path);
    while ((dir != NULL) && ((de = readdir(dir)) != NULL)) {
        if (de->d_name[0] != '.') {
            snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
            svp_fuzz_add(sub);
        }
    }
    if (dir != NULL) {
        closedir(dir);
    }
}

/* One mutation of in into out (out has room for SVP_FUZZ_MAX_LEN). */
static size_t svp_fuzz_mutate(const svp_fuzz_input_t *in, uint8_t *out)
{
    static const uint8_t special[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '"',
                                      ':',  '[',  '{',  '\n', '-',  '9'};
    size_t len = in->len, pos, n, i, k, rounds = 1 + svp_fuzz_rand() % 4;

    memcpy(out, in->data, len);
    for (k = 0; k < rounds; ++k) {
        pos = (len > 0) ? svp_fuzz_rand() % len : 0;
        switch (svp_fuzz_rand() % 5) {
        case 0: /* bit flip */
            if (len > 0) {
                out[pos] ^= (uint8_t)(1u << (svp_fuzz_rand() % 8));
            }
            break;
        case 1: /* boundary byte */
            if (len > 0) {
                out[pos] = special[svp_fuzz_rand() % sizeof(special)];
            }
            break;
        case 2: /* truncate */
            len = pos;
            break;
        case 3: /* insert random bytes */
            n = 1 + svp_fuzz_rand() % 8;
            if (len + n <= SVP_FUZZ_MAX_LEN) {
                memmove(out + pos + n, out + pos, len - pos);
                for (i = 0; i < n; ++i) {
                    out[pos + i] = (uint8_t)svp_fuzz_rand();
                }
                len += n;
            }
            break;
        default: /* duplicate a run */
            n = (len > pos) ? 1 + svp_fuzz_rand() % (len - pos) : 0;
            n = (n > 64) ? 64 : n;
            if ((n > 0) && (len + n <= SVP_FUZZ_MAX_LEN)) {
                memmove(out + pos + n, out + pos, len - pos);
                len += n;
            }
            break;
        }
    }
    return len;
}

int main(int argc, char **argv)
{
    long     runs = 1000, r;
    uint8_t *buf;
    size_t   len;
    int      i;

    for (i = 1; i < argc; ++i) {
        if ((strcmp(argv[i], "-n") == 0) && (i + 1 < argc)) {
            runs = atol(argv[++i]);
        } else if ((strcmp(argv[i], "-s") == 0) && (i + 1 < argc)) {
            rng = strtoull(argv[++i], NULL, 0) | 1;
        } else {
            svp_fuzz_add(argv[i]);
        }
    }
    /* the empty input is always a seed */
    seeds[num_seeds].data = malloc(1);
    seeds[num_seeds].len  = 0;
    ++num_seeds;
    for (i = 0; i < num_seeds; ++i) {
        LLVMFuzzerTestOneInput(seeds[i].data, seeds[i].len);
    }
    buf = malloc(SVP_FUZZ_MAX_LEN);
    for (r = 0; r < runs; ++r) {
        len = svp_fuzz_mutate(&seeds[svp_fuzz_rand() % num_seeds], buf);
        LLVMFuzzerTestOneInput(buf, len);
    }
    printf("%s: %d seeds, %ld mutations, no crash\n", argv[0], num_seeds, runs);
    free(buf);
    for (i = 0; i < num_seeds; ++i) {
        free(seeds[i].data);
    }
    return 0;
}
