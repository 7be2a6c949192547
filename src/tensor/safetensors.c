/*
 * safetensors reader and writer.
 *
 * Layout: u64 little-endian header length N, N bytes of JSON
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
 * {key: string}}, then the data region; offsets count from its first byte.
 *
 * The reader trusts nothing in the file: everything that later code indexes
 * with (shape, offsets, sizes) is checked once in svp_safetensors_open(), so
 * the accessors can hand out pointers into the file's bytes without further
 * checks.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "tensor/safetensors.h"
#include "common/log.h"
#include "common/file.h"
#include "common/str.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference implementation refuses headers above 100 MB; a real SVD UNet
 * header is about 0.2 MB. */
#define SVP_SAFETENSORS_MAX_HEADER (100u * 1024 * 1024)

typedef struct {
    const char *name; /* key inside the parsed JSON */
    svp_dtype_t dtype;
    int         ndim;
    int64_t     shape[SVP_TENSOR_MAX_DIMS];
    uint64_t    begin;
    uint64_t    end;
} svp_safetensors_entry_t;

struct svp_safetensors {
    char                    *path;
    int                      fd;       /* open until close */
    uint64_t                 data_off; /* first byte after the header */
    uint64_t                 data_len;
    json_t                  *root;     /* owns every entry name */
    json_t                  *metadata; /* borrowed from root, may be NULL */
    svp_safetensors_entry_t *entries;  /* sorted by name */
    int                      count;
};

typedef struct {
    char               *name;
    const svp_tensor_t *tensor; /* borrowed */
} svp_safetensors_wentry_t;

struct svp_safetensors_writer {
    svp_safetensors_wentry_t *entries;
    int                       count;
    int                       capacity;
    json_t                   *metadata;
};

static int svp_safetensors_entry_cmp(const void *a, const void *b)
{
    return strcmp(((const svp_safetensors_entry_t *)a)->name,
                  ((const svp_safetensors_entry_t *)b)->name);
}

static int svp_safetensors_begin_cmp(const void *a, const void *b)
{
    const svp_safetensors_entry_t *x = *(const svp_safetensors_entry_t *const *)a;
    const svp_safetensors_entry_t *y = *(const svp_safetensors_entry_t *const *)b;

    if (x->begin != y->begin) {
        return (x->begin < y->begin) ? -1 : 1;
    }
    return (x->end < y->end) ? -1 : (x->end > y->end);
}

/* A non-negative JSON integer, or -1. */
static int64_t svp_json_uint(const json_t *v)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        return -1;
    }
    return (int64_t)json_integer_value(v);
}

static svp_status_t svp_safetensors_parse_entry(svp_safetensors_h st,
                                                const char *name, json_t *desc,
                                                svp_safetensors_entry_t *e)
{
    json_t     *dtype, *shape, *offsets, *v;
    const char *key;
    int64_t     numel, begin, end;
    size_t      i, nbytes;
    int         dt;

    if (!json_is_object(desc)) {
        svp_error("%s: tensor '%s': description is not a JSON object", st->path,
                  name);
        return SVP_ERR_BAD_FILE;
    }
    json_object_foreach(desc, key, v)
    {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0) {
            svp_error("%s: tensor '%s': unexpected key '%s'", st->path, name, key);
            return SVP_ERR_BAD_FILE;
        }
    }
    dtype   = json_object_get(desc, "dtype");
    shape   = json_object_get(desc, "shape");
    offsets = json_object_get(desc, "data_offsets");
    if (!json_is_string(dtype) || !json_is_array(shape) || !json_is_array(offsets)) {
        svp_error("%s: tensor '%s': needs string 'dtype', array 'shape' and "
                  "array 'data_offsets'",
                  st->path, name);
        return SVP_ERR_BAD_FILE;
    }

    dt = svp_dtype_parse(json_string_value(dtype));
    if (dt < 0) {
        svp_error("%s: tensor '%s': unsupported dtype '%s'", st->path, name,
                  json_string_value(dtype));
        return SVP_ERR_BAD_FILE;
    }
    e->name  = name;
    e->dtype = (svp_dtype_t)dt;

    if (json_array_size(shape) > SVP_TENSOR_MAX_DIMS) {
        svp_error("%s: tensor '%s': %zu dimensions, at most %d supported", st->path,
                  name, json_array_size(shape), SVP_TENSOR_MAX_DIMS);
        return SVP_ERR_BAD_FILE;
    }
    e->ndim = (int)json_array_size(shape);
    json_array_foreach(shape, i, v)
    {
        e->shape[i] = svp_json_uint(v);
        if (e->shape[i] < 0) {
            svp_error("%s: tensor '%s': shape[%zu] is not a non-negative "
                      "integer",
                      st->path, name, i);
            return SVP_ERR_BAD_FILE;
        }
    }
    if (svp_shape_numel(e->ndim, e->shape, &numel) != SVP_OK) {
        svp_error("%s: tensor '%s': element count overflows", st->path, name);
        return SVP_ERR_BAD_FILE;
    }

    if (json_array_size(offsets) != 2 ||
        (begin = svp_json_uint(json_array_get(offsets, 0))) < 0 ||
        (end = svp_json_uint(json_array_get(offsets, 1))) < 0) {
        svp_error("%s: tensor '%s': data_offsets must be two non-negative "
                  "integers",
                  st->path, name);
        return SVP_ERR_BAD_FILE;
    }
    if (begin > end) {
        svp_error("%s: tensor '%s': data_offsets [%lld, %lld] end before "
                  "they begin",
                  st->path, name, (long long)begin, (long long)end);
        return SVP_ERR_BAD_FILE;
    }
    if ((uint64_t)end > st->data_len) {
        svp_error("%s: tensor '%s': data_offsets [%lld, %lld] outside the "
                  "%llu-byte data region",
                  st->path, name, (long long)begin, (long long)end,
                  (unsigned long long)st->data_len);
        return SVP_ERR_BAD_FILE;
    }
    nbytes = (size_t)numel * svp_dtype_size(e->dtype);
    if ((uint64_t)(end - begin) != nbytes) {
        svp_error("%s: tensor '%s': %lld data bytes but %s x %lld elements "
                  "need %zu",
                  st->path, name, (long long)(end - begin), svp_dtype_name(e->dtype),
                  (long long)numel, nbytes);
        return SVP_ERR_BAD_FILE;
    }
    e->begin = (uint64_t)begin;
    e->end   = (uint64_t)end;
    return SVP_OK;
}

static svp_status_t svp_safetensors_parse_metadata(svp_safetensors_h st,
                                                   json_t           *meta)
{
    const char *key;
    json_t     *v;

    if (!json_is_object(meta)) {
        svp_error("%s: __metadata__ is not a JSON object", st->path);
        return SVP_ERR_BAD_FILE;
    }
    json_object_foreach(meta, key, v)
    {
        if (!json_is_string(v)) {
            svp_error("%s: __metadata__ value of '%s' is not a string", st->path,
                      key);
            return SVP_ERR_BAD_FILE;
        }
    }
    st->metadata = meta;
    return SVP_OK;
}

/* Tensors may leave gaps between them but must not share bytes. */
static svp_status_t svp_safetensors_check_overlap(svp_safetensors_h st)
{
    svp_safetensors_entry_t **order;
    svp_status_t              status = SVP_OK;
    int                       i;

    if (st->count < 2) {
        return SVP_OK;
    }
    order =
        malloc((size_t)st->count *
               sizeof(*order)); /* NOLINT(bugprone-sizeof-expression): pointers */
    if (order == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < st->count; ++i) {
        order[i] = &st->entries[i];
    }
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    qsort(order, (size_t)st->count, sizeof(*order), svp_safetensors_begin_cmp);
    for (i = 1; i < st->count; ++i) {
        if (order[i]->begin < order[i - 1]->end) {
            svp_error("%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] "
                      "overlap",
                      st->path, order[i - 1]->name,
                      (unsigned long long)order[i - 1]->begin,
                      (unsigned long long)order[i - 1]->end, order[i]->name,
                      (unsigned long long)order[i]->begin,
                      (unsigned long long)order[i]->end);
            status = SVP_ERR_BAD_FILE;
            break;
        }
    }
    free(order);
    return status;
}

static svp_status_t svp_safetensors_parse_header(svp_safetensors_h st,
                                                 const char *header, size_t len)
{
    json_error_t jerr;
    const char  *key;
    json_t      *v;
    svp_status_t status;
    size_t       n;

    /* duplicate names would make lookups ambiguous: reject them */
    st->root = json_loadb(header, len, JSON_REJECT_DUPLICATES, &jerr);
    if (st->root == NULL) {
        svp_error("%s: header is not valid JSON (byte %d: %s)", st->path,
                  jerr.position, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    if (!json_is_object(st->root)) {
        svp_error("%s: header is not a JSON object", st->path);
        return SVP_ERR_BAD_FILE;
    }

    n           = json_object_size(st->root);
    st->entries = calloc(SVP_MAX(n, 1), sizeof(*st->entries));
    if (st->entries == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    json_object_foreach(st->root, key, v)
    {
        if (strcmp(key, "__metadata__") == 0) {
            status = svp_safetensors_parse_metadata(st, v);
        } else {
            status =
                svp_safetensors_parse_entry(st, key, v, &st->entries[st->count++]);
        }
        if (status != SVP_OK) {
            return status;
        }
    }
    qsort(st->entries, (size_t)st->count, sizeof(*st->entries),
          svp_safetensors_entry_cmp);
    return svp_safetensors_check_overlap(st);
}

/*
 * len bytes at off into buf.  A short read (the file shrank since it was
 * opened) is SVP_ERR_BAD_FILE and an error naming the file and what was
 * being read.
 */
static svp_status_t svp_safetensors_pread(int fd, const char *path, const char *what,
                                          void *buf, size_t len, uint64_t off)
{
    size_t  done = 0;
    ssize_t got;

    while (done < len) {
        got =
            pread(fd, (unsigned char *)buf + done, len - done, (off_t)(off + done));
        if ((got < 0) && (errno == EINTR)) {
            continue;
        }
        if (got < 0) {
            svp_error("cannot read %s (%s): %m", path, what);
            return SVP_ERR_IO;
        }
        if (got == 0) {
            svp_error("%s: file ends at byte %llu while reading %s (%zu bytes at "
                      "%llu): it shrank after it was opened",
                      path, (unsigned long long)(off + done), what, len,
                      (unsigned long long)off);
            return SVP_ERR_BAD_FILE;
        }
        done += (size_t)got;
    }
    return SVP_OK;
}

svp_status_t svp_safetensors_open(const char *path, svp_safetensors_h *st_p)
{
    svp_safetensors_h st;
    svp_status_t      status;
    struct stat       sb;
    uint64_t          hlen = 0;
    unsigned char     lenbuf[8];
    char             *header;
    int               fd, i;

    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    st->fd   = -1;
    st->path = svp_strdup(path);
    if (st->path == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto err_free_st;
    }

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        svp_error("cannot open %s: %m", path);
        status = (errno == ENOENT) ? SVP_ERR_NOT_FOUND : SVP_ERR_IO;
        goto err_free_st;
    }
    if (fstat(fd, &sb) != 0) {
        svp_error("cannot stat %s: %m", path);
        status = SVP_ERR_IO;
        goto err_close_fd;
    }
    if (!S_ISREG(sb.st_mode)) {
        svp_error("%s: not a regular file", path);
        status = SVP_ERR_BAD_FILE;
        goto err_close_fd;
    }
    if (sb.st_size < 8) {
        svp_error("%s: %lld bytes, too short for a safetensors header", path,
                  (long long)sb.st_size);
        status = SVP_ERR_BAD_FILE;
        goto err_close_fd;
    }
    /*
     * Read, not mapped: a mapped file that another process truncates (a
     * rerun rewriting an output, a copy still in progress) raises SIGBUS on
     * the next access to a page past the new end, which no bounds check can
     * prevent.  A read sees the truncation as a short read, an error.  Only
     * the header is read here; each tensor when it is loaded.
     */
    st->fd = fd;
    status = svp_safetensors_pread(fd, path, "the header length", lenbuf, 8, 0);
    if (status != SVP_OK) {
        goto err_close;
    }
    for (i = 7; i >= 0; --i) {
        hlen = (hlen << 8) | lenbuf[i];
    }
    if (hlen > (uint64_t)sb.st_size - 8 || hlen > SVP_SAFETENSORS_MAX_HEADER) {
        svp_error("%s: header length %llu exceeds the file (%lld bytes) or the "
                  "%u-byte limit",
                  path, (unsigned long long)hlen, (long long)sb.st_size,
                  SVP_SAFETENSORS_MAX_HEADER);
        status = SVP_ERR_BAD_FILE;
        goto err_close;
    }
    st->data_off = 8 + hlen;
    st->data_len = (uint64_t)sb.st_size - 8 - hlen;
    header       = malloc(hlen + 1);
    if (header == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto err_close;
    }
    status = svp_safetensors_pread(fd, path, "the header", header, (size_t)hlen, 8);
    if (status == SVP_OK) {
        status = svp_safetensors_parse_header(st, header, (size_t)hlen);
    }
    free(header);
    if (status != SVP_OK) {
        goto err_close;
    }
    *st_p = st;
    return SVP_OK;

err_close:
    svp_safetensors_close(st);
    return status;
err_close_fd:
    close(fd);
err_free_st:
    free(st->path);
    free(st);
    return status;
}

void svp_safetensors_close(svp_safetensors_h st)
{
    if (st == NULL) {
        return;
    }
    free(st->entries);
    json_decref(st->root);
    if (st->fd >= 0) {
        close(st->fd);
    }
    free(st->path);
    free(st);
}

const char *svp_safetensors_path(svp_safetensors_h st)
{
    return st->path;
}

int svp_safetensors_count(svp_safetensors_h st)
{
    return st->count;
}

static void svp_safetensors_fill_info(svp_safetensors_h              st,
                                      const svp_safetensors_entry_t *e,
                                      svp_safetensors_info_t        *info)
{
    info->name  = e->name;
    info->dtype = e->dtype;
    info->ndim  = e->ndim;
    memcpy(info->shape, e->shape, sizeof(info->shape));
    info->offset = st->data_off + e->begin;
    info->nbytes = (size_t)(e->end - e->begin);
}

svp_status_t svp_safetensors_info(svp_safetensors_h st, int index,
                                  svp_safetensors_info_t *info_p)
{
    if (index < 0 || index >= st->count) {
        return SVP_ERR_INVALID_PARAM;
    }
    svp_safetensors_fill_info(st, &st->entries[index], info_p);
    return SVP_OK;
}

svp_status_t svp_safetensors_find(svp_safetensors_h st, const char *name,
                                  svp_safetensors_info_t *info_p)
{
    svp_safetensors_entry_t key, *e;

    key.name = name;
    e        = bsearch(&key, st->entries, (size_t)st->count, sizeof(*st->entries),
                       svp_safetensors_entry_cmp);
    if (e == NULL) {
        return SVP_ERR_NOT_FOUND;
    }
    svp_safetensors_fill_info(st, e, info_p);
    return SVP_OK;
}

svp_status_t svp_safetensors_load(svp_safetensors_h st, const char *name,
                                  svp_dtype_t dtype, svp_tensor_t **tensor_p)
{
    svp_safetensors_info_t info;
    svp_tensor_t          *tensor;
    svp_status_t           status;
    unsigned char         *raw = NULL;
    char                   what[320];

    status = svp_safetensors_find(st, name, &info);
    if (status != SVP_OK) {
        svp_error("%s: no tensor '%s'", st->path, name);
        return status;
    }
    status = svp_tensor_create(dtype, info.ndim, info.shape, &tensor);
    if (status != SVP_OK) {
        svp_error("%s: tensor '%s': cannot allocate", st->path, name);
        return status;
    }
    snprintf(what, sizeof(what), "tensor '%s'", name);
    if (info.dtype == dtype) {
        /* straight into the tensor: no copy of the file in between */
        status = svp_safetensors_pread(st->fd, st->path, what, tensor->data,
                                       info.nbytes, info.offset);
    } else {
        raw    = malloc(SVP_MAX(info.nbytes, 1));
        status = (raw == NULL) ? SVP_ERR_NO_MEMORY
                               : svp_safetensors_pread(st->fd, st->path, what, raw,
                                                       info.nbytes, info.offset);
        if (status == SVP_OK) {
            status = svp_convert_elements(info.dtype, raw, dtype, tensor->data,
                                          svp_tensor_numel(tensor));
            if (status != SVP_OK) {
                svp_error("%s: tensor '%s': cannot convert %s to %s", st->path, name,
                          svp_dtype_name(info.dtype), svp_dtype_name(dtype));
            }
        }
        free(raw);
    }
    if (status != SVP_OK) {
        svp_tensor_destroy(tensor);
        return status;
    }
    *tensor_p = tensor;
    return SVP_OK;
}

svp_status_t svp_safetensors_map(svp_safetensors_h st, void **addr_p, size_t *len_p)
{
    struct stat sb;
    void       *addr;

    if (fstat(st->fd, &sb) != 0 || sb.st_size <= 0) {
        svp_debug("%s: cannot map: %s", st->path, strerror(errno));
        return SVP_ERR_IO;
    }
    addr = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, st->fd, 0);
    if (addr == MAP_FAILED) {
        svp_debug("%s: cannot map: %s", st->path, strerror(errno));
        return SVP_ERR_IO;
    }
    *addr_p = addr;
    *len_p  = (size_t)sb.st_size;
    return SVP_OK;
}

const char *svp_safetensors_metadata(svp_safetensors_h st, const char *key)
{
    if (st->metadata == NULL) {
        return NULL;
    }
    return json_string_value(json_object_get(st->metadata, key));
}

svp_status_t svp_safetensors_writer_create(svp_safetensors_writer_h *writer_p)
{
    svp_safetensors_writer_h writer;

    writer = calloc(1, sizeof(*writer));
    if (writer == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    writer->metadata = json_object();
    if (writer->metadata == NULL) {
        free(writer);
        return SVP_ERR_NO_MEMORY;
    }
    *writer_p = writer;
    return SVP_OK;
}

svp_status_t svp_safetensors_writer_add(svp_safetensors_writer_h writer,
                                        const char *name, const svp_tensor_t *tensor)
{
    svp_safetensors_wentry_t *entries;
    int                       i, capacity;

    if (name[0] == '\0' || strcmp(name, "__metadata__") == 0) {
        svp_error("invalid safetensors tensor name '%s'", name);
        return SVP_ERR_INVALID_PARAM;
    }
    for (i = 0; i < writer->count; ++i) {
        if (strcmp(writer->entries[i].name, name) == 0) {
            svp_error("tensor '%s' added twice", name);
            return SVP_ERR_INVALID_PARAM;
        }
    }
    if (writer->count == writer->capacity) {
        capacity = SVP_MAX(16, 2 * writer->capacity);
        entries  = realloc(writer->entries, (size_t)capacity * sizeof(*entries));
        if (entries == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        writer->entries  = entries;
        writer->capacity = capacity;
    }
    writer->entries[writer->count].name = svp_strdup(name);
    if (writer->entries[writer->count].name == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    writer->entries[writer->count].tensor = tensor;
    ++writer->count;
    return SVP_OK;
}

svp_status_t svp_safetensors_writer_add_metadata(svp_safetensors_writer_h writer,
                                                 const char *key, const char *value)
{
    if (json_object_set_new(writer->metadata, key, json_string(value)) != 0) {
        svp_error("invalid safetensors metadata '%s' (not UTF-8?)", key);
        return SVP_ERR_INVALID_PARAM;
    }
    return SVP_OK;
}

static int svp_safetensors_wentry_cmp(const void *a, const void *b)
{
    return strcmp(((const svp_safetensors_wentry_t *)a)->name,
                  ((const svp_safetensors_wentry_t *)b)->name);
}

/* The header JSON of the writer's tensors in name order. */
static json_t *svp_safetensors_writer_header(svp_safetensors_writer_h writer,
                                             uint64_t                *data_len_p)
{
    json_t  *root, *desc, *shape;
    uint64_t offset = 0;
    size_t   nbytes;
    int      i, d;

    root = json_object();
    if (root == NULL) {
        return NULL;
    }
    for (i = 0; i < writer->count; ++i) {
        const svp_tensor_t *t = writer->entries[i].tensor;

        nbytes = svp_tensor_nbytes(t);
        shape  = json_array();
        for (d = 0; shape != NULL && d < t->ndim; ++d) {
            if (json_array_append_new(shape, json_integer(t->shape[d])) != 0) {
                json_decref(shape);
                shape = NULL;
            }
        }
        if (shape == NULL) {
            json_decref(root);
            return NULL;
        }
        /* "o" steals shape, also when packing fails */
        desc = json_pack("{s:s, s:o, s:[I,I]}", "dtype", svp_dtype_name(t->dtype),
                         "shape", shape, "data_offsets", (json_int_t)offset,
                         (json_int_t)offset + (json_int_t)nbytes);
        if (desc == NULL ||
            json_object_set_new(root, writer->entries[i].name, desc) != 0) {
            json_decref(root);
            return NULL;
        }
        offset += nbytes;
    }
    if (json_object_size(writer->metadata) > 0 &&
        json_object_set(root, "__metadata__", writer->metadata) != 0) {
        json_decref(root);
        return NULL;
    }
    *data_len_p = offset;
    return root;
}

svp_status_t svp_safetensors_writer_bytes(svp_safetensors_writer_h writer,
                                          const char *path, void **buf_p,
                                          size_t *len_p)
{
    json_t        *root;
    char          *header;
    unsigned char *buf, *p;
    uint64_t       data_len;
    size_t         hlen, padded, total;
    svp_status_t   status;
    int            i;

    qsort(writer->entries, (size_t)writer->count, sizeof(*writer->entries),
          svp_safetensors_wentry_cmp);
    root = svp_safetensors_writer_header(writer, &data_len);
    if (root == NULL) {
        svp_error("%s: cannot build the safetensors header", path);
        return SVP_ERR_NO_MEMORY;
    }
    header = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    if (header == NULL) {
        svp_error("%s: cannot serialize the safetensors header", path);
        return SVP_ERR_NO_MEMORY;
    }

    /* pad with spaces so the data region starts 8-byte aligned */
    hlen   = strlen(header);
    padded = (hlen + 7) & ~(size_t)7;
    total  = 8 + padded + (size_t)data_len;
    buf    = malloc(total);
    if (buf == NULL) {
        svp_error("%s: cannot allocate %zu bytes", path, total);
        status = SVP_ERR_NO_MEMORY;
        goto err_free_header;
    }
    for (i = 0; i < 8; ++i) {
        buf[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    }
    memcpy(buf + 8, header, hlen);
    memset(buf + 8 + hlen, ' ', padded - hlen);
    p = buf + 8 + padded;
    for (i = 0; i < writer->count; ++i) {
        size_t n = svp_tensor_nbytes(writer->entries[i].tensor);

        if (n > 0) {
            memcpy(p, writer->entries[i].tensor->data, n);
        }
        p += n;
    }
    *buf_p = buf;
    *len_p = total;
    status = SVP_OK;
err_free_header:
    free(header);
    return status;
}

svp_status_t svp_safetensors_writer_commit(svp_safetensors_writer_h writer,
                                           const char              *path)
{
    void        *buf;
    size_t       len;
    svp_status_t status;

    status = svp_safetensors_writer_bytes(writer, path, &buf, &len);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_file_write_atomic(path, buf, len);
    free(buf);
    return status;
}

void svp_safetensors_writer_destroy(svp_safetensors_writer_h writer)
{
    int i;

    if (writer == NULL) {
        return;
    }
    for (i = 0; i < writer->count; ++i) {
        free(writer->entries[i].name);
    }
    free(writer->entries);
    json_decref(writer->metadata);
    free(writer);
}
