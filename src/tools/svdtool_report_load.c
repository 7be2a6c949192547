/*
 * svdtool report: loading.  run.json and the spec it carries, the traces
 * of a run folder, and the FLOPs of a step from the run's UNet config.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_report_int.h"
#include "common/log.h"
#include "model/unet.h"
#include "jobspec/spec_json.h"

#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *svdtool_report_str(json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s ? s : dflt;
}

/* FLOPs of one step: the UNet's counted FLOPs at the run's shape. */
double svdtool_report_inputs_flops(svdtool_report_inputs_t *in)
{
    svp_unet_config_t cfg;
    char              path[4096];
    const char       *cwd;
    const svp_spec_t *s = in->spec;
    int               batch;

    if (s == NULL || s->model.kind != SVP_MODEL_SVD) {
        return 0;
    }
    cwd = svdtool_report_str(in->run, "cwd", ".");
    snprintf(path, sizeof(path), "%s%s%s/unet/config.json",
             s->model.path[0] == '/' ? "" : cwd, s->model.path[0] == '/' ? "" : "/",
             s->model.path);
    if (svp_unet_config_load(path, &cfg) != SVP_OK) {
        svp_warn("%s: cannot read the UNet config; no FLOP count", path);
        return 0;
    }
    batch = (s->video.max_guidance > 1.0) ? 2 : 1;
    snprintf(in->flops_source, sizeof(in->flops_source),
             "counted (svp_unet_macs) for batch %d, %d frames, %dx%d latents", batch,
             s->video.num_frames, s->video.height / 8, s->video.width / 8);
    return 2.0 * (double)svp_unet_macs(&cfg, batch, s->video.num_frames,
                                       s->video.height / 8, s->video.width / 8, 1);
}

svp_status_t svdtool_report_load_run(const char *file, svdtool_report_inputs_t *in)
{
    json_error_t jerr;
    char         err[512];
    json_t      *spec;

    in->run = json_load_file(file, 0, &jerr);
    if (in->run == NULL) {
        svp_error("%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    /* an object of the spec's keys, or an older record's string of lines */
    spec = json_object_get(in->run, "spec");
    if (spec == NULL ||
        svp_spec_load_json(spec, file, err, sizeof(err), &in->spec) != SVP_OK) {
        svp_error("%s: no valid spec in it", file);
        return SVP_ERR_BAD_FILE;
    }
    return SVP_OK;
}

/*
 * The run record of an array task's directory: path gets its one
 * run.shard-I-of-N.json; with several, the error lists them and says how to
 * pick one (their traces carry the shard in their names, and ranks of
 * different tasks would share numbers on one timeline).  None: path stays.
 */
static svp_status_t svdtool_report_shard_run(const char *dir, char *path, size_t len)
{
    char   pattern[4200];
    glob_t g;
    size_t i;

    snprintf(pattern, sizeof(pattern), "%s/run.shard-*-of-*.json", dir);
    if (glob(pattern, 0, NULL, &g) != 0) {
        return SVP_OK;
    }
    if (g.gl_pathc == 1) {
        snprintf(path, len, "%s", g.gl_pathv[0]);
        globfree(&g);
        return SVP_OK;
    }
    svp_error("%s: the run records of %zu array tasks, one report each: add "
              "--run with one of them:",
              dir, g.gl_pathc);
    for (i = 0; i < g.gl_pathc; ++i) {
        svp_error("  %s", g.gl_pathv[i]);
    }
    globfree(&g);
    return SVP_ERR_INVALID_PARAM;
}

/* The traces of a run directory: its run.json's log.trace prefix. */
svp_status_t svdtool_report_load_dir(const char *dir, svdtool_report_t *r,
                                     svdtool_report_inputs_t *in)
{
    char         path[4096], pattern[4200];
    const char  *prefix, *cwd;
    glob_t       g;
    size_t       i;
    svp_status_t status;
    struct stat  sb;

    snprintf(path, sizeof(path), "%s/run.json", dir);
    if (in->run == NULL && stat(path, &sb) != 0) {
        /* an array job's tasks write run.shard-I-of-N.json each: one is
         * taken as it is, of several the user picks */
        status = svdtool_report_shard_run(dir, path, sizeof(path));
        if (status != SVP_OK) {
            return status;
        }
    }
    if (in->run == NULL && stat(path, &sb) == 0) {
        status = svdtool_report_load_run(path, in);
        if (status != SVP_OK) {
            return status;
        }
    }
    prefix = svdtool_report_str(in->run, "trace", "");
    cwd    = svdtool_report_str(in->run, "cwd", ".");
    if (prefix[0] != '\0') {
        snprintf(pattern, sizeof(pattern), "%s%s%s.rank*.json",
                 prefix[0] == '/' ? "" : cwd, prefix[0] == '/' ? "" : "/", prefix);
    } else {
        snprintf(pattern, sizeof(pattern), "%s/*.rank*.json", dir);
    }
    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        svp_error("%s: no per-rank traces (%s); run the job with log.trace set", dir,
                  pattern);
        return SVP_ERR_NOT_FOUND;
    }
    for (i = 0; i < g.gl_pathc; ++i) {
        status = svdtool_report_load_trace(r, g.gl_pathv[i]);
        if (status != SVP_OK) {
            globfree(&g);
            return status;
        }
    }
    globfree(&g);
    /* a webdataset run's listing of its task's shards (job/wds.h) */
    if (in->shards == NULL) {
        json_t *sh    = json_object_get(in->run, "shard");
        int     count = (int)json_integer_value(json_object_get(sh, "count"));

        if (count > 1) {
            snprintf(path, sizeof(path), "%s/shards.shard-%d-of-%d.json", dir,
                     (int)json_integer_value(json_object_get(sh, "index")), count);
        } else {
            snprintf(path, sizeof(path), "%s/shards.json", dir);
        }
        in->shards = (stat(path, &sb) == 0) ? json_load_file(path, 0, NULL) : NULL;
    }
    /* svdtool unet --profile put beside the run, else rank 0's log.profile */
    snprintf(path, sizeof(path), "%s/profile.json", dir);
    if (in->profile == NULL && stat(path, &sb) != 0) {
        snprintf(path, sizeof(path), "%s/profile.rank0.json", dir);
    }
    if (in->profile == NULL && stat(path, &sb) == 0) {
        in->profile = json_load_file(path, 0, NULL);
    }
    return SVP_OK;
}
