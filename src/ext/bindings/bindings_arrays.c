/* nccl.bindings: the entry points that take arrays given either as an address (used in place) or as
 * data (checked against a length, then copied), written by hand (tools/nccl_surface.py's IRREGULAR
 * says why). Their signatures and docstrings are generated (<section>.gen.c); bindings.h says how a
 * binding is written. */
#include "bindings/bindings.gen.h"
#include "bindings/bindings_intake.h"
#include "trace/trace.h"

PyObject *nx_binding_wait_signal(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &nx_binding_wait_signal_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclWaitSignal, buf, &st);
    if (a == NULL)
        return NULL;
    int n;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_int(sig, a, 0, &n) < 0 || nx_arg_comm(sig, a, 2, &comm) < 0 || nx_arg_stream(sig, a, 3, &stream) < 0)
        return NULL;
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "wait_signal() argument 'n_desc' must be non-negative, got %d", n);
        return NULL;
    }
    /* an address is used in place; a buffer is copied (and freed below) */
    ncclWaitSignalDesc_t *descs = NULL, *copy = NULL;
    if (nx_is_address(a[1])) {
        void *addr;
        if (nx_arg_addr(sig, a, 1, &addr) < 0)
            return NULL;
        descs = addr;
    } else if (nx_read_bytes_alloc(a[1], sig->fname, sig->names[1], (size_t)n * sizeof *copy, (void **)&copy) < 0) {
        return NULL;
    } else {
        descs = copy;
    }
    ncclResult_t rc;
    nx_trace_call tc = {.op = NX_T_WAIT_SIGNAL, .flags = NX_TF_COUNT | NX_TF_STREAM, .count = (uint64_t)n,
                        .stream = (uintptr_t)stream};
    nx_trace_mark tm = nx_trace_enter(nx_trace_find(comm), &tc);
    NX_RUN(rc, nx_api.ncclWaitSignal(n, descs, comm, stream));
    nx_trace_leave(tm, rc);
    PyMem_Free(copy);
    return nx_none_or_error(st, rc, comm);
}

/* ---- nccl.bindings.rocm_extensions ---- */

PyObject *nx_binding_all_to_all_v(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &nx_binding_all_to_all_v_sig;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_args(sig, args, nargs, kwnames, buf);
    nx_state *st = nx_get_state(m);
    if (a == NULL || nx_require(st, &nx_api.ncclAlltoAllv) < 0)
        return NULL;
    void *send, *recv;
    ncclDataType_t dt;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_addr(sig, a, 0, &send) < 0 || nx_arg_addr(sig, a, 3, &recv) < 0 || nx_arg_dtype(sig, a, 6, &dt) < 0 ||
        nx_arg_comm(sig, a, 7, &comm) < 0 || nx_arg_stream(sig, a, 8, &stream) < 0)
        return NULL;
    /* Sequences and buffers are checked against the communicator's size, so it is asked first
     * unless every array is a raw address. */
    static const int arr_index[4] = {1, 2, 4, 5};
    int nranks = 0;
    for (int k = 0; k < 4 && nranks == 0; k++) {
        if (nx_is_address(a[arr_index[k]]))
            continue;
        if (nx_require(st, &nx_api.ncclCommCount) < 0)
            return NULL;
        ncclResult_t rc;
        NX_RUN(rc, nx_api.ncclCommCount(comm, &nranks));
        if (nx_check(st, rc, comm) < 0)
            return NULL;
    }
    PyObject *result = NULL;
    const size_t *arr[4] = {NULL, NULL, NULL, NULL};
    size_t *copies[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 4; k++)
        if (nx_size_array_arg(a[arr_index[k]], sig->fname, sig->names[arr_index[k]], nranks, &arr[k], &copies[k]) < 0)
            goto done;
    ncclResult_t rc;
    /* no count: the per-peer counts are the call's (docs/api/trace.md) */
    nx_trace_call tc = {.op = NX_T_ALLTOALLV, .flags = NX_TF_DTYPE | NX_TF_STREAM | NX_TF_SEND | NX_TF_RECV,
                        .dtype = dt, .stream = (uintptr_t)stream, .send = (uintptr_t)send, .recv = (uintptr_t)recv};
    nx_trace_mark tm = nx_trace_enter(nx_trace_find(comm), &tc);
    NX_RUN(rc, nx_api.ncclAlltoAllv(send, arr[0], arr[1], recv, arr[2], arr[3], dt, comm, stream));
    nx_trace_leave(tm, rc);
    if (nx_check(st, rc, comm) < 0)
        goto done;
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 4; k++)
        PyMem_Free(copies[k]);
    return result;
}
