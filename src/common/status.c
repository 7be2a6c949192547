/*
 * The status codes' names, strings and exit codes, from the one X-macro
 * table in status.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/status.h"

const char *svp_status_string(svp_status_t status)
{
    switch (status) {
#define SVP_STATUS_CASE(_name, _value, _str) \
    case _name: \
        return _str;
        SVP_STATUS_TABLE(SVP_STATUS_CASE)
#undef SVP_STATUS_CASE
    }
    return "unknown status";
}

const char *svp_status_name(svp_status_t status)
{
    switch (status) {
#define SVP_STATUS_CASE(_name, _value, _str) \
    case _name: \
        return #_name;
        SVP_STATUS_TABLE(SVP_STATUS_CASE)
#undef SVP_STATUS_CASE
    }
    return "SVP_ERR_UNKNOWN";
}

int svp_status_exit_code(svp_status_t status)
{
    if (status == SVP_OK) {
        return SVP_EXIT_OK;
    } else if (SVP_IS_INPUT_ERROR(status)) {
        return SVP_EXIT_BAD_INPUT;
    } else if (SVP_IS_JOB_FATAL(status)) {
        return SVP_EXIT_JOB_FATAL;
    }
    return SVP_EXIT_FAILURE;
}
