/*
 * sbatch's and srun's options as they read them, for the checks of
 * cluster.sbatch_args and cluster.srun_args (validate.c).
 *
 * Both read their options with getopt_long, #SBATCH lines included, and
 * getopt_long takes any unambiguous prefix of a long option for it:
 * "--ntasks-per-n=4" is --ntasks-per-node, "--mp=none" is srun's --mpi,
 * while "--nod=2" is refused ("ambiguous; possibilities: '--nodefile'
 * '--nodelist' '--nodes'").  A check that compared names as written let
 * the first two past the options the script sets itself, and the third
 * fail only at submit time.  So an argument is resolved here first, by
 * getopt_long's rule: an exact name wins, else the one name it is a
 * prefix of, else it is ambiguous.
 *
 * The table is Slurm 22.05's (slurm-client 22.05.8, Debian 12): every long
 * option the two commands accept, hidden ones and aliases included
 * (--tasks-per-node, --cpu_bind, --pack-group, --cluster), each with
 * whether it takes a value.  It was read off the binaries by probing every
 * one- and two-letter prefix (the ambiguity messages list all candidates,
 * the "requires an argument" and "doesn't allow an argument" messages name
 * the option), and checked against them for every prefix of every name:
 * the rule above gives what sbatch and srun do in all 1458 cases.  The
 * tools are not run at check time: a spec is checked where no Slurm is
 * installed too.  An option not in the table (a newer Slurm's, a SPANK
 * plugin's such as pyxis's --container-image) is taken as written.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"
#include "common/util.h"

#include <stdio.h>
#include <string.h>

/* Whether a tool has the option and how it takes a value. */
enum {
    LO_NONE = 0, /* not an option of this tool */
    LO_NO,       /* no value: "--hold" */
    LO_REQ,      /* a value: "--time=10" (or the next argument) */
    LO_OPT       /* an optional value, only after '=': "--exclusive=user" */
};

typedef struct {
    const char   *name;
    unsigned char sbatch, srun; /* LO_* */
} launch_slurm_long_t;

/* clang-format off */
static const launch_slurm_long_t launch_slurm_long[] = {
    {"accel-bind", LO_NONE, LO_REQ}, {"account", LO_REQ, LO_REQ},
    {"acctg-freq", LO_REQ, LO_REQ}, {"array", LO_REQ, LO_NONE},
    {"batch", LO_REQ, LO_NONE}, {"bb", LO_REQ, LO_REQ}, {"bbf", LO_REQ, LO_REQ},
    {"bcast", LO_NONE, LO_OPT}, {"bcast-exclude", LO_NONE, LO_REQ},
    {"begin", LO_REQ, LO_REQ}, {"chdir", LO_REQ, LO_REQ},
    {"cluster", LO_REQ, LO_REQ}, {"cluster-constraint", LO_REQ, LO_REQ},
    {"clusters", LO_REQ, LO_REQ}, {"comment", LO_REQ, LO_REQ},
    {"compress", LO_NONE, LO_OPT}, {"constraint", LO_REQ, LO_REQ},
    {"container", LO_REQ, LO_REQ}, {"context", LO_REQ, LO_REQ},
    {"contiguous", LO_NO, LO_NO}, {"core-spec", LO_REQ, LO_REQ},
    {"cores-per-socket", LO_REQ, LO_REQ}, {"cpu-bind", LO_NONE, LO_REQ},
    {"cpu-freq", LO_REQ, LO_REQ}, {"cpu_bind", LO_NONE, LO_REQ},
    {"cpus-per-gpu", LO_REQ, LO_REQ}, {"cpus-per-task", LO_REQ, LO_REQ},
    {"deadline", LO_REQ, LO_REQ}, {"debugger-test", LO_NONE, LO_NO},
    {"delay-boot", LO_REQ, LO_REQ}, {"dependency", LO_REQ, LO_REQ},
    {"disable-status", LO_NONE, LO_NO}, {"distribution", LO_REQ, LO_REQ},
    {"epilog", LO_NONE, LO_REQ}, {"error", LO_REQ, LO_REQ},
    {"exact", LO_NONE, LO_NO}, {"exclude", LO_REQ, LO_REQ},
    {"exclusive", LO_OPT, LO_OPT}, {"export", LO_REQ, LO_REQ},
    {"export-file", LO_REQ, LO_NONE}, {"extra-node-info", LO_REQ, LO_REQ},
    {"get-user-env", LO_OPT, LO_NONE}, {"gid", LO_REQ, LO_REQ},
    {"gpu-bind", LO_REQ, LO_REQ}, {"gpu-freq", LO_REQ, LO_REQ},
    {"gpus", LO_REQ, LO_REQ}, {"gpus-per-node", LO_REQ, LO_REQ},
    {"gpus-per-socket", LO_REQ, LO_REQ}, {"gpus-per-task", LO_REQ, LO_REQ},
    {"gres", LO_REQ, LO_REQ}, {"gres-flags", LO_REQ, LO_REQ},
    {"help", LO_NO, LO_NO}, {"het-group", LO_NONE, LO_REQ},
    {"hint", LO_REQ, LO_REQ}, {"hold", LO_NO, LO_NO},
    {"ignore-pbs", LO_NO, LO_NONE}, {"immediate", LO_NONE, LO_OPT},
    {"input", LO_REQ, LO_REQ}, {"interactive", LO_NONE, LO_NO},
    {"job-name", LO_REQ, LO_REQ}, {"jobid", LO_NONE, LO_REQ},
    {"kill-on-bad-exit", LO_NONE, LO_OPT},
    {"kill-on-invalid-dep", LO_REQ, LO_NONE}, {"label", LO_NONE, LO_NO},
    {"licenses", LO_REQ, LO_REQ}, {"mail-type", LO_REQ, LO_REQ},
    {"mail-user", LO_REQ, LO_REQ}, {"mcs-label", LO_REQ, LO_REQ},
    {"mem", LO_REQ, LO_REQ}, {"mem-bind", LO_REQ, LO_REQ},
    {"mem-per-cpu", LO_REQ, LO_REQ}, {"mem-per-gpu", LO_REQ, LO_REQ},
    {"mincpus", LO_REQ, LO_REQ}, {"mpi", LO_NONE, LO_REQ},
    {"msg-timeout", LO_NONE, LO_REQ}, {"multi-prog", LO_NONE, LO_NO},
    {"network", LO_REQ, LO_REQ}, {"nice", LO_OPT, LO_OPT},
    {"no-allocate", LO_NONE, LO_NO}, {"no-kill", LO_OPT, LO_OPT},
    {"no-requeue", LO_NO, LO_NONE}, {"nodefile", LO_REQ, LO_REQ},
    {"nodelist", LO_REQ, LO_REQ}, {"nodes", LO_REQ, LO_REQ},
    {"ntasks", LO_REQ, LO_REQ}, {"ntasks-per-core", LO_REQ, LO_REQ},
    {"ntasks-per-gpu", LO_REQ, LO_REQ}, {"ntasks-per-node", LO_REQ, LO_REQ},
    {"ntasks-per-socket", LO_REQ, LO_REQ}, {"ntasks-per-tres", LO_REQ, LO_REQ},
    {"open-mode", LO_REQ, LO_REQ}, {"output", LO_REQ, LO_REQ},
    {"overcommit", LO_NO, LO_NO}, {"overlap", LO_NONE, LO_OPT},
    {"oversubscribe", LO_NO, LO_NO}, {"pack-group", LO_NONE, LO_REQ},
    {"parsable", LO_NO, LO_NONE}, {"partition", LO_REQ, LO_REQ},
    {"power", LO_REQ, LO_REQ}, {"prefer", LO_REQ, LO_REQ},
    {"preserve-env", LO_NONE, LO_NO}, {"priority", LO_REQ, LO_REQ},
    {"profile", LO_REQ, LO_REQ}, {"prolog", LO_NONE, LO_REQ},
    {"propagate", LO_OPT, LO_OPT}, {"pty", LO_NONE, LO_NO},
    {"qos", LO_REQ, LO_REQ}, {"quiet", LO_NO, LO_NO},
    {"quit-on-interrupt", LO_NONE, LO_NO}, {"reboot", LO_NO, LO_NO},
    {"relative", LO_NONE, LO_REQ}, {"requeue", LO_NO, LO_NONE},
    {"reservation", LO_REQ, LO_REQ}, {"resv-ports", LO_NONE, LO_OPT},
    {"send-libs", LO_NONE, LO_OPT}, {"signal", LO_REQ, LO_REQ},
    {"slurmd-debug", LO_NONE, LO_REQ}, {"sockets-per-node", LO_REQ, LO_REQ},
    {"spread-job", LO_NO, LO_NO}, {"switches", LO_REQ, LO_REQ},
    {"task-epilog", LO_NONE, LO_REQ}, {"task-prolog", LO_NONE, LO_REQ},
    {"tasks-per-node", LO_REQ, LO_REQ}, {"test-only", LO_NO, LO_NO},
    {"thread-spec", LO_REQ, LO_REQ}, {"threads", LO_NONE, LO_REQ},
    {"threads-per-core", LO_REQ, LO_REQ}, {"time", LO_REQ, LO_REQ},
    {"time-min", LO_REQ, LO_REQ}, {"tmp", LO_REQ, LO_REQ},
    {"uid", LO_REQ, LO_REQ}, {"unbuffered", LO_NONE, LO_NO},
    {"usage", LO_NO, LO_NO}, {"use-min-nodes", LO_NO, LO_NO},
    {"verbose", LO_NO, LO_NO}, {"version", LO_NO, LO_NO},
    {"wait", LO_NO, LO_REQ}, {"wait-all-nodes", LO_REQ, LO_NONE},
    {"wckey", LO_REQ, LO_REQ}, {"whole", LO_NONE, LO_NO},
    {"wrap", LO_REQ, LO_NONE}, {"x11", LO_NONE, LO_OPT},
};
/* clang-format on */

/* The short options: letter, long name (the value rule is the long one's). */
static const char *const launch_slurm_short[2][2] = {
    [SVP_LAUNCH_SBATCH] =
        {"aAbBcCdDeFGhHiJkLmMnNoOpqQsStvVwWx",
         "array,account,begin,extra-node-info,cpus-per-task,constraint,"
         "dependency,chdir,error,nodefile,gpus,help,hold,input,job-name,"
         "no-kill,licenses,distribution,clusters,ntasks,nodes,output,"
         "overcommit,partition,qos,quiet,oversubscribe,core-spec,time,"
         "verbose,version,nodelist,wait,exclude"},
    [SVP_LAUNCH_SRUN] =
        {"AbBcCdDeEFGhHiIJkKlLmMnNoOpqQrsStTuvVwWxXZ",
         "account,begin,extra-node-info,cpus-per-task,constraint,dependency,"
         "chdir,error,preserve-env,nodefile,gpus,help,hold,input,immediate,"
         "job-name,no-kill,kill-on-bad-exit,label,licenses,distribution,"
         "clusters,ntasks,nodes,output,overcommit,partition,qos,quiet,"
         "relative,oversubscribe,core-spec,threads,time,unbuffered,verbose,"
         "version,nodelist,wait,exclude,disable-status,no-allocate"},
};

/* How the tool takes the option's value (LO_NONE: no such option). */
static int launch_slurm_arg(const launch_slurm_long_t *o, int tool)
{
    return (tool == SVP_LAUNCH_SRUN) ? o->srun : o->sbatch;
}

const char *svp_launch_slurm_tool_name(int tool)
{
    return (tool == SVP_LAUNCH_SRUN) ? "srun" : "sbatch";
}

/* The long option named exactly name[0..len), or NULL. */
static const launch_slurm_long_t *launch_slurm_exact(int tool, const char *name,
                                                     size_t len)
{
    for (size_t i = 0; i < SVP_ARRAY_SIZE(launch_slurm_long); ++i) {
        const launch_slurm_long_t *o = &launch_slurm_long[i];

        if (launch_slurm_arg(o, tool) != LO_NONE && strlen(o->name) == len &&
            !strncmp(o->name, name, len)) {
            return o;
        }
    }
    return NULL;
}

/* The long option of short option c, or NULL. */
static const launch_slurm_long_t *launch_slurm_letter(int tool, char c)
{
    const char *letters = launch_slurm_short[tool][0];
    const char *names   = launch_slurm_short[tool][1];
    const char *at      = (c != '\0') ? strchr(letters, c) : NULL;
    size_t      k, len;

    if (at == NULL) {
        return NULL;
    }
    for (k = (size_t)(at - letters); k > 0; --k) {
        names = strchr(names, ',') + 1;
    }
    len = strcspn(names, ",");
    return launch_slurm_exact(tool, names, len);
}

/* The long option that --name[0..len) stands for (exact, or the one it is
 * a prefix of); NULL with *ambiguous_p set when several (named in cands,
 * "--a, --b"), unset when none. */
static const launch_slurm_long_t *launch_slurm_prefix(int tool, const char *name,
                                                      size_t len, char *cands,
                                                      size_t cands_len,
                                                      int   *ambiguous_p)
{
    const launch_slurm_long_t *found = launch_slurm_exact(tool, name, len);
    size_t                     n = 0, used = 0;

    *ambiguous_p = 0;
    if (found != NULL) {
        return found;
    }
    cands[0] = '\0';
    for (size_t i = 0; i < SVP_ARRAY_SIZE(launch_slurm_long); ++i) {
        const launch_slurm_long_t *o = &launch_slurm_long[i];

        if (launch_slurm_arg(o, tool) == LO_NONE ||
            strncmp(o->name, name, len) != 0) {
            continue;
        }
        found = o;
        if (used < cands_len) {
            used += (size_t)snprintf(cands + used, cands_len - used, "%s--%s",
                                     n > 0 ? ", " : "", o->name);
        }
        ++n;
    }
    if (n > 1) {
        *ambiguous_p = 1;
        return NULL;
    }
    return found;
}

const char *svp_launch_slurm_resolve(int tool, const char *name, size_t len,
                                     char *cands, size_t cands_len, int *takes_p)
{
    const launch_slurm_long_t *o;
    int                        ambiguous;

    o        = launch_slurm_prefix(tool, name, len, cands, cands_len, &ambiguous);
    *takes_p = (o != NULL) ? launch_slurm_arg(o, tool) : (ambiguous ? -1 : 0);
    return (o != NULL) ? o->name : NULL;
}

const char *svp_launch_slurm_option_name(int tool, size_t i)
{
    for (size_t k = 0; k < SVP_ARRAY_SIZE(launch_slurm_long); ++k) {
        if (launch_slurm_arg(&launch_slurm_long[k], tool) != LO_NONE && i-- == 0) {
            return launch_slurm_long[k].name;
        }
    }
    return NULL;
}

int svp_launch_slurm_parse(int tool, const char *arg, svp_launch_slurm_opt_t *opts,
                           int max, char *why, size_t whylen)
{
    const char *tname = svp_launch_slurm_tool_name(tool);
    int         n     = 0;

    if (arg[0] != '-' || arg[1] == '\0' || max < 1) {
        snprintf(why, whylen, "an option starting with '-'");
        return -1;
    }
    if (arg[1] == '-') {
        const launch_slurm_long_t *o;
        const char                *name = arg + 2, *eq = strchr(name, '=');
        size_t                     len = eq ? (size_t)(eq - name) : strlen(name);
        char                       cands[512];
        int                        ambiguous;

        o = launch_slurm_prefix(tool, name, len, cands, sizeof(cands), &ambiguous);
        if (ambiguous) {
            snprintf(why, whylen,
                     "an option %s reads as one (--%.*s is the "
                     "beginning of %s: write the option in full)",
                     tname, (int)len, name, cands);
            return -1;
        }
        if (o == NULL) {
            /* a newer Slurm's, or a plugin's: as written */
            opts[0].name    = NULL;
            opts[0].written = name;
            opts[0].len     = len;
            opts[0].value   = eq ? eq + 1 : NULL;
            return 1;
        }
        if (launch_slurm_arg(o, tool) == LO_REQ && eq == NULL) {
            snprintf(why, whylen,
                     "--%s=VALUE (%s takes a value; given alone, "
                     "it would take the next argument for it)",
                     o->name, tname);
            return -1;
        }
        if (launch_slurm_arg(o, tool) == LO_NO && eq != NULL) {
            snprintf(why, whylen, "--%s without a value (%s's --%s takes none)",
                     o->name, tname, o->name);
            return -1;
        }
        opts[0].name    = o->name;
        opts[0].written = name;
        opts[0].len     = len;
        opts[0].value   = eq ? eq + 1 : NULL;
        return 1;
    }
    /* short options: "-N2", "-Hk"; a value takes the rest of the argument */
    for (const char *p = arg + 1; *p != '\0' && n < max; ++p) {
        const launch_slurm_long_t *o = launch_slurm_letter(tool, *p);

        opts[n].written = p;
        opts[n].len     = 1;
        opts[n].value   = NULL;
        if (o == NULL) {
            opts[n].name  = NULL;
            opts[n].value = p[1] ? p + 1 : NULL;
            return n + 1;
        }
        opts[n].name = o->name;
        if (launch_slurm_arg(o, tool) == LO_REQ ||
            launch_slurm_arg(o, tool) == LO_OPT) {
            if (p[1] == '\0' && launch_slurm_arg(o, tool) == LO_REQ) {
                snprintf(why, whylen,
                         "-%cVALUE or --%s=VALUE (%s takes a value; "
                         "given alone, it would take the next argument for it)",
                         *p, o->name, tname);
                return -1;
            }
            opts[n].value = p[1] ? p + 1 : NULL;
            return n + 1;
        }
        ++n;
    }
    return n;
}
