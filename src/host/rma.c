/* One-sided operations: ncclPutSignal, ncclSignal, ncclWaitSignal
 * (docs/host-backend.md#windows-and-one-sided-operations).
 *
 * Signals: the segment holds one counter per ordered pair (host_seg_signal), written only by the
 * sender: a put copies its data into the peer's part of the window (mapped in this process by
 * window.c), then increments the counter with release order and rings the peer's doorbell; a
 * signal only increments. ncclWaitSignal consumes signals as NCCL does: each descriptor asks for
 * opCnt more signals from its peer than earlier waits of this rank consumed, so the wait is done
 * once every such counter, loaded with acquire order, reached its target; the data of the puts it
 * counted is then visible. As in NCCL 2.32, sigIdx, ctx and flags must be 0.
 *
 * These ops run in the OPS task's progress loop (worker.c), alongside collectives and p2p, and in
 * program order among themselves: a put or signal never waits, a wait holds the ops after it.
 * A wait sleeps on the rank's doorbell like every other wait: the deadline, abort and a peer's
 * death or departure (ncclRemoteError naming the first cause) end it; a put or signal towards a
 * peer that is gone fails the same way. */
#include <stdlib.h>
#include <string.h>

#include "nccl_host.h"

static ncclResult_t check_zero(const host_opd *op, int sigIdx, int ctx, unsigned flags)
{
    if (sigIdx != 0)
        return host_fail(ncclInvalidArgument, "%s: sigIdx %d: only signal index 0 is supported", op->name, sigIdx);
    if (ctx != 0)
        return host_fail(ncclInvalidArgument, "%s: ctx %d: only context 0 is supported", op->name, ctx);
    if (flags != 0)
        return host_fail(ncclInvalidArgument, "%s: flags 0x%x: no flags are defined", op->name, flags);
    return ncclSuccess;
}

/* A put's window and bounds, on the calling thread and again when it runs. */
static ncclResult_t put_target(host_comm *c, const host_opd *op, unsigned char **dst)
{
    size_t es = host_type_size(op->datatype), bytes;
    host_win *w = host_win_find(c, op->win);
    const host_win_part *p;
    if (w == NULL)
        return host_fail(ncclInvalidArgument, "%s: peerWin %p is not a registered window of this communicator "
                         "(another communicator's, deregistered, or not a window)", op->name, (void *)op->win);
    p = &w->part[op->peer];
    if (__builtin_mul_overflow(op->count, es, &bytes))
        return host_fail(ncclInvalidArgument, "%s: count %zu x %zu bytes overflows size_t", op->name, op->count, es);
    if (op->offset > p->size || bytes > p->size - op->offset)
        return host_fail(ncclInvalidArgument, "%s: peerWinOffset %zu + %zu bytes is beyond the %zu bytes rank %d "
                         "registered in the window", op->name, op->offset, bytes, p->size, op->peer);
    if (bytes > 0 && op->sendbuff == NULL)
        return host_fail(ncclInvalidArgument, "%s: localbuff is NULL", op->name);
    if (bytes > 0 && p->base == NULL)
        return host_fail(ncclInvalidUsage, "%s: rank %d's part of the window is not ncclMemAlloc memory, so this "
                         "process cannot map it: register a buffer from ncclMemAlloc (nccl.core.mem_alloc) for "
                         "one-sided puts", op->name, op->peer);
    *dst = p->base == NULL ? NULL : p->base + op->offset;
    return ncclSuccess;
}

ncclResult_t host_rma_validate(host_comm *c, host_opd *op)
{
    unsigned char *dst;
    ncclResult_t rc;
    int n = c->nranks;
    switch (op->kind) {
    case HOST_K_WIN_REGISTER:
        if (op->winp == NULL)
            return host_fail(ncclInvalidArgument, "%s: win is NULL", op->name);
        if (op->recvbuff == NULL && op->count > 0)
            return host_fail(ncclInvalidArgument, "%s: buff is NULL", op->name);
        return ncclSuccess;
    case HOST_K_WIN_DEREGISTER:
        pthread_mutex_lock(&c->lock);
        rc = host_win_find(c, op->win) != NULL ? ncclSuccess :
             host_fail(ncclInvalidArgument, "%s: win %p is not a registered window of this communicator", op->name,
                       (void *)op->win);
        pthread_mutex_unlock(&c->lock);
        return rc;
    case HOST_K_PUT_SIGNAL:
    case HOST_K_SIGNAL:
        if (op->peer < 0 || op->peer >= n)
            return host_fail(ncclInvalidArgument, "%s: peer %d is outside [0, %d)", op->name, op->peer, n);
        if (op->kind == HOST_K_SIGNAL)
            return ncclSuccess;
        if ((int)op->datatype < 0 || (int)op->datatype >= ncclNumTypes)
            return host_fail(ncclInvalidArgument, "%s: invalid datatype %d", op->name, (int)op->datatype);
        pthread_mutex_lock(&c->lock);
        rc = put_target(c, op, &dst);
        pthread_mutex_unlock(&c->lock);
        return rc;
    default:
        return ncclSuccess;
    }
}

/* ncclWaitSignal's descriptors, summed per peer into op->v (owned, n entries). */
static ncclResult_t wait_descs(host_comm *c, host_opd *op, int nDesc, const ncclWaitSignalDesc_t *d)
{
    int n = c->nranks;
    ncclResult_t rc;
    if (nDesc < 0 || (nDesc > 0 && d == NULL))
        return host_fail(ncclInvalidArgument, "%s: %s", op->name, nDesc < 0 ? "nDesc is negative" : "signalDescs is NULL");
    op->v = calloc((size_t)n, sizeof(size_t));
    if (op->v == NULL)
        return host_fail(ncclSystemError, "%s: out of memory", op->name);
    op->nv = (size_t)n;
    for (int i = 0; i < nDesc; i++) {
        if (d[i].peer < 0 || d[i].peer >= n)
            return host_fail(ncclInvalidArgument, "%s: signalDescs[%d].peer %d is outside [0, %d)", op->name, i,
                             d[i].peer, n);
        if (d[i].opCnt < 0)
            return host_fail(ncclInvalidArgument, "%s: signalDescs[%d].opCnt %d is negative", op->name, i, d[i].opCnt);
        if (HOST_FAILED(rc = check_zero(op, d[i].sigIdx, d[i].ctx, 0)))
            return rc;
        op->v[d[i].peer] += (size_t)d[i].opCnt;
    }
    return ncclSuccess;
}

/* A wait that can never be satisfied: peer p is gone with fewer signals than wanted. Names the
 * first cause of p's loss, as every peer-loss text does (docs/host-backend.md#peer-death-and-abort). */
static HOST_COLD ncclResult_t wait_peer_gone(host_comm *c, const host_opd *op, int p, uint64_t have)
{
    char gone[160];
    host_comm_note_cause(c, host_peer_cause(c, p));
    return host_fail(ncclRemoteError, "%s: %s rank %d: waiting for %llu more signal(s) from rank %d (pid %u), which %s",
                     op->name, c->name, c->rank, (unsigned long long)(op->v[p] - have), p, c->peers[p].pid,
                     host_peer_gone_text(c, p, gone, sizeof gone));
}

static ncclResult_t wait_progress(host_comm *c, host_opd *op, int *done, host_blocked *b)
{
    int n = c->nranks, me = c->rank;
    if (c->sig_seen == NULL && (c->sig_seen = calloc((size_t)n, sizeof *c->sig_seen)) == NULL)
        return host_fail(ncclSystemError, "%s: out of memory", op->name);
    if (!op->started) {
        for (int p = 0; p < n; p++)
            op->v[p] += c->sig_seen[p];
        op->started = 1;
    }
    for (int p = 0; p < n; p++) {
        _Atomic uint64_t *sig = host_seg_signal(&c->seg, me, p);
        if (op->v[p] <= c->sig_seen[p] || atomic_load_explicit(sig, memory_order_acquire) >= op->v[p])
            continue;
        /* A peer that left may have signalled just before: look again after seeing it gone. */
        if (p != me && host_peer_is_gone(c, p) && atomic_load_explicit(sig, memory_order_acquire) < op->v[p])
            return wait_peer_gone(c, op, p, atomic_load_explicit(sig, memory_order_acquire));
        if (atomic_load_explicit(sig, memory_order_acquire) >= op->v[p])
            continue;
        b->peer = p;
        b->what = "its ncclPutSignal/ncclSignal";
        return ncclSuccess;
    }
    for (int p = 0; p < n; p++)
        if (op->v[p] > c->sig_seen[p])
            c->sig_seen[p] = op->v[p];
    *done = 1;
    return ncclSuccess;
}

ncclResult_t host_rma_progress(host_comm *c, host_opd *op, int *progress, int *done, host_blocked *b)
{
    unsigned char *dst = NULL;
    ncclResult_t rc;
    int me = c->rank;
    b->opname = op->name;
    if (op->kind == HOST_K_WAIT_SIGNAL)
        return wait_progress(c, op, done, b);
    /* A peer that left, aborted or died takes no more signals: the put or signal fails, naming
     * the first cause, rather than landing in memory nobody will read (its mapping stays ours). */
    if (op->peer != me && host_peer_is_gone(c, op->peer))
        return host_fail_peer_gone(c, op->name, op->peer);
    if (op->kind == HOST_K_PUT_SIGNAL) {
        /* The window cannot go away meanwhile: deregistration runs on this thread, in order. */
        pthread_mutex_lock(&c->lock);
        rc = put_target(c, op, &dst);
        pthread_mutex_unlock(&c->lock);
        if (rc != ncclSuccess)
            return rc;
        if (op->count > 0)
            memmove(dst, op->sendbuff, op->count * host_type_size(op->datatype));
    }
    atomic_fetch_add_explicit(host_seg_signal(&c->seg, op->peer, me), 1, memory_order_release);
    host_bell_ring(&host_seg_rankp(&c->seg, op->peer)->bell);
    *progress = 1;
    *done = 1;
    return ncclSuccess;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry points                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* A put or signal: sigIdx, ctx and flags checked at the call (a failure recorded for the group). */
static inline ncclResult_t signalled(host_opd *o, int sigIdx, int ctx, unsigned flags, ncclComm_t comm)
{
    ncclResult_t rc;
    if (HOST_FAILED(rc = check_zero(o, sigIdx, ctx, flags))) {
        host_group_record(rc);
        return rc;
    }
    return host_coll_call(o, comm);
}

ncclResult_t host_put_signal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned flags,
                             ncclComm_t comm)
{
    host_opd o;
    host_win_opd(&o, HOST_K_PUT_SIGNAL, "ncclPutSignal", peer);
    o.sendbuff = localbuff;
    o.count = count;
    o.datatype = datatype;
    o.win = peerWin;
    o.offset = peerWinOffset;
    return signalled(&o, sigIdx, ctx, flags, comm);
}

ncclResult_t host_signal(int peer, int sigIdx, int ctx, unsigned flags, ncclComm_t comm)
{
    host_opd o;
    host_win_opd(&o, HOST_K_SIGNAL, "ncclSignal", peer);
    return signalled(&o, sigIdx, ctx, flags, comm);
}

ncclResult_t host_wait_signal(int nDesc, const ncclWaitSignalDesc_t *descs, ncclComm_t comm)
{
    host_opd o;
    host_win_opd(&o, HOST_K_WAIT_SIGNAL, "ncclWaitSignal", -1);
    o.ndesc = nDesc;
    o.descs = descs; /* summed per peer by host_rma_descs once the communicator is known */
    return host_coll_call(&o, comm);
}

ncclResult_t host_rma_descs(host_comm *c, host_opd *op)
{
    return wait_descs(c, op, op->ndesc, op->descs);
}
