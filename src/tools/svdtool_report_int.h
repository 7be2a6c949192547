/*
 * svdtool report's own parts: loading (svdtool_report_load.c: run.json,
 * the traces of a run folder, the inputs beside them), analysis
 * (svdtool_report.c) and writing (svdtool_report_write.c: report.md,
 * report.html, report.json and the pictures).  Program code, not part of
 * the library.
 */
#ifndef SVP_TOOLS_SVDTOOL_REPORT_INT_H
#define SVP_TOOLS_SVDTOOL_REPORT_INT_H

#include "svdtool_report.h"
#include "plan/hardware.h"
#include "jobspec/spec.h"

#include <jansson.h>

/* What the report reads beside the traces; loading fills it, the writers
 * read it. */
typedef struct {
    json_t     *run;     /* run.json, or NULL */
    svp_spec_t *spec;    /* its spec, or NULL */
    svp_hw_t   *hw;      /* --hardware or the run's table, or NULL */
    json_t     *profile; /* --profile, or NULL */
    json_t     *shards;  /* the task's WebDataset listing (job/wds.h), or NULL */
    const char *hw_source;
    double      flops_source_counted;
    char        flops_source[256];
} svdtool_report_inputs_t;

/* The string o[key], or dflt when it is absent or not a string. */
const char *svdtool_report_str(json_t *o, const char *key, const char *dflt);

/* FLOPs of one step: the UNet's counted FLOPs at the run's shape; 0 when
 * the run's model is not SVD or its UNet config cannot be read. */
double svdtool_report_inputs_flops(svdtool_report_inputs_t *in);

/* run.json into in->run, and the spec it carries into in->spec. */
svp_status_t svdtool_report_load_run(const char *file, svdtool_report_inputs_t *in);

/* The traces of a run folder (its run.json's log.trace prefix, else every
 * *.rank*.json in it) into r, and its profile when in has none. */
svp_status_t svdtool_report_load_dir(const char *dir, svdtool_report_t *r,
                                     svdtool_report_inputs_t *in);

/* Writes report.md, report.html, report.json and the pictures into dir. */
svp_status_t svdtool_report_write(const char *dir, svdtool_report_t *r,
                                  svdtool_report_inputs_t *in);

#endif
