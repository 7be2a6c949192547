/*
 * The job spec's keys: one table drives parsing, defaults, --set overrides,
 * "did you mean" suggestions and the dump.  Adding a key is one line here and
 * one field in svp_spec_t.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/spec_int.h"
#include "common/log.h"
#include "common/str.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OFF(_field) offsetof(svp_spec_t, _field)
#define NOLIM       0, 0

static const char *const svp_spec_model_kinds[] = {"dummy", "svd", NULL};
static const char *const svp_spec_dummy_costs[] = {"compute", "sleep", NULL};
/* the tensor layer's and the ops layer's tables, indexed by their enums */
static const char *const svp_spec_dtypes[]         = {SVP_DTYPE_WEIGHT_NAMES NULL};
static const char *const svp_spec_devices[]        = {SVP_OPS_DEVICE_NAMES NULL};
static const char *const svp_spec_placements[]     = {"ends", "spread", NULL};
static const char *const svp_spec_gpu_direct[]     = {"auto", "on", "off", NULL};
static const char *const svp_spec_objectives[]     = {"throughput", "latency", NULL};
static const char *const svp_spec_output_formats[] = {"files", "webdataset", NULL};
/* words an integer key also takes: names[k] stands for -(k + 1) */
static const char *const svp_spec_stages_words[]       = {"auto", NULL};
static const char *const svp_spec_container_runtimes[] = {"pyxis", "apptainer",
                                                          NULL};
static const char *const svp_spec_log_levels[]         = {"error", "warn",  "info",
                                                          "debug", "trace", NULL};

const char *const svp_spec_sections[] = {"model",    "model.dummy", "comm",
                                         "pipeline", "video",       "output",
                                         "log",      "cluster",     NULL};

/* flags (the last field) are written only on the few keys that have any */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
/* clang-format off */
const svp_spec_key_t svp_spec_keys[] = {
    {"name", SVP_SPEC_T_STRING, OFF(name), "", NOLIM, NULL,
     "job name (default: the spec file's base name)"},
    {"model.kind", SVP_SPEC_T_ENUM, OFF(model.kind), "dummy", NOLIM,
     svp_spec_model_kinds, "dummy (synthetic simulator model) or svd"},
    {"model.path", SVP_SPEC_T_STRING, OFF(model.path), "", NOLIM, NULL,
     "svd: a diffusers SVD/SVD-XT folder (unet/, vae/, image_encoder/, scheduler/)"},
    {"model.conditioning", SVP_SPEC_T_STRING, OFF(model.conditioning), "", NOLIM,
     NULL, "svd: safetensors file with per-sample conditioning and initial latents"},
    {"model.dummy.cost", SVP_SPEC_T_ENUM, OFF(model.dummy.cost), "compute", NOLIM,
     svp_spec_dummy_costs, "compute: real CPU work; sleep: fixed wall time per step"},
    {"model.dummy.step_ms", SVP_SPEC_T_DOUBLE, OFF(model.dummy.step_ms), "50",
     0, 3600e3, NULL, "sleep cost: milliseconds per step"},
    {"model.dummy.work", SVP_SPEC_T_INT, OFF(model.dummy.work), "1", 1, 1000000,
     NULL, "compute cost: repetitions of the Conv3d per step"},
    {"model.dummy.encode_ms", SVP_SPEC_T_DOUBLE, OFF(model.dummy.encode_ms), "0",
     0, 3600e3, NULL, "sleep stand-in for encoding a sample (ms)"},
    {"model.dummy.decode_ms", SVP_SPEC_T_DOUBLE, OFF(model.dummy.decode_ms), "0",
     0, 3600e3, NULL, "sleep stand-in for decoding a sample (ms)"},
    {"steps", SVP_SPEC_T_INT, OFF(steps), "8", 1, 10000, NULL,
     "denoising steps T; must divide by the stages of a pipeline (pipeline.stages)"},
    {"samples", SVP_SPEC_T_INT, OFF(samples), "0", 0, 1000000, NULL,
     "at most this many samples (0: all that video.manifest or video.inputs x "
     "video.seeds make; without either, 4)"},
    {"seed", SVP_SPEC_T_U64, OFF(seed), "42", 0, 0, NULL, "base random seed"},
    {"latent_shape", SVP_SPEC_T_SHAPE5, OFF(latent_shape), "[1, 14, 4, 8, 8]",
     1, 65536, NULL, "dummy model latent shape [B, F, C, H, W]"},
    {"dtype", SVP_SPEC_T_ENUM, OFF(dtype), "f32", NOLIM, svp_spec_dtypes,
     "dtype the matrix weights are held in (products in f32)"},
    {"device", SVP_SPEC_T_ENUM, OFF(device), "cpu", NOLIM, svp_spec_devices,
     "backend"},
    {"comm.deadline", SVP_SPEC_T_DOUBLE, OFF(comm.deadline), "120", 0.1, 86400,
     NULL, "seconds any wait for a peer may take before the job fails"},
    {"comm.transport", SVP_SPEC_T_STRING, OFF(comm.transport), "", NOLIM, NULL,
     "UCX_TLS hint (e.g. posix,self or tcp); empty: UCX chooses"},
    {"comm.inflight", SVP_SPEC_T_INT, OFF(comm.inflight), "2", 1, 64, NULL,
     "receives posted ahead per rank (samples in flight)"},
    {"comm.checksum", SVP_SPEC_T_BOOL, OFF(comm.checksum), "false", NOLIM, NULL,
     "checksum every payload, not only the header (about 0.3 ms per MB per side)"},
    {"comm.gpu_direct", SVP_SPEC_T_ENUM, OFF(comm.gpu_direct), "auto", NOLIM,
     svp_spec_gpu_direct,
     "device cuda: how latents cross between ranks: on (UCX moves device memory, "
     "else an error at start), off (staged through pinned host memory) or auto "
     "(on when UCX can); device cpu or model.kind dummy: auto or off"},
    {"pipeline.placement", SVP_SPEC_T_ENUM, OFF(pipeline.placement), "spread",
     NOLIM, svp_spec_placements,
     "where encode/decode run: ends (first/last rank) or spread (rank i mod W)"},
    {"pipeline.stages", SVP_SPEC_T_INT, OFF(pipeline.stages), "0", 0, 1048576,
     svp_spec_stages_words,
     "ranks per pipeline S: G = W / S pipelines of S stages; 0: one pipeline of W; "
     "auto: the planner's choice, made by svdlaunch render"},
    {"pipeline.guidance_parallel", SVP_SPEC_T_INT, OFF(pipeline.guidance_parallel),
     "1", 1, 2, NULL,
     "ranks per stage C: 2 runs the conditioned and unconditioned UNet halves of "
     "each step on the two ranks of a pair (W = G x S x C; model.kind svd)"},
    {"pipeline.objective", SVP_SPEC_T_ENUM, OFF(pipeline.objective), "throughput",
     NOLIM, svp_spec_objectives,
     "what svdlaunch plan recommends a layout for: throughput (samples/s) or "
     "latency (seconds per sample)"},
    {"video.inputs", SVP_SPEC_T_STR_LIST, OFF(video.inputs), "", NOLIM, NULL,
     "images (PNG/JPEG) or directories of images"},
    {"video.seeds", SVP_SPEC_T_INT_LIST, OFF(video.seeds), "", NOLIM, NULL,
     "seeds: every image of video.inputs is made with each (default: seed)"},
    {"video.manifest", SVP_SPEC_T_STRING, OFF(video.manifest), "", NOLIM, NULL,
     "JSONL file, one sample per line: image and its own seed, fps, "
     "motion_bucket_id, noise_aug_strength, min/max_guidance, name"},
    {"video.width", SVP_SPEC_T_INT, OFF(video.width), "1024", 8, 8192, NULL,
     "video width (multiple of 8)"},
    {"video.height", SVP_SPEC_T_INT, OFF(video.height), "576", 8, 8192, NULL,
     "video height (multiple of 8)"},
    {"video.num_frames", SVP_SPEC_T_INT, OFF(video.num_frames), "25", 1, 1024,
     NULL, "frames per video"},
    {"video.fps", SVP_SPEC_T_INT, OFF(video.fps), "7", 1, 240, NULL,
     "frames per second (conditioning and MP4)"},
    {"video.motion_bucket_id", SVP_SPEC_T_INT, OFF(video.motion_bucket_id), "127",
     0, 1023, NULL, "motion bucket id"},
    {"video.noise_aug_strength", SVP_SPEC_T_DOUBLE, OFF(video.noise_aug_strength),
     "0.02", 0, 10, NULL, "noise added to the conditioning image"},
    {"video.min_guidance", SVP_SPEC_T_DOUBLE, OFF(video.min_guidance), "1.0", 0,
     100, NULL, "guidance scale of the first frame"},
    {"video.max_guidance", SVP_SPEC_T_DOUBLE, OFF(video.max_guidance), "3.0", 0,
     100, NULL, "guidance scale of the last frame"},
    {"video.decode_chunk_size", SVP_SPEC_T_INT, OFF(video.decode_chunk_size), "8",
     1, 1024, NULL, "frames decoded at once by the VAE"},
    {"output.dir", SVP_SPEC_T_STRING, OFF(output.dir), "out", NOLIM, NULL,
     "directory for results", SVP_SPEC_KEY_F_PER_RANK},
    {"output.frames", SVP_SPEC_T_BOOL, OFF(output.frames), "true", NOLIM, NULL,
     "write PNG frames"},
    {"output.mp4", SVP_SPEC_T_BOOL, OFF(output.mp4), "true", NOLIM, NULL,
     "write an MP4 per sample (when built with FFmpeg)"},
    {"output.overwrite", SVP_SPEC_T_BOOL, OFF(output.overwrite), "false", NOLIM, NULL,
     "replace samples in output.dir made with other parameters (else an error)"},
    {"output.format", SVP_SPEC_T_ENUM, OFF(output.format), "files", NOLIM,
     svp_spec_output_formats, "files (a folder per sample) or webdataset (tar shards)"},
    {"output.samples_per_shard", SVP_SPEC_T_INT, OFF(output.samples_per_shard), "100", 1,
     1000000, NULL, "samples in each tar shard (output.format: webdataset)"},
    {"log.level", SVP_SPEC_T_ENUM, OFF(log.level), "info", NOLIM,
     svp_spec_log_levels, "error, warn, info, debug or trace", SVP_SPEC_KEY_F_PER_RANK},
    {"log.trace", SVP_SPEC_T_STRING, OFF(log.trace), "", NOLIM, NULL,
     "per-rank event trace file prefix (Chrome trace JSON); empty: off",
     SVP_SPEC_KEY_F_PER_RANK},
    {"log.profile", SVP_SPEC_T_BOOL, OFF(log.profile), "false", NOLIM, NULL,
     "time and FLOPs per model block and op kind (svd model) into output.dir/profile.rankN.json"},
    {"cluster.nodes", SVP_SPEC_T_INT, OFF(cluster.nodes), "1", 1, 100000, NULL,
     "nodes"},
    {"cluster.ranks_per_node", SVP_SPEC_T_INT, OFF(cluster.ranks_per_node), "1", 1,
     1024, NULL, "ranks (GPUs) per node"},
    {"cluster.partition", SVP_SPEC_T_STRING, OFF(cluster.partition), "", NOLIM,
     NULL, "Slurm partition"},
    {"cluster.account", SVP_SPEC_T_STRING, OFF(cluster.account), "", NOLIM, NULL,
     "Slurm account"},
    {"cluster.qos", SVP_SPEC_T_STRING, OFF(cluster.qos), "", NOLIM, NULL,
     "Slurm QOS"},
    {"cluster.time", SVP_SPEC_T_STRING, OFF(cluster.time), "", NOLIM, NULL,
     "time limit (Slurm format, e.g. 1:00:00)"},
    {"cluster.constraint", SVP_SPEC_T_STRING, OFF(cluster.constraint), "", NOLIM,
     NULL, "node features"},
    {"cluster.exclusive", SVP_SPEC_T_BOOL, OFF(cluster.exclusive), "false", NOLIM,
     NULL, "whole nodes"},
    {"cluster.job_name", SVP_SPEC_T_STRING, OFF(cluster.job_name), "", NOLIM, NULL,
     "Slurm job name (default: name)"},
    {"cluster.output", SVP_SPEC_T_STRING, OFF(cluster.output), "", NOLIM, NULL,
     "Slurm stdout path"},
    {"cluster.error", SVP_SPEC_T_STRING, OFF(cluster.error), "", NOLIM, NULL,
     "Slurm stderr path"},
    {"cluster.container_image", SVP_SPEC_T_STRING, OFF(cluster.container_image),
     "", NOLIM, NULL, "pyxis container image"},
    {"cluster.container_mounts", SVP_SPEC_T_STR_LIST,
     OFF(cluster.container_mounts), "", NOLIM, NULL, "pyxis mounts SRC:DST"},
    {"cluster.env", SVP_SPEC_T_STR_MAP, OFF(cluster.env), "", NOLIM, NULL,
     "environment for the ranks (e.g. UCX_TLS)"},
    {"cluster.requeue", SVP_SPEC_T_BOOL, OFF(cluster.requeue), "false", NOLIM, NULL,
     "requeue on node failure or preemption; the requeued run resumes"},
    {"cluster.dependency", SVP_SPEC_T_STRING, OFF(cluster.dependency), "", NOLIM,
     NULL, "Slurm dependency (e.g. afterok:123)"},
    {"cluster.array", SVP_SPEC_T_STRING, OFF(cluster.array), "", NOLIM, NULL,
     "Slurm array spec"},
    {"cluster.mpi", SVP_SPEC_T_STRING, OFF(cluster.mpi), "pmix", NOLIM, NULL,
     "srun --mpi plugin"},
    {"cluster.worker", SVP_SPEC_T_STRING, OFF(cluster.worker), "svdworker", NOLIM,
     NULL, "svdworker command in the script"},
    {"cluster.gpus_per_task", SVP_SPEC_T_INT, OFF(cluster.gpus_per_task), "1", 0,
     64, NULL, "GPUs bound per rank (cuda)"},
    {"cluster.share_gpu", SVP_SPEC_T_BOOL, OFF(cluster.share_gpu), "false", NOLIM,
     NULL, "let ranks on a node share a GPU (cuda)"},
    {"cluster.cpus_per_task", SVP_SPEC_T_INT, OFF(cluster.cpus_per_task), "0", 0,
     4096, NULL, "CPUs per rank (sbatch and srun --cpus-per-task); 0: Slurm's default"},
    {"cluster.mem", SVP_SPEC_T_STRING, OFF(cluster.mem), "", NOLIM, NULL,
     "memory per node (--mem, e.g. 200G)"},
    {"cluster.mem_per_gpu", SVP_SPEC_T_STRING, OFF(cluster.mem_per_gpu), "",
     NOLIM, NULL, "memory per GPU (--mem-per-gpu, e.g. 64G); not with cluster.mem"},
    {"cluster.signal", SVP_SPEC_T_STRING, OFF(cluster.signal), "", NOLIM, NULL,
     "signal before the time limit (--signal, TERM@SECONDS or INT@SECONDS)"},
    {"cluster.sbatch_args", SVP_SPEC_T_STR_LIST, OFF(cluster.sbatch_args), "",
     NOLIM, NULL, "more #SBATCH options (--option=value each)"},
    {"cluster.srun_args", SVP_SPEC_T_STR_LIST, OFF(cluster.srun_args), "", NOLIM,
     NULL, "more srun options (each one argument)"},
    {"cluster.setup", SVP_SPEC_T_STR_LIST, OFF(cluster.setup), "", NOLIM, NULL,
     "shell lines run before srun (module load ..., source ...)"},
    {"cluster.env_expand", SVP_SPEC_T_BOOL, OFF(cluster.env_expand), "false",
     NOLIM, NULL, "expand $NAME and ${NAME} in cluster.env values (else literal)"},
    {"cluster.container_runtime", SVP_SPEC_T_ENUM,
     OFF(cluster.container_runtime), "pyxis", NOLIM, svp_spec_container_runtimes,
     "how cluster.container_image runs: pyxis (srun --container-image) or "
     "apptainer (apptainer exec, also Singularity's)"},
    {"cluster.container_workdir", SVP_SPEC_T_STRING,
     OFF(cluster.container_workdir), "", NOLIM, NULL,
     "the container's working directory, where a relative output.dir lands"},
};
/* clang-format on */
#pragma GCC diagnostic pop

const int svp_spec_num_keys = (int)SVP_ARRAY_SIZE(svp_spec_keys);

const svp_spec_key_t *svp_spec_key_find(const char *path)
{
    int i;

    for (i = 0; i < svp_spec_num_keys; ++i) {
        if (strcmp(svp_spec_keys[i].path, path) == 0) {
            return &svp_spec_keys[i];
        }
    }
    return NULL;
}

int svp_spec_is_section(const char *path)
{
    int i;

    for (i = 0; svp_spec_sections[i] != NULL; ++i) {
        if (strcmp(svp_spec_sections[i], path) == 0) {
            return 1;
        }
    }
    return 0;
}

static void *svp_spec_field(void *base, const svp_spec_key_t *key)
{
    return (char *)base + key->offset;
}

/*
 * An integer as YAML 1.2's core schema reads one: [-+]?[0-9]+ in decimal
 * (leading zeros included: 010 is ten, not C's octal eight), 0o[0-7]+ or
 * 0x[0-9a-fA-F]+, and nothing else: no blank before or after (a quoted
 * " -1" is text, where strtoull skipped the blank and wrapped the sign to
 * 2^64 - 1), no underscores, no sign on 0o and 0x.  The sign into *neg_p,
 * the magnitude (at most 2^64 - 1) into *mag_p; -1 when s is no integer.
 */
static int svp_spec_parse_core_int(const char *s, int *neg_p, uint64_t *mag_p)
{
    unsigned base = 10, d;
    uint64_t mag  = 0;
    int      neg  = 0;

    if (s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        base = (s[1] == 'o') ? 8 : 16;
        s += 2;
    } else if (s[0] == '-' || s[0] == '+') {
        neg = (s[0] == '-');
        ++s;
    }
    if (*s == '\0') {
        return -1;
    }
    for (; *s != '\0'; ++s) {
        if (*s >= '0' && *s <= '9') {
            d = (unsigned)(*s - '0');
        } else if (base == 16 && *s >= 'a' && *s <= 'f') {
            d = (unsigned)(*s - 'a' + 10);
        } else if (base == 16 && *s >= 'A' && *s <= 'F') {
            d = (unsigned)(*s - 'A' + 10);
        } else {
            return -1;
        }
        if (d >= base || mag > (UINT64_MAX - d) / base) {
            return -1;
        }
        mag = mag * base + d;
    }
    *neg_p = neg;
    *mag_p = mag;
    return 0;
}

static int svp_spec_parse_int64(const char *s, int64_t *v_p)
{
    uint64_t mag;
    int      neg;

    if (svp_spec_parse_core_int(s, &neg, &mag) != 0 ||
        mag > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) {
        return -1;
    }
    *v_p = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

/*
 * A number as YAML 1.2's core schema reads one: an integer above, or
 * [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?; no blanks, no hex
 * floats, no "inf" (strtod took all three).
 */
static int svp_spec_parse_core_double(const char *s, double *v_p)
{
    const char *p = s;
    uint64_t    mag;
    int         neg, digits = 0;

    if (s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        if (svp_spec_parse_core_int(s, &neg, &mag) != 0) {
            return -1;
        }
        *v_p = (double)mag;
        return 0;
    }
    if (*p == '-' || *p == '+') {
        ++p;
    }
    for (; *p >= '0' && *p <= '9'; ++p) {
        ++digits;
    }
    if (*p == '.') {
        for (++p; *p >= '0' && *p <= '9'; ++p) {
            ++digits;
        }
    }
    if (digits == 0) {
        return -1;
    }
    if (*p == 'e' || *p == 'E') {
        ++p;
        if (*p == '-' || *p == '+') {
            ++p;
        }
        if (!(*p >= '0' && *p <= '9')) {
            return -1;
        }
        while (*p >= '0' && *p <= '9') {
            ++p;
        }
    }
    if (*p != '\0') {
        return -1;
    }
    errno = 0;
    *v_p  = strtod(s, NULL);
    return (errno == ERANGE) ? -1 : 0;
}

static int svp_spec_parse_bool(const char *s, int *v_p)
{
    static const char *yes[] = {"true", "yes", "on", "1"};
    static const char *no[]  = {"false", "no", "off", "0"};
    size_t             i;

    for (i = 0; i < SVP_ARRAY_SIZE(yes); ++i) {
        if (!strcasecmp(s, yes[i])) {
            *v_p = 1;
            return 0;
        }
        if (!strcasecmp(s, no[i])) {
            *v_p = 0;
            return 0;
        }
    }
    return -1;
}

static void svp_spec_enum_expected(const svp_spec_key_t *key, char *buf, int len)
{
    int i, n = 0;

    n += snprintf(buf + n, len - n, "one of");
    for (i = 0; key->names[i] != NULL && n < len; ++i) {
        n += snprintf(buf + n, len - n, "%s %s", (i == 0) ? "" : ",", key->names[i]);
    }
}

/*
 * Parses "[1, 2, 3]" or "1,2,3" (the --set forms of a list) in place.  An
 * item may be quoted as in YAML's flow style, 'single' ('' for a quote) or
 * "double" (\" and \\ escaped), to hold commas or spaces at its ends; the
 * quotes are not part of it.  Returns the count, -2 when over max, or -1
 * when malformed (an unclosed bracket or quote, text after a closing
 * quote).
 */
static int svp_spec_split_list(char *s, char **items, int max)
{
    int   n = 0;
    char *r, *w, *item, *end;
    char  q;

    while (*s == ' ') {
        ++s;
    }
    if (*s == '[') {
        ++s;
        end = strrchr(s, ']');
        if (end == NULL) {
            return -1;
        }
        *end = '\0';
    }
    for (r = s;;) {
        while (*r == ' ') {
            ++r;
        }
        item = w = r;
        if (*r == '\'' || *r == '"') {
            for (q = *r++;; ++r) {
                if (*r == '\0') {
                    return -1; /* unclosed quote */
                } else if (q == '\'' && r[0] == '\'' && r[1] == '\'') {
                    *w++ = *r++;
                } else if (q == '"' && r[0] == '\\' &&
                           (r[1] == '"' || r[1] == '\\')) {
                    *w++ = *++r;
                } else if (*r == q) {
                    break;
                } else {
                    *w++ = *r;
                }
            }
            for (++r; *r == ' '; ++r) {
            }
            if (*r != ',' && *r != '\0') {
                return -1; /* 'a'b */
            }
        } else {
            while (*r != ',' && *r != '\0') {
                *w++ = *r++;
            }
            while (w > item && w[-1] == ' ') {
                --w;
            }
            if (w == item) { /* "a,,b", "a," */
                if (*r == '\0') {
                    break;
                }
                ++r;
                continue;
            }
        }
        if (n == max) {
            return -2;
        }
        items[n++] = item;
        if (*r == '\0') {
            *w = '\0';
            break;
        }
        *w = '\0';
        ++r;
    }
    return n;
}

void svp_spec_key_clear(void *base, const svp_spec_key_t *key)
{
    void *field = svp_spec_field(base, key);
    int   i;

    if (key->type == SVP_SPEC_T_STR_LIST) {
        svp_spec_strlist_t *l = field;
        for (i = 0; i < l->count; ++i) {
            free(l->items[i]);
        }
        l->count = 0;
    } else if (key->type == SVP_SPEC_T_STR_MAP) {
        svp_spec_strmap_t *m = field;
        for (i = 0; i < m->count; ++i) {
            free(m->keys[i]);
            free(m->values[i]);
        }
        m->count = 0;
    } else if (key->type == SVP_SPEC_T_INT_LIST) {
        ((svp_spec_intlist_t *)field)->count = 0;
    }
}

svp_status_t svp_spec_key_append(void *base, const svp_spec_key_t *key,
                                 const char *map_key, const char *value, char *why,
                                 int whylen)
{
    void   *field = svp_spec_field(base, key);
    int64_t v;
    int     i;

    switch (key->type) {
    case SVP_SPEC_T_INT_LIST: {
        svp_spec_intlist_t *l = field;
        if (svp_spec_parse_int64(value, &v) != 0) {
            snprintf(why, whylen, "expected an integer list element, found '%s'",
                     value);
            return SVP_ERR_SPEC;
        }
        if (l->count == SVP_SPEC_MAX_LIST) {
            snprintf(why, whylen,
                     "more than %d elements: over the list limit "
                     "of %d",
                     SVP_SPEC_MAX_LIST, SVP_SPEC_MAX_LIST);
            return SVP_ERR_SPEC;
        }
        l->items[l->count++] = v;
        return SVP_OK;
    }
    case SVP_SPEC_T_STR_LIST: {
        svp_spec_strlist_t *l = field;
        if (l->count == SVP_SPEC_MAX_LIST) {
            snprintf(why, whylen,
                     "more than %d elements: over the list limit "
                     "of %d",
                     SVP_SPEC_MAX_LIST, SVP_SPEC_MAX_LIST);
            return SVP_ERR_SPEC;
        }
        l->items[l->count] = svp_strdup(value);
        if (l->items[l->count] == NULL) {
            snprintf(why, whylen, "out of memory");
            return SVP_ERR_NO_MEMORY;
        }
        l->count++;
        return SVP_OK;
    }
    case SVP_SPEC_T_STR_MAP: {
        svp_spec_strmap_t *m = field;
        if (map_key ==
            NULL) { /* the callers give one for a map key: a list's is NULL */
            snprintf(why, whylen, "a mapping entry without a name");
            return SVP_ERR_SPEC;
        }
        for (i = 0; i < m->count; ++i) {
            if (strcmp(m->keys[i], map_key) == 0) {
                char *dup = svp_strdup(value);
                if (dup == NULL) {
                    snprintf(why, whylen, "out of memory");
                    return SVP_ERR_NO_MEMORY;
                }
                free(m->values[i]);
                m->values[i] = dup;
                return SVP_OK;
            }
        }
        if (m->count == SVP_SPEC_MAX_LIST) {
            snprintf(why, whylen,
                     "more than %d entries: over the mapping "
                     "limit of %d",
                     SVP_SPEC_MAX_LIST, SVP_SPEC_MAX_LIST);
            return SVP_ERR_SPEC;
        }
        m->keys[m->count]   = svp_strdup(map_key);
        m->values[m->count] = svp_strdup(value);
        if (m->keys[m->count] == NULL || m->values[m->count] == NULL) {
            free(m->keys[m->count]);
            free(m->values[m->count]);
            snprintf(why, whylen, "out of memory");
            return SVP_ERR_NO_MEMORY;
        }
        m->count++;
        return SVP_OK;
    }
    default:
        snprintf(why, whylen, "expected a scalar, found a list");
        return SVP_ERR_SPEC;
    }
}

svp_status_t svp_spec_key_set(void *base, const svp_spec_key_t *key,
                              const char *value, char *why, int whylen)
{
    void        *field = svp_spec_field(base, key);
    char         expected[256], *copy, *items[SVP_SPEC_MAX_LIST];
    int64_t      v;
    double       d;
    int          i, n, b;
    svp_status_t status;

    switch (key->type) {
    case SVP_SPEC_T_INT:
        for (i = 0; key->names != NULL && key->names[i] != NULL; ++i) {
            if (strcmp(value, key->names[i]) == 0) {
                *(int *)field = -(i + 1);
                return SVP_OK;
            }
        }
        if (svp_spec_parse_int64(value, &v) != 0 || v < key->min || v > key->max) {
            snprintf(why, whylen,
                     "expected an integer in [%.0f, %.0f]%s%s, found '%s'", key->min,
                     key->max, key->names != NULL ? " or " : "",
                     key->names != NULL ? key->names[0] : "", value);
            return SVP_ERR_SPEC;
        }
        *(int *)field = (int)v;
        return SVP_OK;
    case SVP_SPEC_T_U64: {
        uint64_t u;
        int      neg;

        if (svp_spec_parse_core_int(value, &neg, &u) != 0 || (neg && u != 0)) {
            snprintf(why, whylen,
                     "expected a non-negative integer up to "
                     "18446744073709551615 (2^64 - 1), found '%s'",
                     value);
            return SVP_ERR_SPEC;
        }
        *(uint64_t *)field = u;
        return SVP_OK;
    }
    case SVP_SPEC_T_DOUBLE:
        if (svp_spec_parse_core_double(value, &d) != 0 || !isfinite(d) ||
            d < key->min || d > key->max) {
            snprintf(why, whylen, "expected a number in [%g, %g], found '%s'",
                     key->min, key->max, value);
            return SVP_ERR_SPEC;
        }
        *(double *)field = d;
        return SVP_OK;
    case SVP_SPEC_T_STRING:
        copy = svp_strdup(value);
        if (copy == NULL) {
            snprintf(why, whylen, "out of memory");
            return SVP_ERR_NO_MEMORY;
        }
        free(*(char **)field);
        *(char **)field = copy;
        return SVP_OK;
    case SVP_SPEC_T_BOOL:
        if (svp_spec_parse_bool(value, &b) != 0) {
            snprintf(why, whylen, "expected true or false, found '%s'", value);
            return SVP_ERR_SPEC;
        }
        *(int *)field = b;
        return SVP_OK;
    case SVP_SPEC_T_ENUM:
        for (i = 0; key->names[i] != NULL; ++i) {
            if (strcmp(key->names[i], value) == 0) {
                *(int *)field = i;
                return SVP_OK;
            }
        }
        svp_spec_enum_expected(key, expected, sizeof(expected));
        snprintf(why, whylen, "expected %s, found '%s'", expected, value);
        return SVP_ERR_SPEC;
    case SVP_SPEC_T_SHAPE5:
    case SVP_SPEC_T_INT_LIST:
    case SVP_SPEC_T_STR_LIST:
        /* a scalar for a list: the --set form "[a, b]" or "a,b" */
        copy = svp_strdup(value);
        if (copy == NULL) {
            snprintf(why, whylen, "out of memory");
            return SVP_ERR_NO_MEMORY;
        }
        n = svp_spec_split_list(copy, items, SVP_SPEC_MAX_LIST);
        if (n == -2) {
            snprintf(why, whylen,
                     "more than %d elements: over the list limit "
                     "of %d",
                     SVP_SPEC_MAX_LIST, SVP_SPEC_MAX_LIST);
            free(copy);
            return SVP_ERR_SPEC;
        }
        if (n < 0) {
            snprintf(why, whylen, "expected a list like [a, b], found '%s'", value);
            free(copy);
            return SVP_ERR_SPEC;
        }
        if (key->type == SVP_SPEC_T_SHAPE5) {
            int64_t *shape = field, tmp[5];
            if (n != 5) {
                snprintf(why, whylen,
                         "expected 5 integers [B, F, C, H, W], found '%s'", value);
                free(copy);
                return SVP_ERR_SPEC;
            }
            for (i = 0; i < 5; ++i) {
                if (svp_spec_parse_int64(items[i], &tmp[i]) != 0 ||
                    tmp[i] < key->min || tmp[i] > key->max) {
                    snprintf(why, whylen,
                             "expected 5 integers in [%.0f, %.0f], found '%s'",
                             key->min, key->max, items[i]);
                    free(copy);
                    return SVP_ERR_SPEC;
                }
            }
            memcpy(shape, tmp, sizeof(tmp));
            free(copy);
            return SVP_OK;
        }
        svp_spec_key_clear(base, key);
        for (i = 0; i < n; ++i) {
            status = svp_spec_key_append(base, key, NULL, items[i], why, whylen);
            if (status != SVP_OK) {
                free(copy);
                return status;
            }
        }
        free(copy);
        return SVP_OK;
    case SVP_SPEC_T_STR_MAP:
        if (value[0] == '\0') {
            svp_spec_key_clear(base, key);
            return SVP_OK;
        }
        snprintf(why, whylen, "expected a mapping of NAME: value, found '%s'",
                 value);
        return SVP_ERR_SPEC;
    }
    return SVP_ERR_INTERNAL;
}

svp_status_t svp_spec_validate(const svp_spec_t *spec, char *why, int whylen,
                               const char **key_p)
{
    int i;

    if (spec->model.kind == SVP_MODEL_SVD && spec->model.path[0] == '\0') {
        *key_p = "model.path";
        snprintf(why, whylen,
                 "expected a model folder for model.kind svd, found none");
        return SVP_ERR_SPEC;
    }
    if (spec->video.min_guidance > spec->video.max_guidance) {
        *key_p = "video.min_guidance";
        snprintf(why, whylen, "expected min_guidance <= max_guidance (%g), found %g",
                 spec->video.max_guidance, spec->video.min_guidance);
        return SVP_ERR_SPEC;
    }
    if (spec->video.width % 8 != 0 || spec->video.height % 8 != 0) {
        *key_p = (spec->video.width % 8 != 0) ? "video.width" : "video.height";
        snprintf(why, whylen, "expected a multiple of 8, found %d",
                 (spec->video.width % 8 != 0) ? spec->video.width
                                              : spec->video.height);
        return SVP_ERR_SPEC;
    }
    if (spec->output.dir[0] == '\0') {
        *key_p = "output.dir";
        snprintf(why, whylen, "expected a directory, found an empty string");
        return SVP_ERR_SPEC;
    }
    /* on promises device memory on the wire: refused where there is none */
    if (spec->comm.gpu_direct == SVP_GPU_DIRECT_ON &&
        (spec->device != SVP_OPS_BACKEND_CUDA ||
         spec->model.kind != SVP_MODEL_SVD)) {
        *key_p = "comm.gpu_direct";
        snprintf(why, whylen,
                 "expected auto or off with %s (its latents are "
                 "host memory, there is no device memory to send), found on",
                 (spec->device != SVP_OPS_BACKEND_CUDA) ? "device cpu"
                                                        : "model.kind dummy");
        return SVP_ERR_SPEC;
    }
    if (spec->video.manifest[0] != '\0' &&
        (spec->video.inputs.count > 0 || spec->video.seeds.count > 0)) {
        *key_p = "video.manifest";
        snprintf(why, whylen,
                 "expected either a manifest or video.inputs and "
                 "video.seeds, found both");
        return SVP_ERR_SPEC;
    }
    if (spec->video.manifest[0] != '\0' && spec->model.conditioning[0] != '\0') {
        *key_p = "video.manifest";
        snprintf(why, whylen,
                 "expected either a manifest or model.conditioning, "
                 "found both");
        return SVP_ERR_SPEC;
    }
    for (i = 0; i < spec->video.seeds.count; ++i) {
        if (spec->video.seeds.items[i] < 0) {
            *key_p = "video.seeds";
            snprintf(why, whylen, "expected non-negative seeds, found %lld",
                     (long long)spec->video.seeds.items[i]);
            return SVP_ERR_SPEC;
        }
    }
    return SVP_OK;
}

int svp_spec_key_limits(const char *path, double *min_p, double *max_p)
{
    const svp_spec_key_t *key = svp_spec_key_find(path);

    if (key == NULL) {
        return 0;
    }
    *min_p = key->min;
    *max_p = key->max;
    return 1;
}
