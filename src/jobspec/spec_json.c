/*
 * The job spec as JSON and back (spec_json.h).  Reading goes through the
 * spec's own reader: the object is written out as the YAML lines of
 * svp_spec_dump() (a string in the dump's double-quoted form, numbers as
 * JSON wrote them), so a record is held to every check a spec file is,
 * and an older record's string and a newer one's object are read by one
 * reader.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/spec_json.h"
#include "jobspec/spec_int.h"
#include "common/util.h"
#include "common/errf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *spec_json_strings(const svp_spec_strlist_t *l)
{
    json_t *a = json_array();

    for (int j = 0; a != NULL && j < l->count; ++j) {
        if (json_array_append_new(a, json_string(l->items[j])) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *spec_json_ints(const int64_t *items, int count)
{
    json_t *a = json_array();

    for (int j = 0; a != NULL && j < count; ++j) {
        if (json_array_append_new(a, json_integer((json_int_t)items[j])) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *spec_json_map(const svp_spec_strmap_t *m)
{
    json_t *o = json_object();

    for (int j = 0; o != NULL && j < m->count; ++j) {
        if (json_object_set_new(o, m->keys[j], json_string(m->values[j])) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* The value of one key, as svp_spec_dump() writes it but typed. */
static json_t *spec_json_value(const svp_spec_t *spec, const svp_spec_key_t *key)
{
    const void *field = (const char *)spec + key->offset;
    char        digits[32];
    uint64_t    u;
    int         v;

    switch (key->type) {
    case SVP_SPEC_T_INT:
        v = *(const int *)field;
        return (v < 0 && key->names != NULL) ? json_string(key->names[-v - 1])
                                             : json_integer(v);
    case SVP_SPEC_T_U64:
        u = *(const uint64_t *)field;
        if (u <= (uint64_t)INT64_MAX) {
            return json_integer((json_int_t)u);
        }
        snprintf(digits, sizeof(digits), "%llu", (unsigned long long)u);
        return json_string(digits);
    case SVP_SPEC_T_DOUBLE:
        return json_real(*(const double *)field);
    case SVP_SPEC_T_STRING:
        return json_string(*(char *const *)field);
    case SVP_SPEC_T_BOOL:
        return json_boolean(*(const int *)field);
    case SVP_SPEC_T_ENUM:
        return json_string(key->names[*(const int *)field]);
    case SVP_SPEC_T_SHAPE5:
        return spec_json_ints(field, 5);
    case SVP_SPEC_T_INT_LIST:
        return spec_json_ints(((const svp_spec_intlist_t *)field)->items,
                              ((const svp_spec_intlist_t *)field)->count);
    case SVP_SPEC_T_STR_LIST:
        return spec_json_strings(field);
    case SVP_SPEC_T_STR_MAP:
        return spec_json_map(field);
    }
    return NULL;
}

svp_status_t svp_spec_to_json(const svp_spec_t *spec, json_t **obj_p)
{
    json_t *obj = json_object();

    if (obj == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (int i = 0; i < svp_spec_num_keys; ++i) {
        const svp_spec_key_t *key = &svp_spec_keys[i];

        /* a NULL value (no memory, a string jansson refuses) fails the set */
        if (json_object_set_new(obj, key->path, spec_json_value(spec, key)) != 0) {
            json_decref(obj);
            return SVP_ERR_NO_MEMORY;
        }
    }
    *obj_p = obj;
    return SVP_OK;
}

/* s in the dump's double-quoted form; nonzero when out of memory. */
static int spec_json_put_str(FILE *f, const char *s)
{
    size_t len = 8 * strlen(s) + 16; /* an escape is at most 6 bytes a byte */
    char  *buf = malloc(len);

    if (buf == NULL) {
        return 1;
    }
    svp_spec_dump_str(buf, len, s);
    fputs(buf, f);
    free(buf);
    return 0;
}

/*
 * One value as YAML: lists and mappings in flow style, scalars as the dump
 * writes them.  A U64 key takes the string of digits its writer gives a
 * seed past 2^63 - 1 as the number it is.  Nonzero when out of memory.
 */
static int spec_json_put(FILE *f, const json_t *v, const svp_spec_key_t *key)
{
    const char *name;
    json_t     *elem;
    size_t      i;
    int         n = 0;

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        fputc('{', f);
        json_object_foreach((json_t *)v, name, elem)
        {
            fputs(n++ ? ", " : "", f);
            if (spec_json_put_str(f, name) != 0) {
                return 1;
            }
            fputs(": ", f);
            if (spec_json_put(f, elem, NULL) != 0) {
                return 1;
            }
        }
        fputc('}', f);
        return 0;
    case JSON_ARRAY:
        fputc('[', f);
        json_array_foreach(v, i, elem)
        {
            fputs(i ? ", " : "", f);
            if (spec_json_put(f, elem, key) != 0) {
                return 1;
            }
        }
        fputc(']', f);
        return 0;
    case JSON_STRING:
        name = json_string_value(v);
        if (key != NULL && key->type == SVP_SPEC_T_U64 && name[0] != '\0' &&
            strspn(name, "0123456789") == strlen(name)) {
            fputs(name, f);
            return 0;
        }
        return spec_json_put_str(f, name);
    case JSON_INTEGER:
        fprintf(f, "%lld", (long long)json_integer_value(v));
        return 0;
    case JSON_REAL:
        fprintf(f, "%.17g", json_real_value(v));
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        fputs(json_is_true(v) ? "true" : "false", f);
        return 0;
    case JSON_NULL:
        /* the reader names the key and what it expected */
        fputs("null", f);
        return 0;
    }
    return 0;
}

/* The object as YAML lines, one member a line ("KEY": VALUE). */
static svp_status_t spec_json_yaml(const json_t *obj, char **text_p)
{
    const char *name;
    json_t     *v;
    char       *text = NULL;
    size_t      len  = 0;
    int         failed;
    FILE       *f = open_memstream(&text, &len);

    if (f == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    failed = 0;
    json_object_foreach((json_t *)obj, name, v)
    {
        failed = failed || spec_json_put_str(f, name) != 0;
        fputs(": ", f);
        failed = failed || spec_json_put(f, v, svp_spec_key_find(name)) != 0;
        fputc('\n', f);
    }
    if (fclose(f) != 0 || failed) {
        free(text);
        return SVP_ERR_NO_MEMORY;
    }
    *text_p = text;
    return SVP_OK;
}

svp_status_t svp_spec_load_json(const json_t *value, const char *file, char *errbuf,
                                int errlen, svp_spec_t **spec_p)
{
    char        *text = NULL;
    svp_status_t status;

    if (json_is_string(value)) {
        /* an older record: svp_spec_dump()'s lines as one string */
        return svp_spec_load_string(json_string_value(value), file, NULL, 0, errbuf,
                                    errlen, spec_p);
    }
    if (!json_is_object(value)) {
        svp_errf(errbuf, errlen,
                 "%s: spec: expected an object of the spec's keys (or, in an "
                 "older record, their lines as a string), found %s",
                 file,
                 value == NULL           ? "nothing"
                 : json_is_array(value)  ? "a list"
                 : json_is_number(value) ? "a number"
                                         : "another value");
        return SVP_ERR_SPEC;
    }
    status = spec_json_yaml(value, &text);
    if (status != SVP_OK) {
        svp_errf(errbuf, errlen, "%s: spec: %s", file, svp_status_string(status));
        return status;
    }
    status = svp_spec_load_string(text, file, NULL, 0, errbuf, errlen, spec_p);
    free(text);
    return status;
}
