/* nccl.bindings.rocm_extensions: the RCCL-only collectives (docs/compatibility.md#rccl-only-collectives). They
 * come from the
 * same handle as every other symbol; there is no second loader (bindings.h says how a binding is
 * written). */
#include "bindings/bindings_intake.h"

NX_BINDING(all_reduce_with_bias, ("sendbuff", "recvbuff", "count", "datatype", "op", "comm", "stream", "acc"),
"ncclAllReduceWithBias (RCCL): an all-reduce that also adds acc, count elements of datatype, into\n"
"the result. Collective; enqueued on stream. FunctionNotFoundError when the library lacks it.");
static PyObject *all_reduce_with_bias(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &all_reduce_with_bias_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclAllReduceWithBias, buf, &st);
    if (a == NULL)
        return NULL;
    void *send, *recv, *acc;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_addr(sig, a, 0, &send) < 0 || nx_arg_addr(sig, a, 1, &recv) < 0 || nx_arg_size(sig, a, 2, &count) < 0 ||
        nx_arg_dtype(sig, a, 3, &dt) < 0 || nx_arg_redop(sig, a, 4, &op) < 0 || nx_arg_comm(sig, a, 5, &comm) < 0 ||
        nx_arg_stream(sig, a, 6, &stream) < 0 || nx_arg_addr(sig, a, 7, &acc) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclAllReduceWithBias(send, recv, count, dt, op, comm, (hipStream_t)stream, acc));
    return nx_none_or_error(st, rc, comm);
}

NX_BINDING(all_to_all_v,
           ("sendbuff", "sendcounts", "sdispls", "recvbuff", "recvcounts", "rdispls", "datatype", "comm", "stream"),
"ncclAlltoAllv (RCCL; falls back to the deprecated ncclAllToAllv): rank j receives sendcounts[j]\n"
"elements from sendbuff + sdispls[j]; data from rank i lands at recvbuff + rdispls[i]. Counts and\n"
"displacements are in elements of datatype, not bytes. The four arrays are host size_t[nranks]\n"
"addresses, sequences of ints, or 1-D uint64 buffers (copied after checking their length).");
static PyObject *all_to_all_v(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &all_to_all_v_sig;
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
    NX_RUN(rc, nx_api.ncclAlltoAllv(send, arr[0], arr[1], recv, arr[2], arr[3], dt, comm, (hipStream_t)stream));
    if (nx_check(st, rc, comm) < 0)
        goto done;
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 4; k++)
        PyMem_Free(copies[k]);
    return result;
}

PyMethodDef nx_rocm_extension_methods[] = {
    NX_FASTCALL_DEF(all_reduce_with_bias),
    NX_FASTCALL_DEF(all_to_all_v),
    {NULL, NULL, 0, NULL},
};
