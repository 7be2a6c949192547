/*
 * Tests for resume (pipe/resume.h), the output directory (job/outdir.h),
 * fill-aware deadlines (pipe/deadline.h) and stopping (common/stop.h), in
 * one process with the dummy stage.  The cluster cases (scancel and
 * resubmit, SIGTERM to every rank, the fill) are in tests/resume_cluster.sh.
 */
#define _GNU_SOURCE
#include "pipe/pipe.h"
#include "stages/stages.h"
#include "pipe/deadline.h"
#include "job/lease.h"
#include "job/outdir.h"
#include "pipe/resume.h"
#include "job/samples.h"
#include "rt/rt.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/stop.h"
#include "common/file.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void quiet(void)
{
    svp_log_set_stream(fopen("/dev/null", "w"));
}

TestSuite(resume, .init = quiet);
TestSuite(outdir, .init = quiet);
TestSuite(deadline);
TestSuite(stop, .init = quiet);

/* The test job in dir, with `extra` as --set KEY=VALUE overrides separated
 * by ';' ("" for none). */
static svp_spec_t *load(const char *dir, const char *extra)
{
    char        yaml[1024], err[512], copy[512], *sets[8], *save = NULL, *tok;
    svp_spec_t *spec;
    int         n = 0;

    snprintf(yaml, sizeof(yaml),
             "steps: 6\nsamples: 5\nseed: 5\nlatent_shape: [1, 3, 4, 5, 6]\n"
             "output: {dir: '%s'}\n",
             dir);
    snprintf(copy, sizeof(copy), "%s", extra);
    for (tok = strtok_r(copy, ";", &save); tok != NULL && n < 8;
         tok = strtok_r(NULL, ";", &save)) {
        sets[n++] = tok;
    }
    cr_assert_eq(svp_spec_load_string(yaml, "t.yaml", (const char **)sets, n, err,
                                      sizeof(err), &spec),
                 SVP_OK, "%s", err);
    return spec;
}

/* Runs the samples in list (NULL: all) of the job in dir. */
/* The job in dir, publishing under lease (may be NULL). */
static svp_status_t run_leased(const char *dir, const char *extra, const int *list,
                               int n, svp_job_lease_t *lease)
{
    svp_spec_t       *spec = load(dir, extra);
    svp_pipe_params_t pp   = {0};
    svp_status_t      status;

    pp.spec     = spec;
    pp.world    = 1;
    pp.samples  = list;
    pp.nsamples = n;
    pp.lease    = lease;
    cr_assert_eq(svp_stage_dummy_create(spec, &pp.stage), SVP_OK);
    status = svp_pipe_run(&pp, NULL);
    pp.stage.ops->destroy(pp.stage.self);
    svp_spec_destroy(spec);
    return status;
}

static svp_status_t run(const char *dir, const char *extra, const int *list, int n)
{
    return run_leased(dir, extra, list, n, NULL);
}

static svp_rt_h plain_rt(void)
{
    svp_rt_h rt;

    unsetenv("PMIX_NAMESPACE");
    cr_assert_eq(svp_rt_init(NULL, &rt), SVP_OK);
    return rt;
}

/* What rank 0 of 1 decides for the job in dir. */
static svp_status_t agree(const char *dir, const char *extra, svp_pipe_resume_t *r)
{
    svp_spec_t        *spec = load(dir, extra);
    svp_stage_t        stage;
    svp_rt_h           rt    = plain_rt();
    svp_job_shard_t    whole = {0, 1, 0};
    svp_job_samples_t *list;
    char               err[1024];
    svp_status_t       status;

    cr_assert_eq(svp_stage_dummy_create(spec, &stage), SVP_OK);
    cr_assert_eq(svp_job_samples_create(spec, err, sizeof(err), &list), SVP_OK, "%s",
                 err);
    status = svp_pipe_resume_agree(rt, spec, &stage, list->count, &whole, r);
    svp_job_samples_destroy(list);
    stage.ops->destroy(stage.self);
    svp_rt_cleanup(rt);
    svp_spec_destroy(spec);
    return status;
}

static int same_file(const char *a, const char *b)
{
    char  *x, *y;
    size_t lx, ly;
    int    same;

    if (svp_file_read_all(a, &x, &lx) != SVP_OK) {
        return 0;
    }
    if (svp_file_read_all(b, &y, &ly) != SVP_OK) {
        free(x);
        return 0;
    }
    same = (lx == ly) && memcmp(x, y, lx) == 0;
    free(x);
    free(y);
    return same;
}

static void path_of(char *buf, size_t len, const char *dir, int i)
{
    snprintf(buf, len, "%s/sample_%06d.safetensors", dir, i);
}

/* Two samples finished earlier: the rest run, each with its own index, seed
 * and noise, and the outputs are the bytes of an uninterrupted run. */
Test(resume, skips_finished_samples_and_runs_the_rest_bit_identical)
{
    char              ref[] = "/tmp/svp_res_XXXXXX", dir[] = "/tmp/svp_res_XXXXXX";
    char              a[512], b[512];
    static const int  first[] = {1, 3};
    svp_pipe_resume_t r;
    int               i;

    cr_assert_not_null(mkdtemp(ref));
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(run(ref, "", NULL, 0), SVP_OK);
    cr_assert_eq(run(dir, "", first, 2), SVP_OK);
    path_of(a, sizeof(a), dir, 0);
    cr_assert_eq(access(a, F_OK), -1, "sample 0 was not in the list");

    cr_assert_eq(agree(dir, "", &r), SVP_OK);
    cr_assert_eq(r.skipped, 2);
    cr_assert_eq(r.ntodo, 3);
    cr_assert_eq(r.todo[0], 0);
    cr_assert_eq(r.todo[1], 2);
    cr_assert_eq(r.todo[2], 4);
    cr_assert_eq(run(dir, "", r.todo, r.ntodo), SVP_OK);
    svp_pipe_resume_cleanup(&r);

    for (i = 0; i < 5; ++i) {
        path_of(a, sizeof(a), ref, i);
        path_of(b, sizeof(b), dir, i);
        cr_expect(same_file(a, b), "sample %d differs from the uninterrupted run",
                  i);
    }
    /* nothing left to do */
    cr_assert_eq(agree(dir, "", &r), SVP_OK);
    cr_assert_eq(r.ntodo, 0);
    cr_assert_eq(r.skipped, 5);
    cr_assert_eq(run(dir, "", r.todo, r.ntodo), SVP_OK);
    svp_pipe_resume_cleanup(&r);
    svp_rmtree(ref);
    svp_rmtree(dir);
}

/* Another seed, steps or shape: an error, unless output.overwrite. */
Test(resume, other_parameters_are_an_error_unless_overwrite)
{
    char              dir[] = "/tmp/svp_res_XXXXXX";
    svp_pipe_resume_t r;

    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(run(dir, "", NULL, 0), SVP_OK);
    cr_assert_eq(agree(dir, "seed=6", &r), SVP_ERR_SPEC);
    cr_assert_eq(agree(dir, "steps=7", &r), SVP_ERR_SPEC);
    cr_assert_eq(agree(dir, "latent_shape=[1,3,4,5,7]", &r), SVP_ERR_SPEC);
    cr_assert_eq(agree(dir, "name=other", &r), SVP_ERR_SPEC);
    cr_assert_eq(agree(dir, "seed=6;output.overwrite=true", &r), SVP_OK);
    cr_assert_eq(r.ntodo, 5, "every sample runs again");
    svp_pipe_resume_cleanup(&r);
    svp_rmtree(dir);
}

/* Writes a manifest of three samples into dir/m.jsonl; the second's fps. */
static void write_manifest(const char *dir, int fps)
{
    char  path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/a.png", dir);
    f = fopen(path, "w"); /* the simulator reads no image; it must exist */
    cr_assert_not_null(f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/m.jsonl", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"image\": \"a.png\", \"seed\": 3}\n"
            "{\"image\": \"a.png\", \"fps\": %d}\n"
            "{\"image\": \"a.png\", \"name\": \"third\"}\n",
            fps);
    fclose(f);
}

/* A sample whose manifest line changed is another sample: an error, like
 * another seed; the unchanged lines still count as finished. */
Test(resume, a_changed_manifest_line_is_named_per_sample)
{
    char              dir[] = "/tmp/svp_res_XXXXXX", sets[600], a[600];
    svp_pipe_resume_t r;

    cr_assert_not_null(mkdtemp(dir));
    write_manifest(dir, 7);
    snprintf(sets, sizeof(sets), "samples=0;video.manifest=%s/m.jsonl", dir);
    cr_assert_eq(agree(dir, sets, &r), SVP_OK);
    cr_assert_eq(r.ntodo, 3);
    cr_assert_eq(run(dir, sets, r.todo, r.ntodo), SVP_OK);
    svp_pipe_resume_cleanup(&r);
    snprintf(a, sizeof(a), "%s/third.safetensors", dir);
    cr_assert_eq(access(a, F_OK), 0, "the manifest's name names the output");

    cr_assert_eq(agree(dir, sets, &r), SVP_OK);
    cr_assert_eq(r.skipped, 3);
    svp_pipe_resume_cleanup(&r);
    write_manifest(dir, 8);
    cr_assert_eq(agree(dir, sets, &r), SVP_ERR_SPEC, "line 2's fps changed");
    strcat(sets, ";output.overwrite=true");
    cr_assert_eq(agree(dir, sets, &r), SVP_OK);
    cr_assert_eq(r.ntodo, 1);
    cr_assert_eq(r.todo[0], 1, "only the changed line runs again");
    svp_pipe_resume_cleanup(&r);
    svp_rmtree(dir);
}

/* A damaged output (truncated by hand) is run again, not trusted. */
Test(resume, damaged_output_runs_again)
{
    char              dir[] = "/tmp/svp_res_XXXXXX", a[512];
    svp_pipe_resume_t r;

    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(run(dir, "", NULL, 0), SVP_OK);
    path_of(a, sizeof(a), dir, 2);
    cr_assert_eq(truncate(a, 100), 0);
    cr_assert_eq(agree(dir, "", &r), SVP_OK);
    cr_assert_eq(r.ntodo, 1);
    cr_assert_eq(r.todo[0], 2);
    svp_pipe_resume_cleanup(&r);
    svp_rmtree(dir);
}

static void touch(const char *dir, const char *name)
{
    char path[1024];
    int  fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert_geq(fd, 0, "%s", path);
    close(fd);
}

static int exists(const char *dir, const char *name)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static int only_even(int sample, void *arg)
{
    (void)arg;
    return sample % 2 == 0;
}

/* Only the project's own temporary names go; everything else stays. */
Test(outdir, clean_removes_only_own_temporaries)
{
    char        dir[] = "/tmp/svp_out_XXXXXX", sub[600], name[600];
    const char *here  = svp_log_hostname();
    pid_t       live, dead;
    int         n;

    cr_assert_not_null(mkdtemp(dir));
    /* a writer of this host still running, and one that has exited */
    live = fork();
    cr_assert_geq(live, 0);
    if (live == 0) {
        pause();
        _exit(0);
    }
    dead = fork();
    cr_assert_geq(dead, 0);
    if (dead == 0) {
        _exit(0);
    }
    waitpid(dead, NULL, 0);

    touch(dir, "sample_000001.safetensors.tmp.123@gone-node");
    snprintf(name, sizeof(name), "sample_000002.safetensors.tmp.99@%s", here);
    touch(dir, name);
    touch(dir, "sample_000002.safetensors.tmp.99@other-node");
    snprintf(sub, sizeof(sub), "%s/sample_000004.tmp.123@gone-node", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    touch(sub, "latents.safetensors.tmp.123@gone-node");
    snprintf(sub, sizeof(sub), "%s/sample_000006.old.55@gone-node", dir);
    cr_assert_eq(mkdir(sub, 0755), 0); /* sample_000006 missing: put back */
    snprintf(sub, sizeof(sub), "%s/sample_000008.old.55@gone-node", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/sample_000008", dir);
    cr_assert_eq(mkdir(sub, 0755), 0); /* sample_000008 there: old removed */
    snprintf(name, sizeof(name), "sample_000010.safetensors.tmp.%d@%s", (int)live,
             here);
    touch(dir, name); /* a live writer's: stays */
    snprintf(name, sizeof(name), "sample_000012.safetensors.tmp.%d@%s", (int)dead,
             here);
    touch(dir, name);                                  /* a dead one's: goes */
    touch(dir, "sample_000014.tar.tmp.123@gone-node"); /* a staged sample's: goes */
    touch(dir, "sample_000014.tar");                   /* the staged sample: stays */
    /* not ours */
    touch(dir, "sample_000016.tar.old.123@gone-node");
    touch(dir, "notes.tmp.123@gone-node");
    touch(dir, "sample_000003.safetensors");
    touch(dir, "sample_000003.safetensors.tmp.12a");
    touch(dir, "sample_01.tmp.123@gone-node");
    touch(dir, "sample_000005.png.tmp.123@gone-node");
    touch(dir, "sample_000005.safetensors.old.123@gone-node");
    touch(dir, "sample_000007.safetensors.tmp.123@");

    /* a stopping rank: its own pid of this host only */
    cr_assert_eq(svp_job_outdir_clean(dir, 99, NULL, NULL, &n), SVP_OK);
    cr_assert_eq(n, 1);
    snprintf(name, sizeof(name), "sample_000002.safetensors.tmp.99@%s", here);
    cr_assert(!exists(dir, name));
    cr_assert(exists(dir, "sample_000002.safetensors.tmp.99@other-node"));
    cr_assert(exists(dir, "sample_000001.safetensors.tmp.123@gone-node"));

    /* at start, only this rank's samples */
    cr_assert_eq(svp_job_outdir_clean(dir, 0, only_even, NULL, &n), SVP_OK);
    cr_assert_eq(n, 6);
    cr_assert(!exists(dir, "sample_000014.tar.tmp.123@gone-node"));
    cr_assert(exists(dir, "sample_000014.tar"));
    cr_assert(exists(dir, "sample_000001.safetensors.tmp.123@gone-node"));
    cr_assert(!exists(dir, "sample_000002.safetensors.tmp.99@other-node"));
    cr_assert(!exists(dir, "sample_000004.tmp.123@gone-node"));
    cr_assert(exists(dir, "sample_000006"));
    cr_assert(!exists(dir, "sample_000006.old.55@gone-node"));
    cr_assert(exists(dir, "sample_000008"));
    cr_assert(!exists(dir, "sample_000008.old.55@gone-node"));
    snprintf(name, sizeof(name), "sample_000010.safetensors.tmp.%d@%s", (int)live,
             here);
    cr_assert(exists(dir, name), "a live writer's temporary was removed");
    snprintf(name, sizeof(name), "sample_000012.safetensors.tmp.%d@%s", (int)dead,
             here);
    cr_assert(!exists(dir, name), "a dead writer's temporary stayed");

    cr_assert_eq(svp_job_outdir_clean(dir, 0, NULL, NULL, &n), SVP_OK);
    cr_assert_eq(n, 1);
    cr_assert(!exists(dir, "sample_000001.safetensors.tmp.123@gone-node"));
    cr_assert(exists(dir, "notes.tmp.123@gone-node"));
    cr_assert(exists(dir, "sample_000003.safetensors"));
    cr_assert(exists(dir, "sample_000003.safetensors.tmp.12a"));
    cr_assert(exists(dir, "sample_01.tmp.123@gone-node"));
    cr_assert(exists(dir, "sample_000005.png.tmp.123@gone-node"));
    cr_assert(exists(dir, "sample_000005.safetensors.old.123@gone-node"));
    cr_assert(exists(dir, "sample_000007.safetensors.tmp.123@"));
    cr_assert(exists(dir, "sample_000016.tar.old.123@gone-node"));
    kill(live, SIGKILL);
    waitpid(live, NULL, 0);
    svp_rmtree(dir);
}

Test(outdir, check_names_an_unusable_directory)
{
    char dir[] = "/tmp/svp_out_XXXXXX", bad[600];

    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(svp_job_outdir_check(dir, 1000), SVP_OK);
    /* created when missing */
    snprintf(bad, sizeof(bad), "%s/a/b", dir);
    cr_assert_eq(svp_job_outdir_check(bad, 1000), SVP_OK);
    cr_assert(exists(dir, "a/b"));
    cr_assert(!exists(bad, ".svdpipe-probe.tmp"), "the probe is removed");
    /* below a regular file: cannot be created (whoever runs the test) */
    touch(dir, "file");
    snprintf(bad, sizeof(bad), "%s/file/out", dir);
    cr_assert_eq(svp_job_outdir_check(bad, 1000), SVP_ERR_IO);
    /* more room than any filesystem has */
    cr_assert_eq(svp_job_outdir_check(dir, UINT64_MAX / 2), SVP_ERR_IO);
    svp_rmtree(dir);
}

/* A real small filesystem: full, and read-only (needs mount: root). */
Test(outdir, full_and_read_only_filesystems)
{
    char dir[] = "/tmp/svp_out_XXXXXX", cmd[700];

    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=64k tmpfs '%s' 2>/dev/null",
             dir);
    if (system(cmd) != 0) {
        rmdir(dir);
        cr_skip_test("cannot mount a tmpfs here (not root?)");
    }
    cr_expect_eq(svp_job_outdir_check(dir, 16 * 1024), SVP_OK);
    cr_expect_eq(svp_job_outdir_check(dir, 1024 * 1024), SVP_ERR_IO,
                 "a sample of 1 MB does not fit in 64 kB");
    snprintf(cmd, sizeof(cmd), "mount -o remount,ro '%s'", dir);
    cr_expect_eq(system(cmd), 0);
    cr_expect_eq(svp_job_outdir_check(dir, 1024), SVP_ERR_IO, "read-only");
    snprintf(cmd, sizeof(cmd), "umount '%s'", dir);
    cr_expect_eq(system(cmd), 0);
    rmdir(dir);
}

Test(deadline, counts_from_when_the_input_is_due)
{
    svp_pipe_deadline_t d;
    svp_layout_t        l;
    svp_spec_t         *spec = load("/tmp", "steps=8;model.dummy.cost=sleep;"
                                                    "model.dummy.step_ms=400;comm.deadline=2");

    cr_assert_eq(svp_layout_make(8, 4, 4, 1, SVP_PLACEMENT_ENDS, NULL, 0, &l),
                 SVP_OK);
    svp_pipe_deadline_init(&d, spec, &l);
    /* rank 3's first input: 3 stages of 2 steps of 0.4 s, doubled, + 2 s */
    cr_assert_float_eq(svp_pipe_deadline_wait(&d, 3, 1), 2 + 2 * 3 * 2 * 0.4, 1e-9);
    /* later inputs: one stage */
    cr_assert_float_eq(svp_pipe_deadline_wait(&d, 1, 0), 2 + 2 * 2 * 0.4, 1e-9);
    /* measured steps replace the estimate */
    svp_pipe_deadline_step(&d, 1.0);
    svp_pipe_deadline_step(&d, 3.0);
    cr_assert_float_eq(svp_pipe_deadline_wait(&d, 1, 0), 2 + 2 * 2 * 2.0, 1e-9);
    /* rank 0 waits for nothing but its encoder */
    cr_assert_float_eq(svp_pipe_deadline_wait(&d, 0, 0), 2, 1e-9);

    /* 2 pipelines of 2 stages on the same 4 ranks: a stage is 4 steps (T / S,
     * not T / W) */
    cr_assert_eq(svp_layout_make(8, 4, 2, 1, SVP_PLACEMENT_ENDS, NULL, 0, &l),
                 SVP_OK);
    svp_pipe_deadline_init(&d, spec, &l);
    cr_assert_float_eq(svp_pipe_deadline_wait(&d, 1, 0), 2 + 2 * 4 * 0.4, 1e-9);
    svp_spec_destroy(spec);

    /* no figure for the step time: a generous bound until measured */
    spec = load("/tmp", "steps=8;comm.deadline=2");
    svp_pipe_deadline_init(&d, spec, &l);
    cr_assert_geq(svp_pipe_deadline_wait(&d, 1, 0), 2 + 2 * SVP_PIPE_STEP_BOUND_S);
    svp_spec_destroy(spec);
}

/* After SIGTERM the pipeline stops before its next step; nothing partial. */
Test(stop, pipeline_stops_between_steps)
{
    char dir[] = "/tmp/svp_res_XXXXXX";

    cr_assert_not_null(mkdtemp(dir));
    svp_stop_raise_for_test(SIGTERM);
    cr_assert_eq(svp_stop_signal(), SIGTERM);
    cr_assert_eq(svp_stop_exit_code(), 143);
    cr_assert_eq(run(dir, "", NULL, 0), SVP_ERR_CANCELED);
    cr_assert(!exists(dir, "sample_000000.safetensors"));
    svp_rmtree(dir);
}

/* A stop request (a lost lease) stops the pipeline as a signal does, with
 * its own exit code; a signal after it changes nothing. */
Test(stop, request_stops_between_steps)
{
    char dir[] = "/tmp/svp_res_XXXXXX";

    cr_assert_not_null(mkdtemp(dir));
    cr_assert(!svp_stop_pending());
    svp_stop_request(2, "the job lost output.dir's lease to another job");
    svp_stop_request(3, "a second request");
    cr_assert(svp_stop_pending());
    cr_assert_eq(svp_stop_signal(), 0);
    cr_assert_eq(svp_stop_requested(), 2);
    cr_assert_eq(svp_stop_exit_code(), 2);
    cr_assert_str_eq(svp_stop_request_why(),
                     "the job lost output.dir's lease to another job");
    svp_stop_raise_for_test(SIGTERM);
    cr_assert_eq(svp_stop_signal(), 0, "a signal after a request took over");
    cr_assert_eq(svp_stop_exit_code(), 2);
    cr_assert_eq(run(dir, "", NULL, 0), SVP_ERR_CANCELED);
    cr_assert(!exists(dir, "sample_000000.safetensors"));
    svp_rmtree(dir);
}

/* ---- the output directory's lease (job/lease.h) --------------------- */

static void write_lease(const char *dir, const char *name, const char *host,
                        long pid, double renewed_ago, int count)
{
    char  path[700];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(
        f,
        "{\"job\": \"other\", \"spec_file\": \"other.yaml\", \"spec_key\": \"k\", "
        "\"shard\": [0, %d], \"slurm_job\": \"\", \"array_job\": \"\", "
        "\"array_task\": \"\", \"host\": \"%s\", \"pid\": %ld, \"started\": %f, "
        "\"renewed\": %f, \"beat_s\": 30}\n",
        count, host, pid, svp_clock_wall() - 100, svp_clock_wall() - renewed_ago);
    fclose(f);
}

Test(lease, one_job_per_directory)
{
    char             dir[] = "/tmp/svp_lease_XXXXXX", why[2048];
    svp_job_shard_t  one = {0, 1, 0}, s0 = {0, 3, 0}, s1 = {1, 3, 0};
    svp_job_lease_t *a, *b;
    pid_t            dead;

    cr_assert_not_null(mkdtemp(dir));
    unsetenv("SLURM_JOB_ID");
    cr_assert_eq(svp_job_lease_take(dir, &one, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &a),
                 SVP_OK, "%s", why);
    cr_assert(exists(dir, "lease.json"));
    /* a second job (here: this live process again) is refused, named */
    cr_assert_eq(svp_job_lease_take(dir, &one, "j2", "j2.yaml", "k2", 30, why,
                                    sizeof(why), &b),
                 SVP_ERR_SPEC);
    cr_assert_not_null(
        strstr(why, "is in use: its lease.json is held by job 'j' (j.yaml) on "),
        "%s", why);
    cr_assert_not_null(strstr(why, "remove "), "%s", why);
    /* an array task of this directory is another layout: refused too */
    cr_assert_eq(svp_job_lease_take(dir, &s1, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &b),
                 SVP_ERR_SPEC);
    cr_assert_not_null(strstr(why, "another spec or array layout"), "%s", why);
    svp_job_lease_release(a);
    cr_assert(!exists(dir, "lease.json"), "a released lease stays");

    /* siblings of one array hold their shards at once */
    cr_assert_eq(svp_job_lease_take(dir, &s0, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &a),
                 SVP_OK, "%s", why);
    cr_assert_eq(svp_job_lease_take(dir, &s1, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &b),
                 SVP_OK, "%s", why);
    svp_job_lease_release(a);
    svp_job_lease_release(b);

    /* gone holders: a dead pid of this host, a silent other host */
    dead = fork();
    cr_assert_geq(dead, 0);
    if (dead == 0) {
        _exit(0);
    }
    waitpid(dead, NULL, 0);
    write_lease(dir, "lease.json", svp_log_hostname(), (long)dead, 1, 1);
    cr_assert_eq(svp_job_lease_take(dir, &one, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &a),
                 SVP_OK, "%s", why);
    svp_job_lease_release(a);
    write_lease(dir, "lease.json", "far-node", 4242, 5 * 30, 1);
    cr_assert_eq(svp_job_lease_take(dir, &one, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &a),
                 SVP_OK, "%s", why);
    svp_job_lease_release(a);
    /* a live one: another host that renewed it a beat ago */
    write_lease(dir, "lease.json", "far-node", 4242, 20, 1);
    cr_assert_eq(svp_job_lease_take(dir, &one, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &a),
                 SVP_ERR_SPEC);
    cr_assert_not_null(strstr(why, "on far-node, pid 4242"), "%s", why);
    svp_rmtree(dir);
}

/* A holder that another job took the directory from (it was suspended past
 * the takeover) finds out at its next renewal or publish, writes nothing,
 * and asks this process to stop with exit 2. */
Test(lease, holder_fences_itself)
{
    char             dir[] = "/tmp/svp_lease_XXXXXX", why[2048], path[700], *who;
    svp_job_shard_t  one   = {0, 1, 0};
    svp_job_lease_t *a, *view, *bad = NULL;
    json_t          *doc;

    cr_assert_not_null(mkdtemp(dir));
    unsetenv("SLURM_JOB_ID");
    snprintf(path, sizeof(path), "%s/lease.json", dir);
    cr_assert_eq(svp_job_lease_take(dir, &one, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &a),
                 SVP_OK, "%s", why);
    who = svp_job_lease_identity(a);
    cr_assert_not_null(who);
    cr_assert_eq(svp_job_lease_view(dir, &one, who, &view), SVP_OK);
    free(who);
    cr_assert_eq(svp_job_lease_view(dir, &one, "[1]", &bad), SVP_ERR_MESSAGE);
    cr_assert_null(bad);
    cr_assert_eq(svp_job_lease_renew(a), SVP_OK);
    cr_assert_eq(svp_job_lease_guard(a), SVP_OK);
    cr_assert(!svp_job_lease_lost(view, why, sizeof(why)));

    /* another host's job took it over */
    write_lease(dir, "lease.json", "far-node", 4242, 0, 1);
    cr_assert(svp_job_lease_lost(view, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "another job took the directory over"), "%s",
                       why);
    cr_assert_not_null(strstr(why, "job 'other' (other.yaml) on far-node, pid 4242"),
                       "%s", why);
    cr_assert_eq(svp_stop_requested(), 0, "a view's check alone stops nothing");
    cr_assert_eq(svp_job_lease_renew(a), SVP_ERR_SPEC);
    cr_assert_eq(svp_stop_requested(), SVP_EXIT_BAD_INPUT);
    cr_assert(svp_stop_pending());
    cr_assert_eq(svp_stop_exit_code(), 2);
    cr_assert_not_null(strstr(svp_stop_request_why(), "lost output.dir's lease"));
    /* the renewal wrote nothing: the new holder's record stays */
    doc = json_load_file(path, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(doc, "host")), "far-node");
    json_decref(doc);
    /* lost for good, and every publish is refused */
    cr_assert_eq(svp_job_lease_guard(a), SVP_ERR_SPEC);
    cr_assert_eq(svp_job_lease_renew(a), SVP_ERR_SPEC);
    /* released, it is left to its new holder */
    svp_job_lease_release(view);
    svp_job_lease_release(a);
    cr_assert(exists(dir, "lease.json"), "the new holder's lease was removed");
    svp_rmtree(dir);
}

/* A holder whose last renewal is older than the takeover threshold reads
 * the lease again before it publishes; within the threshold it does not
 * (a guard costs no file read per sample). */
Test(lease, guard_after_a_gap)
{
    char             dir[] = "/tmp/svp_lease_XXXXXX", why[2048];
    svp_job_shard_t  one   = {0, 1, 0};
    svp_job_lease_t *a;

    cr_assert_not_null(mkdtemp(dir));
    unsetenv("SLURM_JOB_ID");
    /* beats of 0.05 s: the threshold is 0.2 s */
    cr_assert_eq(svp_job_lease_take(dir, &one, "j", "j.yaml", "k", 0.05, why,
                                    sizeof(why), &a),
                 SVP_OK, "%s", why);
    usleep(300000);
    cr_assert_eq(svp_job_lease_guard(a), SVP_OK, "its own lease, read again");
    write_lease(dir, "lease.json", "far-node", 4242, 0, 1);
    cr_assert_eq(svp_job_lease_guard(a), SVP_OK, "read within the threshold");
    cr_assert_eq(svp_stop_requested(), 0);
    usleep(300000);
    cr_assert_eq(svp_job_lease_guard(a), SVP_ERR_SPEC);
    cr_assert_eq(svp_stop_requested(), SVP_EXIT_BAD_INPUT);
    cr_assert(svp_job_lease_lost(a, why, sizeof(why)));
    cr_assert_eq(strncmp(why, "this job was suspended for 0.", 29), 0, "%s", why);
    cr_assert_not_null(
        strstr(why, " s (or its clock jumped), past the takeover threshold "
                    "of 4 beats of 0.05 s, and another job took the "
                    "directory over: job 'other'"),
        "%s", why);
    svp_job_lease_release(a);
    cr_assert(exists(dir, "lease.json"));
    svp_rmtree(dir);
}

/* The pipeline checks the lease before it writes a sample: after a gap past
 * the threshold, a lease another job holds now stops it with nothing
 * written. */
Test(lease, pipeline_writes_nothing_after_losing_it)
{
    char             dir[] = "/tmp/svp_lease_XXXXXX", why[2048];
    svp_job_shard_t  one   = {0, 1, 0};
    svp_job_lease_t *a;
    int              list[] = {0, 1};

    cr_assert_not_null(mkdtemp(dir));
    unsetenv("SLURM_JOB_ID");
    cr_assert_eq(svp_job_lease_take(dir, &one, "j", "j.yaml", "k", 0.05, why,
                                    sizeof(why), &a),
                 SVP_OK, "%s", why);
    cr_assert_eq(run_leased(dir, "", list, 1, a), SVP_OK);
    cr_assert(exists(dir, "sample_000000.safetensors"));
    write_lease(dir, "lease.json", "far-node", 4242, 0, 1);
    usleep(300000);
    cr_assert_neq(run_leased(dir, "", list + 1, 1, a), SVP_OK);
    cr_assert(!exists(dir, "sample_000001.safetensors"),
              "written into another job's directory");
    cr_assert_eq(svp_stop_exit_code(), 2);
    svp_job_lease_release(a);
    svp_rmtree(dir);
}

/* A lease file that is gone is lost too: only a job that took it over
 * removes it, or a person told that its holder is gone. */
Test(lease, removed_lease_is_lost)
{
    char             dir[] = "/tmp/svp_lease_XXXXXX", why[2048], path[700];
    svp_job_shard_t  one   = {0, 1, 0};
    svp_job_lease_t *a;

    cr_assert_not_null(mkdtemp(dir));
    unsetenv("SLURM_JOB_ID");
    cr_assert_eq(svp_job_lease_take(dir, &one, "j", "j.yaml", "k", 30, why,
                                    sizeof(why), &a),
                 SVP_OK, "%s", why);
    snprintf(path, sizeof(path), "%s/lease.json", dir);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(svp_job_lease_renew(a), SVP_ERR_SPEC);
    cr_assert(!exists(dir, "lease.json"), "a lost lease was written again");
    cr_assert(svp_job_lease_lost(a, why, sizeof(why)));
    cr_assert_not_null(strstr(why, "lease.json was removed or cannot be read"), "%s",
                       why);
    cr_assert_eq(svp_stop_exit_code(), 2);
    svp_job_lease_release(a);
    svp_rmtree(dir);
}
