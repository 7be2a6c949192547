/*
 * What svdlaunch checks on the submitting host before anything is queued:
 * the paths a job reads and writes, and the worker it starts.  A job that
 * would fail at start-up for one of these reasons fails here instead, with
 * the key, the path and what is wrong, before it waits in the queue.
 *
 * Paths are checked as this host sees them.  With a container image, a path
 * is the container's: it is mapped back through cluster.container_mounts
 * (SRC:DST) and left unchecked when no mount covers it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"
#include "media/image.h"
#include "model/checkpoint.h"
#include "job/samples.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFLIGHT_PATH_MAX 4096

static const char *preflight_file(const svp_spec_t *spec)
{
    return spec->file ? spec->file : "<spec>";
}

/* Whether path lies in the folder that holds file. */
static int preflight_below(const char *path, const char *file)
{
    const char *slash = strrchr(file, '/');
    size_t      len   = slash ? (size_t)(slash - file) : 0;

    return slash != NULL && strncmp(path, file, len) == 0 && path[len] == '/';
}

/*
 * The host path of a job path into host.  Without a container it is the
 * path; inside one, a path below the folder of file (the spec, a manifest)
 * was a relative one joined to that host folder at load (the worker joins
 * it to the same, mounted, folder), and any other is the container's, seen
 * here through its mount.  Returns 0 when under no mount.
 */
static int preflight_seen(const svp_spec_t *spec, const char *file, const char *path,
                          char *host, size_t len)
{
    if (!svp_launch_in_container(spec) ||
        (file != NULL && preflight_below(path, file))) {
        snprintf(host, len, "%s", path);
        return 1;
    }
    return svp_launch_container_host(spec, path, host, len);
}

/* A path of the spec itself (relative ones were joined to its folder). */
static int preflight_host_path(const svp_spec_t *spec, const char *path, char *host,
                               size_t len)
{
    return preflight_seen(spec, spec->file, path, host, len);
}

static svp_status_t preflight_model(const svp_spec_t *spec, char *errbuf, int errlen)
{
    const char *cond = spec->model.conditioning;
    char        host[PREFLIGHT_PATH_MAX];
    struct stat sb;
    unsigned    flags = SVP_CHECKPOINT_FOR_JOB;

    if (cond != NULL && cond[0] != '\0' &&
        preflight_host_path(spec, cond, host, sizeof(host)) &&
        access(host, R_OK) != 0) {
        svp_errf(errbuf, errlen,
                 "%s: model.conditioning: cannot read "
                 "%s: %s",
                 preflight_file(spec), host, strerror(errno));
        return SVP_ERR_NOT_FOUND;
    }
    if (!preflight_host_path(spec, spec->model.path, host, sizeof(host))) {
        return SVP_OK;
    }
    if (stat(host, &sb) != 0) {
        svp_errf(errbuf, errlen,
                 "%s: model.path: cannot open %s: %s "
                 "(relative paths in a spec are relative to the "
                 "spec's folder)",
                 preflight_file(spec), host, strerror(errno));
        return SVP_ERR_NOT_FOUND;
    }
    if (!S_ISDIR(sb.st_mode)) {
        svp_errf(errbuf, errlen,
                 "%s: model.path: %s is not a folder "
                 "(expected a diffusers SVD folder: unet/, vae/, "
                 "image_encoder/, ...)",
                 preflight_file(spec), host);
        return SVP_ERR_NOT_FOUND;
    }
    if (cond == NULL || cond[0] == '\0') {
        flags |= SVP_CHECKPOINT_IMAGES;
    }
    if (svp_checkpoint_check(host, flags, NULL) != SVP_OK) {
        svp_errf(errbuf, errlen,
                 "%s: model.path: %s is not a usable "
                 "SVD / SVD-XT folder (the reasons are above; "
                 "'svdtool check-model %s' lists every part)",
                 preflight_file(spec), host, host);
        return SVP_ERR_BAD_FILE;
    }
    return SVP_OK;
}

static int preflight_is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');

    return dot != NULL && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") ||
                           !strcasecmp(dot, ".jpeg"));
}

/* Each input is a readable image or a folder with at least one. */
static svp_status_t preflight_inputs(const svp_spec_t *spec, char *errbuf,
                                     int errlen)
{
    char           host[PREFLIGHT_PATH_MAX];
    struct stat    sb;
    struct dirent *de;
    DIR           *d;
    int            i, found;

    if (spec->model.conditioning != NULL && spec->model.conditioning[0] != '\0') {
        return SVP_OK; /* the conditioning file replaces the images */
    }
    for (i = 0; i < spec->video.inputs.count; ++i) {
        const char *in = spec->video.inputs.items[i];

        if (!preflight_host_path(spec, in, host, sizeof(host))) {
            continue;
        }
        if (stat(host, &sb) != 0 || access(host, R_OK) != 0) {
            svp_errf(errbuf, errlen,
                     "%s: video.inputs[%d]: cannot open "
                     "%s: %s (relative paths in a spec are relative to "
                     "the spec's folder)",
                     preflight_file(spec), i, host, strerror(errno));
            return SVP_ERR_NOT_FOUND;
        }
        if (!S_ISDIR(sb.st_mode)) {
            continue;
        }
        d = opendir(host);
        if (d == NULL) {
            svp_errf(errbuf, errlen,
                     "%s: video.inputs[%d]: cannot read "
                     "folder %s: %s",
                     preflight_file(spec), i, host, strerror(errno));
            return SVP_ERR_NOT_FOUND;
        }
        found = 0;
        while (!found && (de = readdir(d)) != NULL) {
            found = de->d_name[0] != '.' && preflight_is_image_name(de->d_name);
        }
        closedir(d);
        if (!found) {
            svp_errf(errbuf, errlen,
                     "%s: video.inputs[%d]: no .png, "
                     ".jpg or .jpeg file in %s",
                     preflight_file(spec), i, host);
            return SVP_ERR_NOT_FOUND;
        }
    }
    return SVP_OK;
}

static int preflight_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The sample list the worker will make: the manifest parses (file:line and
 * the key), and for the svd model every image it names decodes with the
 * worker's own decoder, so a truncated PNG or a text file named .png stops
 * the job here, not after its queue wait.  The bad images are all counted
 * and the first PREFLIGHT_BAD_MAX named, each once however many samples
 * use it.
 */
#define PREFLIGHT_BAD_MAX 8

typedef struct {
    const svp_spec_t *spec;
    const char       *manifest; /* the manifest's host path */
} preflight_seen_t;

/* Where this host sees a manifest's image (relative ones were joined to
 * the manifest's folder); a svp_pipe_path_map_t function. */
static int preflight_image_host(void *arg, const char *path, char *host, size_t len)
{
    const preflight_seen_t *s = arg;

    return preflight_seen(s->spec, s->manifest, path, host, len);
}

svp_status_t svp_launch_samples(const svp_spec_t *spec, char *errbuf, int errlen,
                                svp_job_samples_t **list_p)
{
    svp_spec_t          copy = *spec;
    char                manifest[PREFLIGHT_PATH_MAX];
    preflight_seen_t    seen = {spec, manifest};
    svp_pipe_path_map_t map  = {preflight_image_host, &seen,
                                "is under no mount of cluster.container_mounts: "
                                 "the container would not see it"};

    *list_p = NULL;
    if (spec->video.manifest[0] == '\0') {
        if (!svp_launch_in_container(spec) || spec->video.inputs.count == 0) {
            return svp_job_samples_create(spec, errbuf, errlen, list_p);
        }
        /* video.inputs as the container sees them, read through the
         * mounts (a relative one was joined to the spec's folder here) */
        seen.manifest = spec->file;
        return svp_job_samples_create_mapped(spec, &map, errbuf, errlen, list_p);
    }
    if (!preflight_host_path(spec, spec->video.manifest, manifest,
                             sizeof(manifest))) {
        svp_errf(errbuf, errlen,
                 "%s: video.manifest: %s cannot be seen from this "
                 "host (under no mount's DST)",
                 preflight_file(spec), spec->video.manifest);
        return SVP_ERR_NOT_FOUND;
    }
    copy.video.manifest = manifest;
    return svp_job_samples_create_mapped(&copy, &map, errbuf, errlen, list_p);
}

static svp_status_t preflight_samples(const svp_spec_t *spec, char *errbuf,
                                      int errlen)
{
    svp_job_samples_t *list = NULL;
    svp_media_image_t *img;
    char               manifest[PREFLIGHT_PATH_MAX], **paths = NULL;
    char               msg[2048];
    int                i, n, bad = 0, used = 0;
    preflight_seen_t   seen = {spec, manifest};
    svp_status_t       status;

    if (spec->cluster.array != NULL && spec->cluster.array[0] != '\0') {
        /* each array task is a shard: the worker refuses other forms */
        status = svp_job_shard_check_array(spec->cluster.array, errbuf, errlen);
        if (status != SVP_OK) {
            return status;
        }
    }
    if (spec->video.manifest[0] != '\0') {
        /* the manifest as this host sees it (through the container's
         * mounts); one it cannot see is the job's to find */
        if (!preflight_host_path(spec, spec->video.manifest, manifest,
                                 sizeof(manifest))) {
            return SVP_OK;
        }
    } else if (spec->video.inputs.count > 0 && svp_launch_in_container(spec)) {
        /* container paths, below the spec's folder or through the mounts */
        seen.manifest = spec->file;
    }
    status = svp_launch_samples(spec, errbuf, errlen, &list);
    if (status != SVP_OK || spec->model.kind != SVP_MODEL_SVD) {
        svp_job_samples_destroy(list);
        return status;
    }
    /* each image once: a manifest may name one in many lines */
    paths = malloc(((size_t)list->nimages + 1) * sizeof(*paths));
    if (paths == NULL) {
        svp_job_samples_destroy(list);
        return SVP_ERR_NO_MEMORY;
    }
    if (list->nimages > 0) {
        memcpy(paths, list->images, (size_t)list->nimages * sizeof(*paths));
        qsort(paths, (size_t)list->nimages, sizeof(*paths), preflight_cmp_str);
    }
    msg[0] = '\0';
    for (i = 0, n = 0; i < list->nimages; ++i) {
        char host[PREFLIGHT_PATH_MAX];

        if (i > 0 && strcmp(paths[i], paths[i - 1]) == 0) {
            continue;
        }
        ++n;
        if (!preflight_image_host(&seen, paths[i], host, sizeof(host))) {
            continue; /* (the list was made through the same map) */
        }
        status = svp_media_image_load(host, &img);
        if (status == SVP_OK) {
            svp_media_image_destroy(img);
            continue;
        }
        if (bad++ < PREFLIGHT_BAD_MAX && used < (int)sizeof(msg)) {
            used +=
                snprintf(msg + used, sizeof(msg) - (size_t)used, "%s%s (%s)",
                         bad > 1 ? ", " : "", paths[i], svp_status_string(status));
        }
    }
    status = SVP_OK;
    if (bad > 0) {
        svp_errf(errbuf, errlen,
                 "%s: %s: %d of %d image%s do%s not decode: "
                 "%s%s",
                 preflight_file(spec),
                 (spec->video.manifest[0] != '\0') ? "video.manifest"
                                                   : "video.inputs",
                 bad, n, n == 1 ? "" : "s", bad == 1 ? "es" : "", msg,
                 bad > PREFLIGHT_BAD_MAX ? ", ..." : "");
        status = SVP_ERR_BAD_FILE;
    }
    free(paths);
    svp_job_samples_destroy(list);
    return status;
}

/*
 * output.dir is a folder something can be created in, or the nearest
 * folder above it that exists is one (the worker creates the rest).
 */
static svp_status_t preflight_output(const svp_spec_t *spec, char *errbuf,
                                     int errlen)
{
    char        host[PREFLIGHT_PATH_MAX], *slash;
    struct stat sb;
    size_t      len;
    int         exists;

    if (!preflight_host_path(spec, spec->output.dir, host, sizeof(host))) {
        return SVP_OK;
    }
    exists = (stat(host, &sb) == 0);
    if (exists && !S_ISDIR(sb.st_mode)) {
        svp_errf(errbuf, errlen,
                 "%s: output.dir: %s exists and is not "
                 "a folder",
                 preflight_file(spec), host);
        return SVP_ERR_SPEC;
    }
    while (!exists) {
        slash = strrchr(host, '/');
        if (slash == NULL) {
            snprintf(host, sizeof(host), ".");
        } else if (slash == host) {
            host[1] = '\0';
        } else {
            *slash = '\0';
        }
        exists = (stat(host, &sb) == 0);
        if (exists && !S_ISDIR(sb.st_mode)) {
            svp_errf(errbuf, errlen,
                     "%s: output.dir: cannot create %s: "
                     "%s is not a folder",
                     preflight_file(spec), spec->output.dir, host);
            return SVP_ERR_SPEC;
        }
    }
    /* a folder made and removed again: the permission bits do not tell
     * (root, read-only mounts, /proc) */
    len = strlen(host);
    if (len + sizeof("/.svdlaunch-XXXXXX") > sizeof(host)) {
        return SVP_OK;
    }
    snprintf(host + len, sizeof(host) - len, "/.svdlaunch-XXXXXX");
    if (mkdtemp(host) == NULL) {
        host[len] = '\0';
        svp_errf(errbuf, errlen,
                 "%s: output.dir: cannot write %s: "
                 "nothing can be created in %s (%s)",
                 preflight_file(spec), spec->output.dir, host, strerror(errno));
        return SVP_ERR_SPEC;
    }
    rmdir(host);
    return SVP_OK;
}

/* cluster.worker is an executable path, or a name found on PATH. */
static svp_status_t preflight_worker(const svp_spec_t *spec, char *errbuf,
                                     int errlen)
{
    const char *worker = svp_launch_worker(spec);
    const char *path   = getenv("PATH"), *p;
    char        host[PREFLIGHT_PATH_MAX];
    size_t      len;

    if (strchr(worker, '/') != NULL) {
        if (preflight_host_path(spec, worker, host, sizeof(host)) &&
            access(host, X_OK) != 0) {
            svp_errf(errbuf, errlen,
                     "%s: cluster.worker: cannot run "
                     "%s: %s",
                     preflight_file(spec), host, strerror(errno));
            return SVP_ERR_NOT_FOUND;
        }
        return SVP_OK;
    }
    if (spec->cluster.container_image != NULL &&
        spec->cluster.container_image[0] != '\0') {
        return SVP_OK; /* the container's PATH, not ours */
    }
    for (p = path ? path : ""; *p != '\0'; p += len + (p[len] == ':')) {
        len = strcspn(p, ":");
        snprintf(host, sizeof(host), "%.*s/%s", (int)len, len ? p : ".", worker);
        if (access(host, X_OK) == 0) {
            return SVP_OK;
        }
    }
    svp_errf(errbuf, errlen,
             "%s: cluster.worker: '%s' is not on PATH "
             "here; the job script runs it on every node, so install "
             "svdpipe where every node finds it, or set cluster.worker "
             "to its full path",
             preflight_file(spec), worker);
    return SVP_ERR_NOT_FOUND;
}

svp_status_t svp_launch_preflight(const svp_spec_t *spec, char *errbuf, int errlen)
{
    svp_status_t status;

    status = svp_launch_check(spec, errbuf, errlen);
    if (status == SVP_OK) {
        status = svp_launch_check_compute(spec, errbuf, errlen);
    }
    if (status == SVP_OK && spec->model.kind == SVP_MODEL_SVD) {
        status = preflight_inputs(spec, errbuf, errlen);
        if (status == SVP_OK) {
            status = preflight_model(spec, errbuf, errlen);
        }
    }
    if (status == SVP_OK) {
        status = preflight_samples(spec, errbuf, errlen);
    }
    if (status == SVP_OK) {
        status = preflight_output(spec, errbuf, errlen);
    }
    if (status == SVP_OK) {
        status = preflight_worker(spec, errbuf, errlen);
    }
    if (status == SVP_OK) {
        status = svp_launch_container_host_check(spec, errbuf, errlen);
    }
    return status;
}
