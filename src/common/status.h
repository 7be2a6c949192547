/*
 * svdpipe: one status type for the whole tree.
 *
 * Every function that can fail returns svp_status_t.  SVP_OK is 0, failures
 * are negative and grouped by how far the damage reaches, so a caller can
 * decide what to tear down with one range test:
 *
 *   -1   .. -19   bad input: the job never starts, the process exits 2
 *   -20  .. -39   rank-fatal: this process cannot go on (I/O, memory, device)
 *   -40  .. -59   job-fatal: a peer, a message or the launcher failed; the
 *                 whole job must be torn down (PMIx_Abort), exit 3
 *
 * The names and the strings come from one X-macro table, so they cannot
 * drift apart.
 */
#ifndef SVP_COMMON_STATUS_H
#define SVP_COMMON_STATUS_H

#define SVP_STATUS_TABLE(_X) \
    _X(SVP_OK, 0, "success") \
    _X(SVP_INPROGRESS, 1, "operation in progress") \
    _X(SVP_ERR_INVALID_PARAM, -1, "invalid parameter") \
    _X(SVP_ERR_SPEC, -2, "invalid job spec") \
    _X(SVP_ERR_USAGE, -3, "invalid command line") \
    _X(SVP_ERR_BAD_FILE, -4, "malformed input file") \
    _X(SVP_ERR_NOT_FOUND, -5, "no such file or item") \
    _X(SVP_ERR_UNSUPPORTED, -6, "not supported") \
    _X(SVP_ERR_SHAPE, -7, "shape mismatch") \
    _X(SVP_ERR_NO_MEMORY, -20, "out of memory") \
    _X(SVP_ERR_IO, -21, "input/output error") \
    _X(SVP_ERR_DEVICE, -22, "device error") \
    _X(SVP_ERR_INTERNAL, -23, "internal error") \
    _X(SVP_ERR_TIMED_OUT, -40, "timed out") \
    _X(SVP_ERR_PEER_LOST, -41, "peer lost") \
    _X(SVP_ERR_MESSAGE, -42, "unexpected message") \
    _X(SVP_ERR_RUNTIME, -43, "launcher runtime error") \
    _X(SVP_ERR_TRANSPORT, -44, "transport error") \
    _X(SVP_ERR_CANCELED, -45, "canceled") \
    _X(SVP_ERR_PEER_STOPPED, -46, "another rank was stopped")

typedef enum {
#define SVP_STATUS_ENUM(_name, _value, _str) _name = _value,
    SVP_STATUS_TABLE(SVP_STATUS_ENUM)
#undef SVP_STATUS_ENUM
} svp_status_t;

#define SVP_IS_INPUT_ERROR(_s) ((_s) <= -1 && (_s) >= -19)
#define SVP_IS_RANK_FATAL(_s)  ((_s) <= -20 && (_s) >= -39)
#define SVP_IS_JOB_FATAL(_s)   ((_s) <= -40)

/*
 * The two ways a function gives up on a failed call.  SVP_TRY returns the
 * call's status at once: for functions that hold nothing yet.  SVP_TRY_OUT
 * stores it in the function's own `status` and jumps to its `out:` label,
 * which releases what the function holds: the forwards, whose scratch
 * buffers are freed there on success and failure alike.
 */
#define SVP_TRY(_expr) \
    do { \
        svp_status_t _svp_try_s = (_expr); \
        if (_svp_try_s != SVP_OK) { \
            return _svp_try_s; \
        } \
    } while (0)

#define SVP_TRY_OUT(_expr) \
    do { \
        status = (_expr); \
        if (status != SVP_OK) { \
            goto out; \
        } \
    } while (0)

/* exit codes of the tools, by blast radius */
#define SVP_EXIT_OK        0
#define SVP_EXIT_FAILURE   1 /* rank-fatal */
#define SVP_EXIT_BAD_INPUT 2 /* nothing was started */
#define SVP_EXIT_JOB_FATAL 3

/* A static string naming the status; never NULL. */
const char *svp_status_string(svp_status_t status);

/* The enum name ("SVP_ERR_TIMED_OUT"); never NULL. */
const char *svp_status_name(svp_status_t status);

/* The process exit code that corresponds to a failure. */
int svp_status_exit_code(svp_status_t status);

#endif
