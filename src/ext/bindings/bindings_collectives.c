/* nccl.bindings.nccl: collectives and point-to-point (they return once enqueued on stream), custom
 * reduction operators, and groups (bindings.h says how a binding is written). */
#include "bindings/bindings_intake.h"

/* ---- reductions ---- */

NX_BINDING(all_reduce, ("sendbuff", "recvbuff", "count", "datatype", "op", "comm", "stream"),
"ncclAllReduce: reduce over all ranks into every recvbuff. Collective; enqueued on stream.");
static PyObject *all_reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &all_reduce_sig, &nx_api.ncclAllReduce, NX_COLL_OP, &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = nx_trace_binding(
        c.comm, nx_trace_coll(NX_T_ALLREDUCE, NX_TF_REDOP, c.send, c.recv, c.count, c.dt, c.op, -1, c.stream));
    NX_RUN(rc, nx_api.ncclAllReduce(c.send, c.recv, c.count, c.dt, c.op, c.comm, c.stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(reduce_scatter, ("sendbuff", "recvbuff", "recvcount", "datatype", "op", "comm", "stream"),
"ncclReduceScatter: reduce, then scatter recvcount elements per rank. Collective.");
static PyObject *reduce_scatter(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &reduce_scatter_sig, &nx_api.ncclReduceScatter, NX_COLL_OP, &st,
                       &c) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = nx_trace_binding(
        c.comm, nx_trace_coll(NX_T_REDUCESCATTER, NX_TF_REDOP, c.send, c.recv, c.count, c.dt, c.op, -1, c.stream));
    NX_RUN(rc, nx_api.ncclReduceScatter(c.send, c.recv, c.count, c.dt, c.op, c.comm, c.stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(reduce, ("sendbuff", "recvbuff", "count", "datatype", "op", "root", "comm", "stream"),
"ncclReduce: reduce onto root. Collective; enqueued on stream.");
static PyObject *reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &reduce_sig, &nx_api.ncclReduce, NX_COLL_OP | NX_COLL_ROOT, &st,
                       &c) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = nx_trace_binding(c.comm, nx_trace_coll(NX_T_REDUCE, NX_TF_REDOP | NX_TF_ROOT, c.send, c.recv,
                                                              c.count, c.dt, c.op, c.root, c.stream));
    NX_RUN(rc, nx_api.ncclReduce(c.send, c.recv, c.count, c.dt, c.op, c.root, c.comm, c.stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, c.comm);
}

/* ---- rooted data movement: broadcast, gather, scatter share one C signature ---- */

typedef ncclResult_t (*rooted_fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);

/* (sendbuff, recvbuff, count, datatype, root, comm, stream); slot is the entry point's table slot,
 * op the flight recorder's name for it. */
static PyObject *rooted(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const nx_sig *sig,
                        const rooted_fn *slot, int op)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, sig, slot, NX_COLL_ROOT, &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm =
        nx_trace_binding(c.comm, nx_trace_coll(op, NX_TF_ROOT, c.send, c.recv, c.count, c.dt, 0, c.root, c.stream));
    NX_RUN(rc, (*slot)(c.send, c.recv, c.count, c.dt, c.root, c.comm, c.stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(broadcast, ("sendbuff", "recvbuff", "count", "datatype", "root", "comm", "stream"),
"ncclBroadcast: copy root's sendbuff to every recvbuff. Collective; enqueued on stream.");
static PyObject *broadcast(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return rooted(m, args, nargs, kwnames, &broadcast_sig, &nx_api.ncclBroadcast, NX_T_BROADCAST);
}

NX_BINDING(gather, ("sendbuff", "recvbuff", "count", "datatype", "root", "comm", "stream"),
"ncclGather: gather count elements from every rank onto root. Collective.");
static PyObject *gather(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return rooted(m, args, nargs, kwnames, &gather_sig, &nx_api.ncclGather, NX_T_GATHER);
}

NX_BINDING(scatter, ("sendbuff", "recvbuff", "count", "datatype", "root", "comm", "stream"),
"ncclScatter: scatter count elements per rank from root. Collective.");
static PyObject *scatter(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return rooted(m, args, nargs, kwnames, &scatter_sig, &nx_api.ncclScatter, NX_T_SCATTER);
}

NX_BINDING(bcast, ("buff", "count", "datatype", "root", "comm", "stream"),
"ncclBcast (deprecated, in place): broadcast from root. Collective; enqueued on stream.");
static PyObject *bcast(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &bcast_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclBcast, buf, &st);
    if (a == NULL)
        return NULL;
    void *buff;
    size_t count;
    ncclDataType_t dt;
    int root;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_addr(sig, a, 0, &buff) < 0 || nx_arg_size(sig, a, 1, &count) < 0 || nx_arg_dtype(sig, a, 2, &dt) < 0 ||
        nx_arg_int(sig, a, 3, &root) < 0 || nx_arg_comm(sig, a, 4, &comm) < 0 || nx_arg_stream(sig, a, 5, &stream) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm =
        nx_trace_binding(comm, nx_trace_coll(NX_T_BROADCAST, NX_TF_ROOT, buff, buff, count, dt, 0, root, stream));
    NX_RUN(rc, nx_api.ncclBcast(buff, count, dt, root, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

/* ---- all-to-all data movement ---- */

NX_BINDING(all_gather, ("sendbuff", "recvbuff", "sendcount", "datatype", "comm", "stream"),
"ncclAllGather: gather sendcount elements from every rank everywhere. Collective.");
static PyObject *all_gather(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    nx_state *st;
    nx_coll_args c;
    if (nx_coll_intake(m, args, nargs, kwnames, &all_gather_sig, &nx_api.ncclAllGather, 0, &st, &c) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm =
        nx_trace_binding(c.comm, nx_trace_coll(NX_T_ALLGATHER, 0, c.send, c.recv, c.count, c.dt, 0, -1, c.stream));
    NX_RUN(rc, nx_api.ncclAllGather(c.send, c.recv, c.count, c.dt, c.comm, c.stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, c.comm);
}

NX_BINDING(allto_all, ("sendbuff", "recvbuff", "count", "datatype", "comm", "stream"),
"ncclAlltoAll (RCCL's older ncclAllToAll when that is all the library has): count elements to and\n"
"from every rank. Collective; enqueued on stream.");
static PyObject *allto_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &allto_all_sig;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_args(sig, args, nargs, kwnames, buf);
    nx_state *st = nx_get_state(m);
    if (a == NULL || nx_require(st, &nx_api.ncclAlltoAll) < 0)
        return NULL;
    void *send, *recv;
    size_t count;
    ncclDataType_t dt;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_addr(sig, a, 0, &send) < 0 || nx_arg_addr(sig, a, 1, &recv) < 0 || nx_arg_size(sig, a, 2, &count) < 0 ||
        nx_arg_dtype(sig, a, 3, &dt) < 0 || nx_arg_comm(sig, a, 4, &comm) < 0 || nx_arg_stream(sig, a, 5, &stream) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = nx_trace_binding(comm, nx_trace_coll(NX_T_ALLTOALL, 0, send, recv, count, dt, 0, -1, stream));
    NX_RUN(rc, nx_api.ncclAlltoAll(send, recv, count, dt, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

/* ---- point-to-point ---- */

/* send and recv: (buff, count, datatype, peer, comm, stream). */
static PyObject *p2p(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const nx_sig *sig,
                     int is_send)
{
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, is_send ? (const void *)&nx_api.ncclSend : (const void *)&nx_api.ncclRecv, buf, &st);
    if (a == NULL)
        return NULL;
    void *buff;
    size_t count;
    ncclDataType_t dt;
    int peer;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_addr(sig, a, 0, &buff) < 0 || nx_arg_size(sig, a, 1, &count) < 0 || nx_arg_dtype(sig, a, 2, &dt) < 0 ||
        nx_arg_int(sig, a, 3, &peer) < 0 || nx_arg_comm(sig, a, 4, &comm) < 0 || nx_arg_stream(sig, a, 5, &stream) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = nx_trace_binding(comm, nx_trace_coll(is_send ? NX_T_SEND : NX_T_RECV, NX_TF_PEER,
                                                            is_send ? buff : NULL, is_send ? NULL : buff, count, dt, 0,
                                                            peer, stream));
    if (is_send)
        NX_RUN(rc, nx_api.ncclSend(buff, count, dt, peer, comm, stream));
    else
        NX_RUN(rc, nx_api.ncclRecv(buff, count, dt, peer, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

NX_BINDING(send, ("sendbuff", "count", "datatype", "peer", "comm", "stream"),
"ncclSend: send count elements to peer. Enqueued on stream; pair with recv.");
static PyObject *send(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return p2p(m, args, nargs, kwnames, &send_sig, 1);
}

NX_BINDING(recv, ("recvbuff", "count", "datatype", "peer", "comm", "stream"),
"ncclRecv: receive count elements from peer. Enqueued on stream.");
static PyObject *recv(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return p2p(m, args, nargs, kwnames, &recv_sig, 0);
}

/* ---- custom reduction operators ---- */

NX_BINDING(red_op_create_pre_mul_sum, ("scalar", "datatype", "residence", "comm"),
"ncclRedOpCreatePreMulSum: a new reduction op (returned as an int). scalar is an address.");
static PyObject *red_op_create_pre_mul_sum(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &red_op_create_pre_mul_sum_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclRedOpCreatePreMulSum, buf, &st);
    if (a == NULL)
        return NULL;
    void *scalar;
    ncclDataType_t dt;
    int residence;
    ncclComm_t comm;
    if (nx_arg_addr(sig, a, 0, &scalar) < 0 || nx_arg_dtype(sig, a, 1, &dt) < 0 ||
        nx_enum(a[2], sig->fname, sig->names[2], 0, 1, "ScalarResidence", &residence) < 0 ||
        nx_arg_comm(sig, a, 3, &comm) < 0)
        return NULL;
    ncclRedOp_t op = ncclSum;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclRedOpCreatePreMulSum(&op, scalar, dt, (ncclScalarResidence_t)residence, comm));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    return PyLong_FromLong((long)op);
}

NX_BINDING(red_op_destroy, ("op", "comm"), "ncclRedOpDestroy.");
static PyObject *red_op_destroy(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &red_op_destroy_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclRedOpDestroy, buf, &st);
    if (a == NULL)
        return NULL;
    ncclRedOp_t op;
    ncclComm_t comm;
    if (nx_arg_redop(sig, a, 0, &op) < 0 || nx_arg_comm(sig, a, 1, &comm) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclRedOpDestroy(op, comm));
    return nx_none_or_error(st, rc, comm);
}

/* ---- groups ---- */

/* Every group call of both APIs passes here and keeps this thread's group depth (group.h). */

PyDoc_STRVAR(group_depth_py__doc__, "_group_depth()\n--\n\nNumber of groups open on this thread.");
static PyObject *group_depth_py(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromLong(nx_group_depth());
}

PyDoc_STRVAR(group_start__doc__, "group_start()\n--\n\nncclGroupStart: defer calls until the matching group_end().");
static PyObject *group_start(PyObject *m, PyObject *unused)
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

PyDoc_STRVAR(group_end__doc__, "group_end()\n--\n\nncclGroupEnd: the outermost one executes the group.");
static PyObject *group_end(PyObject *m, PyObject *unused)
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

NX_FORM(group_simulate_end, 02, "sim_info");
NX_BINDING0(group_simulate_end,
"ncclGroupSimulateEnd: end the group without communicating; returns a SimInfo with the estimate.\n"
"0.2.0 form group_simulate_end(sim_info) fills the struct at that address.");
static PyObject *group_simulate_end(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &group_simulate_end_sig, &group_simulate_end_sig_02, args, nargs, kwnames,
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

PyMethodDef nx_bindings_collective_methods[] = {
    NX_FASTCALL_DEF(all_reduce),
    NX_FASTCALL_DEF(reduce_scatter),
    NX_FASTCALL_DEF(reduce),
    NX_FASTCALL_DEF(broadcast),
    NX_FASTCALL_DEF(gather),
    NX_FASTCALL_DEF(scatter),
    NX_FASTCALL_DEF(bcast),
    NX_FASTCALL_DEF(all_gather),
    NX_FASTCALL_DEF(allto_all),
    NX_FASTCALL_DEF(send),
    NX_FASTCALL_DEF(recv),
    NX_FASTCALL_DEF(red_op_create_pre_mul_sum),
    NX_FASTCALL_DEF(red_op_destroy),
    {"group_start", group_start, METH_NOARGS, group_start__doc__},
    {"group_end", group_end, METH_NOARGS, group_end__doc__},
    {"_group_depth", group_depth_py, METH_NOARGS, group_depth_py__doc__},
    NX_FASTCALL_DEF(group_simulate_end),
    {NULL, NULL, 0, NULL},
};
