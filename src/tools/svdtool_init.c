/*
 * svdtool init: models with seeded random weights in diffusers layout.
 *
 *   svdtool init --config CONFIG.json --seed S --output DIR
 *   svdtool init --model-config-dir DIR|NAME --seed S --output OUT
 *
 * The first writes the one model CONFIG describes (SVD UNet, temporal VAE
 * or CLIP image encoder): DIR gets config.json (a copy) and the weights
 * file with exactly the tensor names and shapes diffusers / transformers
 * give that config.  The second turns a folder of SVD configs into a
 * complete checkpoint folder; a bare NAME ("svd-mini") that is no folder
 * here names one of the config folders svdpipe ships, etc/models/NAME in
 * its data folder (common/install.h), so that an installed svdtool makes
 * the demo model from any directory.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_cmds_unet.h"
#include "common/install.h"
#include "common/log.h"
#include "common/status.h"
#include "model/svd_init.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void svdtool_init_usage(FILE *f)
{
    svp_install_dirs_t data;

    svp_install_dirs_get(SVP_INSTALL_DATA, &data);
    fprintf(f,
            "usage: svdtool init --config CONFIG.json --seed S --output DIR\n"
            "       svdtool init --model-config-dir DIR|NAME --seed S --output OUT\n"
            "  --config: writes the model CONFIG describes (by its _class_name:\n"
            "    UNetSpatioTemporalConditionModel, AutoencoderKLTemporalDecoder;\n"
            "    or a CLIPVisionModelWithProjection config) with random weights\n"
            "    (N(0, 1/fan_in)) in diffusers layout: DIR/config.json and the\n"
            "    weights file.\n"
            "  --model-config-dir: DIR holds an SVD checkpoint's configs only\n"
            "    (model_index.json, unet/, vae/, image_encoder/, scheduler/,\n"
            "    feature_extractor/); OUT becomes the complete folder, the three\n"
            "    models with random weights.  OUT appears only when whole.\n"
            "    A NAME that is no folder here is one of the configs svdpipe\n"
            "    ships (svd-mini: the demo's; svd-xt), in its data folder:\n"
            "    %s/etc/models/NAME ($SVP_DATADIR sets the folder).\n",
            (data.count > 0) ? data.dir[0] : "DATADIR");
}

/*
 * The folder --model-config-dir ARG names, into path (len bytes): ARG when
 * it is a folder, else for a bare name the shipped etc/models/ARG.  Logs
 * where it looked when neither is found.
 */
static svp_status_t svdtool_init_config_dir(const char *arg, char *path, size_t len)
{
    svp_install_dirs_t data;
    char               rel[PATH_MAX];
    char               looked[SVP_INSTALL_MAX_DIRS * PATH_MAX];
    struct stat        sb;

    if (stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(path, len, "%s", arg);
        return SVP_OK;
    }
    if (strchr(arg, '/') != NULL || strcmp(arg, ".") == 0 ||
        strcmp(arg, "..") == 0 || arg[0] == '\0') {
        svp_error("--model-config-dir %s: no such folder", arg);
        return SVP_ERR_NOT_FOUND;
    }
    snprintf(rel, sizeof(rel), "etc/models/%s", arg);
    if (svp_install_find(SVP_INSTALL_DATA, rel, path, len, looked, sizeof(looked)) ==
        SVP_OK) {
        return SVP_OK;
    }
    svp_install_dirs_get(SVP_INSTALL_DATA, &data);
    svp_error("--model-config-dir %s: no such folder here, nor among the model "
              "configs svdpipe ships (looked in %s%s)",
              arg, looked,
              data.from_env ? ", from SVP_DATADIR"
                            : "; SVP_DATADIR names the share/svdpipe folder "
                              "of an installation");
    return SVP_ERR_NOT_FOUND;
}

int svdtool_init_main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"model-config-dir", required_argument, NULL, 'm'},
        {"seed", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char        *config = NULL, *config_dir = NULL, *output = NULL;
    const char        *seed_arg = NULL;
    char               config_path[PATH_MAX];
    unsigned long long seed;
    char              *end;
    int                c;
    svp_status_t       status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "c:m:s:o:h", options, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            break;
        case 'm':
            config_dir = optarg;
            break;
        case 's':
            seed_arg = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'h':
            svdtool_init_usage(stdout);
            return SVP_EXIT_OK;
        default:
            svdtool_init_usage(stderr);
            return SVP_EXIT_BAD_INPUT;
        }
    }
    if ((config == NULL) == (config_dir == NULL) || seed_arg == NULL ||
        output == NULL || optind != argc) {
        fprintf(stderr, "svdtool init: one of --config and --model-config-dir, "
                        "--seed and --output are required\n");
        svdtool_init_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    errno = 0;
    seed  = strtoull(seed_arg, &end, 0);
    if (errno != 0 || *end != '\0' || *seed_arg == '\0' || *seed_arg == '-') {
        fprintf(stderr,
                "svdtool init: --seed expects a non-negative integer, got '%s'\n",
                seed_arg);
        return SVP_EXIT_BAD_INPUT;
    }
    if (config != NULL) {
        status = svp_model_write_random(config, (uint64_t)seed, output);
    } else {
        status =
            svdtool_init_config_dir(config_dir, config_path, sizeof(config_path));
        if (status == SVP_OK) {
            status = svp_svd_write_random(config_path, (uint64_t)seed, output);
        }
    }
    if (status != SVP_OK) {
        svp_error("svdtool init failed: %s", svp_status_string(status));
        return svp_status_exit_code(status);
    }
    return SVP_EXIT_OK;
}
