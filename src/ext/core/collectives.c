/* Collective and point-to-point methods of Communicator (docs/compatibility.md#collectives), plus the
 * RCCL-only allreduce_with_bias and alltoallv. Their signatures, docstrings and method table are
 * generated from tools/nccl_surface.py (core/collectives.gen.h, included at the end): the eight
 * collectives with a config= twin run one body here (coll_method), each with the descriptor the
 * description gives it; the others run the *_impl functions written here.
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

static inline PyObject *with_config(const coll_in *in, const nx_coll_call *call)
{
    return nx_coll_config_run(in->st, call, &in->config, nx_comm_trace(in->c, in->comm));
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


/* ---- the collectives: one body, the descriptor of each (tools/nccl_surface.py's COLLECTIVES) ---- */

/* Where the buffers are used: both on every rank, recvbuf only on root (reduce, gather), sendbuf only
 * on root (broadcast, scatter). */
typedef enum { NX_ROOTED_NONE, NX_ROOTED_RECV, NX_ROOTED_SEND } nx_rooted;
/* What recvbuf must hold, in elements: sendbuf's count, one block of it, or nranks times it. */
typedef enum { NX_SIZE_SEND, NX_SIZE_BLOCK, NX_SIZE_ALL } nx_recv_size;
/* The in-place call: recvbuf is sendbuf, recvbuf is block i of sendbuf, or sendbuf is block i of
 * recvbuf (i: root for a rooted call, else this rank). */
typedef enum { NX_IN_PLACE_SAME, NX_IN_PLACE_RECV_IN_SEND, NX_IN_PLACE_SEND_IN_RECV } nx_in_place;

/* A collective method's descriptor (collectives.gen.h writes one per method; docs/api/collectives.md
 * says the same in words). */
typedef struct {
    nx_coll_kind kind;
    nx_coll_kind unrooted;  /* what root=None runs; kind itself when root is required */
    int reduction;          /* takes op */
    nx_rooted rooted;
    int count_from_recv;    /* the count is recvbuf's (else sendbuf's, or one block of it) */
    int blocks;             /* sendbuf splits into nranks whole blocks of at least one element */
    int recv_exactly;       /* recvbuf must hold exactly (else at least) recv_size elements */
    nx_recv_size recv_size;
    const char *why;        /* the rule in the message's words, or NULL */
    nx_in_place in_place;
} nx_coll_desc;

static const nx_buffer no_buffer = {NULL, 0, ncclInt8, NX_DEVICE_HOST, 0, 0, NULL};

/* The arguments in the order sendbuf, recvbuf, [op], [root], stream, config: the common calls
 * (positional, and positional with config=) without a walk over the parameter names. */
static inline int coll_args(const nx_msig *sig, int n, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                            PyObject **a)
{
    int plain = kwnames == NULL;
    if (!plain && nargs >= sig->nrequired && PyTuple_GET_SIZE(kwnames) == 1 &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "config") == 0)
        plain = 2; /* nccl4py 0.6.0's allreduce(x, y, op, config=...) */
    if (NX_LIKELY(plain) && nargs >= sig->nrequired && nargs <= sig->npos) {
        for (int i = 0; i < n; i++)
            a[i] = i < nargs ? args[i] : NULL;
        if (plain == 2)
            a[n - 1] = args[nargs];
        return 0;
    }
    return nx_margs(sig, args, nargs, kwnames, a);
}

/* The buffer rules where both buffers are used: the blocks, recvbuf's count, the in-place layout
 * or no overlap. *block is one block of sendbuf (with d->blocks). 0, or -1 with NcclInvalid. */
static inline int coll_check(const coll_in *in, const nx_coll_desc *d, const nx_buffer *s, const nx_buffer *r,
                             int nranks, int index, size_t *block)
{
    nx_state *st = in->st;
    size_t unit = s->count; /* the elements of block `index`, for the in-place layout */
    if (d->blocks) {
        if (per_rank_blocks(st, s, nranks, block) < 0)
            return -1;
        unit = *block;
    }
    size_t need = d->recv_size == NX_SIZE_SEND    ? s->count
                  : d->recv_size == NX_SIZE_BLOCK ? *block
                                                  : mul_sat((size_t)nranks, s->count);
    if (NX_UNLIKELY(d->recv_exactly ? r->count != need : r->count < need)) {
        if (d->recv_exactly)
            exactly(st, "recvbuf", need, d->why, r->count);
        else
            at_least(st, "recvbuf", need, d->why, r->count);
        return -1;
    }
    size_t sz = nx_dtype_size(s->dtype), at = mul_sat((size_t)index, unit);
    int in_place = d->in_place == NX_IN_PLACE_SAME           ? s->ptr == r->ptr
                   : d->in_place == NX_IN_PLACE_RECV_IN_SEND ? r->ptr == elem_at(s->ptr, at, sz)
                                                             : s->ptr == elem_at(r->ptr, at, sz);
    if (NX_UNLIKELY(!in_place && overlaps(s->ptr, mul_sat(s->count, sz), r->ptr, mul_sat(need, sz)))) {
        overlap_error(st, in->fname);
        return -1;
    }
    return 0;
}

/* The plain call (no config=): the entry point, the flight recorder's entry, the call with the
 * GIL released, its status (the per-kind parts are generated: core/coll_kinds.gen.h). Inlined
 * into each method, where the kind is a constant and the generated switches fold to its one case
 * (out of line, it cost 56 more instructions a call: benchmarks/callgrind_calls.py). */
static inline __attribute__((always_inline)) PyObject *coll_plain(const coll_in *in, const nx_coll_call *call)
{
    if (NX_UNLIKELY(nx_require(in->st, nx_coll_plain_slot(call->kind)) < 0))
        return NULL;
    nx_trace_call tc = nx_coll_trace_call(call->kind, call);
    nx_trace_mark tm = nx_trace_enter(nx_comm_trace(in->c, in->comm), &tc);
    ncclResult_t rc = nx_coll_run(call->kind, call, NULL);
    nx_trace_leave(tm, rc);
    return nx_none_or_error(in->st, rc, in->comm);
}

/* A collective method with descriptor d. Inlined into each method with its constant descriptor, so
 * each keeps only the steps its collective has, in the order of this file's header. */
static inline __attribute__((always_inline)) PyObject *coll_method(nx_call *k, const nx_msig *sig,
                                                                  const nx_coll_desc *d, PyObject *const *args,
                                                                  Py_ssize_t nargs, PyObject *kwnames)
{
    const int n = 4 + d->reduction + (d->rooted != NX_ROOTED_NONE);
    PyObject *a[6];
    if (NX_UNLIKELY(coll_args(sig, n, args, nargs, kwnames, a) < 0))
        return NULL;
    PyObject *opo = d->reduction ? a[2] : NULL, *rooto = d->rooted != NX_ROOTED_NONE ? a[2 + d->reduction] : NULL;
    coll_in in;
    if (NX_UNLIKELY(comm_intake(&in, k, sig->fname, a[n - 1]) < 0))
        return NULL;
    nx_state *st = in.st;
    int has_root = d->rooted != NX_ROOTED_NONE && (d->unrooted == d->kind || (rooto != NULL && rooto != Py_None));
    int nranks = 1, rank = 0, root = -1, is_root = 1;
    if ((d->blocks || d->recv_size == NX_SIZE_ALL) && nx_comm_nranks(st, in.c, sig->fname, &nranks) < 0)
        return NULL;
    if (d->in_place != NX_IN_PLACE_SAME && !has_root && nx_comm_rank(st, in.c, sig->fname, &rank) < 0)
        return NULL;
    if (has_root && root_arg(st, in.c, rooto, sig->fname, &root, &is_root) < 0)
        return NULL;
    int send_here = d->rooted != NX_ROOTED_SEND || is_root, recv_here = d->rooted != NX_ROOTED_RECV || is_root;
    nx_buffer s = no_buffer, r = no_buffer;
    size_t block = 0;
    if (NX_UNLIKELY(pair_intake(&in, a[0], a[1], send_here, recv_here, &s, &r) < 0) ||
        (send_here && recv_here && NX_UNLIKELY(coll_check(&in, d, &s, &r, nranks, has_root ? root : rank, &block) < 0)))
        return NULL;
    ncclRedOp_t op = ncclSum;
    cudaStream_t stream;
    if (NX_UNLIKELY(stream_arg(st, a[n - 2], &stream) < 0) ||
        (d->reduction && NX_UNLIKELY(op_arg(st, in.c, opo, &s, sig->fname, &op) < 0)) ||
        NX_UNLIKELY(coll_ready(&in) < 0))
        return NULL;
    const nx_buffer *counted = d->count_from_recv ? &r : &s;
    nx_coll_call call = {has_root || d->rooted == NX_ROOTED_NONE ? d->kind : d->unrooted, s.ptr, r.ptr,
                         d->blocks && !d->count_from_recv ? block : counted->count, counted->dtype, op,
                         has_root ? root : -1, in.comm, stream};
    if (in.configured)
        return with_config(&in, &call);
    return coll_plain(&in, &call);
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

static PyObject *send_impl(nx_call *k, const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    return p2p(k, args, nargs, kwnames, sig, 0);
}

static PyObject *recv_impl(nx_call *k, const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    return p2p(k, args, nargs, kwnames, sig, 1);
}

static PyObject *signal_impl(nx_call *k, const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = sig->fname;
    int peer, idx = 0, ctx = 0;
    unsigned int flags = 0;
    cudaStream_t stream;
    if (comm_intake(&in, k, fname, NULL) < 0 || rank_arg(in.st, in.c, a[0], fname, "peer", &peer) < 0 ||
        (a[1] && nx_int(a[1], fname, "signal_index", &idx) < 0) || (a[2] && nx_int(a[2], fname, "context", &ctx) < 0) ||
        (a[3] && nx_uint(a[3], fname, "flags", &flags) < 0) || stream_arg(in.st, a[4], &stream) < 0 ||
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

static PyObject *wait_signal_impl(nx_call *k, const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames)
{
    PyObject *a[2];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    PyObject *result = NULL;
    ncclWaitSignalDesc_t *descs = NULL;
    cudaStream_t stream;
    if (comm_intake(&in, k, sig->fname, NULL) < 0)
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

static PyObject *put_signal_impl(nx_call *k, const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    PyObject *a[8];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = sig->fname;
    int peer, idx = 0, ctx = 0;
    unsigned int flags = 0;
    size_t offset = 0;
    nx_buffer b;
    cudaStream_t stream;
    if (comm_intake(&in, k, fname, NULL) < 0 || buffer_arg(k, a[0], "local_buffer", 0, &b) < 0 ||
        rank_arg(in.st, in.c, a[1], fname, "peer", &peer) < 0)
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

static PyObject *allreduce_with_bias_impl(nx_call *k, const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs,
                                          PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = sig->fname;
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

static PyObject *alltoallv_impl(nx_call *k, const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    PyObject *a[7];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    coll_in in;
    const char *fname = sig->fname;
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
    size_t *sendcounts = arr, *sdispls = arr + nranks, *recvcounts = arr + 2 * (size_t)nranks;
    size_t *rdispls = arr + 3 * (size_t)nranks;
    if (peer_sizes(st, a[2], "sendcounts", nranks, sendcounts) < 0 ||
        peer_sizes(st, a[3], "sdispls", nranks, sdispls) < 0 ||
        peer_sizes(st, a[4], "recvcounts", nranks, recvcounts) < 0 ||
        peer_sizes(st, a[5], "rdispls", nranks, rdispls) < 0)
        goto done;
    size_t sneed = extent(sendcounts, sdispls, nranks), rneed = extent(recvcounts, rdispls, nranks);
    size_t sz = nx_dtype_size(s.dtype);
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
    NX_RUN(rc, nx_api.ncclAlltoAllv(s.ptr, sendcounts, sdispls, r.ptr, recvcounts, rdispls, s.dtype, comm, stream));
    nx_trace_leave(tm, rc);
    result = nx_none_or_error(st, rc, comm);
done:
    PyMem_Free(arr);
    return result;
}

/* The methods' signatures, docstrings and bodies, and the method table. */
#include "core/collectives.gen.h"
