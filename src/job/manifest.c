/*
 * The manifest of samples: a JSONL file, one sample per line, each line
 * held to the spec keys' limits and every output name to be unique (see
 * samples.h).  Outside input: tests/fuzz has its target.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/samples.h"
#include "job/samples_int.h"
#include "common/util.h"
#include "common/str.h"
#include "common/errf.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The manifest's keys; the numeric ones take their limits from the spec key
 * of the same name, so a line is held to what the spec would be. */
static const char *const svp_samples_manifest_keys[] = {"image",
                                                        "seed",
                                                        "fps",
                                                        "motion_bucket_id",
                                                        "noise_aug_strength",
                                                        "min_guidance",
                                                        "max_guidance",
                                                        "name",
                                                        NULL};

static const char *svp_samples_suggest(const char *key)
{
    const char *best = NULL;
    int         i, d, bestd = 4;

    for (i = 0; svp_samples_manifest_keys[i] != NULL; ++i) {
        d = svp_str_distance(key, svp_samples_manifest_keys[i]);
        if (d < bestd) {
            bestd = d;
            best  = svp_samples_manifest_keys[i];
        }
    }
    return best;
}

static const char *svp_samples_json_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* An output name: a plain file name of letters, digits, '.', '-', '_'. */
const char *svp_job_samples_name_reserved(const char *name)
{
    if (strncmp(name, "run.", 4) == 0 || strcmp(name, "run") == 0) {
        return "the run records are run.json and run.*.json";
    }
    if (strncmp(name, "task.", 5) == 0 || strcmp(name, "task") == 0) {
        return "the task records are task.json and task.*.json";
    }
    if (strncmp(name, "lease.", 6) == 0 || strcmp(name, "lease") == 0) {
        return "an output directory's lease is lease.json (or lease.*.json)";
    }
    if (strstr(name, ".tmp.") != NULL ||
        (strlen(name) >= 4 && strcmp(name + strlen(name) - 4, ".tmp") == 0)) {
        return "names with '.tmp.' are a run's temporaries, removed at start";
    }
    if (strncmp(name, "profile", 7) == 0) {
        return "profile files are the run's own";
    }
    if (strcmp(name, "staging") == 0) {
        return "staging is the folder where output.format webdataset's samples wait";
    }
    if (strncmp(name, "shard-", 6) == 0 || strcmp(name, "shards") == 0 ||
        strncmp(name, "shards.", 7) == 0) {
        return "shard-* and shards.json are output.format webdataset's shards and listing";
    }
    return NULL;
}

static int svp_samples_name_ok(const char *s)
{
    size_t i, n = strlen(s);

    if (n == 0 || n > 200 || s[0] == '.') {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_')) {
            return 0;
        }
    }
    return 1;
}

/* One numeric key of a manifest line, held to the spec key's limits. */
static svp_status_t svp_samples_number(const char *where, const char *key, json_t *v,
                                       int integer, double *out, char *errbuf,
                                       int errlen)
{
    char   path[64];
    double d, lo = 0, hi = 0;
    int    limited;

    snprintf(path, sizeof(path), "video.%s", key);
    limited = svp_spec_key_limits(path, &lo, &hi);
    if (integer ? !json_is_integer(v) : !json_is_number(v)) {
        svp_errf(errbuf, errlen, "%s: key '%s': expected %s, found %s", where, key,
                 integer ? "an integer" : "a number", svp_samples_json_type(v));
        return SVP_ERR_SPEC;
    }
    d = json_number_value(v);
    if (limited && (d < lo || d > hi || !isfinite(d))) {
        svp_errf(errbuf, errlen,
                 "%s: key '%s': expected a number in [%g, %g], "
                 "found %g",
                 where, key, lo, hi, d);
        return SVP_ERR_SPEC;
    }
    *out = d;
    return SVP_OK;
}

/* One line of the manifest into *p (already holding the spec's values). */
static svp_status_t svp_samples_manifest_line(const char *where, const char *folder,
                                              const svp_pipe_path_map_t *map,
                                              json_t *obj, svp_job_samples_t *list,
                                              svp_job_sample_params_t *p,
                                              char *errbuf, int errlen)
{
    const char  *key, *hint, *s, *reserved;
    json_t      *v;
    double       d;
    char         path[4096], here[4096];
    struct stat  sb;
    svp_status_t status;

    if (!json_is_object(obj)) {
        svp_errf(errbuf, errlen,
                 "%s: expected an object like "
                 "{\"image\": \"a.png\"}, found %s",
                 where, svp_samples_json_type(obj));
        return SVP_ERR_SPEC;
    }
    json_object_foreach(obj, key, v)
    {
        int k, known = 0;
        for (k = 0; svp_samples_manifest_keys[k] != NULL; ++k) {
            known |= !strcmp(key, svp_samples_manifest_keys[k]);
        }
        if (!known) {
            hint = svp_samples_suggest(key);
            if (hint != NULL) {
                svp_errf(errbuf, errlen,
                         "%s: unknown key '%s' (did you mean "
                         "'%s'?)",
                         where, key, hint);
            } else {
                svp_errf(errbuf, errlen,
                         "%s: unknown key '%s' (a line takes "
                         "image, seed, fps, motion_bucket_id, "
                         "noise_aug_strength, min_guidance, max_guidance, "
                         "name)",
                         where, key);
            }
            return SVP_ERR_SPEC;
        }
    }
    v = json_object_get(obj, "image");
    if (v == NULL) {
        svp_errf(errbuf, errlen,
                 "%s: key 'image': expected an image path, "
                 "found none",
                 where);
        return SVP_ERR_SPEC;
    }
    if (!json_is_string(v) || json_string_length(v) == 0) {
        svp_errf(errbuf, errlen,
                 "%s: key 'image': expected an image path, "
                 "found %s",
                 where,
                 json_is_string(v) ? "an empty string" : svp_samples_json_type(v));
        return SVP_ERR_SPEC;
    }
    s = json_string_value(v);
    if (s[0] == '/' || folder[0] == '\0') {
        snprintf(path, sizeof(path), "%s", s);
    } else {
        snprintf(path, sizeof(path), "%s/%s", folder, s);
    }
    if (map != NULL && !map->fn(map->arg, path, here, sizeof(here))) {
        svp_errf(errbuf, errlen, "%s: key 'image': %s %s", where, path, map->unseen);
        return SVP_ERR_SPEC;
    }
    if (stat((map != NULL) ? here : path, &sb) != 0) {
        svp_errf(errbuf, errlen, "%s: key 'image': cannot open %s: %s", where, path,
                 strerror(errno));
        return SVP_ERR_NOT_FOUND;
    }
    if (S_ISDIR(sb.st_mode)) {
        svp_errf(errbuf, errlen,
                 "%s: key 'image': expected an image file, "
                 "found the folder %s",
                 where, path);
        return SVP_ERR_NOT_FOUND;
    }
    status = svp_job_samples_add_image(list, path);
    if (status != SVP_OK) {
        return status;
    }
    p->image = list->nimages - 1;

    if ((v = json_object_get(obj, "seed")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            svp_errf(errbuf, errlen,
                     "%s: key 'seed': expected a non-negative "
                     "integer (at most 18446744073709551615), found %s",
                     where,
                     json_is_integer(v) ? "a negative one"
                                        : svp_samples_json_type(v));
            return SVP_ERR_SPEC;
        }
        p->seed = (uint64_t)json_integer_value(v);
    }
#define SVP_SAMPLES_NUM(_key, _int, _field, _type) \
    if ((v = json_object_get(obj, _key)) != NULL) { \
        status = svp_samples_number(where, _key, v, _int, &d, errbuf, errlen); \
        if (status != SVP_OK) { \
            return status; \
        } \
        p->_field = (_type)d; \
    }
    SVP_SAMPLES_NUM("fps", 1, fps, int)
    SVP_SAMPLES_NUM("motion_bucket_id", 1, motion_bucket_id, int)
    SVP_SAMPLES_NUM("noise_aug_strength", 0, noise_aug_strength, double)
    SVP_SAMPLES_NUM("min_guidance", 0, min_guidance, double)
    SVP_SAMPLES_NUM("max_guidance", 0, max_guidance, double)
#undef SVP_SAMPLES_NUM
    if (p->min_guidance > p->max_guidance) {
        svp_errf(errbuf, errlen,
                 "%s: key 'min_guidance': expected at most "
                 "max_guidance (%g), found %g",
                 where, p->max_guidance, p->min_guidance);
        return SVP_ERR_SPEC;
    }
    if ((v = json_object_get(obj, "name")) != NULL) {
        if (json_is_string(v) && (reserved = svp_job_samples_name_reserved(
                                      json_string_value(v))) != NULL) {
            svp_errf(errbuf, errlen, "%s: key 'name': '%s' is svdpipe's own: %s",
                     where, json_string_value(v), reserved);
            return SVP_ERR_SPEC;
        }
        if (!json_is_string(v) || !svp_samples_name_ok(json_string_value(v))) {
            svp_errf(errbuf, errlen,
                     "%s: key 'name': expected a file name of "
                     "letters, digits, '.', '-' and '_' (not starting with "
                     "'.'), found %s%s%s",
                     where, json_is_string(v) ? "'" : "",
                     json_is_string(v) ? json_string_value(v)
                                       : svp_samples_json_type(v),
                     json_is_string(v) ? "'" : "");
            return SVP_ERR_SPEC;
        }
        p->name = svp_strdup(json_string_value(v));
        if (p->name == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
    }
    return SVP_OK;
}

typedef struct {
    const char *name;
    int         index;
} svp_samples_named_t;

static int svp_samples_cmp_named(const void *a, const void *b)
{
    const svp_samples_named_t *x = a, *y = b;
    int                        c = strcmp(x->name, y->name);

    return (c != 0) ? c : x->index - y->index;
}

/* Two samples may not write the same output: every final name is unique. */
static svp_status_t svp_samples_check_names(const svp_spec_t  *spec,
                                            svp_job_samples_t *list, char *errbuf,
                                            int errlen)
{
    svp_samples_named_t *named;
    char(*dflt)[24] = NULL;
    int          i, n = 0, ndflt = 0;
    svp_status_t status = SVP_OK;

    for (i = 0; i < list->count; ++i) {
        n += (list->items[i].name != NULL);
    }
    if (n == 0) {
        return SVP_OK;
    }
    named = malloc((size_t)list->count * sizeof(*named));
    dflt  = malloc((size_t)(list->count - n + 1) * sizeof(*dflt));
    if (named == NULL || dflt == NULL) {
        free(named);
        free(dflt);
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < list->count; ++i) {
        if (list->items[i].name != NULL) {
            named[i].name = list->items[i].name;
        } else {
            snprintf(dflt[ndflt], sizeof(dflt[ndflt]), "sample_%06d", i);
            named[i].name = dflt[ndflt++];
        }
        named[i].index = i;
    }
    qsort(named, (size_t)list->count, sizeof(*named), svp_samples_cmp_named);
    for (i = 1; i < list->count; ++i) {
        if (strcmp(named[i - 1].name, named[i].name) == 0) {
            const svp_job_sample_params_t *a = &list->items[named[i - 1].index];
            const svp_job_sample_params_t *b = &list->items[named[i].index];
            svp_errf(errbuf, errlen,
                     "%s:%d: key 'name': '%s' is also the "
                     "output of line %d",
                     spec->video.manifest, b->line, named[i].name, a->line);
            status = SVP_ERR_SPEC;
            break;
        }
    }
    free(named);
    free(dflt);
    return status;
}

/*
 * A seed is any 64-bit unsigned integer, in a manifest as in the spec; jansson
 * reads integers as signed 64-bit and refuses the line ("too big integer")
 * for a seed past 2^63 - 1.  Such a seed, the value of the line's top-level
 * "seed" key written as plain digits, is read here: its digits become "0"
 * and blanks in line (jansson reads the rest) and the value goes into
 * *seed_p.  Returns 1 when replaced, 0 when there is none to replace, -1
 * when the digits pass 2^64 - 1 (copied, cut, into found).
 */
static int svp_samples_big_seed(char *line, uint64_t *seed_p, char *found,
                                size_t found_len)
{
    char    *p = line, *key = NULL, *digits;
    uint64_t v     = 0;
    int      depth = 0, overflow = 0;

    for (; *p != '\0'; ++p) {
        if (*p == '"') {
            char *start = ++p;

            while (*p != '\0' && *p != '"') {
                p += (*p == '\\' && p[1] != '\0') ? 2 : 1;
            }
            if (*p == '\0') {
                return 0;
            }
            key = (depth == 1 && p - start == 4 && !strncmp(start, "seed", 4))
                      ? p
                      : NULL;
            continue;
        }
        if (*p == '{' || *p == '[') {
            ++depth;
        } else if (*p == '}' || *p == ']') {
            --depth;
        } else if (*p == ':' && key != NULL) {
            for (digits = p + 1; *digits == ' ' || *digits == '\t'; ++digits) {
            }
            for (p = digits; *p >= '0' && *p <= '9'; ++p) {
                overflow |= (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10);
                v = v * 10 + (uint64_t)(*p - '0');
            }
            if (p == digits || *p == '.' || *p == 'e' || *p == 'E' ||
                (!overflow && v <= (uint64_t)INT64_MAX)) {
                return 0; /* jansson's to read, or to refuse */
            }
            if (overflow) {
                snprintf(found, found_len, "%.*s", (int)(p - digits), digits);
                return -1;
            }
            digits[0] = '0';
            memset(digits + 1, ' ', (size_t)(p - digits - 1));
            *seed_p = v;
            return 1;
        } else if (*p != ' ' && *p != '\t' && *p != ',') {
            key = NULL;
        }
    }
    return 0;
}

svp_status_t svp_job_samples_read_manifest(const svp_spec_t          *spec,
                                           const svp_pipe_path_map_t *map,
                                           svp_job_samples_t **list_p, char *errbuf,
                                           int errlen)
{
    const char              *file = spec->video.manifest;
    svp_job_samples_t       *list;
    svp_job_sample_params_t *grown;
    char                     folder[4096], where[4200], *line = NULL, *slash, *s;
    char                     found[64];
    uint64_t                 big_seed = 0;
    int                      big;
    size_t                   cap = 0, room = 64;
    json_error_t             jerr;
    json_t                  *obj;
    FILE                    *f;
    int                      lineno = 0;
    svp_status_t             status = SVP_OK;

    f = fopen(file, "r");
    if (f == NULL) {
        svp_errf(errbuf, errlen, "%s: video.manifest: cannot open %s: %s",
                 spec->file, file, strerror(errno));
        return SVP_ERR_NOT_FOUND;
    }
    snprintf(folder, sizeof(folder), "%s", file);
    slash = strrchr(folder, '/');
    if (slash != NULL) {
        *slash = '\0';
    } else {
        folder[0] = '\0';
    }
    list = svp_job_samples_alloc((int)room);
    if (list == NULL) {
        fclose(f);
        return SVP_ERR_NO_MEMORY;
    }
    list->count = 0;
    while (getline(&line, &cap, f) >= 0) {
        ++lineno;
        for (s = line; *s == ' ' || *s == '\t'; ++s) {
        }
        if (*s == '\n' || *s == '\r' || *s == '\0' || *s == '#') {
            continue;
        }
        snprintf(where, sizeof(where), "%s:%d", file, lineno);
        if (list->count == 1000000) {
            svp_errf(errbuf, errlen, "%s: expected at most 1000000 samples", where);
            status = SVP_ERR_SPEC;
            break;
        }
        if ((size_t)list->count == room) {
            grown = realloc(list->items, 2 * room * sizeof(*grown));
            if (grown == NULL) {
                status = SVP_ERR_NO_MEMORY;
                break;
            }
            list->items = grown;
            room *= 2;
        }
        big = svp_samples_big_seed(s, &big_seed, found, sizeof(found));
        if (big < 0) {
            svp_errf(errbuf, errlen,
                     "%s: key 'seed': expected a non-negative "
                     "integer (at most 18446744073709551615), found %s",
                     where, found);
            status = SVP_ERR_SPEC;
            break;
        }
        obj = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
        if (obj == NULL) {
            svp_errf(errbuf, errlen,
                     "%s:%d: expected one JSON object per line: "
                     "%s",
                     where, jerr.column, jerr.text);
            status = SVP_ERR_SPEC;
            break;
        }
        svp_job_samples_defaults(spec, &list->items[list->count]);
        list->items[list->count].line = lineno;
        list->count++;
        status =
            svp_samples_manifest_line(where, folder, map, obj, list,
                                      &list->items[list->count - 1], errbuf, errlen);
        if (big > 0) {
            list->items[list->count - 1].seed = big_seed;
        }
        json_decref(obj);
        if (status != SVP_OK) {
            break;
        }
    }
    free(line);
    fclose(f);
    if (status == SVP_OK && list->count == 0) {
        svp_errf(errbuf, errlen, "%s: video.manifest: %s holds no sample",
                 spec->file, file);
        status = SVP_ERR_SPEC;
    }
    if (status == SVP_OK) {
        list->total    = list->count;
        list->manifest = svp_strdup(file);
        status         = (list->manifest != NULL)
                             ? svp_samples_check_names(spec, list, errbuf, errlen)
                             : SVP_ERR_NO_MEMORY;
    }
    if (status != SVP_OK) {
        svp_job_samples_destroy(list);
        return status;
    }
    *list_p = list;
    return SVP_OK;
}
