/*
 * safetensors files: a fully validated reader and an atomic writer.
 *
 * Reader: svp_safetensors_open() reads the header and checks everything
 * before returning: header length bounded by the file size, JSON well
 * formed, every dtype known, offsets in range, non-overlapping, and sizes
 * equal to dtype x shape.  A corrupt or hostile file gets an error naming
 * the file and the tensor, never a crash.  The tensors' bytes are read by
 * svp_safetensors_load(), one tensor at a time straight into the tensor it
 * returns: loading a model costs its weights' memory, not the file's on top.
 * The file is read, never mapped: a file truncated by another process after
 * open is a short read, an error naming the file and tensor, not a SIGBUS.
 *
 * Writer: collects tensors (borrowed: they must outlive commit) and metadata,
 * then writes the file atomically (temporary + fsync + rename).
 */
#ifndef SVP_TENSOR_SAFETENSORS_H
#define SVP_TENSOR_SAFETENSORS_H

#include "tensor/tensor.h"

typedef struct svp_safetensors        *svp_safetensors_h;
typedef struct svp_safetensors_writer *svp_safetensors_writer_h;

typedef struct {
    const char *name;
    svp_dtype_t dtype;
    int         ndim;
    int64_t     shape[SVP_TENSOR_MAX_DIMS];
    uint64_t    offset; /* of its first byte in the file; may be unaligned */
    size_t      nbytes;
} svp_safetensors_info_t;

svp_status_t svp_safetensors_open(const char *path, svp_safetensors_h *st_p);
void         svp_safetensors_close(svp_safetensors_h st);

const char  *svp_safetensors_path(svp_safetensors_h st);
int          svp_safetensors_count(svp_safetensors_h st);
svp_status_t svp_safetensors_info(svp_safetensors_h st, int index,
                                  svp_safetensors_info_t *info_p);
/* SVP_ERR_NOT_FOUND (not logged) when the name is absent. */
svp_status_t svp_safetensors_find(svp_safetensors_h st, const char *name,
                                  svp_safetensors_info_t *info_p);
/* An owned copy converted to dtype, read from the file now; logs file and
 * tensor on failure (SVP_ERR_BAD_FILE when the file has shrunk since open). */
svp_status_t svp_safetensors_load(svp_safetensors_h st, const char *name,
                                  svp_dtype_t dtype, svp_tensor_t **tensor_p);
/*
 * The whole file mapped read-only (MAP_PRIVATE) at *addr_p, *len_p bytes
 * long as it is now; the mapping outlives st and is the caller's to
 * munmap().  A tensor's bytes are at *addr_p + info.offset when
 * info.offset + info.nbytes <= *len_p (check: the file may have shrunk
 * since open).  A file rewritten or truncated under a mapping is the
 * caller's risk (SIGBUS), as with any mapped checkpoint.  SVP_ERR_IO,
 * logged at debug only, when mapping is not possible.
 */
svp_status_t svp_safetensors_map(svp_safetensors_h st, void **addr_p, size_t *len_p);

/* The __metadata__ value for key, or NULL. */
const char *svp_safetensors_metadata(svp_safetensors_h st, const char *key);

svp_status_t svp_safetensors_writer_create(svp_safetensors_writer_h *writer_p);
svp_status_t svp_safetensors_writer_add(svp_safetensors_writer_h writer,
                                        const char              *name,
                                        const svp_tensor_t      *tensor);
svp_status_t svp_safetensors_writer_add_metadata(svp_safetensors_writer_h writer,
                                                 const char *key, const char *value);
svp_status_t svp_safetensors_writer_commit(svp_safetensors_writer_h writer,
                                           const char              *path);
/*
 * The file commit would write, in memory (*buf_p malloc'd, *len_p bytes):
 * for a container that holds it.  path names it in messages only.
 */
svp_status_t svp_safetensors_writer_bytes(svp_safetensors_writer_h writer,
                                          const char *path, void **buf_p,
                                          size_t *len_p);
void         svp_safetensors_writer_destroy(svp_safetensors_writer_h writer);

#endif
