/* The single-copy form of the large collectives (docs/host-backend.md#single-copy-direct-transfers).
 *
 * When a communicator has single-copy reads (transport.c) and a collective moves at least
 * direct_min bytes per rank, no data goes through the segment: each rank reads what it needs
 * straight from its peers' user buffers with one process_vm_readv per peer, and the steps of
 * coll.c carry only descriptors, now with every rank's sendbuff and recvbuff addresses:
 *
 *   step 1: every rank publishes its descriptor (addresses); once all are published (and
 *           compared, exactly as on the segment path), each rank reads and writes its output:
 *             AllGather, Gather (root)  block j of recvbuff <- rank j's sendbuff
 *             Broadcast (non-roots)     recvbuff <- the root's sendbuff
 *             Scatter (non-roots)       recvbuff <- block r of the root's sendbuff
 *             AlltoAll                  block j of recvbuff <- block r of rank j's sendbuff
 *             Reduce (root)             recvbuff <- every rank's sendbuff, combined
 *             ReduceScatter             recvbuff <- block r of every rank's sendbuff, combined
 *             AllReduce                 part r of recvbuff <- part r of every rank's sendbuff,
 *                                       combined (part r: this rank's 1/n of the elements)
 *           and this rank's own block is a local memmove (none in place);
 *   step 2 (AllReduce only): publishing it says "my part is reduced"; once all are published,
 *           each rank reads every other part j from rank j's recvbuff;
 *   then:   a rank publishes done for its last step and waits until every peer has done so
 *           (coll.c phase 2), because a peer may still be reading its buffers: returning
 *           earlier would let the caller reuse them. This is the one wait the segment path does
 *           not have; it replaces one copy in and one copy out per chunk.
 *
 * In-place forms stay correct without staging: a rank writes only its own output ranges, and
 * nobody reads those before they are final, except AllReduce's parts, which step 2 orders
 * (part j of rank r's buffer, read by rank j in step 1, is overwritten by rank r only in step 2,
 * after rank j published step 2). Under NCCL_HOST_CHECKS=0 buffers that overlap outside the
 * in-place forms are undefined, as with NCCL (the segment path happened to stage them).
 *
 * Reductions combine in rank order 0..n-1 with the same kernel calls as the segment path
 * (host_reduce_pair, _step, _finish, with each rank's own PreMulSum scalar from its descriptor),
 * applied piece by piece; the kernels are elementwise, so every element is bit-identical to the
 * segment path and, since each element is reduced by exactly one rank and copied by the others,
 * across ranks. Peers' pieces pass through cache-sized scratch (HOST_DIRECT_PIECE). A rank
 * other than 0 reducing in place first saves its own piece: the accumulator overwrites it before
 * its turn in the order. Reads are ordered r+1, r+2, ... so ranks do not all start on one peer.
 *
 * Not single-copy: AllReduceWithBias (each rank adds its own bias, so the parts would differ)
 * and AllToAllv (RCCL's, rarely large); counts of zero never reach the engine. */
#include <string.h>

#include "nccl_host.h"

int host_coll_direct_eligible(const host_comm *c, const host_opd *op)
{
    if (!c->direct || op->count == 0)
        return 0;
    switch (op->kind) {
    case HOST_K_ALLREDUCE:
    case HOST_K_REDUCE:
    case HOST_K_REDUCESCATTER:
    case HOST_K_BROADCAST:
    case HOST_K_ALLGATHER:
    case HOST_K_GATHER:
    case HOST_K_SCATTER:
    case HOST_K_ALLTOALL:
        /* count and datatype are the same on every rank (compared in the first step), so is
         * the answer */
        return op->count * host_type_size(op->datatype) >= c->direct_min;
    default:
        return 0;
    }
}

int host_coll_direct_exposed(const host_comm *c, const host_coll_run *run)
{
    if (!run->direct || run->s_first == 0)
        return 0;
    for (uint64_t k = run->s_first; k <= c->step; k++) {
        int all = 1, unfinished = 0;
        for (int r = 0; r < c->nranks && all; r++) {
            all = atomic_load_explicit(&host_seg_slot(&c->seg, r, k)->seq, memory_order_acquire) == k;
            if (r != c->rank && atomic_load_explicit(&host_seg_rankp(&c->seg, r)->done, memory_order_acquire) < k)
                unfinished = 1;
        }
        if (all && unfinished)
            return 1;
    }
    return 0;
}

uint64_t host_coll_direct_steps(const host_opd *op)
{
    return op->kind == HOST_K_ALLREDUCE ? 2 : 1;
}

static int overlaps(const void *a, const void *b, size_t len)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return len > 0 && x < y + len && y < x + len;
}

/* AllReduce part k: [lo, hi) elements, about count/n each, starting on a cache line. */
static void part(size_t count, int n, int k, size_t es, size_t *lo, size_t *hi)
{
    size_t align = es >= HOST_CACHELINE ? 1 : HOST_CACHELINE / es;
    size_t q = count / (size_t)n, rem = count % (size_t)n;
    size_t a = (size_t)k * q + (k < (int)rem ? (size_t)k : rem);
    size_t b = (size_t)(k + 1) * q + (k + 1 < (int)rem ? (size_t)(k + 1) : rem);
    *lo = k == 0 ? 0 : a / align * align;
    *hi = k == n - 1 ? count : b / align * align;
}

static uint64_t peer_src(const host_comm *c, const host_coll_run *run, int j)
{
    return host_seg_slot(&c->seg, j, run->s)->src;
}

static uint64_t peer_dst(const host_comm *c, const host_coll_run *run, int j)
{
    return host_seg_slot(&c->seg, j, run->s)->dst;
}

/* acc[0..count) = in_0 (+) in_1 (+) ... in rank order, where in_j is `count` elements at byte
 * offset `off` of rank j's sendbuff, and own is this rank's (the same offset of our sendbuff). */
static ncclResult_t reduce_from_peers(host_comm *c, host_coll_run *run, unsigned char *acc, size_t off, size_t count,
                                      const unsigned char *own)
{
    ncclResult_t rc;
    host_opd *op = run->op;
    int n = c->nranks, me = c->rank;
    size_t es = host_type_size(op->datatype), piece = HOST_DIRECT_PIECE / es;
    host_fp8_mode fp8 = host_params()->fp8;
    unsigned char *scratch = host_direct_scratch(c);
    if (scratch == NULL)
        return host_fail(ncclSystemError, "%s rank %d: out of memory for single-copy reduction scratch", c->name,
                         c->rank);
    for (size_t i = 0; i < count; i += piece) {
        size_t m = count - i < piece ? count - i : piece, mb = m * es;
        unsigned char *a = acc + i * es, *bufs[2] = {scratch, scratch + HOST_DIRECT_PIECE};
        const unsigned char *mine = own + i * es, *x[2];
        host_op hop, hop1;
        if (overlaps(a, mine, mb) && !(me == 0 && a == mine)) {
            memcpy(scratch + 2 * HOST_DIRECT_PIECE, mine, mb);
            mine = scratch + 2 * HOST_DIRECT_PIECE;
        }
        for (int j = 0; j < 2; j++) {
            if (j == me) {
                x[j] = mine;
                continue;
            }
            if (HOST_FAILED(rc = host_direct_read(c, j, bufs[j], peer_src(c, run, j) + off + i * es, mb)))
                return rc;
            x[j] = bufs[j];
        }
        host_coll_slot_op(c, run, 0, &hop);
        host_coll_slot_op(c, run, 1, &hop1);
        host_reduce_pair(a, x[0], x[1], m, op->datatype, &hop, &hop1, fp8, n);
        hop = hop1;
        for (int j = 2; j < n; j++) {
            const unsigned char *xj = mine;
            if (j != me) {
                if (HOST_FAILED(rc = host_direct_read(c, j, bufs[0], peer_src(c, run, j) + off + i * es, mb)))
                    return rc;
                xj = bufs[0];
            }
            host_coll_slot_op(c, run, j, &hop);
            host_reduce_step(a, xj, m, op->datatype, &hop, fp8, n);
        }
        host_reduce_finish(a, m, op->datatype, &hop, n);
    }
    return ncclSuccess;
}

ncclResult_t host_coll_direct_consume(host_comm *c, host_coll_run *run)
{
    ncclResult_t rc;
    host_opd *op = run->op;
    int n = c->nranks, me = c->rank, root = op->root;
    size_t es = host_type_size(op->datatype), cb = op->count * es, lo, hi;
    unsigned char *recv = op->recvbuff;
    const unsigned char *send = op->sendbuff;
    switch (op->kind) {
    case HOST_K_ALLGATHER:
    case HOST_K_GATHER:
        if (op->kind == HOST_K_GATHER && me != root)
            return ncclSuccess;
        for (int k = 1; k < n; k++) {
            int j = (me + k) % n;
            if (HOST_FAILED(rc = host_direct_read(c, j, recv + (size_t)j * cb, peer_src(c, run, j), cb)))
                return rc;
        }
        if (send != recv + (size_t)me * cb)
            memmove(recv + (size_t)me * cb, send, cb);
        return ncclSuccess;
    case HOST_K_BROADCAST:
        if (me != root)
            return host_direct_read(c, root, recv, peer_src(c, run, root), cb);
        if (send != recv)
            memmove(recv, send, cb);
        return ncclSuccess;
    case HOST_K_SCATTER:
        if (me != root)
            return host_direct_read(c, root, recv, peer_src(c, run, root) + (uint64_t)me * cb, cb);
        if (recv != send + (size_t)root * cb)
            memmove(recv, send + (size_t)root * cb, cb);
        return ncclSuccess;
    case HOST_K_ALLTOALL:
        for (int k = 1; k < n; k++) {
            int j = (me + k) % n;
            if (HOST_FAILED(rc = host_direct_read(c, j, recv + (size_t)j * cb, peer_src(c, run, j) + (uint64_t)me * cb,
                                                  cb)))
                return rc;
        }
        memmove(recv + (size_t)me * cb, send + (size_t)me * cb, cb);
        return ncclSuccess;
    case HOST_K_REDUCE:
        if (me != root)
            return ncclSuccess;
        return reduce_from_peers(c, run, recv, 0, op->count, send);
    case HOST_K_REDUCESCATTER:
        return reduce_from_peers(c, run, recv, (size_t)me * cb, op->count, send + (size_t)me * cb);
    case HOST_K_ALLREDUCE:
        if (run->stepi == 0) {
            part(op->count, n, me, es, &lo, &hi);
            return reduce_from_peers(c, run, recv + lo * es, lo * es, hi - lo, send + lo * es);
        }
        for (int k = 1; k < n; k++) {
            int j = (me + k) % n;
            part(op->count, n, j, es, &lo, &hi);
            if (hi > lo && HOST_FAILED(rc = host_direct_read(c, j, recv + lo * es, peer_dst(c, run, j) + lo * es,
                                                             (hi - lo) * es)))
                return rc;
        }
        return ncclSuccess;
    default:
        return host_fail(ncclInternalError, "%s: no single-copy form", op->name);
    }
}
