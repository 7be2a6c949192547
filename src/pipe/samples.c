/*
 * The sample list of a job and its shards (see samples.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/samples.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static svp_pipe_samples_t *svp_samples_alloc(int count)
{
    svp_pipe_samples_t *list = calloc(1, sizeof(*list));

    if (list == NULL) {
        return NULL;
    }
    list->items = calloc((size_t)count + 1, sizeof(*list->items));
    if (list->items == NULL) {
        free(list);
        return NULL;
    }
    list->count = count;
    return list;
}

void svp_pipe_samples_destroy(svp_pipe_samples_t *list)
{
    int i;

    if (list == NULL) {
        return;
    }
    for (i = 0; i < list->count; ++i) {
        free(list->items[i].name);
    }
    for (i = 0; i < list->nimages; ++i) {
        free(list->images[i]);
    }
    free(list->images);
    free(list->items);
    free(list->manifest);
    free(list);
}

static svp_status_t svp_samples_add_image(svp_pipe_samples_t *list, const char *path)
{
    char **grown;

    if ((list->nimages & (list->nimages - 1)) == 0) {
        /* doubling at powers of two: a million-line manifest adds in linear time */
        grown = realloc(list->images, SVP_MAX(2 * list->nimages, 1) * sizeof(*grown));
        if (grown == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        list->images = grown;
    }
    list->images[list->nimages] = svp_strdup(path);
    if (list->images[list->nimages] == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    list->nimages++;
    return SVP_OK;
}

/* The spec's values: what a sample takes where its manifest line says nothing. */
static void svp_samples_defaults(const svp_spec_t *spec, svp_pipe_sample_params_t *p)
{
    p->image              = -1;
    p->line               = 0;
    p->name               = NULL;
    p->seed               = spec->seed;
    p->fps                = spec->video.fps;
    p->motion_bucket_id   = spec->video.motion_bucket_id;
    p->noise_aug_strength = spec->video.noise_aug_strength;
    p->min_guidance       = spec->video.min_guidance;
    p->max_guidance       = spec->video.max_guidance;
}

static int svp_samples_is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');

    return dot != NULL && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") ||
                           !strcasecmp(dot, ".jpeg"));
}

static int svp_samples_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * video.inputs: files, or folders whose PNG/JPEG files are taken in name
 * order (so a folder gives the same list on every rank and every run).
 */
static svp_status_t svp_samples_collect_inputs(const svp_spec_t *spec,
                                               const svp_pipe_path_map_t *map,
                                               svp_pipe_samples_t *list,
                                               char *errbuf, int errlen)
{
    struct dirent *de;
    struct stat    sb;
    DIR           *d;
    char           path[4096];
    int            i, first;
    svp_status_t   status;

    for (i = 0; i < spec->video.inputs.count; ++i) {
        const char *in = spec->video.inputs.items[i];
        const char *at = in;    /* where this host sees it */
        char        seen[4096];

        if (map != NULL) {
            if (!map->fn(map->arg, in, seen, sizeof(seen))) {
                svp_errf(errbuf, errlen, "%s: video.inputs[%d]: %s %s", spec->file, i,
                         in, map->unseen);
                return SVP_ERR_NOT_FOUND;
            }
            at = seen;
        }
        if (stat(at, &sb) != 0) {
            svp_errf(errbuf, errlen, "%s: video.inputs[%d]: cannot open %s: %s",
                             spec->file, i, at, strerror(errno));
            return SVP_ERR_NOT_FOUND;
        }
        if (!S_ISDIR(sb.st_mode)) {
            status = svp_samples_add_image(list, in);
            if (status != SVP_OK) {
                return status;
            }
            continue;
        }
        d = opendir(at);
        if (d == NULL) {
            svp_errf(errbuf, errlen, "%s: video.inputs[%d]: cannot read "
                             "directory %s: %s", spec->file, i, at, strerror(errno));
            return SVP_ERR_IO;
        }
        first = list->nimages;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.' || !svp_samples_is_image_name(de->d_name)) {
                continue;
            }
            snprintf(path, sizeof(path), "%s/%s", in, de->d_name);
            status = svp_samples_add_image(list, path);
            if (status != SVP_OK) {
                closedir(d);
                return status;
            }
        }
        closedir(d);
        if (list->nimages == first) {
            svp_errf(errbuf, errlen, "%s: video.inputs[%d]: no .png, .jpg or "
                             ".jpeg file in %s", spec->file, i, at);
            return SVP_ERR_NOT_FOUND;
        }
        qsort(list->images + first, list->nimages - first, sizeof(char *),
              svp_samples_cmp_str);
    }
    return SVP_OK;
}

/* The manifest's keys; the numeric ones take their limits from the spec key
 * of the same name, so a line is held to what the spec would be. */
static const char *const svp_samples_manifest_keys[] = {
    "image", "seed", "fps", "motion_bucket_id", "noise_aug_strength",
    "min_guidance", "max_guidance", "name", NULL
};

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
    case JSON_OBJECT:  return "an object";
    case JSON_ARRAY:   return "a list";
    case JSON_STRING:  return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL:    return "a number";
    case JSON_TRUE:
    case JSON_FALSE:   return "a boolean";
    default:           return "null";
    }
}

/* An output name: a plain file name of letters, digits, '.', '-', '_'. */
const char *svp_pipe_samples_name_reserved(const char *name)
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
    if (strstr(name, ".tmp.") != NULL || (strlen(name) >= 4 &&
                                          strcmp(name + strlen(name) - 4, ".tmp") == 0)) {
        return "names with '.tmp.' are a run's temporaries, removed at start";
    }
    if (strncmp(name, "profile", 7) == 0) {
        return "profile files are the run's own";
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
static svp_status_t svp_samples_number(const char *where, const char *key,
                                       json_t *v, int integer, double *out,
                                       char *errbuf, int errlen)
{
    char                  path[64];
    double                d, lo = 0, hi = 0;
    int                   limited;

    snprintf(path, sizeof(path), "video.%s", key);
    limited = svp_spec_key_limits(path, &lo, &hi);
    if (integer ? !json_is_integer(v) : !json_is_number(v)) {
        svp_errf(errbuf, errlen, "%s: key '%s': expected %s, found %s", where,
                         key, integer ? "an integer" : "a number",
                         svp_samples_json_type(v));
        return SVP_ERR_SPEC;
    }
    d = json_number_value(v);
    if (limited && (d < lo || d > hi || !isfinite(d))) {
        svp_errf(errbuf, errlen, "%s: key '%s': expected a number in [%g, %g], "
                         "found %g", where, key, lo, hi, d);
        return SVP_ERR_SPEC;
    }
    *out = d;
    return SVP_OK;
}

/* One line of the manifest into *p (already holding the spec's values). */
static svp_status_t svp_samples_manifest_line(const char *where, const char *folder,
                                              const svp_pipe_path_map_t *map,
                                              json_t *obj, svp_pipe_samples_t *list,
                                              svp_pipe_sample_params_t *p,
                                              char *errbuf, int errlen)
{
    const char  *key, *hint, *s, *reserved;
    json_t      *v;
    double       d;
    char         path[4096], here[4096];
    struct stat  sb;
    svp_status_t status;

    if (!json_is_object(obj)) {
        svp_errf(errbuf, errlen, "%s: expected an object like "
                         "{\"image\": \"a.png\"}, found %s", where,
                         svp_samples_json_type(obj));
        return SVP_ERR_SPEC;
    }
    json_object_foreach(obj, key, v) {
        int k, known = 0;
        for (k = 0; svp_samples_manifest_keys[k] != NULL; ++k) {
            known |= !strcmp(key, svp_samples_manifest_keys[k]);
        }
        if (!known) {
            hint = svp_samples_suggest(key);
            if (hint != NULL) {
                svp_errf(errbuf, errlen, "%s: unknown key '%s' (did you mean "
                                 "'%s'?)", where, key, hint);
            } else {
                svp_errf(errbuf, errlen, "%s: unknown key '%s' (a line takes "
                                 "image, seed, fps, motion_bucket_id, "
                                 "noise_aug_strength, min_guidance, max_guidance, "
                                 "name)", where, key);
            }
            return SVP_ERR_SPEC;
        }
    }
    v = json_object_get(obj, "image");
    if (v == NULL) {
        svp_errf(errbuf, errlen, "%s: key 'image': expected an image path, "
                         "found none", where);
        return SVP_ERR_SPEC;
    }
    if (!json_is_string(v) || json_string_length(v) == 0) {
        svp_errf(errbuf, errlen, "%s: key 'image': expected an image path, "
                         "found %s", where, json_is_string(v) ? "an empty string"
                                                              : svp_samples_json_type(v));
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
        svp_errf(errbuf, errlen, "%s: key 'image': cannot open %s: %s", where,
                         path, strerror(errno));
        return SVP_ERR_NOT_FOUND;
    }
    if (S_ISDIR(sb.st_mode)) {
        svp_errf(errbuf, errlen, "%s: key 'image': expected an image file, "
                         "found the folder %s", where, path);
        return SVP_ERR_NOT_FOUND;
    }
    status = svp_samples_add_image(list, path);
    if (status != SVP_OK) {
        return status;
    }
    p->image = list->nimages - 1;

    if ((v = json_object_get(obj, "seed")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            svp_errf(errbuf, errlen, "%s: key 'seed': expected a non-negative "
                             "integer (at most 18446744073709551615), found %s",
                             where, json_is_integer(v) ? "a negative one" :
                             svp_samples_json_type(v));
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
        svp_errf(errbuf, errlen, "%s: key 'min_guidance': expected at most "
                         "max_guidance (%g), found %g", where, p->max_guidance,
                         p->min_guidance);
        return SVP_ERR_SPEC;
    }
    if ((v = json_object_get(obj, "name")) != NULL) {
        if (json_is_string(v) &&
            (reserved = svp_pipe_samples_name_reserved(json_string_value(v))) != NULL) {
            svp_errf(errbuf, errlen, "%s: key 'name': '%s' is svdpipe's own: %s",
                     where, json_string_value(v), reserved);
            return SVP_ERR_SPEC;
        }
        if (!json_is_string(v) || !svp_samples_name_ok(json_string_value(v))) {
            svp_errf(errbuf, errlen, "%s: key 'name': expected a file name of "
                             "letters, digits, '.', '-' and '_' (not starting with "
                             "'.'), found %s%s%s", where, json_is_string(v) ? "'" : "",
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
static svp_status_t svp_samples_check_names(const svp_spec_t *spec,
                                            svp_pipe_samples_t *list,
                                            char *errbuf, int errlen)
{
    svp_samples_named_t *named;
    char               (*dflt)[24] = NULL;
    int                  i, n = 0, ndflt = 0;
    svp_status_t         status = SVP_OK;

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
            const svp_pipe_sample_params_t *a = &list->items[named[i - 1].index];
            const svp_pipe_sample_params_t *b = &list->items[named[i].index];
            svp_errf(errbuf, errlen, "%s:%d: key 'name': '%s' is also the "
                             "output of line %d", spec->video.manifest, b->line,
                             named[i].name, a->line);
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
    uint64_t v = 0;
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
                  ? p : NULL;
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
                return 0;   /* jansson's to read, or to refuse */
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

static svp_status_t svp_samples_read_manifest(const svp_spec_t *spec,
                                              const svp_pipe_path_map_t *map,
                                              svp_pipe_samples_t **list_p,
                                              char *errbuf, int errlen)
{
    const char               *file = spec->video.manifest;
    svp_pipe_samples_t       *list;
    svp_pipe_sample_params_t *grown;
    char                      folder[4096], where[4200], *line = NULL, *slash, *s;
    char                      found[64];
    uint64_t                  big_seed = 0;
    int                       big;
    size_t                    cap = 0, room = 64;
    ssize_t                   got;
    json_error_t              jerr;
    json_t                   *obj;
    FILE                     *f;
    int                       lineno = 0;
    svp_status_t              status = SVP_OK;

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
    list = svp_samples_alloc((int)room);
    if (list == NULL) {
        fclose(f);
        return SVP_ERR_NO_MEMORY;
    }
    list->count = 0;
    while ((got = getline(&line, &cap, f)) >= 0) {
        ++lineno;
        for (s = line; *s == ' ' || *s == '\t'; ++s) {
        }
        if (*s == '\n' || *s == '\r' || *s == '\0' || *s == '#') {
            continue;
        }
        snprintf(where, sizeof(where), "%s:%d", file, lineno);
        if (list->count == 1000000) {
            svp_errf(errbuf, errlen, "%s: expected at most 1000000 samples",
                             where);
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
            svp_errf(errbuf, errlen, "%s: key 'seed': expected a non-negative "
                     "integer (at most 18446744073709551615), found %s", where,
                     found);
            status = SVP_ERR_SPEC;
            break;
        }
        obj = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
        if (obj == NULL) {
            svp_errf(errbuf, errlen, "%s:%d: expected one JSON object per line: "
                             "%s", where, jerr.column, jerr.text);
            status = SVP_ERR_SPEC;
            break;
        }
        svp_samples_defaults(spec, &list->items[list->count]);
        list->items[list->count].line = lineno;
        list->count++;
        status = svp_samples_manifest_line(where, folder, map, obj, list,
                                           &list->items[list->count - 1], errbuf,
                                           errlen);
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
        svp_pipe_samples_destroy(list);
        return status;
    }
    *list_p = list;
    return SVP_OK;
}

svp_status_t svp_pipe_samples_create(const svp_spec_t *spec, char *errbuf,
                                     int errlen, svp_pipe_samples_t **list_p)
{
    return svp_pipe_samples_create_mapped(spec, NULL, errbuf, errlen, list_p);
}

svp_status_t svp_pipe_samples_create_mapped(const svp_spec_t *spec,
                                            const svp_pipe_path_map_t *map,
                                            char *errbuf, int errlen,
                                            svp_pipe_samples_t **list_p)
{
    svp_pipe_samples_t *list = NULL, *from = NULL;
    svp_status_t        status;
    int                 n, i, I, S;

    if (spec->video.manifest[0] != '\0') {
        if (spec->video.inputs.count > 0 || spec->video.seeds.count > 0) {
            svp_errf(errbuf, errlen, "%s: video.manifest: expected either a "
                             "manifest or video.inputs/video.seeds, found both",
                             spec->file);
            return SVP_ERR_SPEC;
        }
        status = svp_samples_read_manifest(spec, map, &list, errbuf, errlen);
        if (status != SVP_OK) {
            return status;
        }
        if (spec->samples > list->count) {
            svp_errf(errbuf, errlen, "%s: samples: expected at most the %d "
                             "samples of the manifest %s, found %d", spec->file,
                             list->count, spec->video.manifest, spec->samples);
            svp_pipe_samples_destroy(list);
            return SVP_ERR_SPEC;
        }
        if (spec->samples > 0 && spec->samples < list->count) {
            for (i = spec->samples; i < list->count; ++i) {
                free(list->items[i].name);
            }
            list->count = spec->samples;
        }
        *list_p = list;
        return SVP_OK;
    }

    if (spec->video.inputs.count == 0) {
        if (spec->video.seeds.count > 0) {
            svp_errf(errbuf, errlen, "%s: video.seeds: expected video.inputs "
                             "to go with it (the seeds are per image), found none",
                             spec->file);
            return SVP_ERR_SPEC;
        }
        n    = (spec->samples > 0) ? spec->samples : SVP_PIPE_SAMPLES_DEFAULT;
        list = svp_samples_alloc(n);
        if (list == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        list->total = n;
        for (i = 0; i < n; ++i) {
            svp_samples_defaults(spec, &list->items[i]);
            /* the spec gives one seed: sample i takes seed + i (a
             * conditioning file's sets repeat, each round its own seed;
             * the simulator's samples differ the same way) */
            list->items[i].seed = spec->seed + (uint64_t)i;
        }
        *list_p = list;
        return SVP_OK;
    }

    /* images x seeds */
    from = calloc(1, sizeof(*from));
    if (from == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_samples_collect_inputs(spec, map, from, errbuf, errlen);
    if (status != SVP_OK) {
        svp_pipe_samples_destroy(from);
        return status;
    }
    I = from->nimages;
    S = (spec->video.seeds.count > 0) ? spec->video.seeds.count : 1;
    if (spec->video.seeds.count == 0 && spec->samples > I) {
        /* the single seed as rounds: seed, seed + 1, ... (how a spec with
         * one seed and more samples than images always read) */
        S = (spec->samples + I - 1) / I;
    }
    if ((int64_t)I * S > 1000000) {
        svp_errf(errbuf, errlen, "%s: video.seeds: %d images x %d seeds make "
                         "more than 1000000 samples", spec->file, I, S);
        svp_pipe_samples_destroy(from);
        return SVP_ERR_SPEC;
    }
    if (spec->samples > I * S) {
        svp_errf(errbuf, errlen, "%s: samples: expected at most the %d samples "
                         "%d image%s x %d seed%s make, found %d", spec->file, I * S, I,
                         I == 1 ? "" : "s", S, S == 1 ? "" : "s", spec->samples);
        svp_pipe_samples_destroy(from);
        return SVP_ERR_SPEC;
    }
    n    = (spec->samples > 0) ? spec->samples : I * S;
    list = svp_samples_alloc(n);
    if (list == NULL) {
        svp_pipe_samples_destroy(from);
        return SVP_ERR_NO_MEMORY;
    }
    list->images  = from->images;
    list->nimages = from->nimages;
    from->images  = NULL;
    from->nimages = 0;
    svp_pipe_samples_destroy(from);
    list->total  = I * S;
    list->nseeds = S;
    for (i = 0; i < n; ++i) {
        svp_samples_defaults(spec, &list->items[i]);
        list->items[i].image = i % I;
        list->items[i].seed  = (spec->video.seeds.count > 0)
                               ? (uint64_t)spec->video.seeds.items[i / I]
                               : spec->seed + (uint64_t)(i / I);
    }
    *list_p = list;
    return SVP_OK;
}

void svp_pipe_samples_describe(const svp_pipe_samples_t *list, char *buf, int len)
{
    int  n = 0;
    char cap[96] = "";

    if (list->count < list->total) {
        snprintf(cap, sizeof(cap), " (samples caps the %d %s make)", list->total,
                 (list->manifest != NULL) ? "lines" : "pairs");
    }
    n = snprintf(buf, (size_t)len, "%d sample%s", list->count,
                 list->count == 1 ? "" : "s");
    if (n < 0 || n >= len) {
        return;
    }
    if (list->manifest != NULL) {
        snprintf(buf + n, (size_t)(len - n), " from the manifest %s%s", list->manifest,
                 cap);
    } else if (list->nimages > 0) {
        snprintf(buf + n, (size_t)(len - n), ": %d image%s x %d seed%s%s",
                 list->nimages, list->nimages == 1 ? "" : "s", list->nseeds,
                 list->nseeds == 1 ? "" : "s", cap);
    }
}

const char *svp_pipe_samples_image(const svp_pipe_samples_t *list, int i)
{
    int k = list->items[i].image;

    return (k >= 0) ? list->images[k] : NULL;
}

void svp_pipe_samples_name(const svp_pipe_samples_t *list, int i, char *buf, int len)
{
    if (list->items[i].name != NULL) {
        snprintf(buf, (size_t)len, "%s", list->items[i].name);
    } else {
        snprintf(buf, (size_t)len, "sample_%06d", i);
    }
}

svp_status_t svp_pipe_shard_parse(const char *s, svp_pipe_shard_t *shard_p,
                                  char *errbuf, int errlen)
{
    char *end;
    long  i, n;

    errno = 0;
    i     = strtol(s, &end, 10);
    if (errno == 0 && end != s && *end == '/') {
        const char *t = end + 1;
        n = strtol(t, &end, 10);
        if (errno == 0 && end != t && *end == '\0' && n >= 1 && n <= 1000000 &&
            i >= 0 && i < n) {
            shard_p->index = (int)i;
            shard_p->count = (int)n;
            return SVP_OK;
        }
    }
    svp_errf(errbuf, errlen, "--shard: expected I/N with 0 <= I < N (task I "
                     "of N), found '%s'", s);
    return SVP_ERR_USAGE;
}

static int svp_samples_env_int(const char *name, long *v_p)
{
    const char *s = getenv(name);
    char       *end;

    if (s == NULL || *s == '\0') {
        return 0;
    }
    errno = 0;
    *v_p  = strtol(s, &end, 10);
    return (errno == 0 && *end == '\0') ? 1 : -1;
}

/* cluster.array's "A-B" or "A" (an optional "%k" throttle aside). */
static int svp_samples_parse_array(const char *array, long *min_p, long *max_p)
{
    char *end;
    long  a, b;

    errno = 0;
    a     = strtol(array, &end, 10);
    if (errno != 0 || end == array || a < 0) {
        return -1;
    }
    b = a;
    if (*end == '-') {
        const char *t = end + 1;
        b = strtol(t, &end, 10);
        if (errno != 0 || end == t || b < a) {
            return -1;
        }
    }
    if (*end == '%') {
        const char *t = end + 1;
        (void)strtol(t, &end, 10);
        if (errno != 0 || end == t) {
            return -1;
        }
    }
    if (*end != '\0') {
        return -1;
    }
    *min_p = a;
    *max_p = b;
    return 0;
}

svp_status_t svp_pipe_shard_check_array(const char *array, char *errbuf, int errlen)
{
    long min, max;

    if (svp_samples_parse_array(array, &min, &max) != 0) {
        svp_errf(errbuf, errlen, "cluster.array: expected a range of task ids "
                         "like 0-63 or 0-63%%8 (task i makes its share of the "
                         "samples), found '%s'", array);
        return SVP_ERR_SPEC;
    }
    return SVP_OK;
}

svp_status_t svp_pipe_shard_from_env(const char *array, svp_pipe_shard_t *shard_p,
                                     char *errbuf, int errlen)
{
    long        id, min, max;
    const char *env = getenv("SLURM_ARRAY_TASK_ID");

    /* the spec's range, not Slurm's MIN and MAX: one task resubmitted alone
     * (sbatch --array=5 job.sbatch) is an array of one, yet still shard 5 */
    if (svp_samples_parse_array(array, &min, &max) != 0) {
        svp_errf(errbuf, errlen, "cluster.array: expected a range of task ids "
                         "like 0-63 or 0-63%%8 (task i makes its share of the "
                         "samples), found '%s'", array);
        return SVP_ERR_USAGE;
    }
    if (svp_samples_env_int("SLURM_ARRAY_TASK_ID", &id) == 0) {
        return SVP_ERR_NOT_FOUND;
    }
    if (svp_samples_env_int("SLURM_ARRAY_TASK_ID", &id) != 1 || id < min || id > max) {
        svp_errf(errbuf, errlen, "SLURM_ARRAY_TASK_ID=%s: expected a task of "
                         "cluster.array %s", env, array);
        return SVP_ERR_USAGE;
    }
    shard_p->index = (int)(id - min);
    shard_p->count = (int)(max - min + 1);
    return SVP_OK;
}

int svp_pipe_shard_size(const svp_pipe_shard_t *shard, int n)
{
    return (n > shard->index) ? (n - shard->index + shard->count - 1) / shard->count
                              : 0;
}

void svp_pipe_shard_file(const svp_pipe_shard_t *shard, const char *base,
                         const char *ext, char *buf, int len)
{
    if (shard == NULL || shard->count <= 1) {
        snprintf(buf, (size_t)len, "%s%s", base, ext);
    } else {
        snprintf(buf, (size_t)len, "%s.shard-%d-of-%d%s", base, shard->index,
                 shard->count, ext);
    }
}

/* The image's resolved path (realpath) into buf, or the path as given when
 * it does not resolve (then the content hash decides, or nothing). */
static void svp_samples_resolved(const char *image, char *buf, size_t len)
{
    char *r = realpath(image, NULL);

    snprintf(buf, len, "%s", (r != NULL) ? r : image);
    free(r);
}

char *svp_pipe_samples_params_json(const svp_pipe_samples_t *list, int i)
{
    const svp_pipe_sample_params_t *p = &list->items[i];
    const char                     *image = svp_pipe_samples_image(list, i);
    char                            name[256], *s, path[4096], hash[65];
    json_t                         *o;

    svp_pipe_samples_name(list, i, name, sizeof(name));
    o = json_pack("{s:s?, s:I, s:i, s:i, s:f, s:f, s:f, s:s}", "image", image,
                  "seed", (json_int_t)p->seed, "fps", p->fps, "motion_bucket_id",
                  p->motion_bucket_id, "noise_aug_strength", p->noise_aug_strength,
                  "min_guidance", p->min_guidance, "max_guidance", p->max_guidance,
                  "name", name);
    if (o == NULL) {
        return NULL;
    }
    if (image != NULL) {
        /* what the image is wherever it is seen from: resume compares these,
         * not the path as typed (svp_pipe_samples_params_check) */
        svp_samples_resolved(image, path, sizeof(path));
        json_object_set_new(o, "image_path", json_string(path));
        if (svp_sha256_file(image, hash) == SVP_OK) {
            json_object_set_new(o, "image_sha256", json_string(hash));
        }
    }
    s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}

/* A JSON value as a short string for a message. */
static void svp_samples_show(json_t *v, char *buf, size_t len)
{
    char *t;

    if (v == NULL) {
        snprintf(buf, len, "(none)");
    } else if (json_is_string(v)) {
        snprintf(buf, len, "'%s'", json_string_value(v));
    } else {
        t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(9));
        snprintf(buf, len, "%s", (t != NULL) ? t : "?");
        free(t);
    }
}

/* Whether the recorded image is ours: the same resolved path, or the same
 * bytes (another mount, another spelling, a copy); a record without either
 * (before 0.4) by its path as typed. */
static int svp_samples_same_image(json_t *got, const char *image)
{
    json_t     *path = json_object_get(got, "image_path");
    json_t     *hash = json_object_get(got, "image_sha256");
    json_t     *typed = json_object_get(got, "image");
    char        mine[4096], digest[65];

    if (image == NULL) {
        return (typed == NULL) || json_is_null(typed);
    }
    svp_samples_resolved(image, mine, sizeof(mine));
    if (json_is_string(path) && strcmp(json_string_value(path), mine) == 0) {
        return 1;
    }
    if (json_is_string(hash)) {
        return (svp_sha256_file(image, digest) == SVP_OK) &&
               (strcmp(json_string_value(hash), digest) == 0);
    }
    return json_is_string(typed) && (strcmp(json_string_value(typed), image) == 0);
}

svp_status_t svp_pipe_samples_params_check(const svp_pipe_samples_t *list, int i,
                                           const char *recorded, const char *where,
                                           char *why, size_t len)
{
    static const char *const keys[] = { "seed", "fps", "motion_bucket_id",
                                         "noise_aug_strength", "min_guidance",
                                         "max_guidance", "name" };
    const svp_pipe_sample_params_t *p     = &list->items[i];
    const char                     *image = svp_pipe_samples_image(list, i);
    char                            a[300], b[300], digest[65];
    json_t                         *got, *want, *gv, *wv;
    size_t                          k;
    svp_status_t                    status = SVP_OK;

    got = json_loads(recorded, 0, NULL);
    if (!json_is_object(got)) {
        json_decref(got);
        snprintf(why, len, "%s: its recorded parameters do not parse", where);
        return SVP_ERR_BAD_FILE;
    }
    /* this sample's own, without the image's hash (costly, and only wanted
     * when the paths differ) */
    svp_pipe_samples_name(list, i, a, sizeof(a));
    want = json_pack("{s:I, s:i, s:i, s:f, s:f, s:f, s:s}", "seed", (json_int_t)p->seed,
                     "fps", p->fps, "motion_bucket_id", p->motion_bucket_id,
                     "noise_aug_strength", p->noise_aug_strength, "min_guidance",
                     p->min_guidance, "max_guidance", p->max_guidance, "name", a);
    if (want == NULL) {
        json_decref(got);
        return SVP_ERR_NO_MEMORY;
    }
    if (!svp_samples_same_image(got, image)) {
        gv = json_object_get(got, "image_path");
        svp_samples_show(gv != NULL ? gv : json_object_get(got, "image"), a, sizeof(a));
        svp_samples_resolved(image != NULL ? image : "", b, sizeof(b));
        if (image != NULL && json_is_string(json_object_get(got, "image_sha256")) &&
            svp_sha256_file(image, digest) == SVP_OK) {
            snprintf(why, len, "%s was made from another image: image: %s (sha256 "
                     "%.12s...), this job has '%s' (sha256 %.12s...)", where, a,
                     json_string_value(json_object_get(got, "image_sha256")), b,
                     digest);
        } else {
            snprintf(why, len, "%s was made from another image: image: %s, this "
                     "job has %s%s%s", where, a, image ? "'" : "",
                     image ? b : "(none)", image ? "'" : "");
        }
        status = SVP_ERR_SPEC;
        goto out;
    }
    for (k = 0; k < sizeof(keys) / sizeof(keys[0]); ++k) {
        gv = json_object_get(got, keys[k]);
        wv = json_object_get(want, keys[k]);
        if (gv != NULL && json_is_number(gv) && json_is_number(wv)) {
            /* numbers as recorded: %.9g, like every record of them */
            snprintf(a, sizeof(a), "%.9g", json_number_value(gv));
            snprintf(b, sizeof(b), "%.9g", json_number_value(wv));
            if (strcmp(a, b) == 0) {
                continue;
            }
        } else if (gv != NULL && json_equal(gv, wv)) {
            continue;
        }
        svp_samples_show(gv, a, sizeof(a));
        svp_samples_show(wv, b, sizeof(b));
        snprintf(why, len, "%s was made with other parameters: %s: %s, this job "
                 "has %s", where, keys[k], a, b);
        status = SVP_ERR_SPEC;
        goto out;
    }
out:
    json_decref(got);
    json_decref(want);
    return status;
}
