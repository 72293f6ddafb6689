/* Collective and point-to-point methods of Communicator (docs/compatibility.md#collectives), plus the
 * RCCL-only allreduce_with_bias and alltoallv.
 *
 * Every method is a body run by nx_comm_call (core.h): the communicator must be open ("Cannot
 * <op>: Communicator not initialized"), then the arguments are converted, which runs Python code
 * (docs/architecture.md#callbacks-into-python): config= first, then the buffers in parameter
 * order (resolved, device-checked, recvbuf writable, their memory pinned for the call), skipping
 * the "only on root" ones elsewhere; then dtypes, counts and the overlap rule; then stream, and op
 * last (a CustomRedOp's handle is read there). Only then is the communicator's handle read
 * (coll_ready), and the one library call runs with the GIL released; no Python code runs in
 * between. Counts always come from the buffers. The eight collectives of nccl4py 0.6.0 also take a
 * keyword-only config= (an NCCLCollConfig): a call that passes one goes through coll_config.c to
 * the library's ncclXxxConfig entry point; calls without it never look at it again. Messages are
 * built in cold functions so that allreduce(x, x, SUM), the hot path, stays a straight line. */
#include "core/core.h"

#include <string.h>

#include "core/coll_config.h"
#include "core/resources.h"
#include "structs/structs.h"

/* ---- cold error builders ---- */

/* A buffer's dtype for messages: bool buffers say BOOL, not the UINT8 they are carried as. */
static const char *dtype_name(const nx_buffer *b) { return b->logical ? "BOOL" : nx_dtype_name(b->dtype); }

static NX_COLD PyObject *dtype_mismatch(nx_state *st, const char *an, const nx_buffer *a, const char *bn,
                                        const nx_buffer *b)
{
    return nx_invalid(st, "Dtype mismatch: %s has dtype %s, %s has dtype %s", an, dtype_name(a), bn, dtype_name(b));
}

static NX_COLD PyObject *overlap_error(nx_state *st, const char *fname)
{
    return nx_invalid(st, "sendbuf and recvbuf overlap but are not in %s's in-place layout", fname);
}

static NX_COLD PyObject *at_least(nx_state *st, const char *name, size_t need, const char *why, size_t got)
{
    if (why == NULL)
        return nx_invalid(st, "Buffer count mismatch: %s must have at least %zu elements, got %zu", name, need, got);
    return nx_invalid(st, "Buffer count mismatch: %s must have at least %zu elements (%s), got %zu", name, need, why,
                      got);
}

static NX_COLD PyObject *exactly(nx_state *st, const char *name, size_t need, const char *why, size_t got)
{
    if (why == NULL)
        return nx_invalid(st, "Buffer count mismatch: %s must have exactly %zu elements, got %zu", name, need, got);
    return nx_invalid(st, "Buffer count mismatch: %s must have exactly %zu elements (%s), got %zu", name, need, why,
                      got);
}

static NX_COLD PyObject *not_multiple(nx_state *st, size_t count, int nranks)
{
    return nx_invalid(st, "Buffer count mismatch: sendbuf element count %zu is not a multiple of nranks %d", count,
                      nranks);
}

/* reduce_scatter, alltoall and scatter (on root): sendbuf splits into nranks whole blocks of at
 * least one element; *block is the block's element count. */
static int per_rank_blocks(nx_state *st, const nx_buffer *s, int nranks, size_t *block)
{
    *block = s->count / (size_t)nranks;
    if (*block < 1) {
        at_least(st, "sendbuf", (size_t)nranks, "nranks", s->count);
        return -1;
    }
    if (s->count % (size_t)nranks != 0) {
        not_multiple(st, s->count, nranks);
        return -1;
    }
    return 0;
}

/* ---- argument pieces ---- */

/* Resolves one buffer argument, pinned for the call (nx_call_buffer), and checks its device (and
 * writability when NCCL writes it). */
static inline int buffer_arg(nx_call *k, PyObject *o, const char *name, int writes, nx_buffer *out)
{
    if (NX_UNLIKELY(nx_call_buffer(k, o, name, out) < 0))
        return -1;
    if (writes && NX_UNLIKELY(nx_buffer_writable(k->st, out, o, name) < 0))
        return -1;
    return nx_comm_check_device(k->st, k->c, out, name);
}

/* recvbuf: when it is the sendbuf object itself (the in-place call), the resolution is reused. */
static inline int recv_arg(nx_call *k, PyObject *o, PyObject *sendo, const nx_buffer *s, nx_buffer *out)
{
    if (o == sendo && s != NULL) {
        *out = *s;
        return nx_buffer_writable(k->st, out, o, "recvbuf");
    }
    return buffer_arg(k, o, "recvbuf", 1, out);
}

/* A reduction of bool buffers, which NCCL carries as UINT8: SUM and PROD become their logical
 * forms, as torch does (SUM is OR: MAX; PROD is AND: MIN), so 1 + 1 never stores the byte 2 in a
 * bool; AVG and custom ops have no bool result and are refused (docs/api/collectives.md#bool-buffers). */
static NX_COLD int logical_op(nx_state *st, const char *fname, ncclRedOp_t *op)
{
    switch (*op) {
    case ncclSum: *op = ncclMax; return 0;
    case ncclProd: *op = ncclMin; return 0;
    case ncclMax: case ncclMin: return 0;
    default:
        nx_invalid(st, "%s: %s of bool buffers has no bool result; SUM (logical or), PROD (logical and), MAX and "
                       "MIN work on bools, or convert the buffers to a number type first", fname,
                   *op == ncclAvg ? "AVG" : "a custom reduction op");
        return -1;
    }
}

/* op: an int (NcclRedOp members are ints) or a CustomRedOp checked against comm and dtype; for
 * bool buffers (b->logical), its logical form. */
static inline int op_arg(nx_state *st, nx_Communicator *c, PyObject *o, const nx_buffer *b, const char *fname,
                         ncclRedOp_t *out)
{
    int rc;
    if (NX_LIKELY(PyLong_Check(o)) || !PyObject_TypeCheck(o, nx_types_of(st)->core[NX_TYPE_CUSTOM_RED_OP]))
        rc = nx_redop(o, fname, "op", out);
    else
        rc = nx_comm_redop(st, c, o, b->dtype, out);
    return NX_UNLIKELY(b->logical) && rc == 0 ? logical_op(st, fname, out) : rc;
}

/* config: an omitted keyword or None is no config (the plain entry point). */
static inline int has_config(PyObject *o) { return NX_UNLIKELY(o != NULL && o != Py_None); }

/* stream: an omitted keyword is None. */
static inline int stream_arg(nx_state *st, PyObject *o, cudaStream_t *out)
{
    return nx_resolve_stream(st, o != NULL ? o : Py_None, out);
}

/* n * m, saturated at SIZE_MAX (the counts then fail their checks instead of wrapping). */
static inline size_t mul_sat(size_t n, size_t m)
{
    size_t r;
    return __builtin_mul_overflow(n, m, &r) ? SIZE_MAX : r;
}

/* Whether [a, a+an) and [b, b+bn) share a byte. */
static inline int overlaps(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an != 0 && bn != 0 && x < y + bn && y < x + an;
}

/* a + k elements of size sz, as an address (for the in-place layouts). */
static inline const char *elem_at(const void *a, size_t k, size_t sz) { return (const char *)a + mul_sat(k, sz); }

/* A rank argument (root, peer) in [0, nranks): checked here, where the message can name it, not
 * left to the library (whose InvalidArgument would not say which argument). */
static NX_COLD int rank_out_of_range(nx_state *st, const char *fname, const char *argname, int v, int nranks)
{
    nx_invalid(st, "%s: %s=%d is out of range for a communicator of %d rank%s", fname, argname, v, nranks,
               nranks == 1 ? "" : "s");
    return -1;
}

static int rank_arg(nx_state *st, nx_Communicator *c, PyObject *o, const char *fname, const char *argname, int *out)
{
    int nranks;
    if (nx_int(o, fname, argname, out) < 0 || nx_comm_nranks(st, c, fname, &nranks) < 0)
        return -1;
    return NX_LIKELY(*out >= 0 && *out < nranks) ? 0 : rank_out_of_range(st, fname, argname, *out, nranks);
}

static int root_arg(nx_state *st, nx_Communicator *c, PyObject *o, const char *fname, int *root, int *is_root)
{
    int rank;
    if (rank_arg(st, c, o, fname, "root", root) < 0 || nx_comm_rank(st, c, fname, &rank) < 0)
        return -1;
    *is_root = rank == *root;
    return 0;
}

/* ---- the intake every method shares ---- */

/* What a method has taken in: the call (module state, communicator, kept objects), its config=
 * converted, the method's name (for messages), and the handle once coll_ready read it. */
typedef struct {
    nx_call *k;
    nx_state *st;
    nx_Communicator *c;
    ncclComm_t comm;       /* NULL until coll_ready */
    const char *fname;
    nx_coll_config config; /* converted when configured */
    int configured;
} coll_in;

/* The first step of every method: the communicator is open ("Cannot <op>: ..."), the conversion
 * starts, and config= is converted where the method takes one (configo NULL: it does not, or it
 * was omitted). 0, or -1 with the exception set; the caller returns its error value. */
static inline int comm_intake(coll_in *in, nx_call *k, const char *fname, PyObject *configo)
{
    in->k = k;
    in->st = k->st;
    in->c = k->c;
    in->fname = fname;
    in->comm = NULL;
    in->configured = 0;
    if (NX_UNLIKELY(nx_call_begin(k, fname) < 0))
        return -1;
    if (has_config(configo)) {
        if (nx_coll_config_take(in->st, configo, fname, &in->config) < 0)
            return -1;
        in->configured = 1;
        PyObject *keep = in->config.keep;
        in->config.keep = NULL;
        return nx_call_keep(k, keep);
    }
    return 0;
}

/* Every argument is converted: the handle is read now (docs/architecture.md#callbacks-into-python).
 * 0, or -1 with the exception set. */
static inline int coll_ready(coll_in *in)
{
    in->comm = nx_call_ready(in->k);
    return NX_LIKELY(in->comm != NULL) ? 0 : -1;
}

/* The flight recorder's entry for this method's library call (docs/api/trace.md), and the ring a
 * config= call records on (inside coll_config.c). */
static inline nx_trace_mark trace_enter(const coll_in *in, nx_trace_call tc)
{
    return nx_trace_enter(nx_comm_trace(in->c, in->comm), &tc);
}

static inline PyObject *with_config(const coll_in *in, nx_coll_call *call)
{
    call->trace = nx_comm_trace(in->c, in->comm);
    return nx_coll_config_run(in->st, call, &in->config);
}

/* sendbuf and recvbuf, in that order, each only where this rank uses it (send_here, recv_here: the
 * "only on root" buffers are skipped elsewhere); recvbuf reuses sendbuf's resolution in place.
 * Where both are used their dtypes must match. 0, or -1 with the exception set. */
static inline int pair_intake(const coll_in *in, PyObject *sendo, PyObject *recvo, int send_here, int recv_here,
                              nx_buffer *s, nx_buffer *r)
{
    if (send_here && NX_UNLIKELY(buffer_arg(in->k, sendo, "sendbuf", 0, s) < 0))
        return -1;
    if (recv_here && NX_UNLIKELY(recv_arg(in->k, recvo, sendo, send_here ? s : NULL, r) < 0))
        return -1;
    if (send_here && recv_here && NX_UNLIKELY(r->dtype != s->dtype || r->logical != s->logical)) {
        dtype_mismatch(in->st, "sendbuf", s, "recvbuf", r);
        return -1;
    }
    return 0;
}

/* ---- reductions ---- */

/* allreduce and reduce; rooto NULL/None means allreduce. */
static PyObject *reduce_impl(nx_call *k, const char *fname, PyObject *sendo, PyObject *recvo, PyObject *opo,
                             PyObject *rooto, PyObject *streamo, PyObject *configo)
{
    coll_in in;
    if (NX_UNLIKELY(comm_intake(&in, k, fname, configo) < 0))
        return NULL;
    nx_state *st = in.st;
    int root = -1, is_root = 1, rooted = rooto != NULL && rooto != Py_None;
    if (rooted && root_arg(st, in.c, rooto, fname, &root, &is_root) < 0)
        return NULL;
    nx_buffer s, r = {NULL, 0, ncclInt8, NX_DEVICE_HOST, 0, 0, NULL};
    if (NX_UNLIKELY(pair_intake(&in, sendo, recvo, 1, is_root, &s, &r) < 0))
        return NULL;
    if (is_root) {
        if (NX_UNLIKELY(r.count < s.count))
            return at_least(st, "recvbuf", s.count, NULL, r.count);
        size_t bytes = s.count * nx_dtype_size(s.dtype);
        if (NX_UNLIKELY(s.ptr != r.ptr && overlaps(s.ptr, bytes, r.ptr, bytes)))
            return overlap_error(st, fname);
    }
    ncclRedOp_t op;
    cudaStream_t stream;
    if (NX_UNLIKELY(stream_arg(st, streamo, &stream) < 0) ||
        NX_UNLIKELY(op_arg(st, in.c, opo, &s, fname, &op) < 0) || NX_UNLIKELY(coll_ready(&in) < 0))
        return NULL;
    ncclComm_t comm = in.comm;
    if (in.configured) {
        nx_coll_call call = {rooted ? NX_COLL_REDUCE : NX_COLL_ALLREDUCE, s.ptr, r.ptr, s.count, s.dtype, op, root,
                             comm, stream};
        return with_config(&in, &call);
    }
    ncclResult_t rc;
    nx_trace_mark tm;
    if (rooted) {
        if (nx_require(st, &nx_api.ncclReduce) < 0)
            return NULL;
        tm = trace_enter(&in, nx_trace_coll(NX_T_REDUCE, NX_TF_REDOP | NX_TF_ROOT, s.ptr, r.ptr, s.count, s.dtype, op,
                                            root, stream));
        NX_RUN(rc, nx_api.ncclReduce(s.ptr, r.ptr, s.count, s.dtype, op, root, comm, stream));
    } else {
        if (nx_require(st, &nx_api.ncclAllReduce) < 0)
            return NULL;
        tm = trace_enter(&in, nx_trace_coll(NX_T_ALLREDUCE, NX_TF_REDOP, s.ptr, r.ptr, s.count, s.dtype, op, -1, stream));
        NX_RUN(rc, nx_api.ncclAllReduce(s.ptr, r.ptr, s.count, s.dtype, op, comm, stream));
    }
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

NX_MSIG(allreduce, 3, 3, "sendbuf", "recvbuf", "op", "stream", "config");
PyDoc_STRVAR(allreduce__doc__, "allreduce($self, sendbuf, recvbuf, op, *, stream=None, config=None)\n--\n\n"
"Reduce sendbuf over all ranks with op into recvbuf on every rank (ncclAllReduce). Collective;\n"
"enqueued on stream. count = sendbuf's element count; recvbuf must have at least that many\n"
"elements of the same dtype and be writable. In place when recvbuf is sendbuf (same address).\n"
"op: an NcclRedOp, an int, or a CustomRedOp of this communicator with the buffers' dtype.\n"
"config: an NCCLCollConfig, passed to ncclAllReduceConfig (every collective takes one).\n"
"Raises NcclInvalid for bad buffers, NCCLError when the library fails.");
static PyObject *allreduce_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[5];
    if (NX_LIKELY(nargs == 3 && kwnames == NULL)) {
        a[0] = args[0], a[1] = args[1], a[2] = args[2], a[3] = NULL, a[4] = NULL;
    } else if (nargs == 3 && PyTuple_GET_SIZE(kwnames) == 1 &&
               PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "config") == 0) {
        /* nccl4py 0.6.0's allreduce(x, y, op, config=...): no walk over the parameter names */
        a[0] = args[0], a[1] = args[1], a[2] = args[2], a[3] = NULL, a[4] = args[3];
    } else if (nx_margs(&M_allreduce, args, nargs, kwnames, a) < 0) {
        return NULL;
    }
    return reduce_impl(k, "allreduce", a[0], a[1], a[2], NULL, a[3], a[4]);
}

NX_MSIG(reduce, 4, 3, "sendbuf", "recvbuf", "op", "root", "stream", "config");
PyDoc_STRVAR(reduce__doc__, "reduce($self, sendbuf, recvbuf, op, root=None, *, stream=None, config=None)\n--\n\n"
"Reduce sendbuf over all ranks with op into recvbuf on root (ncclReduce); root=None is allreduce.\n"
"Collective; enqueued on stream. count = sendbuf's element count. recvbuf is used (and resolved)\n"
"only on root, where it needs at least count elements of sendbuf's dtype; elsewhere it may be\n"
"anything (None). In place when recvbuf is sendbuf.");
static PyObject *reduce_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[6];
    if (nx_margs(&M_reduce, args, nargs, kwnames, a) < 0)
        return NULL;
    return reduce_impl(k, "reduce", a[0], a[1], a[2], a[3], a[4], a[5]);
}

NX_MSIG(reduce_scatter, 3, 3, "sendbuf", "recvbuf", "op", "stream", "config");
PyDoc_STRVAR(reduce_scatter__doc__, "reduce_scatter($self, sendbuf, recvbuf, op, *, stream=None, config=None)\n--\n\n"
"Reduce sendbuf over all ranks with op; rank i receives block i (ncclReduceScatter). Collective;\n"
"enqueued on stream. count = sendbuf's element count / nranks (a whole multiple, at least 1);\n"
"recvbuf needs at least count elements. In place when recvbuf is at sendbuf + rank * count.");
static PyObject *reduce_scatter_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(&M_reduce_scatter, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = "reduce_scatter";
    int nranks, rank;
    nx_buffer s, r;
    if (comm_intake(&in, k, fname, a[4]) < 0 || nx_comm_nranks(in.st, in.c, fname, &nranks) < 0 ||
        nx_comm_rank(in.st, in.c, fname, &rank) < 0 || pair_intake(&in, a[0], a[1], 1, 1, &s, &r) < 0)
        return NULL;
    nx_state *st = in.st;
    size_t count, sz = nx_dtype_size(s.dtype);
    if (per_rank_blocks(st, &s, nranks, &count) < 0)
        return NULL;
    if (r.count < count)
        return at_least(st, "recvbuf", count, "sendcount / nranks", r.count);
    if (r.ptr != elem_at(s.ptr, mul_sat((size_t)rank, count), sz) &&
        overlaps(s.ptr, s.count * sz, r.ptr, count * sz))
        return overlap_error(st, fname);
    ncclRedOp_t op;
    cudaStream_t stream;
    if (stream_arg(st, a[3], &stream) < 0 || op_arg(st, in.c, a[2], &s, fname, &op) < 0 || coll_ready(&in) < 0)
        return NULL;
    ncclComm_t comm = in.comm;
    if (in.configured) {
        nx_coll_call call = {NX_COLL_REDUCE_SCATTER, s.ptr, r.ptr, count, s.dtype, op, -1, comm, stream};
        return with_config(&in, &call);
    }
    if (nx_require(st, &nx_api.ncclReduceScatter) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm =
        trace_enter(&in, nx_trace_coll(NX_T_REDUCESCATTER, NX_TF_REDOP, s.ptr, r.ptr, count, s.dtype, op, -1, stream));
    NX_RUN(rc, nx_api.ncclReduceScatter(s.ptr, r.ptr, count, s.dtype, op, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

/* ---- data movement ---- */

NX_MSIG(broadcast, 3, 3, "sendbuf", "recvbuf", "root", "stream", "config");
PyDoc_STRVAR(broadcast__doc__, "broadcast($self, sendbuf, recvbuf, root, *, stream=None, config=None)\n--\n\n"
"Copy root's sendbuf into recvbuf on every rank (ncclBroadcast). Collective; enqueued on stream.\n"
"count = recvbuf's element count. sendbuf is used (and resolved) only on root, where it must have\n"
"exactly count elements of recvbuf's dtype; elsewhere it may be anything (None). In place when\n"
"recvbuf is sendbuf.");
static PyObject *broadcast_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(&M_broadcast, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = "broadcast";
    int root, is_root;
    nx_buffer s = {NULL, 0, ncclInt8, NX_DEVICE_HOST, 0, 0, NULL}, r;
    if (comm_intake(&in, k, fname, a[4]) < 0 || root_arg(in.st, in.c, a[2], fname, &root, &is_root) < 0 ||
        pair_intake(&in, a[0], a[1], is_root, 1, &s, &r) < 0)
        return NULL;
    nx_state *st = in.st;
    if (is_root) {
        if (r.count != s.count)
            return exactly(st, "recvbuf", s.count, NULL, r.count);
        size_t bytes = r.count * nx_dtype_size(r.dtype);
        if (s.ptr != r.ptr && overlaps(s.ptr, bytes, r.ptr, bytes))
            return overlap_error(st, fname);
    }
    cudaStream_t stream;
    if (stream_arg(st, a[3], &stream) < 0 || coll_ready(&in) < 0)
        return NULL;
    ncclComm_t comm = in.comm;
    if (in.configured) {
        nx_coll_call call = {NX_COLL_BROADCAST, s.ptr, r.ptr, r.count, r.dtype, 0, root, comm, stream};
        return with_config(&in, &call);
    }
    if (nx_require(st, &nx_api.ncclBroadcast) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm =
        trace_enter(&in, nx_trace_coll(NX_T_BROADCAST, NX_TF_ROOT, s.ptr, r.ptr, r.count, r.dtype, 0, root, stream));
    NX_RUN(rc, nx_api.ncclBroadcast(s.ptr, r.ptr, r.count, r.dtype, root, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

/* allgather and gather; rooto NULL/None means allgather. */
static PyObject *gather_impl(nx_call *k, const char *fname, PyObject *sendo, PyObject *recvo, PyObject *rooto,
                             PyObject *streamo, PyObject *configo)
{
    coll_in in;
    int nranks, rank, root = -1, is_root = 1, rooted = rooto != NULL && rooto != Py_None;
    nx_buffer s, r = {NULL, 0, ncclInt8, NX_DEVICE_HOST, 0, 0, NULL};
    if (comm_intake(&in, k, fname, configo) < 0 || nx_comm_nranks(in.st, in.c, fname, &nranks) < 0 ||
        nx_comm_rank(in.st, in.c, fname, &rank) < 0 ||
        (rooted && root_arg(in.st, in.c, rooto, fname, &root, &is_root) < 0) ||
        pair_intake(&in, sendo, recvo, 1, is_root, &s, &r) < 0)
        return NULL;
    nx_state *st = in.st;
    size_t count = s.count;
    if (is_root) {
        size_t total = mul_sat((size_t)nranks, count), sz = nx_dtype_size(s.dtype);
        if (r.count < total)
            return at_least(st, "recvbuf", total, "nranks * sendcount", r.count);
        const char *in_place = elem_at(r.ptr, mul_sat((size_t)(rooted ? root : rank), count), sz);
        if (s.ptr != in_place && overlaps(s.ptr, count * sz, r.ptr, total * sz))
            return overlap_error(st, fname);
    }
    cudaStream_t stream;
    if (stream_arg(st, streamo, &stream) < 0 || coll_ready(&in) < 0)
        return NULL;
    ncclComm_t comm = in.comm;
    if (in.configured) {
        nx_coll_call call = {rooted ? NX_COLL_GATHER : NX_COLL_ALLGATHER, s.ptr, r.ptr, count, s.dtype, 0, root, comm,
                             stream};
        return with_config(&in, &call);
    }
    ncclResult_t rc;
    nx_trace_mark tm;
    if (rooted) {
        if (nx_require(st, &nx_api.ncclGather) < 0)
            return NULL;
        tm = trace_enter(&in, nx_trace_coll(NX_T_GATHER, NX_TF_ROOT, s.ptr, r.ptr, count, s.dtype, 0, root, stream));
        NX_RUN(rc, nx_api.ncclGather(s.ptr, r.ptr, count, s.dtype, root, comm, stream));
    } else {
        if (nx_require(st, &nx_api.ncclAllGather) < 0)
            return NULL;
        tm = trace_enter(&in, nx_trace_coll(NX_T_ALLGATHER, 0, s.ptr, r.ptr, count, s.dtype, 0, -1, stream));
        NX_RUN(rc, nx_api.ncclAllGather(s.ptr, r.ptr, count, s.dtype, comm, stream));
    }
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

NX_MSIG(allgather, 2, 2, "sendbuf", "recvbuf", "stream", "config");
PyDoc_STRVAR(allgather__doc__, "allgather($self, sendbuf, recvbuf, *, stream=None, config=None)\n--\n\n"
"Concatenate every rank's sendbuf, in rank order, into recvbuf on every rank (ncclAllGather).\n"
"Collective; enqueued on stream. count = sendbuf's element count; recvbuf needs at least\n"
"nranks * count elements of the same dtype. In place when sendbuf is at recvbuf + rank * count.");
static PyObject *allgather_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[4];
    if (nx_margs(&M_allgather, args, nargs, kwnames, a) < 0)
        return NULL;
    return gather_impl(k, "allgather", a[0], a[1], NULL, a[2], a[3]);
}

NX_MSIG(gather, 3, 2, "sendbuf", "recvbuf", "root", "stream", "config");
PyDoc_STRVAR(gather__doc__, "gather($self, sendbuf, recvbuf, root=None, *, stream=None, config=None)\n--\n\n"
"Concatenate every rank's sendbuf, in rank order, into recvbuf on root (ncclGather); root=None is\n"
"allgather. Collective; enqueued on stream. count = sendbuf's element count. recvbuf is used (and\n"
"resolved) only on root, where it needs at least nranks * count elements. In place when sendbuf\n"
"is at recvbuf + root * count.");
static PyObject *gather_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(&M_gather, args, nargs, kwnames, a) < 0)
        return NULL;
    return gather_impl(k, "gather", a[0], a[1], a[2], a[3], a[4]);
}

NX_MSIG(scatter, 3, 3, "sendbuf", "recvbuf", "root", "stream", "config");
PyDoc_STRVAR(scatter__doc__, "scatter($self, sendbuf, recvbuf, root, *, stream=None, config=None)\n--\n\n"
"Send block i of root's sendbuf to rank i's recvbuf (ncclScatter). Collective; enqueued on\n"
"stream. count = recvbuf's element count. sendbuf is used (and resolved) only on root, where its\n"
"element count must be a whole multiple of nranks with recvbuf holding exactly one block.\n"
"In place when recvbuf is at sendbuf + root * count.");
static PyObject *scatter_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(&M_scatter, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = "scatter";
    int nranks, root, is_root;
    nx_buffer s = {NULL, 0, ncclInt8, NX_DEVICE_HOST, 0, 0, NULL}, r;
    if (comm_intake(&in, k, fname, a[4]) < 0 || nx_comm_nranks(in.st, in.c, fname, &nranks) < 0 ||
        root_arg(in.st, in.c, a[2], fname, &root, &is_root) < 0 || pair_intake(&in, a[0], a[1], is_root, 1, &s, &r) < 0)
        return NULL;
    nx_state *st = in.st;
    if (is_root) {
        size_t block, sz = nx_dtype_size(s.dtype);
        if (per_rank_blocks(st, &s, nranks, &block) < 0)
            return NULL;
        if (r.count != block)
            return exactly(st, "recvbuf", block, "sendcount / nranks", r.count);
        if (r.ptr != elem_at(s.ptr, mul_sat((size_t)root, block), sz) &&
            overlaps(s.ptr, s.count * sz, r.ptr, block * sz))
            return overlap_error(st, fname);
    }
    cudaStream_t stream;
    if (stream_arg(st, a[3], &stream) < 0 || coll_ready(&in) < 0)
        return NULL;
    ncclComm_t comm = in.comm;
    if (in.configured) {
        nx_coll_call call = {NX_COLL_SCATTER, s.ptr, r.ptr, r.count, r.dtype, 0, root, comm, stream};
        return with_config(&in, &call);
    }
    if (nx_require(st, &nx_api.ncclScatter) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm =
        trace_enter(&in, nx_trace_coll(NX_T_SCATTER, NX_TF_ROOT, s.ptr, r.ptr, r.count, r.dtype, 0, root, stream));
    NX_RUN(rc, nx_api.ncclScatter(s.ptr, r.ptr, r.count, r.dtype, root, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

NX_MSIG(alltoall, 2, 2, "sendbuf", "recvbuf", "stream", "config");
PyDoc_STRVAR(alltoall__doc__, "alltoall($self, sendbuf, recvbuf, *, stream=None, config=None)\n--\n\n"
"Block j of sendbuf goes to rank j, landing as block i (this rank) of its recvbuf\n"
"(ncclAlltoAll; RCCL's ncclAllToAll where only that exists). Collective; enqueued on stream.\n"
"count = sendbuf's element count / nranks per peer (a whole multiple, at least 1); recvbuf needs\n"
"at least nranks * count elements. Identical pointers are passed through unchanged.");
static PyObject *alltoall_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[4];
    if (nx_margs(&M_alltoall, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = "alltoall";
    int nranks;
    nx_buffer s, r;
    if (comm_intake(&in, k, fname, a[3]) < 0 || nx_comm_nranks(in.st, in.c, fname, &nranks) < 0 ||
        pair_intake(&in, a[0], a[1], 1, 1, &s, &r) < 0)
        return NULL;
    nx_state *st = in.st;
    size_t count, sz = nx_dtype_size(s.dtype);
    if (per_rank_blocks(st, &s, nranks, &count) < 0)
        return NULL;
    if (r.count < s.count)
        return at_least(st, "recvbuf", s.count, "nranks * count", r.count);
    if (s.ptr != r.ptr && overlaps(s.ptr, s.count * sz, r.ptr, s.count * sz))
        return overlap_error(st, fname);
    cudaStream_t stream;
    if (stream_arg(st, a[2], &stream) < 0 || coll_ready(&in) < 0)
        return NULL;
    ncclComm_t comm = in.comm;
    if (in.configured) {
        nx_coll_call call = {NX_COLL_ALLTOALL, s.ptr, r.ptr, count, s.dtype, 0, -1, comm, stream};
        return with_config(&in, &call);
    }
    if (nx_require(st, &nx_api.ncclAlltoAll) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = trace_enter(&in, nx_trace_coll(NX_T_ALLTOALL, 0, s.ptr, r.ptr, count, s.dtype, 0, -1, stream));
    NX_RUN(rc, nx_api.ncclAlltoAll(s.ptr, r.ptr, count, s.dtype, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

/* ---- point-to-point and one-sided ---- */

static PyObject *p2p(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const nx_msig *sig,
                     int is_recv)
{
    PyObject *a[3];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    int peer;
    nx_buffer b;
    cudaStream_t stream;
    if (comm_intake(&in, k, sig->fname, NULL) < 0 || buffer_arg(k, a[0], sig->names[0], is_recv, &b) < 0 ||
        rank_arg(in.st, in.c, a[1], sig->fname, "peer", &peer) < 0 || stream_arg(in.st, a[2], &stream) < 0 ||
        coll_ready(&in) < 0)
        return NULL;
    nx_state *st = in.st;
    ncclComm_t comm = in.comm;
    ncclResult_t rc;
    if (nx_require(st, is_recv ? (const void *)&nx_api.ncclRecv : (const void *)&nx_api.ncclSend) < 0)
        return NULL;
    nx_trace_mark tm = trace_enter(&in, nx_trace_coll(is_recv ? NX_T_RECV : NX_T_SEND, NX_TF_PEER, is_recv ? NULL : b.ptr,
                                                      is_recv ? b.ptr : NULL, b.count, b.dtype, 0, peer, stream));
    if (is_recv)
        NX_RUN(rc, nx_api.ncclRecv(b.ptr, b.count, b.dtype, peer, comm, stream));
    else
        NX_RUN(rc, nx_api.ncclSend(b.ptr, b.count, b.dtype, peer, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

NX_MSIG(send, 2, 2, "sendbuf", "peer", "stream");
PyDoc_STRVAR(send__doc__, "send($self, sendbuf, peer, *, stream=None)\n--\n\n"
"Send all of sendbuf (count and dtype from the buffer) to peer (ncclSend). Pair it with peer's\n"
"recv, inside a group when ranks exchange both ways. Enqueued on stream.");
static PyObject *send_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return p2p(k, args, nargs, kwnames, &M_send, 0);
}

NX_MSIG(recv, 2, 2, "recvbuf", "peer", "stream");
PyDoc_STRVAR(recv__doc__, "recv($self, recvbuf, peer, *, stream=None)\n--\n\n"
"Receive from peer into all of recvbuf (ncclRecv); recvbuf must be writable. Enqueued on stream.");
static PyObject *recv_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return p2p(k, args, nargs, kwnames, &M_recv, 1);
}

NX_MSIG(signal, 4, 1, "peer", "signal_index", "context", "flags", "stream");
PyDoc_STRVAR(signal__doc__, "signal($self, peer, signal_index=0, context=0, flags=0, *, stream=None)\n--\n\n"
"Raise signal signal_index on peer (ncclSignal). NCCL requires index, context and flags to be 0\n"
"for now and checks it. Enqueued on stream.");
static PyObject *signal_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(&M_signal, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    int peer, idx = 0, ctx = 0;
    unsigned int flags = 0;
    cudaStream_t stream;
    if (comm_intake(&in, k, "signal", NULL) < 0 || nx_int(a[0], "signal", "peer", &peer) < 0 ||
        (a[1] && nx_int(a[1], "signal", "signal_index", &idx) < 0) ||
        (a[2] && nx_int(a[2], "signal", "context", &ctx) < 0) ||
        (a[3] && nx_uint(a[3], "signal", "flags", &flags) < 0) || stream_arg(in.st, a[4], &stream) < 0 ||
        coll_ready(&in) < 0)
        return NULL;
    if (nx_require(in.st, &nx_api.ncclSignal) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = trace_enter(&in, (nx_trace_call){.op = NX_T_SIGNAL, .flags = NX_TF_PEER | NX_TF_STREAM,
                                                        .rank = peer, .stream = (uintptr_t)stream});
    NX_RUN(rc, nx_api.ncclSignal(peer, idx, ctx, flags, in.comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(in.st, rc, in.comm);
}

/* One descriptor: a bindings WaitSignalDesc struct, or anything with the core dataclass's fields
 * (peer, op_count, signal_index, context). */
static int wait_desc(nx_state *st, PyObject *o, ncclWaitSignalDesc_t *out)
{
    const ncclWaitSignalDesc_t *raw = nx_struct_storage(st, o, NX_STRUCT_WAIT_SIGNAL_DESC);
    if (raw != NULL) {
        *out = *raw;
        return 0;
    }
    static const char *const fields[4] = {"peer", "op_count", "signal_index", "context"};
    int *dst[4] = {&out->peer, &out->opCnt, &out->sigIdx, &out->ctx};
    for (int k = 0; k < 4; k++) {
        PyObject *v = PyObject_GetAttrString(o, fields[k]);
        if (v == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
            nx_invalid(st, "descs must be WaitSignalDesc objects or a sequence of them, got %s", Py_TYPE(o)->tp_name);
            return -1;
        }
        int r = nx_int(v, "wait_signal", fields[k], dst[k]);
        Py_DECREF(v);
        if (r < 0)
            return -1;
    }
    return 0;
}

NX_MSIG(wait_signal, 1, 1, "descs", "stream");
PyDoc_STRVAR(wait_signal__doc__, "wait_signal($self, descs, *, stream=None)\n--\n\n"
"Wait for the signals described by descs, a WaitSignalDesc or a list/tuple of them, packed into\n"
"one contiguous ncclWaitSignalDesc_t array (ncclWaitSignal). Enqueued on stream.");
static PyObject *wait_signal_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[2];
    if (nx_margs(&M_wait_signal, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    PyObject *result = NULL;
    ncclWaitSignalDesc_t *descs = NULL;
    cudaStream_t stream;
    if (comm_intake(&in, k, "wait_signal", NULL) < 0)
        return NULL;
    nx_state *st = in.st;
    /* a snapshot of a list: a descriptor's property may change the caller's list (docs/architecture.md) */
    PyObject *items = PyList_Check(a[0]) || PyTuple_Check(a[0]) ? nx_seq_snapshot(a[0]) : PyTuple_Pack(1, a[0]);
    if (items == NULL)
        goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    if (n > INT_MAX) {
        nx_invalid(st, "descs is too long");
        goto done;
    }
    if ((descs = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *descs)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (wait_desc(st, PyTuple_GET_ITEM(items, i), &descs[i]) < 0)
            goto done;
    if (stream_arg(st, a[1], &stream) < 0 || coll_ready(&in) < 0)
        goto done;
    if (nx_require(st, &nx_api.ncclWaitSignal) < 0)
        goto done;
    ncclComm_t comm = in.comm;
    ncclResult_t rc;
    nx_trace_mark tm = trace_enter(&in, (nx_trace_call){.op = NX_T_WAIT_SIGNAL, .flags = NX_TF_COUNT | NX_TF_STREAM,
                                                        .count = (uint64_t)n, .stream = (uintptr_t)stream});
    NX_RUN(rc, nx_api.ncclWaitSignal((int)n, descs, comm, stream));
    nx_trace_leave(tm, rc);
    result = nx_none_or_error(st, rc, comm);
done:
    Py_XDECREF(items);
    PyMem_Free(descs);
    return result;
}

NX_MSIG(put_signal, 7, 3, "local_buffer", "peer", "peer_window", "peer_window_offset", "signal_index", "context",
        "flags", "stream");
PyDoc_STRVAR(put_signal__doc__,
"put_signal($self, local_buffer, peer, peer_window, peer_window_offset=0, signal_index=0, context=0, flags=0, *, "
"stream=None)\n--\n\n"
"Write local_buffer into peer's registered window at peer_window_offset (in elements of\n"
"local_buffer's dtype, converted to bytes) and raise a signal there (ncclPutSignal).\n"
"peer_window is a RegisteredWindowHandle; its handle is passed as peerWin. Enqueued on stream.");
static PyObject *put_signal_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[8];
    if (nx_margs(&M_put_signal, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = "put_signal";
    int peer, idx = 0, ctx = 0;
    unsigned int flags = 0;
    size_t offset = 0;
    nx_buffer b;
    cudaStream_t stream;
    if (comm_intake(&in, k, fname, NULL) < 0 || buffer_arg(k, a[0], "local_buffer", 0, &b) < 0 ||
        nx_int(a[1], fname, "peer", &peer) < 0)
        return NULL;
    nx_state *st = in.st;
    if (!PyObject_TypeCheck(a[2], nx_types_of(st)->core[NX_TYPE_REGISTERED_WINDOW]))
        return nx_invalid(st, "peer_window must be a RegisteredWindowHandle, got %s", Py_TYPE(a[2])->tp_name);
    if ((a[3] && nx_size(a[3], fname, "peer_window_offset", &offset) < 0) ||
        (a[4] && nx_int(a[4], fname, "signal_index", &idx) < 0) || (a[5] && nx_int(a[5], fname, "context", &ctx) < 0) ||
        (a[6] && nx_uint(a[6], fname, "flags", &flags) < 0) || stream_arg(st, a[7], &stream) < 0)
        return NULL;
    size_t bytes = mul_sat(offset, nx_dtype_size(b.dtype));
    if (bytes == SIZE_MAX)
        return nx_invalid(st, "peer_window_offset %zu elements overflows a byte offset", offset);
    if (coll_ready(&in) < 0)
        return NULL;
    /* read with the communicator's handle, after every callback: one of them may have closed it */
    ncclWindow_t win = nx_window_handle(a[2]);
    if (win == NULL)
        return nx_raise_null_handle("peer_window has no window handle (it is closed, or its registration is pending)");
    if (nx_require(st, &nx_api.ncclPutSignal) < 0)
        return NULL;
    ncclComm_t comm = in.comm;
    ncclResult_t rc;
    nx_trace_mark tm =
        trace_enter(&in, nx_trace_coll(NX_T_PUT_SIGNAL, NX_TF_PEER, b.ptr, NULL, b.count, b.dtype, 0, peer, stream));
    NX_RUN(rc, nx_api.ncclPutSignal(b.ptr, b.count, b.dtype, peer, win, bytes, idx, ctx, flags, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

/* ---- RCCL-only ---- */

NX_MSIG(allreduce_with_bias, 4, 4, "sendbuf", "recvbuf", "bias", "op", "stream");
PyDoc_STRVAR(allreduce_with_bias__doc__, "allreduce_with_bias($self, sendbuf, recvbuf, bias, op, *, stream=None)\n--\n\n"
"RCCL only: allreduce of sendbuf with op into recvbuf, with bias (count elements of the same\n"
"dtype) added into the result (ncclAllReduceWithBias). Collective; enqueued on stream. count =\n"
"sendbuf's element count; recvbuf and bias need at least count elements. In place when recvbuf\n"
"is sendbuf. FunctionNotFoundError on libraries without it.");
static PyObject *allreduce_with_bias_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(&M_allreduce_with_bias, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = "allreduce_with_bias";
    nx_buffer s, r, bias;
    if (comm_intake(&in, k, fname, NULL) < 0 || pair_intake(&in, a[0], a[1], 1, 1, &s, &r) < 0 ||
        buffer_arg(k, a[2], "bias", 0, &bias) < 0)
        return NULL;
    nx_state *st = in.st;
    if (bias.dtype != s.dtype || bias.logical != s.logical)
        return dtype_mismatch(st, "sendbuf", &s, "bias", &bias);
    if (r.count < s.count)
        return at_least(st, "recvbuf", s.count, NULL, r.count);
    if (bias.count < s.count)
        return at_least(st, "bias", s.count, NULL, bias.count);
    size_t bytes = s.count * nx_dtype_size(s.dtype);
    if (s.ptr != r.ptr && overlaps(s.ptr, bytes, r.ptr, bytes))
        return overlap_error(st, fname);
    if (overlaps(bias.ptr, bytes, r.ptr, bytes))
        return nx_invalid(st, "bias and recvbuf overlap");
    ncclRedOp_t op;
    cudaStream_t stream;
    if (stream_arg(st, a[4], &stream) < 0 || op_arg(st, in.c, a[3], &s, fname, &op) < 0 || coll_ready(&in) < 0)
        return NULL;
    if (nx_require(st, &nx_api.ncclAllReduceWithBias) < 0)
        return NULL;
    ncclComm_t comm = in.comm;
    ncclResult_t rc;
    nx_trace_mark tm = trace_enter(
        &in, nx_trace_coll(NX_T_ALLREDUCE_BIAS, NX_TF_REDOP, s.ptr, r.ptr, s.count, s.dtype, op, -1, stream));
    NX_RUN(rc, nx_api.ncclAllReduceWithBias(s.ptr, r.ptr, s.count, s.dtype, op, comm, stream, bias.ptr));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

/* One per-peer sequence of alltoallv into out[nranks]: a list/tuple (or other sequence) of ints. */
static int peer_sizes(nx_state *st, PyObject *o, const char *name, int nranks, size_t *out)
{
    PyObject *seq = nx_seq_snapshot(o); /* owned: an entry's __index__ may change the caller's list */
    if (seq == NULL) {
        PyErr_Clear();
        nx_invalid(st, "%s must be a sequence of %d ints (one per rank), got %s", name, nranks, Py_TYPE(o)->tp_name);
        return -1;
    }
    int r = 0;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n != nranks) {
        nx_invalid(st, "%s must have nranks (%d) entries, got %zd", name, nranks, n);
        r = -1;
    }
    for (Py_ssize_t i = 0; r == 0 && i < n; i++)
        r = nx_size(PyTuple_GET_ITEM(seq, i), "alltoallv", name, &out[i]);
    Py_DECREF(seq);
    return r;
}

/* The extent, in elements, that counts/displs address: max(displs[j] + counts[j]) over nonempty j. */
static size_t extent(const size_t *counts, const size_t *displs, int n)
{
    size_t end = 0;
    for (int j = 0; j < n; j++) {
        size_t e;
        if (counts[j] == 0)
            continue;
        if (__builtin_add_overflow(counts[j], displs[j], &e))
            return SIZE_MAX;
        if (e > end)
            end = e;
    }
    return end;
}

NX_MSIG(alltoallv, 6, 6, "sendbuf", "recvbuf", "sendcounts", "sdispls", "recvcounts", "rdispls", "stream");
PyDoc_STRVAR(alltoallv__doc__,
"alltoallv($self, sendbuf, recvbuf, sendcounts, sdispls, recvcounts, rdispls, *, stream=None)\n--\n\n"
"RCCL only: rank j receives sendcounts[j] elements from sendbuf + sdispls[j]; rank i's data lands\n"
"at recvbuf + rdispls[i], recvcounts[i] elements (ncclAlltoAllv, or the older ncclAllToAllv).\n"
"The four arguments are sequences of nranks ints, in elements (not bytes). Collective; enqueued\n"
"on stream. Both buffers must cover every range they address; they must not overlap.");
static PyObject *alltoallv_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[7];
    if (nx_margs(&M_alltoallv, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = "alltoallv";
    PyObject *result = NULL;
    size_t *arr = NULL;
    int nranks;
    nx_buffer s, r;
    if (comm_intake(&in, k, fname, NULL) < 0 || nx_comm_nranks(in.st, in.c, fname, &nranks) < 0 ||
        pair_intake(&in, a[0], a[1], 1, 1, &s, &r) < 0)
        return NULL;
    nx_state *st = in.st;
    if ((arr = PyMem_Calloc(4 * (size_t)nranks, sizeof *arr)) == NULL)
        return PyErr_NoMemory();
    size_t *sc = arr, *sd = arr + nranks, *rc_ = arr + 2 * (size_t)nranks, *rd = arr + 3 * (size_t)nranks;
    if (peer_sizes(st, a[2], "sendcounts", nranks, sc) < 0 || peer_sizes(st, a[3], "sdispls", nranks, sd) < 0 ||
        peer_sizes(st, a[4], "recvcounts", nranks, rc_) < 0 || peer_sizes(st, a[5], "rdispls", nranks, rd) < 0)
        goto done;
    size_t sneed = extent(sc, sd, nranks), rneed = extent(rc_, rd, nranks), sz = nx_dtype_size(s.dtype);
    if (s.count < sneed) {
        at_least(st, "sendbuf", sneed, "max of sdispls + sendcounts", s.count);
        goto done;
    }
    if (r.count < rneed) {
        at_least(st, "recvbuf", rneed, "max of rdispls + recvcounts", r.count);
        goto done;
    }
    if (overlaps(s.ptr, sneed * sz, r.ptr, rneed * sz)) {
        overlap_error(st, fname);
        goto done;
    }
    cudaStream_t stream;
    if (stream_arg(st, a[6], &stream) < 0 || coll_ready(&in) < 0)
        goto done;
    if (nx_require(st, &nx_api.ncclAlltoAllv) < 0)
        goto done;
    ncclComm_t comm = in.comm;
    ncclResult_t rc;
    nx_trace_mark tm =
        trace_enter(&in, nx_trace_coll(NX_T_ALLTOALLV, 0, s.ptr, r.ptr, s.count, s.dtype, 0, -1, stream));
    NX_RUN(rc, nx_api.ncclAlltoAllv(s.ptr, sc, sd, r.ptr, rc_, rd, s.dtype, comm, stream));
    nx_trace_leave(tm, rc);
    result = nx_none_or_error(st, rc, comm);
done:
    PyMem_Free(arr);
    return result;
}

/* The methods: each runs its body as one call (nx_comm_call, core.h). */
static PyObject *Communicator_allreduce(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(allreduce_body, NX_COMM_METHOD_PASS);
}
static PyObject *Communicator_reduce(NX_COMM_METHOD_ARGS) { return nx_comm_call(reduce_body, NX_COMM_METHOD_PASS); }
static PyObject *Communicator_broadcast(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(broadcast_body, NX_COMM_METHOD_PASS);
}
static PyObject *Communicator_allgather(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(allgather_body, NX_COMM_METHOD_PASS);
}
static PyObject *Communicator_gather(NX_COMM_METHOD_ARGS) { return nx_comm_call(gather_body, NX_COMM_METHOD_PASS); }
static PyObject *Communicator_reduce_scatter(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(reduce_scatter_body, NX_COMM_METHOD_PASS);
}
static PyObject *Communicator_alltoall(NX_COMM_METHOD_ARGS) { return nx_comm_call(alltoall_body, NX_COMM_METHOD_PASS); }
static PyObject *Communicator_scatter(NX_COMM_METHOD_ARGS) { return nx_comm_call(scatter_body, NX_COMM_METHOD_PASS); }
static PyObject *Communicator_send(NX_COMM_METHOD_ARGS) { return nx_comm_call(send_body, NX_COMM_METHOD_PASS); }
static PyObject *Communicator_recv(NX_COMM_METHOD_ARGS) { return nx_comm_call(recv_body, NX_COMM_METHOD_PASS); }
static PyObject *Communicator_signal(NX_COMM_METHOD_ARGS) { return nx_comm_call(signal_body, NX_COMM_METHOD_PASS); }
static PyObject *Communicator_wait_signal(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(wait_signal_body, NX_COMM_METHOD_PASS);
}
static PyObject *Communicator_put_signal(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(put_signal_body, NX_COMM_METHOD_PASS);
}
static PyObject *Communicator_allreduce_with_bias(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(allreduce_with_bias_body, NX_COMM_METHOD_PASS);
}
static PyObject *Communicator_alltoallv(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(alltoallv_body, NX_COMM_METHOD_PASS);
}

#define METHOD(name) NX_COMM_METHOD_DEF(#name, Communicator_##name, name##__doc__)

PyMethodDef nx_collective_methods[] = {
    METHOD(allreduce),
    METHOD(reduce),
    METHOD(broadcast),
    METHOD(allgather),
    METHOD(gather),
    METHOD(reduce_scatter),
    METHOD(alltoall),
    METHOD(scatter),
    METHOD(send),
    METHOD(recv),
    METHOD(signal),
    METHOD(wait_signal),
    METHOD(put_signal),
    METHOD(allreduce_with_bias),
    METHOD(alltoallv),
    {NULL, NULL, 0, NULL},
};
