/*
 * Validation of the values svdlaunch writes into a script.  The character
 * sets are Slurm's own where Slurm has one (partition and account names,
 * array and dependency syntax) and deliberately narrow elsewhere: a value
 * that fails here is reported with the key and the exact text, so the user
 * can fix it, while a value that slipped through could start a command.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"
#include "jobspec/layout.h"
#include "common/errf.h"
#include "common/str.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAUNCH_NAME_CHARS "_.-"

/* Non-empty and every character alphanumeric or in extra. */
static int launch_all_in(const char *s, const char *extra)
{
    if (*s == '\0') {
        return 0;
    }
    for (; *s != '\0'; ++s) {
        if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL) {
            return 0;
        }
    }
    return 1;
}

static svp_status_t launch_bad(const svp_spec_t *spec, const char *key,
                               const char *expected, const char *found, char *errbuf,
                               int errlen)
{
    char esc[256], where[1024];

    svp_str_escape(found, strlen(found), esc, sizeof(esc), SVP_STR_ESCAPE_QUOTED);
    svp_launch_mark(spec, key, found, where, sizeof(where));
    svp_errf(errbuf, errlen, "%s: %s: expected %s, found \"%s\"", where, key,
             expected, esc);
    return SVP_ERR_SPEC;
}

static svp_status_t launch_bad_int(const svp_spec_t *spec, const char *key,
                                   const char *expected, long found, char *errbuf,
                                   int errlen)
{
    char text[32], where[1024];

    snprintf(text, sizeof(text), "%ld", found);
    svp_launch_mark(spec, key, text, where, sizeof(where));
    svp_errf(errbuf, errlen, "%s: %s: expected %s, found %ld", where, key, expected,
             found);
    return SVP_ERR_SPEC;
}

/* Comma-separated names, no empty item ("gpu,gpu-long"). */
static int launch_name_list_ok(const char *s)
{
    const char *p;
    size_t      len;

    for (p = s;; p += len + 1) {
        char item[256];

        len = strcspn(p, ",");
        if (len == 0 || len >= sizeof(item)) {
            return 0;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (!launch_all_in(item, LAUNCH_NAME_CHARS)) {
            return 0;
        }
        if (p[len] == '\0') {
            return 1;
        }
    }
}

static int launch_env_name_ok(const char *s)
{
    return (isalpha((unsigned char)s[0]) || s[0] == '_') && launch_all_in(s, "_");
}

/* Optional #SBATCH values, each with its own character set. */
typedef struct {
    const char *key;
    const char *expected;
    int (*ok)(const char *value);
    size_t offset;
} launch_sbatch_check_t;

static int launch_ok_name(const char *s)
{
    return launch_all_in(s, LAUNCH_NAME_CHARS);
}

static int launch_ok_time(const char *s)
{
    long secs;
    return svp_launch_time_parse(s, &secs) == SVP_OK;
}

static int launch_ok_constraint(const char *s)
{
    /* features joined by & | , with counts (*2) and brackets */
    return launch_all_in(s, LAUNCH_NAME_CHARS "&|,*:[]()!");
}

static int launch_ok_filename(const char *s)
{
    /* a path with Slurm's %j/%x/%A/%a patterns; no blanks or quotes */
    return launch_all_in(s, LAUNCH_NAME_CHARS "/%");
}

static int launch_ok_dependency(const char *s)
{
    /* "afterok:12:13,singleton", "afterany:12+5", "?" separates OR-lists */
    return isalpha((unsigned char)s[0]) && launch_all_in(s, "_:,?+");
}

static int launch_ok_array(const char *s)
{
    /* "0-15", "1,3,5-7", "0-15:4", "0-99%8" */
    if (!isdigit((unsigned char)s[0])) {
        return 0;
    }
    for (; *s != '\0'; ++s) {
        if (!isdigit((unsigned char)*s) && strchr(",-:%", *s) == NULL) {
            return 0;
        }
    }
    return 1;
}

static int launch_ok_mpi(const char *s)
{
    for (const char *p = s; *p != '\0'; ++p) {
        if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) &&
            *p != '_') {
            return 0;
        }
    }
    return *s != '\0';
}

static int launch_ok_mem(const char *s)
{
    /* Slurm's size: a number of MB, or with a K, M, G or T suffix */
    long        v;
    const char *end = svp_launch_digits(s, &v);

    return end != NULL && v > 0 &&
           (*end == '\0' || (strchr("KMGTkmgt", *end) != NULL && end[1] == '\0'));
}

/*
 * [B:|R:]SIG[@SECONDS].  The worker stops cleanly (finished samples kept,
 * the rest resumed by the next run) on SIGTERM and SIGINT only; any other
 * signal Slurm could send (USR1, the usual choice for applications that
 * checkpoint on it) would kill it mid-sample, so only TERM and INT pass.
 */
static int launch_ok_signal(const char *s)
{
    long        secs;
    const char *at;

    if ((s[0] == 'B' || s[0] == 'R') && s[1] == ':') {
        s += 2;
    }
    if (!strncmp(s, "SIG", 3)) {
        s += 3;
    }
    if (!strncmp(s, "TERM", 4)) {
        at = s + 4;
    } else if (!strncmp(s, "INT", 3)) {
        at = s + 3;
    } else if (!strncmp(s, "15", 2)) {
        at = s + 2;
    } else if (s[0] == '2') {
        at = s + 1;
    } else {
        return 0;
    }
    if (*at == '\0') {
        return 1;
    }
    if (*at != '@') {
        return 0;
    }
    at = svp_launch_digits(at + 1, &secs);
    return at != NULL && *at == '\0' && secs <= 65535;
}

#define LAUNCH_CLUSTER_STR(_field) offsetof(svp_spec_t, cluster._field)

static const launch_sbatch_check_t launch_sbatch_checks[] = {
    {"cluster.partition", "partition names of [A-Za-z0-9_.-], comma-separated",
     launch_name_list_ok, LAUNCH_CLUSTER_STR(partition)},
    {"cluster.account", "an account name of [A-Za-z0-9_.-]", launch_ok_name,
     LAUNCH_CLUSTER_STR(account)},
    {"cluster.qos", "QOS names of [A-Za-z0-9_.-], comma-separated",
     launch_name_list_ok, LAUNCH_CLUSTER_STR(qos)},
    {"cluster.time",
     "a Slurm time limit (minutes, minutes:seconds, "
     "hours:minutes:seconds, days-hours[:minutes[:seconds]] or UNLIMITED)",
     launch_ok_time, LAUNCH_CLUSTER_STR(time)},
    {"cluster.constraint", "a feature expression of [A-Za-z0-9_.-&|,*:[]()!]",
     launch_ok_constraint, LAUNCH_CLUSTER_STR(constraint)},
    {"cluster.job_name", "a job name of [A-Za-z0-9_.-]", launch_ok_name,
     LAUNCH_CLUSTER_STR(job_name)},
    {"cluster.output", "a file pattern of [A-Za-z0-9_.-/%]", launch_ok_filename,
     LAUNCH_CLUSTER_STR(output)},
    {"cluster.error", "a file pattern of [A-Za-z0-9_.-/%]", launch_ok_filename,
     LAUNCH_CLUSTER_STR(error)},
    {"cluster.dependency", "a dependency list such as afterok:123[:124][,singleton]",
     launch_ok_dependency, LAUNCH_CLUSTER_STR(dependency)},
    {"cluster.array", "array indexes such as 0-15, 1,3,5-7, 0-15:4 or 0-99%8",
     launch_ok_array, LAUNCH_CLUSTER_STR(array)},
    {"cluster.mpi", "an srun MPI plugin name of [a-z0-9_] (pmix, pmix_v4, pmi2)",
     launch_ok_mpi, LAUNCH_CLUSTER_STR(mpi)},
    {"cluster.mem", "a size such as 200G (a number with K, M, G or T)",
     launch_ok_mem, LAUNCH_CLUSTER_STR(mem)},
    {"cluster.mem_per_gpu", "a size such as 64G (a number with K, M, G or T)",
     launch_ok_mem, LAUNCH_CLUSTER_STR(mem_per_gpu)},
    {"cluster.signal",
     "TERM@SECONDS or INT@SECONDS, optionally after B: or "
     "R: (the signals the worker stops cleanly on)",
     launch_ok_signal, LAUNCH_CLUSTER_STR(signal)},
};

/*
 * The options the script sets from keys of its own, by their full long
 * names (what svp_launch_slurm_parse resolves "-N2" and "--nod" to); the
 * pyxis options are plugin options, matched as written.  srun's own output
 * files are no batch output: srun_args may name them (per-rank logs,
 * --output=rank-%t.log), so output, error and open-mode are the batch
 * script's keys on #SBATCH lines only.
 */
#define LAUNCH_OWN_SBATCH 0x1u
#define LAUNCH_OWN_SRUN   0x2u
#define LAUNCH_OWN_BOTH   (LAUNCH_OWN_SBATCH | LAUNCH_OWN_SRUN)

static const struct {
    const char *option, *key;
    unsigned    tools;
} launch_own_options[] = {
    {"nodes", "cluster.nodes", LAUNCH_OWN_BOTH},
    {"ntasks-per-node", "cluster.ranks_per_node", LAUNCH_OWN_BOTH},
    {"tasks-per-node", "cluster.ranks_per_node", LAUNCH_OWN_BOTH},
    {"ntasks", "cluster.nodes and cluster.ranks_per_node", LAUNCH_OWN_BOTH},
    {"gpus-per-task", "cluster.gpus_per_task", LAUNCH_OWN_BOTH},
    {"partition", "cluster.partition", LAUNCH_OWN_BOTH},
    {"account", "cluster.account", LAUNCH_OWN_BOTH},
    {"qos", "cluster.qos", LAUNCH_OWN_BOTH},
    {"time", "cluster.time", LAUNCH_OWN_BOTH},
    {"constraint", "cluster.constraint", LAUNCH_OWN_BOTH},
    {"exclusive", "cluster.exclusive", LAUNCH_OWN_BOTH},
    {"job-name", "cluster.job_name", LAUNCH_OWN_BOTH},
    {"output", "cluster.output", LAUNCH_OWN_SBATCH},
    {"error", "cluster.error", LAUNCH_OWN_SBATCH},
    {"requeue", "cluster.requeue", LAUNCH_OWN_BOTH},
    {"open-mode", "cluster.requeue", LAUNCH_OWN_SBATCH},
    {"dependency", "cluster.dependency", LAUNCH_OWN_BOTH},
    {"array", "cluster.array", LAUNCH_OWN_BOTH},
    {"cpus-per-task", "cluster.cpus_per_task", LAUNCH_OWN_BOTH},
    {"mem", "cluster.mem", LAUNCH_OWN_BOTH},
    {"mem-per-gpu", "cluster.mem_per_gpu", LAUNCH_OWN_BOTH},
    {"signal", "cluster.signal", LAUNCH_OWN_BOTH},
    {"mpi", "cluster.mpi", LAUNCH_OWN_BOTH},
    {"container-image", "cluster.container_image", LAUNCH_OWN_BOTH},
    {"container-mounts", "cluster.container_mounts", LAUNCH_OWN_BOTH},
    {"container-workdir", "cluster.container_workdir", LAUNCH_OWN_BOTH},
    {"kill-on-bad-exit", NULL, LAUNCH_OWN_BOTH},
    {"wait", NULL, LAUNCH_OWN_BOTH},
    {"gpu-bind", NULL, LAUNCH_OWN_BOTH},
};

/* Whether an --export value keeps the caller's environment: ALL among
 * its names ("ALL", "ALL,X=1"); NONE, NIL or a bare list drops it. */
static int launch_export_keeps_all(const char *value)
{
    for (const char *p = value; p != NULL && *p != '\0';) {
        size_t len = strcspn(p, ",");

        if (len == 3 && !strncmp(p, "ALL", 3)) {
            return 1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

/*
 * What Slurm would refuse, or do to the job, for one resolved option:
 * NULL when nothing, else the reason (for "expected ...").  Each one was
 * seen on the local cluster (Slurm 22.05) or is in its manual.
 */
static const char *launch_slurm_contradiction(const svp_spec_t *spec, int tool,
                                              const svp_launch_slurm_opt_t *o)
{
    int mem_set = svp_launch_is_set(spec->cluster.mem) ||
                  svp_launch_is_set(spec->cluster.mem_per_gpu);

    if (o->name == NULL) {
        return NULL;
    }
    if (!strcmp(o->name, "mem-per-cpu") && mem_set) {
        /* sbatch: "--mem, --mem-per-cpu, and --mem-per-gpu are mutually
         * exclusive"; srun reads the allocation's SLURM_MEM_PER_NODE or
         * SLURM_MEM_PER_GPU as its own and refuses the step the same way */
        return "no --mem-per-cpu beside cluster.mem or cluster.mem_per_gpu "
               "(Slurm takes one of --mem, --mem-per-cpu and --mem-per-gpu; "
               "set the memory with one key)";
    }
    if (tool == SVP_LAUNCH_SBATCH && !strcmp(o->name, "wrap")) {
        return "no --wrap (sbatch would run its command instead of this "
               "script: no svdworker would start)";
    }
    if (tool == SVP_LAUNCH_SRUN && !strcmp(o->name, "pty")) {
        return "no --pty (it puts task 0 on a pseudo-terminal for an "
               "interactive shell; a batch job has no terminal, and the "
               "ranks must all run the same way)";
    }
    if (tool == SVP_LAUNCH_SRUN && !strcmp(o->name, "export") &&
        !launch_export_keeps_all(o->value)) {
        return "no --export without ALL (--export=NONE or a list of names "
               "starts the ranks without the environment the script exports: "
               "cluster.env, UCX_TLS, the PMIx settings, PATH; use "
               "--export=ALL,NAME=value)";
    }
    return NULL;
}

/*
 * One extra option: "--name", "--name=value" or "-x": it starts with '-',
 * and for #SBATCH lines holds no blank, quote or '#' (sbatch's tokenizer
 * does not read shell quoting).  It is resolved as the tool reads it
 * (slurm_options.c), so an abbreviation is the option it stands for.  An
 * option the script already sets is refused with the key that sets it:
 * two values would leave the reader to guess which one Slurm takes; so is
 * one Slurm would refuse beside the script's own, or that breaks the job.
 */
static svp_status_t launch_check_args(const svp_spec_t *spec, const char *name,
                                      const svp_spec_strlist_t *args, int tool,
                                      char *errbuf, int errlen)
{
    int  sbatch = (tool == SVP_LAUNCH_SBATCH);
    char key[128];

    for (int i = 0; i < args->count; ++i) {
        const char            *a = args->items[i], *why;
        svp_launch_slurm_opt_t opts[16];
        char                   reason[640];
        int                    n;

        snprintf(key, sizeof(key), "cluster.%s[%d]", name, i);
        if (a[0] != '-' || a[1] == '\0' || svp_launch_has_control(a) ||
            (sbatch && strpbrk(a, " '\"#\\") != NULL)) {
            return launch_bad(spec, key,
                              sbatch
                                  ? "an option such as --gres-flags=enforce-binding "
                                    "(no blanks, quotes or '#')"
                                  : "an option such as --cpu-bind=cores (one "
                                    "argument, no control characters)",
                              a, errbuf, errlen);
        }
        n = svp_launch_slurm_parse(tool, a, opts, (int)SVP_ARRAY_SIZE(opts), reason,
                                   sizeof(reason));
        if (n < 0) {
            return launch_bad(spec, key, reason, a, errbuf, errlen);
        }
        for (int j = 0; j < n; ++j) {
            const svp_launch_slurm_opt_t *o = &opts[j];

            for (size_t k = 0; k < SVP_ARRAY_SIZE(launch_own_options); ++k) {
                const char *own = launch_own_options[k].option;
                int         same;

                if (!(launch_own_options[k].tools &
                      (sbatch ? LAUNCH_OWN_SBATCH : LAUNCH_OWN_SRUN))) {
                    continue;
                }
                same = (o->name != NULL) ? !strcmp(o->name, own)
                                         : (o->len > 1 && strlen(own) == o->len &&
                                            !strncmp(o->written, own, o->len));
                if (!same) {
                    continue;
                }
                if (launch_own_options[k].key != NULL) {
                    snprintf(reason, sizeof(reason),
                             "an option the script does "
                             "not set already (--%s: use %s)",
                             own, launch_own_options[k].key);
                } else {
                    snprintf(reason, sizeof(reason),
                             "an option the script does "
                             "not set already (--%s: set by svdlaunch itself)",
                             own);
                }
                return launch_bad(spec, key, reason, a, errbuf, errlen);
            }
            why = launch_slurm_contradiction(spec, tool, o);
            if (why != NULL) {
                return launch_bad(spec, key, why, a, errbuf, errlen);
            }
        }
    }
    return SVP_OK;
}

/*
 * With cluster.env_expand, a value is written in double quotes, so that
 * $NAME and ${NAME} expand when the job starts ($SCRATCH, $SLURM_JOB_ID).
 * Nothing else may: command substitution, backquotes, escapes and quotes
 * are refused, so an expanded value still cannot run a command.
 */
static int launch_env_expandable(const char *s)
{
    for (; *s != '\0'; ++s) {
        if (*s == '`' || *s == '"' || *s == '\\') {
            return 0;
        }
        if (*s != '$') {
            continue;
        }
        if (s[1] == '{') {
            const char *end = strchr(s + 2, '}');
            char        name[128];

            if (end == NULL || end == s + 2 ||
                (size_t)(end - s - 2) >= sizeof(name)) {
                return 0;
            }
            memcpy(name, s + 2, (size_t)(end - s - 2));
            name[end - s - 2] = '\0';
            if (!launch_env_name_ok(name)) {
                return 0;
            }
            s = end;
        } else if (isalpha((unsigned char)s[1]) || s[1] == '_') {
            while (isalnum((unsigned char)s[1]) || s[1] == '_') {
                ++s;
            }
        } else {
            return 0;
        }
    }
    return 1;
}

/* A value that goes through the shell quoted: anything but control chars. */
static svp_status_t launch_check_quoted(const svp_spec_t *spec, const char *key,
                                        const char *value, char *errbuf, int errlen)
{
    if (value != NULL && svp_launch_has_control(value)) {
        return launch_bad(spec, key,
                          "a value without control characters "
                          "(newlines, tabs)",
                          value, errbuf, errlen);
    }
    return SVP_OK;
}

/* The container keys: quoted values, mounts without commas, and nothing of
 * a container without its image. */
static svp_status_t launch_validate_container(const svp_spec_t *spec, char *errbuf,
                                              int errlen)
{
    svp_status_t status;
    char         key[128];
    int          i;

    status = launch_check_quoted(spec, "cluster.container_image",
                                 spec->cluster.container_image, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    for (i = 0; i < spec->cluster.container_mounts.count; ++i) {
        const char *m = spec->cluster.container_mounts.items[i];

        snprintf(key, sizeof(key), "cluster.container_mounts[%d]", i);
        /* the mounts are joined with commas into one srun option */
        if (m == NULL || *m == '\0' || strchr(m, ',') != NULL ||
            svp_launch_has_control(m)) {
            return launch_bad(spec, key,
                              "a mount SRC[:DST[:FLAGS]] without "
                              "commas or control characters",
                              m ? m : "", errbuf, errlen);
        }
    }
    if (spec->cluster.container_mounts.count > 0 &&
        !svp_launch_is_set(spec->cluster.container_image)) {
        return launch_bad(spec, "cluster.container_mounts",
                          "cluster.container_image to be set with mounts", "",
                          errbuf, errlen);
    }
    status = launch_check_quoted(spec, "cluster.container_workdir",
                                 spec->cluster.container_workdir, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    if (!svp_launch_is_set(spec->cluster.container_image) &&
        (svp_launch_is_set(spec->cluster.container_workdir) ||
         spec->cluster.container_runtime != SVP_CONTAINER_PYXIS)) {
        return launch_bad(spec,
                          svp_launch_is_set(spec->cluster.container_workdir)
                              ? "cluster.container_workdir"
                              : "cluster.container_runtime",
                          "cluster.container_image to be set", "", errbuf, errlen);
    }
    return SVP_OK;
}

/* cluster.env: names a shell takes, values it can quote (or expand). */
static svp_status_t launch_validate_env(const svp_spec_t *spec, char *errbuf,
                                        int errlen)
{
    svp_status_t status;
    char         key[300];
    int          i;

    for (i = 0; i < spec->cluster.env.count; ++i) {
        const char *name  = spec->cluster.env.keys[i];
        const char *value = spec->cluster.env.values[i];

        if (name == NULL || !launch_env_name_ok(name)) {
            return launch_bad(spec, "cluster.env",
                              "environment variable names of "
                              "[A-Za-z_][A-Za-z0-9_]*",
                              name ? name : "", errbuf, errlen);
        }
        snprintf(key, sizeof(key), "cluster.env.%s", name);
        status = launch_check_quoted(spec, key, value ? value : "", errbuf, errlen);
        if (status != SVP_OK) {
            return status;
        }
        if (spec->cluster.env_expand && !launch_env_expandable(value ? value : "")) {
            return launch_bad(spec, key,
                              "with cluster.env_expand, text with "
                              "$NAME or ${NAME} only (no $(...), backquotes, "
                              "quotes or backslashes)",
                              value ? value : "", errbuf, errlen);
        }
    }
    return SVP_OK;
}

svp_status_t svp_launch_validate(const svp_spec_t *spec, char *errbuf, int errlen)
{
    svp_status_t status;
    char         key[128];
    int          i;

    if (spec->cluster.nodes < 1 || spec->cluster.nodes > 65536) {
        return launch_bad_int(spec, "cluster.nodes", "1 to 65536",
                              spec->cluster.nodes, errbuf, errlen);
    }
    if (spec->cluster.ranks_per_node < 1 || spec->cluster.ranks_per_node > 1024) {
        return launch_bad_int(spec, "cluster.ranks_per_node", "1 to 1024",
                              spec->cluster.ranks_per_node, errbuf, errlen);
    }
    if (spec->cluster.gpus_per_task < 0 || spec->cluster.gpus_per_task > 64) {
        return launch_bad_int(spec, "cluster.gpus_per_task",
                              "0 (one per task "
                              "for cuda) to 64",
                              spec->cluster.gpus_per_task, errbuf, errlen);
    }
    if (!(spec->comm.deadline > 0) || spec->comm.deadline > 1e7) {
        svp_errf(errbuf, errlen,
                 "%s: comm.deadline: expected seconds "
                 "in (0, 1e7], found %g",
                 spec->file ? spec->file : "<spec>", spec->comm.deadline);
        return SVP_ERR_SPEC;
    }

    for (i = 0;
         i < (int)(sizeof(launch_sbatch_checks) / sizeof(launch_sbatch_checks[0]));
         ++i) {
        const launch_sbatch_check_t *c = &launch_sbatch_checks[i];
        const char *value = *(char *const *)((const char *)spec + c->offset);

        if (value != NULL && *value != '\0' && !c->ok(value)) {
            return launch_bad(spec, c->key, c->expected, value, errbuf, errlen);
        }
    }
    /* what the characters allow but Slurm refuses ("5-3", "0--2") */
    if (svp_launch_is_set(spec->cluster.array) && svp_launch_array_tasks(spec) < 1) {
        return launch_bad(spec, "cluster.array",
                          "array indexes such as 0-15, "
                          "1,3,5-7, 0-15:4 or 0-99%8 (ranges low to high)",
                          spec->cluster.array, errbuf, errlen);
    }
    /* the default job name is the spec file's base name: same rules */
    if (!launch_ok_name(svp_launch_job_name(spec))) {
        return launch_bad(spec, "name",
                          "a job name of [A-Za-z0-9_.-] (set "
                          "cluster.job_name)",
                          svp_launch_job_name(spec), errbuf, errlen);
    }

    status = launch_check_quoted(spec, "cluster.worker", spec->cluster.worker,
                                 errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    {
        char worker[4096], why[512];

        if (!svp_launch_worker_path(spec, worker, sizeof(worker), why,
                                    sizeof(why))) {
            return launch_bad(spec, "cluster.worker", why, svp_launch_worker(spec),
                              errbuf, errlen);
        }
    }
    /* a comment of the script names it, for svdlaunch status JOBID */
    status =
        launch_check_quoted(spec, "output.dir", spec->output.dir, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    status = launch_validate_container(spec, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    status = launch_validate_env(spec, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }

    if (svp_launch_is_set(spec->cluster.mem) &&
        svp_launch_is_set(spec->cluster.mem_per_gpu)) {
        return launch_bad(spec, "cluster.mem_per_gpu",
                          "either cluster.mem or "
                          "cluster.mem_per_gpu (Slurm takes one)",
                          spec->cluster.mem_per_gpu, errbuf, errlen);
    }
    if (spec->cluster.cpus_per_task < 0 || spec->cluster.cpus_per_task > 4096) {
        return launch_bad_int(spec, "cluster.cpus_per_task",
                              "0 (Slurm's "
                              "default) to 4096",
                              spec->cluster.cpus_per_task, errbuf, errlen);
    }
    status = launch_check_args(spec, "sbatch_args", &spec->cluster.sbatch_args,
                               SVP_LAUNCH_SBATCH, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    status = launch_check_args(spec, "srun_args", &spec->cluster.srun_args,
                               SVP_LAUNCH_SRUN, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    for (i = 0; i < spec->cluster.setup.count; ++i) {
        const char *line = spec->cluster.setup.items[i];

        snprintf(key, sizeof(key), "cluster.setup[%d]", i);
        if (line[0] == '\0' || svp_launch_has_control(line)) {
            return launch_bad(spec, key,
                              "one shell command line (no newlines "
                              "or control characters)",
                              line, errbuf, errlen);
        }
    }
    return SVP_OK;
}

svp_status_t svp_launch_check(const svp_spec_t *spec, char *errbuf, int errlen)
{
    svp_step_range_t range;
    svp_status_t     status;
    int              world;

    status = svp_launch_validate(spec, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    if (spec->samples < 0) {
        return launch_bad_int(spec, "samples", "at least 0", spec->samples, errbuf,
                              errlen);
    }
    world = svp_layout_spec_world(spec);
    /* auto: the planner picks among the valid layouts (S = 1 always is) */
    if (spec->pipeline.stages >= 0) {
        char         why[256] = "";
        svp_layout_t layout;

        status = SVP_OK;
        if (spec->pipeline.stages == 0 && spec->pipeline.guidance_parallel <= 1) {
            /* one pipeline of W stages: the message speaks of ranks */
            status =
                svp_layout_assign(spec->steps, world, 0, why, sizeof(why), &range);
        }
        if (status == SVP_OK) {
            status = svp_layout_of_spec(spec, world, why, sizeof(why), &layout);
        }
        if (status != SVP_OK) {
            svp_errf(errbuf, errlen,
                     "%s: steps: %s (cluster.nodes=%d x "
                     "cluster.ranks_per_node=%d; or pipeline.stages: "
                     "auto)",
                     spec->file ? spec->file : "<spec>", why, spec->cluster.nodes,
                     spec->cluster.ranks_per_node);
            return status;
        }
    }
    return SVP_OK;
}

svp_status_t svp_launch_check_compute(const svp_spec_t *spec, char *errbuf,
                                      int errlen)
{
    if (spec->dtype == SVP_DTYPE_F32) {
        return SVP_OK;
    }
    if (spec->model.kind == SVP_MODEL_DUMMY) {
        svp_errf(errbuf, errlen,
                 "%s: dtype: %s: the dummy model is an "
                 "f32 simulator (set dtype: f32)",
                 spec->file ? spec->file : "<spec>",
                 svp_dtype_short_name(spec->dtype));
        return SVP_ERR_SPEC;
    }
    return SVP_OK;
}
