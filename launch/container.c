/*
 * What a container sees.  cluster.container_mounts are SRC[:DST[:FLAGS]], in
 * the syntax pyxis (--container-mounts) and Apptainer (--bind) share: a host
 * folder SRC appears in the container as DST (DST defaults to SRC).
 *
 * The job spec is a host file that the worker reads inside the container, so
 * the script must name it by its container-side path; the model, the inputs
 * and output.dir are paths the worker opens inside the container.  A path no
 * mount covers is either inside the image (read-only, and gone with the
 * container: results written there are lost) or not there at all, and both
 * are found only after the queue wait.  So every one of them must lie under
 * a mount, and render and check say which does not.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"
#include "common/str.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The SRC and DST of mount m (DST = SRC when not given). */
static void container_mount_split(const char *m, const char **src, size_t *src_len,
                                  const char **dst, size_t *dst_len)
{
    const char *colon = strchr(m, ':'), *end;

    *src     = m;
    *src_len = colon ? (size_t)(colon - m) : strlen(m);
    *dst     = colon ? colon + 1 : m;
    end      = strchr(*dst, ':');
    *dst_len = end ? (size_t)(end - *dst) : (colon ? strlen(*dst) : *src_len);
    /* "/data/" and "/data" are the same folder */
    while (*src_len > 1 && (*src)[*src_len - 1] == '/') {
        --*src_len;
    }
    while (*dst_len > 1 && (*dst)[*dst_len - 1] == '/') {
        --*dst_len;
    }
}

/* Whether mount m is read-only: "ro" among its FLAGS (SRC:DST:ro, or
 * ro,... in a list). */
static int container_mount_ro(const char *m)
{
    const char *c1 = strchr(m, ':'), *flags = c1 ? strchr(c1 + 1, ':') : NULL;
    size_t      n;

    for (flags = flags ? flags + 1 : NULL; flags != NULL && *flags != '\0';) {
        n = strcspn(flags, ",");
        if (n == 2 && strncmp(flags, "ro", 2) == 0) {
            return 1;
        }
        flags += n + (flags[n] == ',');
    }
    return 0;
}

/* Whether path is prefix or below it ("/data" covers "/data/x", not "/database"). */
static int container_under(const char *path, const char *prefix, size_t len)
{
    if (len == 1 && prefix[0] == '/') {
        return path[0] == '/';
    }
    return strncmp(path, prefix, len) == 0 &&
           (path[len] == '/' || path[len] == '\0');
}

/*
 * path, under one mount's "from" side, into out on its "to" side: host to
 * container (SRC to DST) when inward, else back.  The last mount that
 * covers a path wins, as in both runtimes.  0 when none covers it.
 */
static int container_map(const svp_spec_t *spec, const char *path, int inward,
                         char *out, size_t len)
{
    for (int i = spec->cluster.container_mounts.count - 1; i >= 0; --i) {
        const char *side[2], *from, *to;
        size_t      side_len[2], from_len, to_len;

        container_mount_split(spec->cluster.container_mounts.items[i], &side[0],
                              &side_len[0], &side[1], &side_len[1]);
        from     = side[!inward];
        from_len = side_len[!inward];
        to       = side[inward];
        to_len   = side_len[inward];
        if (container_under(path, from, from_len)) {
            const char *rest = path + (from_len == 1 ? 0 : from_len);

            snprintf(out, len, "%.*s%s", (int)(to_len == 1 && *rest ? 0 : to_len),
                     to, rest);
            return 1;
        }
    }
    return 0;
}

int svp_launch_container_path(const svp_spec_t *spec, const char *host, char *out,
                              size_t len)
{
    return container_map(spec, host, 1, out, len);
}

int svp_launch_container_host(const svp_spec_t *spec, const char *path, char *out,
                              size_t len)
{
    return container_map(spec, path, 0, out, len);
}

int svp_launch_container_sees(const svp_spec_t *spec, const char *path)
{
    for (int i = 0; i < spec->cluster.container_mounts.count; ++i) {
        const char *src, *dst;
        size_t      src_len, dst_len;

        container_mount_split(spec->cluster.container_mounts.items[i], &src,
                              &src_len, &dst, &dst_len);
        if (container_under(path, dst, dst_len)) {
            return 1;
        }
    }
    return 0;
}

int svp_launch_in_container(const svp_spec_t *spec)
{
    return spec->cluster.container_image != NULL &&
           spec->cluster.container_image[0] != '\0';
}

/*
 * A relative path in the spec was joined to the spec's host folder at load;
 * the worker, reading the spec inside the container, joins it to the spec's
 * folder there.  So a path below the spec's (mounted) folder is seen too.
 */
static int container_visible(const svp_spec_t *spec, const char *spec_dir,
                             const char *path)
{
    char mapped[4096];

    return svp_launch_container_sees(spec, path) ||
           (spec_dir != NULL && container_under(path, spec_dir, strlen(spec_dir)) &&
            svp_launch_container_path(spec, path, mapped, sizeof(mapped)));
}

/* The mount that holds container path (the last that covers it), or NULL. */
static const char *container_mount_of(const svp_spec_t *spec, const char *path)
{
    for (int i = spec->cluster.container_mounts.count - 1; i >= 0; --i) {
        const char *src, *dst;
        size_t      src_len, dst_len;

        container_mount_split(spec->cluster.container_mounts.items[i], &src,
                              &src_len, &dst, &dst_len);
        if (container_under(path, dst, dst_len)) {
            return spec->cluster.container_mounts.items[i];
        }
    }
    return NULL;
}

/* Whether prog is an executable file in a folder of PATH. */
static int container_on_path(const char *prog)
{
    const char *path = getenv("PATH"), *p;
    char        file[4096];
    size_t      n;

    for (p = path; p != NULL && *p != '\0'; p += n + (p[n] == ':')) {
        n = strcspn(p, ":");
        snprintf(file, sizeof(file), "%.*s/%s", (int)(n ? n : 1), n ? p : ".", prog);
        if (access(file, X_OK) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * Apptainer: an image that is a file (not docker://, library://, oras://
 * and the like) must exist on the host, relative ones from the spec's
 * folder; and where this host is the cluster's (sbatch is on PATH), the
 * runtime must be too, or every rank fails after the queue wait.
 */
svp_status_t svp_launch_container_host_check(const svp_spec_t *spec, char *errbuf,
                                             int errlen)
{
    const char *img = spec->cluster.container_image, *slash;
    char        path[8200], esc[512], spec_dir[4096];
    struct stat sb;
    int         rc;

    if (!svp_launch_in_container(spec) ||
        spec->cluster.container_runtime != SVP_CONTAINER_APPTAINER) {
        return SVP_OK;
    }
    slash = (spec->file != NULL) ? strrchr(spec->file, '/') : NULL;
    snprintf(spec_dir, sizeof(spec_dir), "%.*s",
             slash ? (int)(slash - spec->file) : 1, slash ? spec->file : ".");

    if (img != NULL && img[0] != '\0' && strstr(img, "://") == NULL) {
        if (img[0] == '/') {
            snprintf(path, sizeof(path), "%s", img);
        } else {
            snprintf(path, sizeof(path), "%s/%s", spec_dir, img);
        }
        rc = stat(path, &sb);
        if (rc != 0 || !S_ISREG(sb.st_mode)) {
            svp_str_escape(path, strlen(path), esc, sizeof(esc),
                           SVP_STR_ESCAPE_QUOTED);
            svp_errf(errbuf, errlen,
                     "%s: cluster.container_image: %s: %s (an "
                     "Apptainer image is a file on the host, or a URI such as "
                     "docker://...)",
                     spec->file ? spec->file : "<spec>", esc,
                     (rc != 0) ? strerror(errno) : "not a file");
            return SVP_ERR_SPEC;
        }
    }
    if (container_on_path("sbatch") && !container_on_path("apptainer") &&
        !container_on_path("singularity")) {
        svp_errf(errbuf, errlen,
                 "%s: cluster.container_runtime: apptainer, but "
                 "neither apptainer nor singularity is on PATH on this cluster host "
                 "(module load apptainer, or add it to cluster.setup)",
                 spec->file ? spec->file : "<spec>");
        return SVP_ERR_SPEC;
    }
    return SVP_OK;
}

static svp_status_t container_unseen(const svp_spec_t *spec, const char *key,
                                     const char *path, char *errbuf, int errlen)
{
    char esc[512], where[1024];

    svp_str_escape(path, strlen(path), esc, sizeof(esc), SVP_STR_ESCAPE_QUOTED);
    svp_launch_mark(spec, key, path, where, sizeof(where));
    svp_errf(errbuf, errlen,
             "%s: %s: \"%s\" is under no mount of "
             "cluster.container_mounts: the container would not see "
             "it (add a mount SRC:DST whose DST holds it)",
             where, key, esc);
    return SVP_ERR_SPEC;
}

svp_status_t svp_launch_container_check(const svp_spec_t *spec,
                                        const char *spec_host, char *errbuf,
                                        int errlen)
{
    const char *out = spec->output.dir, *wd = spec->cluster.container_workdir;
    char        mapped[4096], key[64], dir[4096], *slash;
    const char *spec_dir = NULL;

    if (!svp_launch_in_container(spec)) {
        return SVP_OK;
    }
    if (spec_host != NULL) {
        snprintf(dir, sizeof(dir), "%s", spec_host);
        slash = strrchr(dir, '/');
        if (slash != NULL && slash != dir) {
            *slash   = '\0';
            spec_dir = dir;
        }
    }
    if (spec_host != NULL &&
        !svp_launch_container_path(spec, spec_host, mapped, sizeof(mapped))) {
        char esc[512];

        svp_str_escape(spec_host, strlen(spec_host), esc, sizeof(esc),
                       SVP_STR_ESCAPE_QUOTED);
        svp_errf(errbuf, errlen,
                 "%s: cluster.container_mounts: the job "
                 "spec %s is under no mount's SRC: the worker in the "
                 "container could not read it",
                 spec->file ? spec->file : "<spec>", esc);
        return SVP_ERR_SPEC;
    }
    if (wd != NULL && wd[0] != '\0') {
        if (wd[0] != '/') {
            svp_errf(errbuf, errlen,
                     "%s: cluster.container_workdir: "
                     "expected an absolute path in the container, found "
                     "\"%s\"",
                     spec->file ? spec->file : "<spec>", wd);
            return SVP_ERR_SPEC;
        }
        if (!svp_launch_container_sees(spec, wd)) {
            return container_unseen(spec, "cluster.container_workdir", wd, errbuf,
                                    errlen);
        }
    }
    if (out != NULL && out[0] != '\0' && out[0] != '/' &&
        (wd == NULL || wd[0] == '\0')) {
        svp_errf(errbuf, errlen,
                 "%s: output.dir: \"%s\" is relative, "
                 "and in a container it would land in the image's "
                 "working directory: set cluster.container_workdir (a "
                 "mounted folder) or make output.dir absolute",
                 spec->file ? spec->file : "<spec>", out);
        return SVP_ERR_SPEC;
    }
    if (out != NULL && out[0] == '/' && !svp_launch_container_sees(spec, out)) {
        return container_unseen(spec, "output.dir", out, errbuf, errlen);
    }
    if (out != NULL && out[0] != '\0') {
        /* the mount that holds the outputs (the last that covers them, as
         * in both runtimes) must take writes */
        char        at[8200];
        const char *m;

        if (out[0] == '/') {
            snprintf(at, sizeof(at), "%s", out);
        } else {
            snprintf(at, sizeof(at), "%s/%s", wd, out);
        }
        m = container_mount_of(spec, at);
        if (m != NULL && container_mount_ro(m)) {
            char esc[512];

            svp_str_escape(m, strlen(m), esc, sizeof(esc), SVP_STR_ESCAPE_QUOTED);
            svp_errf(errbuf, errlen,
                     "%s: output.dir: \"%s\" lies on the read-only "
                     "mount %s of cluster.container_mounts: the worker could write "
                     "no output (drop its :ro, or put output.dir on another mount)",
                     spec->file ? spec->file : "<spec>", at, esc);
            return SVP_ERR_SPEC;
        }
    }

    if (spec->model.kind == SVP_MODEL_SVD) {
        if (spec->model.path != NULL && spec->model.path[0] != '\0' &&
            !container_visible(spec, spec_dir, spec->model.path)) {
            return container_unseen(spec, "model.path", spec->model.path, errbuf,
                                    errlen);
        }
        if (spec->model.conditioning != NULL &&
            spec->model.conditioning[0] != '\0' &&
            !container_visible(spec, spec_dir, spec->model.conditioning)) {
            return container_unseen(spec, "model.conditioning",
                                    spec->model.conditioning, errbuf, errlen);
        }
    }
    if (spec->video.manifest != NULL && spec->video.manifest[0] != '\0' &&
        !container_visible(spec, spec_dir, spec->video.manifest)) {
        return container_unseen(spec, "video.manifest", spec->video.manifest, errbuf,
                                errlen);
    }
    for (int i = 0; i < spec->video.inputs.count; ++i) {
        const char *in = spec->video.inputs.items[i];

        snprintf(key, sizeof(key), "video.inputs[%d]", i);
        if (in[0] == '/' && !container_visible(spec, spec_dir, in)) {
            return container_unseen(spec, key, in, errbuf, errlen);
        }
    }
    return SVP_OK;
}
