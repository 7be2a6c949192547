/*
 * The job spec: one YAML file says exactly what a run is.  The worker and the
 * launcher parse it with the same code, so they can never disagree.
 *
 * Parsing is table-driven (spec_keys.c): every key has a path ("comm.deadline"),
 * a type, limits and a default.  Errors name file:line:column, the key path,
 * what was expected and what was found; unknown keys get the nearest known key
 * as a suggestion.  A spec that fails to parse starts nothing (exit 2).
 *
 * The format is documented in doc/svdpipe-job.5.
 */
#ifndef SVP_JOBSPEC_SPEC_H
#define SVP_JOBSPEC_SPEC_H

#include "common/status.h"
#include "ops/ops_types.h"
#include "tensor/tensor.h"

#include <stdint.h>

#define SVP_SPEC_MAX_LIST 256

/*
 * Limits on the YAML of a job spec, checked as the parser's events arrive,
 * before the memory or time they guard is spent; a spec over one is refused
 * with file:line:column and the limit's name and value.  A real spec is a
 * few KB, about a hundred nodes, three levels deep (top, section, map key),
 * with values of at most a path (PATH_MAX, 4096) or an env value; long lists
 * of inputs belong in manifests, which are separate files.  Each limit keeps
 * two orders of magnitude of room over that and still bounds a hostile
 * file: libyaml's scanner is quadratic in flow depth (100,000 levels of '['
 * took 15-29 s), and one anchor aliased 768 times in a 1 MB file was copied
 * into 823 MB of strings.  The spec's text, the document's nodes (at most
 * SVP_SPEC_LIMIT_NODES of about 100 bytes) and the strings the keys copy
 * (at most the text plus SVP_SPEC_LIMIT_ALIAS_BYTES) bound what a parse
 * holds.
 */
#define SVP_SPEC_LIMIT_BYTES       (4 << 20)   /* size of the spec's text */
#define SVP_SPEC_LIMIT_DEPTH       32          /* nested lists and mappings */
#define SVP_SPEC_LIMIT_STRING      16384       /* bytes of one value, key, anchor */
#define SVP_SPEC_LIMIT_ENTRIES     4096        /* entries of one list or mapping */
#define SVP_SPEC_LIMIT_NODES       16384       /* nodes, an alias's each time used */
#define SVP_SPEC_LIMIT_ANCHORS     256         /* anchors defined (&name) */
#define SVP_SPEC_LIMIT_ALIASES     256         /* uses of an alias (*name) */
#define SVP_SPEC_LIMIT_ALIAS_BYTES (256 << 10) /* value bytes aliases repeat */

typedef enum { SVP_MODEL_DUMMY = 0, SVP_MODEL_SVD } svp_model_kind_t;

typedef enum {
    SVP_DUMMY_COST_COMPUTE = 0, /* real CPU work, repeated 'work' times */
    SVP_DUMMY_COST_SLEEP        /* fixed wall time per step, no CPU used */
} svp_dummy_cost_t;

/* comm.gpu_direct: how device frames cross (src/comm/comm_path.h) */
typedef enum {
    SVP_GPU_DIRECT_AUTO = 0, /* device path when UCX can move cuda memory */
    SVP_GPU_DIRECT_ON,       /* device path or an error at start */
    SVP_GPU_DIRECT_OFF       /* staged through pinned host memory */
} svp_spec_gpu_direct_t;

typedef enum {
    SVP_PLACEMENT_ENDS = 0, /* encode on rank 0, decode on rank W-1 */
    SVP_PLACEMENT_SPREAD    /* sample i encoded/decoded by rank i mod W */
} svp_placement_t;

/* What `svdlaunch plan` recommends a layout for (pipeline.objective). */
typedef enum {
    SVP_OBJECTIVE_THROUGHPUT = 0, /* samples per second of the job */
    SVP_OBJECTIVE_LATENCY    = 1  /* seconds until one sample is written */
} svp_spec_objective_t;

/* cluster.container_runtime: what runs cluster.container_image */
typedef enum {
    SVP_CONTAINER_PYXIS = 0, /* srun --container-image (enroot) */
    SVP_CONTAINER_APPTAINER  /* srun apptainer exec IMAGE (or singularity) */
} svp_container_runtime_t;

/* output.format: how a job's samples are laid out in output.dir */
typedef enum {
    SVP_OUTPUT_FILES = 0, /* a folder (or tensor file) per sample */
    SVP_OUTPUT_WEBDATASET /* tar shards, job/wds.h */
} svp_spec_output_format_t;

#define SVP_PIPE_STAGES_AUTO (-1)

typedef struct {
    int   count;
    char *items[SVP_SPEC_MAX_LIST];
} svp_spec_strlist_t;

typedef struct {
    int   count;
    char *keys[SVP_SPEC_MAX_LIST];
    char *values[SVP_SPEC_MAX_LIST];
} svp_spec_strmap_t;

typedef struct {
    int     count;
    int64_t items[SVP_SPEC_MAX_LIST];
} svp_spec_intlist_t;

typedef struct svp_spec {
    char *file; /* the YAML it came from ("<defaults>") */
    char *name; /* job name, default: file's base name */

    struct {
        svp_model_kind_t kind;
        char            *path;         /* svd: diffusers folder (unet/, vae/, ...) */
        char            *conditioning; /* svd: safetensors with per-sample
                                         conditioning / initial latents */
        struct {
            svp_dummy_cost_t cost;
            double           step_ms;   /* sleep: wall time per step */
            int              work;      /* compute: repetitions of the conv */
            double           encode_ms; /* sleep stand-ins for the ends */
            double           decode_ms;
        } dummy;
    } model;

    int               steps;   /* T */
    int               samples; /* N */
    uint64_t          seed;
    int64_t           latent_shape[5]; /* dummy: [B, F, C, H, W] */
    svp_dtype_t       dtype;           /* F32, F16 or BF16 (the weights') */
    svp_ops_backend_t device;          /* CPU or CUDA */

    struct {
        double                deadline;  /* seconds any wait may take */
        char                 *transport; /* UCX_TLS hint, "" = UCX's choice */
        int                   inflight;  /* samples in flight per rank */
        int                   checksum;  /* checksum every payload (not only
                                         the header) */
        svp_spec_gpu_direct_t gpu_direct;
    } comm;

    struct {
        svp_placement_t      placement;         /* where encode/decode run */
        int                  stages;            /* ranks per pipeline (0: all,
                                         SVP_PIPE_STAGES_AUTO: the
                                         planner's, resolved by render) */
        int                  guidance_parallel; /* C: 2, the two ranks of a pair
                                         run the two guidance halves */
        svp_spec_objective_t objective;         /* what svdlaunch plan ranks by */
    } pipeline;

    struct {
        svp_spec_strlist_t inputs;   /* images or directories */
        svp_spec_intlist_t seeds;    /* each image with each seed (job/samples.h) */
        char              *manifest; /* JSONL of samples, "" = none */
        int                width, height, num_frames, fps, motion_bucket_id;
        double             noise_aug_strength, min_guidance, max_guidance;
        int                decode_chunk_size;
    } video;

    struct {
        char *dir;
        int   frames;            /* write PNG frames */
        int   mp4;               /* write MP4 (when built with FFmpeg) */
        int   overwrite;         /* replace samples made with other parameters */
        int   format;            /* svp_spec_output_format_t */
        int   samples_per_shard; /* webdataset: samples in a tar shard */
    } output;

    struct {
        int   level;   /* svp_log_level_t */
        char *trace;   /* per-rank Chrome trace file, "" = off */
        int   profile; /* per-block profile of the model calls */
    } log;

    struct {
        int                nodes;
        int                ranks_per_node;
        char              *partition, *account, *qos, *time, *constraint;
        int                exclusive;
        char              *job_name, *output, *error;
        char              *container_image;
        svp_spec_strlist_t container_mounts;
        svp_spec_strmap_t  env;
        int                requeue;
        char              *dependency, *array;
        char              *mpi;
        char              *worker; /* path of svdworker in the script */
        int                gpus_per_task;
        int                share_gpu;
        int                cpus_per_task; /* 0: Slurm's default */
        char              *mem, *mem_per_gpu, *signal;
        svp_spec_strlist_t sbatch_args, srun_args;
        svp_spec_strlist_t setup;             /* shell lines run before srun */
        int                env_expand;        /* cluster.env values expand $NAME */
        int                container_runtime; /* svp_container_runtime_t */
        char              *container_workdir;
    } cluster;

    /* where the file wrote its values (svp_spec_mark_find) */
    struct svp_spec_mark *marks;
    int                   num_marks, max_marks;
} svp_spec_t;

/*
 * Where the file wrote a value, for the messages of checks that run after
 * parsing (the launcher's): the path of a key ("cluster.partition"), of a
 * list's item ("cluster.setup[1]") or of a mapping's entry
 * ("cluster.env.NAME"), as the key reader tells them
 * (svp_spec_reader_mark_cb_t in keys.h).
 */
typedef struct svp_spec_mark {
    char  *path;
    char  *text; /* a scalar's text as written (len bytes), else NULL */
    size_t len;
    int    line, column; /* 1-based */
} svp_spec_mark_t;

/*
 * The first mark of path, or NULL when the file did not write it (a
 * default, or --set only).  A spec from svp_spec_load keeps the marks of
 * its file, owned by the spec; one from svp_spec_load_string keeps none:
 * its text need not be the named file's.
 */
const svp_spec_mark_t *svp_spec_mark_find(const svp_spec_t *spec, const char *path);

/*
 * Parses a YAML file into *spec_p, after filling every default.  overrides is
 * an array of "key.path=value" strings applied after the file (NULL allowed).
 * A relative path the file gives for what a job reads (model.path,
 * model.conditioning, video.inputs, video.manifest, cluster.worker with a
 * '/') is joined to
 * the file's folder; override values and output paths are kept as given.
 * On failure a message naming file:line:column, key, expected and found is
 * copied into errbuf, or printed on stderr in that form (no log prefix) when
 * errbuf is NULL; nothing is returned and SVP_ERR_SPEC is the result.  Only
 * a regular file is read (a FIFO or a device is refused without waiting on
 * it), within the SVP_SPEC_LIMIT_* above.  Running out of memory is
 * SVP_ERR_NO_MEMORY, with a message all the same: every failure leaves one.
 * The spec is freed with svp_spec_destroy().
 *
 * The file is one YAML document of UTF-8 text (a leading BOM is skipped; a
 * second document, a byte that is not UTF-8 or a NUL is refused at its own
 * line and column).  Numbers are read as YAML 1.2's core schema reads them:
 * 010 is ten, 0o10 eight, 0x10 sixteen, and a quoted value is text, which a
 * number key refuses.  Messages quote the spec and --set escaped
 * (svp_str_escape): nothing of them reaches a terminal raw.
 */
svp_status_t svp_spec_load(const char *file, const char *const *overrides,
                           int num_overrides, char *errbuf, int errlen,
                           svp_spec_t **spec_p);

/* Same, from a string (file is the name used in messages; relative paths
 * are kept as given). */
svp_status_t svp_spec_load_string(const char *yaml, const char *file,
                                  const char *const *overrides, int num_overrides,
                                  char *errbuf, int errlen, svp_spec_t **spec_p);

void svp_spec_destroy(svp_spec_t *spec);

/* Writes the effective spec as YAML (used in logs and output metadata). */
svp_status_t svp_spec_dump(const svp_spec_t *spec, char **yaml_p);

/* Names of the enum values, for logs. */
const char *svp_spec_model_kind_name(svp_model_kind_t kind);
const char *svp_spec_placement_name(svp_placement_t placement);

/* The numeric limits of the spec key at path ("video.fps"): 1 with *min_p
 * and *max_p set, 0 for no such key (what a manifest line is held to). */
int svp_spec_key_limits(const char *path, double *min_p, double *max_p);

#endif
