/* nccl.bindings.nccl: the nccl*Config collectives of NCCL 2.31 (nccl4py 0.5.0's *_config names).
 * Each takes its plain twin's parameters plus `config`, an ncclCollConfig_t given as a CollConfig
 * (its address) or an int address; 0 runs the plain collective with the library's defaults. The
 * intake is the plain twins' (bindings_intake.h); bindings.h says how a binding is written. */
#include "bindings/bindings_intake.h"

NX_BINDING(all_reduce_config, ("sendbuff", "recvbuff", "count", "datatype", "op", "comm", "stream", "config"),
"ncclAllReduceConfig: reduce over all ranks into every recvbuff. Collective; enqueued on stream.");
static PyObject *all_reduce_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &all_reduce_config_sig, &nx_api.ncclAllReduceConfig,
                       NX_COLL_OP | NX_COLL_CONFIG, &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclAllReduceConfig(c.send, c.recv, c.count, c.dt, c.op, c.comm, c.stream, c.config));
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(reduce_config, ("sendbuff", "recvbuff", "count", "datatype", "op", "root", "comm", "stream", "config"),
"ncclReduceConfig: reduce onto root. Collective; enqueued on stream.");
static PyObject *reduce_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &reduce_config_sig, &nx_api.ncclReduceConfig,
                       NX_COLL_OP | NX_COLL_ROOT | NX_COLL_CONFIG, &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclReduceConfig(c.send, c.recv, c.count, c.dt, c.op, c.root, c.comm, c.stream, c.config));
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(reduce_scatter_config, ("sendbuff", "recvbuff", "recvcount", "datatype", "op", "comm", "stream", "config"),
"ncclReduceScatterConfig: reduce, then scatter recvcount elements per rank. Collective; enqueued on stream.");
static PyObject *reduce_scatter_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &reduce_scatter_config_sig, &nx_api.ncclReduceScatterConfig,
                       NX_COLL_OP | NX_COLL_CONFIG, &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclReduceScatterConfig(c.send, c.recv, c.count, c.dt, c.op, c.comm, c.stream, c.config));
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(all_gather_config, ("sendbuff", "recvbuff", "sendcount", "datatype", "comm", "stream", "config"),
"ncclAllGatherConfig: gather sendcount elements from every rank everywhere. Collective; enqueued on stream.");
static PyObject *all_gather_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &all_gather_config_sig, &nx_api.ncclAllGatherConfig, NX_COLL_CONFIG,
                       &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclAllGatherConfig(c.send, c.recv, c.count, c.dt, c.comm, c.stream, c.config));
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(allto_all_config, ("sendbuff", "recvbuff", "count", "datatype", "comm", "stream", "config"),
"ncclAlltoAllConfig: count elements to and from every rank. Collective; enqueued on stream.");
static PyObject *allto_all_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &allto_all_config_sig, &nx_api.ncclAlltoAllConfig, NX_COLL_CONFIG,
                       &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclAlltoAllConfig(c.send, c.recv, c.count, c.dt, c.comm, c.stream, c.config));
    return nx_none_or_error(st, rc, c.comm);
}

/* ---- rooted data movement: broadcast, gather and scatter share one C signature ---- */

typedef ncclResult_t (*rooted_config_fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t,
                                         const ncclCollConfig_t *);

/* (sendbuff, recvbuff, count, datatype, root, comm, stream, config); slot is the entry point's
 * table slot. */
static PyObject *rooted_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                               const nx_sig *sig, const rooted_config_fn *slot)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, sig, slot, NX_COLL_ROOT | NX_COLL_CONFIG, &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, (*slot)(c.send, c.recv, c.count, c.dt, c.root, c.comm, c.stream, c.config));
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(broadcast_config, ("sendbuff", "recvbuff", "count", "datatype", "root", "comm", "stream", "config"),
"ncclBroadcastConfig: copy root's sendbuff to every recvbuff. Collective; enqueued on stream.");
static PyObject *broadcast_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return rooted_config(m, args, nargs, kwnames, &broadcast_config_sig, &nx_api.ncclBroadcastConfig);
}

NX_BINDING(gather_config, ("sendbuff", "recvbuff", "count", "datatype", "root", "comm", "stream", "config"),
"ncclGatherConfig: gather count elements from every rank onto root. Collective; enqueued on stream.");
static PyObject *gather_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return rooted_config(m, args, nargs, kwnames, &gather_config_sig, &nx_api.ncclGatherConfig);
}

NX_BINDING(scatter_config, ("sendbuff", "recvbuff", "count", "datatype", "root", "comm", "stream", "config"),
"ncclScatterConfig: scatter count elements per rank from root. Collective; enqueued on stream.");
static PyObject *scatter_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return rooted_config(m, args, nargs, kwnames, &scatter_config_sig, &nx_api.ncclScatterConfig);
}

PyMethodDef nx_bindings_config_methods[] = {
    NX_FASTCALL_DEF(all_reduce_config),
    NX_FASTCALL_DEF(reduce_config),
    NX_FASTCALL_DEF(reduce_scatter_config),
    NX_FASTCALL_DEF(all_gather_config),
    NX_FASTCALL_DEF(allto_all_config),
    NX_FASTCALL_DEF(broadcast_config),
    NX_FASTCALL_DEF(gather_config),
    NX_FASTCALL_DEF(scatter_config),
    {NULL, NULL, 0, NULL},
};
