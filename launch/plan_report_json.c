/*
 * `svdlaunch plan --json`: the report's summary as one JSON object, the
 * same figures as the text in the text's order.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/plan_report_int.h"
#include "common/util.h"
#include "common/str.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/*
 * s as a JSON string: a path or a reason may hold bytes that are not UTF-8,
 * which jansson refuses; those go escaped (svp_str_escape) rather than
 * losing the report.
 */
static json_t *plan_json_text(const char *s)
{
    char    esc[1024];
    json_t *j;

    s = (s != NULL) ? s : "";
    j = json_string(s);
    if (j == NULL) {
        svp_str_escape(s, strlen(s), esc, sizeof(esc), SVP_STR_ESCAPE_TERMINAL);
        j = json_string(esc);
    }
    return j;
}

static json_t *plan_json_layout(const svp_spec_t *spec, const svp_plan_estimate_t *l,
                                int world, double bubble, double memory)
{
    json_t *o;

    o = json_pack("{s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f}", "stages",
                  l->stages, "pairs", l->pairs, "pipelines", l->groups,
                  "steps_per_stage", spec->steps / l->stages, "samples_per_pipeline",
                  l->samples_max, "makespan_s", l->makespan_s, "samples_per_s",
                  l->samples_per_s, "per_gpu_samples_per_s",
                  l->samples_per_s / world, "first_out_s", l->first_out_s,
                  "latency_s", l->latency_s);
    if (o != NULL && bubble >= 0 &&
        (json_object_set_new(o, "bubble", json_real(bubble)) != 0 ||
         json_object_set_new(o, "memory_per_gpu_bytes",
                             json_integer((json_int_t)llround(memory))) != 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The figures that follow the layouts, in the report's order; nonzero
 * when one could not be set (each value is consumed either way). */
static int plan_json_tail(json_t *doc, const svp_spec_t *spec,
                          const svp_launch_plan_summary_t *sm)
{
    json_t *warnings = json_array(), *array = NULL;

    if (sm->alt_tasks > 0) {
        array = json_pack("{s:i, s:i, s:i, s:o, s:b, s:o}", "tasks", sm->alt_tasks,
                          "ranks_per_task", sm->alt_world, "samples_per_task",
                          sm->alt_samples, "layout",
                          plan_json_layout(spec, &sm->alt, sm->alt_world, -1, 0),
                          "recommended", sm->alt_recommended, "why",
                          plan_json_text(sm->alt_why));
    }
    if (warnings != NULL && sm->warning[0] != '\0') {
        json_array_append_new(warnings, plan_json_text(sm->warning));
    }
    return json_object_set_new(doc, "recommended_stages",
                               json_integer(sm->layouts[sm->best].stages)) |
           json_object_set_new(doc, "makespan_s",
                               json_real(sm->layouts[sm->used].makespan_s)) |
           json_object_set_new(doc, "objective",
                               json_string(spec->pipeline.objective ==
                                                   SVP_OBJECTIVE_LATENCY
                                               ? "latency"
                                               : "throughput")) |
           json_object_set_new(doc, "recommended_pairs",
                               json_integer(sm->layouts[sm->best].pairs)) |
           json_object_set_new(doc, "latency_s",
                               json_real(sm->layouts[sm->used].latency_s)) |
           json_object_set_new(doc, "other_placement",
                               json_pack("{s:s, s:f}", "placement",
                                         svp_spec_placement_name(
                                             sm->other_placement),
                                         "makespan_s", sm->other.makespan_s)) |
           json_object_set_new(doc, "one_gpu_makespan_s", json_real(sm->one_gpu_s)) |
           (sm->alt_tasks > 0 && json_object_set_new(doc, "array", array)) |
           json_object_set_new(doc, "warnings", warnings);
}

svp_status_t svp_launch_plan_print_json(FILE *out, const svp_spec_t *spec,
                                        const svp_plan_costs_t          *costs,
                                        const svp_launch_plan_summary_t *sm)
{
    json_t *doc, *layouts = json_array(), *spec_layout;
    int     failed;

    spec_layout = json_pack("{s:i, s:b}", "stages",
                            sm->spec_stages == SVP_PIPE_STAGES_AUTO
                                ? sm->layouts[sm->best].stages
                            : sm->spec_stages == 0 ? sm->world
                                                   : sm->spec_stages,
                            "valid", sm->spec_valid);
    if (spec_layout != NULL && !sm->spec_valid) {
        json_object_set_new(spec_layout, "why", plan_json_text(sm->spec_why));
    }
    for (int k = 0; layouts != NULL && k < sm->n; ++k) {
        json_array_append_new(layouts,
                              plan_json_layout(spec, &sm->layouts[k], sm->world,
                                               sm->bubble[k], sm->memory[k]));
    }
    doc = json_pack("{s:o, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, "
                    "s:{s:f, s:f, s:f, s:o}, s:s, s:o, s:o}",
                    "spec", plan_json_text(spec->file), "model",
                    svp_spec_model_kind_name(spec->model.kind), "dtype",
                    svp_dtype_short_name(spec->dtype), "steps", spec->steps,
                    "samples", spec->samples, "nodes", spec->cluster.nodes,
                    "ranks_per_node", spec->cluster.ranks_per_node, "world",
                    sm->world, "spec_array_tasks", sm->tasks, "samples_per_task",
                    sm->samples, "costs", "step_s", costs->step_s, "encode_s",
                    costs->encode_s, "decode_s", costs->decode_s, "source",
                    plan_json_text(costs->source), "placement",
                    svp_spec_placement_name(spec->pipeline.placement), "spec_layout",
                    spec_layout, "layouts", layouts);
    if (doc == NULL || plan_json_tail(doc, spec, sm) != 0) {
        json_decref(doc);
        return SVP_ERR_NO_MEMORY;
    }
    failed = json_dumpf(doc, out,
                        JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                            JSON_REAL_PRECISION(9)) != 0 ||
             fputc('\n', out) == EOF;
    json_decref(doc);
    return failed ? SVP_ERR_IO : SVP_OK;
}
