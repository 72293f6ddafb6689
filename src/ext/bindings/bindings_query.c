/* nccl.bindings.nccl: communicator queries (bindings.h says how a binding is written). */
#include "bindings/bindings_intake.h"

#include "structs/structs.h"

NX_BINDING(comm_get_async_error, ("comm"),
"ncclCommGetAsyncError: the communicator's asynchronous state (returned, not raised).");
static PyObject *comm_get_async_error(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &comm_get_async_error_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclCommGetAsyncError, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    if (nx_arg_comm(sig, a, 0, &comm) < 0)
        return NULL;
    ncclResult_t state = ncclSuccess, rc;
    NX_RUN(rc, nx_api.ncclCommGetAsyncError(comm, &state));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    return PyLong_FromLong((long)state);
}

/* The queries writing one int: count, device, rank. `slot` is the entry point's table slot. */
static PyObject *int_query(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const nx_sig *sig,
                           ncclResult_t (*const *slot)(const ncclComm_t, int *))
{
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, slot, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    if (nx_arg_comm(sig, a, 0, &comm) < 0)
        return NULL;
    int v = 0;
    ncclResult_t rc;
    NX_RUN(rc, (*slot)(comm, &v));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    return PyLong_FromLong(v);
}

NX_BINDING(comm_count, ("comm"), "ncclCommCount: the number of ranks.");
static PyObject *comm_count(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return int_query(m, args, nargs, kwnames, &comm_count_sig, &nx_api.ncclCommCount);
}

NX_BINDING(comm_cu_device, ("comm"), "ncclCommCuDevice: the device ordinal.");
static PyObject *comm_cu_device(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return int_query(m, args, nargs, kwnames, &comm_cu_device_sig, &nx_api.ncclCommCuDevice);
}

NX_BINDING(comm_user_rank, ("comm"), "ncclCommUserRank: this rank.");
static PyObject *comm_user_rank(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return int_query(m, args, nargs, kwnames, &comm_user_rank_sig, &nx_api.ncclCommUserRank);
}

NX_BINDING(comm_mem_stats, ("comm", "stat"), "ncclCommMemStats: the value of a CommMemStat.");
static PyObject *comm_mem_stats(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &comm_mem_stats_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclCommMemStats, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    int stat;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 ||
        nx_enum(a[1], sig->fname, sig->names[1], 0, ncclStatGpuMemTotal, "CommMemStat", &stat) < 0)
        return NULL;
    uint64_t v = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommMemStats(comm, (ncclCommMemStat_t)stat, &v));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(v);
}

NX_FORM(comm_query_properties, 02, "comm", "props");
NX_BINDING(comm_query_properties, ("comm"),
"ncclCommQueryProperties: a CommProperties. 0.2.0 form (comm, props) fills the struct at that address.");
static PyObject *comm_query_properties(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &comm_query_properties_sig, &comm_query_properties_sig_02, args, nargs,
                                        kwnames, &nx_api.ncclCommQueryProperties, buf, &legacy, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *out = NULL;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || (legacy && nx_arg_addr(sig, a, 1, &out) < 0))
        return NULL;
    ncclResult_t rc;
    if (legacy) {
        NX_RUN(rc, nx_api.ncclCommQueryProperties(comm, (ncclCommProperties_t *)out));
        return nx_none_or_error(st, rc, comm);
    }
    PyObject *obj = nx_struct_new(st, NX_STRUCT_COMM_PROPERTIES);
    if (obj == NULL)
        return NULL;
    ncclCommProperties_t *props = nx_struct_storage(st, obj, NX_STRUCT_COMM_PROPERTIES);
    nx_struct_fit_library(NX_STRUCT_COMM_PROPERTIES, props);
    NX_RUN(rc, nx_api.ncclCommQueryProperties(comm, props));
    return nx_struct_result(st, obj, rc, comm);
}

PyMethodDef nx_bindings_query_methods[] = {
    NX_FASTCALL_DEF(comm_get_async_error),
    NX_FASTCALL_DEF(comm_count),
    NX_FASTCALL_DEF(comm_cu_device),
    NX_FASTCALL_DEF(comm_user_rank),
    NX_FASTCALL_DEF(comm_mem_stats),
    NX_FASTCALL_DEF(comm_query_properties),
    {NULL, NULL, 0, NULL},
};
