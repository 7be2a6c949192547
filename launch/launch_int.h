/*
 * Helpers shared by the launcher's files; not part of its interface.
 */
#ifndef SVP_LAUNCH_LAUNCH_INT_H
#define SVP_LAUNCH_LAUNCH_INT_H

#include "launch/launch.h"

#include <stddef.h>

#include "common/util.h" /* svp_errf: the message into errbuf */

/* Copies s into out with newlines, quotes and control characters escaped. */
void svp_launch_escape(const char *s, char *out, size_t outlen);

/* Whether s holds a control character (newline, tab, DEL, ...). */
int svp_launch_has_control(const char *s);

/* The effective values, defaults applied. */
const char *svp_launch_job_name(const svp_spec_t *spec);
const char *svp_launch_mpi(const svp_spec_t *spec);
const char *svp_launch_worker(const svp_spec_t *spec);
int         svp_launch_gpus_per_task(const svp_spec_t *spec);  /* 0: no GPU */
long        svp_launch_exit_wait(const svp_spec_t *spec);      /* srun -W */

/*
 * "FILE:LINE:COLUMN" of key ("cluster.env.A", "cluster.srun_args[1]") in
 * spec's file when the file holds it with the value found (NULL: any),
 * else "FILE" (a value from --set or a default), into out (mark.c).
 */
void svp_launch_mark(const svp_spec_t *spec, const char *key,
                     const char *found, char *out, size_t len);

/* Whether the job runs in cluster.container_image. */
int svp_launch_in_container(const svp_spec_t *spec);

/*
 * The container-side path of host path host, through the last mount of
 * cluster.container_mounts whose SRC holds it, into out; 0 when no mount
 * covers it (container.c).
 */
int svp_launch_container_path(const svp_spec_t *spec, const char *host,
                              char *out, size_t len);

/*
 * The host path of container path path, through the last mount whose DST
 * holds it, into out; 0 when no mount covers it (container.c).
 */
int svp_launch_container_host(const svp_spec_t *spec, const char *path,
                              char *out, size_t len);

/* Whether container path path lies under some mount's DST. */
int svp_launch_container_sees(const svp_spec_t *spec, const char *path);

/* How many tasks a cluster.array value makes ("0-63" 64, "1,3,5-7" 5,
 * "0-15:4" 4; a "%N" throttle is left out); 0 when not set. */
int svp_launch_array_tasks(const svp_spec_t *spec);

#endif
