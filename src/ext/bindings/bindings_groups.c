/* nccl.bindings.nccl: the group calls, written by hand (tools/nccl_surface.py's IRREGULAR says
 * why). Every group call of both APIs passes here and keeps this thread's group depth
 * (group/group.h): nccl.core's group() calls these bindings. Their signatures and docstrings are
 * generated (<section>.gen.c); bindings.h says how a binding is written. */
#include "bindings/bindings.gen.h"
#include "bindings/bindings_intake.h"
#include "group/group.h"
#include "structs/structs.h"
#include "trace/trace.h"

/* Every group call of both APIs passes here and keeps this thread's group depth (group.h). */

PyObject *nx_binding_group_start(PyObject *m, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(m);
    if (nx_require(st, &nx_api.ncclGroupStart) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGroupStart());
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    nx_group_enter();
    Py_RETURN_NONE;
}

PyObject *nx_binding_group_end(PyObject *m, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(m);
    if (nx_require(st, &nx_api.ncclGroupEnd) < 0)
        return NULL;
    ncclResult_t rc;
    int outermost = nx_group_depth() == 1;
    if (outermost) /* GroupEnd on each communicator of the group (docs/api/trace.md) */
        nx_trace_group_end_begin();
    NX_RUN(rc, nx_api.ncclGroupEnd());
    if (outermost)
        nx_trace_group_end_done(rc);
    nx_group_leave();
    return nx_none_or_error(st, rc, NULL);
}

/* ncclGroupSimulateEnd closes the group as ncclGroupEnd does (and records its GroupEnd). */
static ncclResult_t simulate_end(ncclSimInfo_t *info)
{
    ncclResult_t rc;
    int outermost = nx_group_depth() == 1;
    if (outermost)
        nx_trace_group_end_begin();
    NX_RUN(rc, nx_api.ncclGroupSimulateEnd(info));
    if (outermost)
        nx_trace_group_end_done(rc);
    nx_group_leave();
    return rc;
}

PyObject *nx_binding_group_simulate_end(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_group_simulate_end_sig, &nx_binding_group_simulate_end_sig_02, args, nargs, kwnames,
                                        &nx_api.ncclGroupSimulateEnd, buf, &legacy, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclResult_t rc;
    if (legacy) {
        void *out;
        if (nx_arg_addr(sig, a, 0, &out) < 0)
            return NULL;
        rc = simulate_end((ncclSimInfo_t *)out);
        return nx_none_or_error(st, rc, NULL);
    }
    PyObject *obj = nx_struct_new(st, NX_STRUCT_SIM_INFO);
    if (obj == NULL)
        return NULL;
    ncclSimInfo_t *info = nx_struct_storage(st, obj, NX_STRUCT_SIM_INFO);
    rc = simulate_end(info);
    return nx_struct_result(st, obj, rc, NULL);
}
