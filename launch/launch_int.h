/*
 * Helpers shared by the launcher's files; not part of its interface.
 */
#ifndef SVP_LAUNCH_LAUNCH_INT_H
#define SVP_LAUNCH_LAUNCH_INT_H

#include "launch/launch.h"

#include <stddef.h>

/* snprintf into errbuf when errbuf != NULL. */
void svp_launch_errf(char *errbuf, int errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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

#endif
