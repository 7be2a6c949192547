/*
 * Whether the ranks of a job run the same spec (spec_agree.h): the shared
 * keys' dump published and compared with rank 0's key by key, so that a
 * mismatch names the keys and both values.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/spec_agree.h"
#include "jobspec/spec_int.h"

#include "common/log.h"
#include "common/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVP_SPEC_AGREE_KEY "svp.spec.shared"

/* The key table entry a "key: value" line is about; NULL if none. */
static const svp_spec_key_t *svp_spec_line_key(const char *line, size_t len)
{
    char        path[256];
    const char *colon = memchr(line, ':', len);

    if ((colon == NULL) || ((size_t)(colon - line) >= sizeof(path))) {
        return NULL;
    }
    memcpy(path, line, colon - line);
    path[colon - line] = '\0';
    return svp_spec_key_find(path);
}

svp_status_t svp_spec_dump_shared(const svp_spec_t *spec, char **text_p)
{
    const svp_spec_key_t *key;
    svp_status_t          status;
    char                 *all, *out, *line, *nl;
    size_t                len, n = 0;

    status = svp_spec_dump(spec, &all);
    if (status != SVP_OK) {
        return status;
    }
    out = malloc(strlen(all) + 1);
    if (out == NULL) {
        free(all);
        return SVP_ERR_NO_MEMORY;
    }
    for (line = all; *line != '\0'; line += len) {
        nl  = strchr(line, '\n');
        len = (nl != NULL) ? (size_t)(nl - line) + 1 : strlen(line);
        key = svp_spec_line_key(line, len);
        if ((key != NULL) && (key->flags & SVP_SPEC_KEY_F_PER_RANK)) {
            continue;
        }
        memcpy(out + n, line, len);
        n += len;
    }
    out[n] = '\0';
    free(all);
    *text_p = out;
    return SVP_OK;
}

/* The value of `path` in a dump ("" when absent), up to the end of its line. */
static const char *svp_spec_find_value(const char *text, const char *path,
                                       size_t *len_p)
{
    size_t      plen = strlen(path);
    const char *line, *nl;

    for (line = text; *line != '\0'; line = nl + 1) {
        nl = strchr(line, '\n');
        if (nl == NULL) {
            nl = line + strlen(line);
        }
        if ((strncmp(line, path, plen) == 0) && (line[plen] == ':')) {
            line += plen + 1;
            while (*line == ' ') {
                ++line;
            }
            *len_p = nl - line;
            return line;
        }
        if (*nl == '\0') {
            break;
        }
    }
    *len_p = 0;
    return NULL;
}

int svp_spec_diff(const char *mine, const char *theirs, char *buf, size_t len)
{
    const char *a, *b;
    size_t      alen, blen, n = 0;
    int         i, count = 0;

    if (len > 0) {
        buf[0] = '\0';
    }
    for (i = 0; i < svp_spec_num_keys; ++i) {
        const char *path = svp_spec_keys[i].path;

        if (svp_spec_keys[i].flags & SVP_SPEC_KEY_F_PER_RANK) {
            continue;
        }
        a = svp_spec_find_value(mine, path, &alen);
        b = svp_spec_find_value(theirs, path, &blen);
        if ((a == NULL) && (b == NULL)) {
            continue;
        }
        if ((a != NULL) && (b != NULL) && (alen == blen) &&
            (memcmp(a, b, alen) == 0)) {
            continue;
        }
        ++count;
        if (n < len) {
            n += snprintf(buf + n, len - n, "%s%s: %.*s vs %.*s",
                          count > 1 ? "; " : "", path, (int)alen, a != NULL ? a : "",
                          (int)blen, b != NULL ? b : "");
        }
    }
    return count;
}

svp_status_t svp_spec_agree(const svp_spec_t *spec, svp_rt_h rt, uint64_t *job_id_p)
{
    char         diff[2048], *mine;
    void        *theirs = NULL;
    size_t       len;
    svp_status_t status;

    status = svp_spec_dump_shared(spec, &mine);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_rt_put(rt, SVP_SPEC_AGREE_KEY, mine, strlen(mine) + 1);
    if (status == SVP_OK) {
        status = svp_rt_fence(rt);
    }
    if ((status == SVP_OK) && (svp_rt_rank(rt) != 0)) {
        status = svp_rt_get(rt, 0, SVP_SPEC_AGREE_KEY, &theirs, &len);
        if (status == SVP_OK) {
            ((char *)theirs)[len > 0 ? len - 1 : 0] = '\0';
            if (svp_spec_diff(mine, theirs, diff, sizeof(diff)) > 0) {
                svp_error(
                    "%s: rank %d's job spec differs from rank 0's (this rank vs "
                    "rank 0): %s",
                    spec->file, svp_rt_rank(rt), diff);
                status = SVP_ERR_SPEC;
            }
            free(theirs);
        }
    }
    if (status == SVP_OK) {
        *job_id_p = svp_hash_fnv1a(mine, strlen(mine), 0);
    }
    free(mine);
    return status;
}
