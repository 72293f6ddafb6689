/* Point-to-point over per-pair rings in the segment (docs/host-backend.md#point-to-point).
 *
 * The ring src -> dst is a byte stream: each message is a 16-byte header {count, datatype} and
 * its payload. Only the sender writes `head` and only the receiver writes `tail`, both cumulative
 * byte counts, so the k-th send on a pair always meets the k-th receive, across groups. The
 * receiver checks count and datatype before it copies any payload; a difference is recorded in
 * the segment (ncclInvalidUsage on both ranks). With NCCL_HOST_P2P_EAGER = 0 (default) a send
 * completes only once the receiver has consumed its last byte, which exposes programs that work on
 * NCCL only because of buffering.
 *
 * Single copy: on a communicator with single-copy reads (transport.c), a message of at least
 * direct_min bytes (and above the eager limit) puts only its header in the ring, marked
 * HOST_P2P_DIRECT_MAGIC and carrying the sender's buffer address. The receiver checks count and
 * datatype as usual, sets `tail` one byte into the header (a claim: "reading now"), reads the
 * payload straight from the sender's buffer, and only then moves `tail` past the header, which
 * is what completes the send: the sender's buffer is never released while the receiver may
 * still read it, and a sender that fails meanwhile knows whether to say so (worker.c). */
#include <stdio.h>
#include <string.h>

#include "nccl_host.h"

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

static void ring_write(unsigned char *data, size_t R, uint64_t pos, const unsigned char *src, size_t len)
{
    size_t off = (size_t)(pos % R), first = min_sz(len, R - off);
    memcpy(data + off, src, first);
    if (len > first)
        memcpy(data, src + first, len - first);
}

static void ring_read(const unsigned char *data, size_t R, uint64_t pos, unsigned char *dst, size_t len)
{
    size_t off = (size_t)(pos % R), first = min_sz(len, R - off);
    memcpy(dst, data + off, first);
    if (len > first)
        memcpy(dst + first, data, len - first);
}

#define HDR ((uint64_t)sizeof(host_p2p_msg))

static ncclResult_t send_progress(host_comm *c, host_p2p_run *run, int *progress, int *done, host_blocked *b)
{
    host_opd *op = run->op;
    int peer = op->peer;
    size_t R = c->seg.p2p_bytes;
    host_ring_hdr *ring = host_seg_ring(&c->seg, c->rank, peer);
    unsigned char *data = host_seg_ring_data(&c->seg, c->rank, peer);
    uint64_t bytes = (uint64_t)op->count * host_type_size(op->datatype);
    int moved = 0;
    if (!run->started) {
        int direct = c->direct && bytes >= c->direct_min && bytes > host_params()->p2p_eager;
        run->hdr.count = op->count;
        run->hdr.datatype = (uint32_t)op->datatype;
        run->hdr.magic = direct ? HOST_P2P_DIRECT_MAGIC : HOST_P2P_MSG_MAGIC;
        run->hdr.addr = direct ? (uint64_t)(uintptr_t)op->sendbuff : 0;
        run->start = run->pos = c->send_pos[peer];
        run->end = run->start + HDR + (direct ? 0 : bytes);
        c->send_pos[peer] = run->end;
        run->started = 1;
    }
    while (run->pos < run->end) {
        uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
        uint64_t space = R - (run->pos - tail), k = run->pos - run->start, len;
        if (space == 0)
            break;
        if (k < HDR) {
            len = min_sz((size_t)(HDR - k), (size_t)space);
            ring_write(data, R, run->pos, (const unsigned char *)&run->hdr + k, (size_t)len);
        } else {
            len = min_sz((size_t)(run->end - run->pos), (size_t)space);
            ring_write(data, R, run->pos, (const unsigned char *)op->sendbuff + (k - HDR), (size_t)len);
        }
        run->pos += len;
        atomic_store_explicit(&ring->head, run->pos, memory_order_release);
        moved = 1;
    }
    if (moved) {
        *progress = 1;
        host_bell_ring(&host_seg_rankp(&c->seg, peer)->bell);
    }
    if (run->pos == run->end &&
        (bytes <= host_params()->p2p_eager || atomic_load_explicit(&ring->tail, memory_order_acquire) >= run->end)) {
        *done = 1;
        return ncclSuccess;
    }
    b->peer = peer;
    b->what = run->pos < run->end ? "ring space (the receiver has not posted or finished its ncclRecv)"
                                  : "the receiver to take the data (no matching ncclRecv yet?)";
    /* A receiver that took the whole message may leave at once: look again after seeing it gone. */
    if (host_blocked_check(b, c, peer)) {
        if (run->pos == run->end && atomic_load_explicit(&ring->tail, memory_order_acquire) >= run->end) {
            *done = 1;
            return ncclSuccess;
        }
        host_blocked_gone(b, peer, op->name);
    }
    return ncclSuccess;
}

static ncclResult_t recv_progress(host_comm *c, host_p2p_run *run, int *progress, int *done, host_blocked *b)
{
    ncclResult_t rc;
    host_opd *op = run->op;
    int peer = op->peer;
    size_t R = c->seg.p2p_bytes;
    host_ring_hdr *ring = host_seg_ring(&c->seg, peer, c->rank);
    const unsigned char *data = host_seg_ring_data(&c->seg, peer, c->rank);
    int moved = 0;
    if (!run->started) {
        run->start = run->pos = c->recv_pos[peer];
        run->end = run->start + HDR;
        run->started = 1;
    }
    while (run->pos < run->end) {
        uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
        uint64_t avail = head - run->pos, k = run->pos - run->start, len;
        if (avail == 0)
            break;
        if (k < HDR) {
            len = min_sz((size_t)(HDR - k), (size_t)avail);
            ring_read(data, R, run->pos, (unsigned char *)&run->hdr + k, (size_t)len);
            run->pos += len;
            if (run->pos - run->start == HDR) {
                char text[256];
                if (run->hdr.magic != HOST_P2P_MSG_MAGIC && run->hdr.magic != HOST_P2P_DIRECT_MAGIC) {
                    snprintf(text, sizeof text, "corrupt p2p stream from rank %d to rank %d", peer, c->rank);
                    host_seg_error(c, ncclInternalError, text);
                    return host_fail(ncclInternalError, "%s rank %d: %s", c->name, c->rank, text);
                }
                if (run->hdr.count != op->count || run->hdr.datatype != (uint32_t)op->datatype) {
                    snprintf(text, sizeof text, "send/recv mismatch: rank %d sends %llu x %s, rank %d receives %zu x %s",
                             peer, (unsigned long long)run->hdr.count, host_type_name((ncclDataType_t)run->hdr.datatype),
                             c->rank, op->count, host_type_name(op->datatype));
                    host_seg_error(c, ncclInvalidUsage, text);
                    return host_fail(ncclInvalidUsage, "%s rank %d: %s", c->name, c->rank, text);
                }
                if (run->hdr.magic == HOST_P2P_DIRECT_MAGIC) {
                    /* claim, read, and only then let `tail` pass the header (releases the sender) */
                    if (atomic_load_explicit(&ring->tail, memory_order_relaxed) <= run->start)
                        atomic_store_explicit(&ring->tail, run->start + 1, memory_order_release);
                    if (HOST_FAILED(rc = host_direct_read(c, peer, op->recvbuff, run->hdr.addr,
                                         op->count * host_type_size(op->datatype))))
                        return rc;
                } else {
                    run->end = run->start + HDR + (uint64_t)op->count * host_type_size(op->datatype);
                }
            }
        } else {
            len = min_sz((size_t)(run->end - run->pos), (size_t)avail);
            ring_read(data, R, run->pos, (unsigned char *)op->recvbuff + (k - HDR), (size_t)len);
            run->pos += len;
        }
        atomic_store_explicit(&ring->tail, run->pos, memory_order_release);
        moved = 1;
    }
    if (moved) {
        *progress = 1;
        host_bell_ring(&host_seg_rankp(&c->seg, peer)->bell);
    }
    if (run->pos - run->start >= HDR && run->pos == run->end) {
        c->recv_pos[peer] = run->end;
        *done = 1;
        return ncclSuccess;
    }
    b->peer = peer;
    b->what = "data from the sender (no matching ncclSend yet?)";
    /* A sender whose message fits the ring's eager limit may leave before we took it: what it
     * wrote before leaving is still ours to take (the next pass takes it). */
    if (host_blocked_check(b, c, peer) && atomic_load_explicit(&ring->head, memory_order_acquire) == run->pos)
        host_blocked_gone(b, peer, op->name);
    return ncclSuccess;
}

int host_p2p_direct_exposed(const host_comm *c, const host_p2p_run *run)
{
    uint64_t tail;
    if (!run->started || run->hdr.magic != HOST_P2P_DIRECT_MAGIC)
        return 0;
    tail = atomic_load_explicit(&host_seg_ring(&c->seg, c->rank, run->op->peer)->tail, memory_order_acquire);
    return tail > run->start && tail < run->end;
}

ncclResult_t host_p2p_progress(host_comm *c, host_p2p_run *run, int *progress, int *done, host_blocked *b)
{
    b->opname = run->op->name;
    if (run->op->kind == HOST_K_SEND)
        return send_progress(c, run, progress, done, b);
    return recv_progress(c, run, progress, done, b);
}
