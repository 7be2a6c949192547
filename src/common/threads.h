/*
 * How many CPU threads a process runs by default.
 */
#ifndef SVP_COMMON_THREADS_H
#define SVP_COMMON_THREADS_H

/*
 * The CPU threads a process runs by default: $SVP_THREADS when set, else
 * the first count of $OMP_NUM_THREADS, else the CPUs of the process's
 * affinity mask (what Slurm's --cpus-per-task, taskset or a cgroup's
 * cpuset gave it), else the node's online CPUs.  *from_p (may be NULL) is
 * set to a static phrase naming the source, "the CPU affinity mask", ...
 * A set variable that is not a positive count is warned about and skipped.
 */
int svp_threads_default(const char **from_p);

#endif
