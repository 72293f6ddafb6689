/* nccl.bindings.rocm_extensions: the RCCL-only collectives (API.md section 4). They come from the
 * same handle as every other symbol; there is no second loader. */
#include "bindings.h"

NX_SIG(all_reduce_with_bias, "sendbuff", "recvbuff", "count", "datatype", "op", "comm", "stream", "acc");
PyDoc_STRVAR(all_reduce_with_bias__doc__,
"all_reduce_with_bias(sendbuff, recvbuff, count, datatype, op, comm, stream, acc)\n--\n\n"
"ncclAllReduceWithBias (RCCL): an all-reduce that also adds acc, count elements of datatype, into\n"
"the result. Collective; enqueued on stream. FunctionNotFoundError when the library lacks it.");
static PyObject *all_reduce_with_bias(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(all_reduce_with_bias, 8);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclAllReduceWithBias);
    intptr_t send, recv, comm, stream, acc;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    if (NX_ARG_PTR(0, send) || NX_ARG_PTR(1, recv) || NX_ARG_SIZE(2, count) || NX_ARG_DTYPE(3, dt) ||
        NX_ARG_REDOP(4, op) || NX_ARG_PTR(5, comm) || NX_ARG_PTR(6, stream) || NX_ARG_PTR(7, acc))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclAllReduceWithBias(NX_PTR(send), NX_PTR(recv), count, dt, op, (ncclComm_t)comm,
                                                   (hipStream_t)stream, NX_PTR(acc)));
    Py_RETURN_NONE;
}

NX_SIG(all_to_all_v, "sendbuff", "sendcounts", "sdispls", "recvbuff", "recvcounts", "rdispls", "datatype", "comm",
       "stream");
PyDoc_STRVAR(all_to_all_v__doc__,
"all_to_all_v(sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, comm, stream)\n--\n\n"
"ncclAlltoAllv (RCCL; falls back to the deprecated ncclAllToAllv): rank j receives sendcounts[j]\n"
"elements from sendbuff + sdispls[j]; data from rank i lands at recvbuff + rdispls[i]. Counts and\n"
"displacements are in elements of datatype, not bytes. The four arrays are host size_t[nranks]\n"
"addresses, sequences of ints, or 1-D uint64 buffers (copied after checking their length).");
static PyObject *all_to_all_v(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(all_to_all_v, 9);
    nx_state *st = nx_get_state(m);
    if (NX_UNLIKELY(!nx_loader_ready()) && nx_load_library(st) < 0)
        return NULL;
    __typeof__(nx_api.ncclAlltoAllv) fn = nx_api.ncclAlltoAllv ? nx_api.ncclAlltoAllv : nx_api.ncclAllToAllv;
    if (fn == NULL)
        return nx_raise_function_not_found(st, "ncclAlltoAllv", "ncclAllToAllv");
    PyObject *result = NULL;
    intptr_t send, recv, comm, stream;
    ncclDataType_t dt;
    const size_t *arr[4] = {NULL, NULL, NULL, NULL};
    size_t *copies[4] = {NULL, NULL, NULL, NULL};
    static const int arr_index[4] = {1, 2, 4, 5};
    if (NX_ARG_PTR(0, send) || NX_ARG_PTR(3, recv) || NX_ARG_DTYPE(6, dt) || NX_ARG_PTR(7, comm) ||
        NX_ARG_PTR(8, stream))
        return NULL;
    /* Sequences and buffers are checked against the communicator's size, so it is asked first
     * unless every array is a raw address. */
    int nranks = 0;
    for (int k = 0; k < 4; k++) {
        if (!nx_is_address(a[arr_index[k]]) && nranks == 0) {
            if (nx_api.ncclCommCount == NULL)
                return nx_raise_function_not_found(st, "ncclCommCount", NULL);
            NX_CALL(st, comm, nx_api.ncclCommCount((ncclComm_t)comm, &nranks));
        }
    }
    for (int k = 0; k < 4; k++)
        if (nx_size_array_arg(a[arr_index[k]], S->fname, S->names[arr_index[k]], nranks, &arr[k], &copies[k]) < 0)
            goto done;
    ncclResult_t rc;
    NX_RUN(rc, fn(NX_PTR(send), arr[0], arr[1], NX_PTR(recv), arr[2], arr[3], dt, (ncclComm_t)comm,
                  (hipStream_t)stream));
    if (NX_FAILED(rc)) {
        nx_raise_status(st, rc, (ncclComm_t)comm);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 4; k++)
        PyMem_Free(copies[k]);
    return result;
}

static PyMethodDef rocm_methods[] = {
    NX_FASTCALL_DEF(all_reduce_with_bias),
    NX_FASTCALL_DEF(all_to_all_v),
    {NULL, NULL, 0, NULL},
};

int nx_rocm_extensions_setup(PyObject *module, nx_state *st)
{
    (void)st;
    return PyModule_AddFunctions(module, rocm_methods);
}
