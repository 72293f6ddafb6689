/* Collectives as non-blocking state machines over the segment's per-rank slots
 * (docs/host-backend.md#collectives-slots-and-steps).
 *
 * Every collective is cut into steps; step s of the communicator is the same on every rank
 * because chunk boundaries derive from counts that are verified equal. Each rank's slot holds two
 * step buffers (odd and even steps), each half the chunk, so a rank publishes step s+1 while its
 * peers still read step s, and one wait per step suffices. One step:
 *   phase 0: (every rank finished reading step s-2, the last user of our buffer for s: implied by
 *            having seen all of step s-1, and checked) copy our input chunk (or our sub-blocks for
 *            every destination) into the buffer, write the descriptor, publish seq = s, ring every
 *            peer;
 *   phase 1: wait until every slot shows seq == s; compare every descriptor with ours (a
 *            difference is a cross-rank mismatch: ncclInvalidUsage on every rank); read the slots
 *            and combine them in rank order 0..n-1 into our output; publish done = s.
 * Every rank publishes a descriptor at every step (even a Broadcast non-root), so every mismatch
 * is seen by every rank, and each step doubles as a barrier. Except the eager Broadcast
 * (c->bcast_eager, segment path; docs/host-backend.md#broadcast-without-a-barrier): a non-root
 * waits for the root's step only, and the root for nobody: its data is staged, so it returns, and
 * the descriptors of peers that had not arrived yet are compared at its next call
 * (host_coll_settle), which its `done` for that step waits for. Inputs are staged in shared memory
 * before any output is written, which makes every in-place form correct by construction; user
 * memory is touched only inside the write ranges of docs/host-backend.md#which-bytes-each-call-reads-and-writes.
 * A rank's own block does not
 * take the detour: the sub-block an AlltoAll or Scatter root keeps is not staged (its step buffer
 * holds only the n-1 others, each a larger share), and the own block of a Broadcast root,
 * AllGather or Gather root goes straight from sendbuff to recvbuff (no copy at all in place),
 * since no peer writes it; it is copied between publishing a step and waiting for the peers
 * (own_block), so the copy fills that wait. Nor is what no peer reads staged: a Gather root's own
 * block, a Reduce root's or a ReduceScatter rank's own input when the output does not overlap it
 * (own_input_direct; the reduction reads it from sendbuff). Rooted collectives, where one side
 * copies while the other waits, take at least the segment's pipeline_steps steps
 * (pipeline_elems). Outputs too large for the cache are written with non-temporal stores
 * (copy_out), and so are a Broadcast root's mid-size steps, which only peers read
 * (stage_for_peers).
 *
 * Large collectives on a communicator with single-copy reads take another form with the same
 * steps (coll_direct.c): descriptors carry buffer addresses instead of data, peers read the
 * buffers directly, and a last phase (2) waits until every peer has published `done` for the
 * final step, since until then a peer may still be reading this rank's buffers. */
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "nccl_host.h"

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

static int uses_subblocks(host_kind k)
{
    return k == HOST_K_REDUCESCATTER || k == HOST_K_ALLTOALL || k == HOST_K_SCATTER || k == HOST_K_ALLTOALLV;
}

/* AlltoAll and Scatter never stage the sender's own sub-block, so their step buffer holds only
 * the n-1 others: position of destination d in sender j's buffer. */
static int packed(host_kind k)
{
    return k == HOST_K_ALLTOALL || k == HOST_K_SCATTER;
}

static size_t subpos(int d, int j)
{
    return (size_t)(d < j ? d : d - 1);
}

static int rooted(host_kind k)
{
    return host_kinds[k].rooted; /* from the kinds' rows (nccl_surface.gen.h) */
}

/* Elements per step of a rooted collective: in a rooted collective one side copies while the
 * other waits (the root stages, then the others read; or the others stage, then the root reads
 * or reduces), so an operation that fits in one or two slots would take the time of two copies
 * in a row. Cut into at least the segment's pipeline_steps steps (NCCL_HOST_PIPELINE_STEPS, rank
 * 0's), the copies of step s+1 on one side overlap those of step s on the other through the
 * double-buffered slots: (k+1)/k copy times for k steps, at the price of k step waits, so no step
 * is made smaller than HOST_PIPELINE_MIN_STEP bytes. Rounded up to whole pages of elements;
 * never more than a slot holds (cap). Every input is equal on every rank. */
static size_t pipeline_elems(const host_seg *seg, size_t count, size_t es, size_t cap)
{
    size_t k = (size_t)seg->pipeline_steps, page = 4096 / es;
    size_t e = (count + k - 1) / k, least = HOST_PIPELINE_MIN_STEP / es;
    if (e < least)
        e = least;
    e = (e + page - 1) / page * page;
    return e < cap ? e : cap;
}

/* Bytes of output a collective writes on this rank, summed over the whole operation. */
static size_t out_bytes(const host_comm *c, const host_opd *op)
{
    size_t b = op->count * host_type_size(op->datatype);
    switch (op->kind) {
    case HOST_K_ALLGATHER:
    case HOST_K_GATHER:
    case HOST_K_ALLTOALL:
        return b * (size_t)c->nranks;
    default:
        return b;
    }
}

/* memcpy with x86-64 non-temporal stores: the destination lines are written without being read
 * first and without staying in this core's cache. The fence orders the stores before the
 * `seq` or `done` that follows. Elsewhere (and below a page) a plain memcpy. */
static void copy_streaming(void *dst, const void *src, size_t bytes)
{
#if defined(__x86_64__)
    if (bytes >= 4096) {
        unsigned char *d = dst;
        const unsigned char *s = src;
        size_t head = (16 - ((uintptr_t)d & 15)) & 15, body;
        memcpy(d, s, head);
        d += head;
        s += head;
        bytes -= head;
        body = bytes & ~(size_t)63;
        for (size_t i = 0; i < body; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
            __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 32));
            __m128i f = _mm_loadu_si128((const __m128i *)(s + i + 48));
            _mm_stream_si128((__m128i *)(d + i), a);
            _mm_stream_si128((__m128i *)(d + i + 16), b);
            _mm_stream_si128((__m128i *)(d + i + 32), e);
            _mm_stream_si128((__m128i *)(d + i + 48), f);
        }
        memcpy(d + body, s + body, bytes - body);
        _mm_sfence();
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

/* Copies a step's share of the output. Outputs larger than half the shared cache are streamed
 * (copy_streaming): they cannot stay cached anyway, streaming skips reading every destination
 * line before writing it, and it does not evict the step buffers the peers read next. glibc's
 * memcpy switches to such stores only far above these sizes. */
static void copy_out(const host_coll_run *run, void *dst, const void *src, size_t bytes)
{
    if (run->stream)
        copy_streaming(dst, src, bytes);
    else
        memcpy(dst, src, bytes);
}

/* A Broadcast root's step data, which only other ranks read. A step of a few hundred KiB copied
 * with ordinary stores stays dirty in the root's private cache, and every receiver then pulls it
 * across cores line by line, which measured slower than reading it from memory; larger steps
 * overflow that cache on their own (docs/host-backend.md#speed). Streamed between
 * HOST_STAGE_STREAM_MIN and HOST_STAGE_STREAM_MAX bytes. */
static void stage_for_peers(void *slot, const void *src, size_t bytes)
{
    if (bytes >= HOST_STAGE_STREAM_MIN && bytes < HOST_STAGE_STREAM_MAX)
        copy_streaming(slot, src, bytes);
    else
        memcpy(slot, src, bytes);
}

ncclResult_t host_coll_begin(host_comm *c, host_coll_run *run, host_opd *op)
{
    size_t es = host_type_size(op->datatype);
    size_t chunk = c->seg.buf_bytes;
    memset(run, 0, sizeof *run);
    run->op = op;
    if (packed(op->kind) && c->nranks > 1)
        run->elems = chunk / (es * (size_t)(c->nranks - 1));
    else
        run->elems = uses_subblocks(op->kind) ? chunk / (es * (size_t)c->nranks) : chunk / es;
    run->stream = out_bytes(c, op) >= HOST_STREAM_MIN;
    if (run->elems == 0)
        return host_fail(ncclInternalError, "%s: segment chunk of %zu bytes is too small for %d ranks", op->name, chunk,
                         c->nranks);
    if (rooted(op->kind) && c->nranks > 1)
        run->elems = pipeline_elems(&c->seg, op->count, es, run->elems);
    run->direct = host_coll_direct_eligible(c, op);
    if (run->direct)
        run->nsteps = host_coll_direct_steps(op);
    else if (op->kind == HOST_K_ALLTOALLV)
        run->nsteps = 1; /* the count exchange; data steps are added once counts are known */
    else if (op->count == 0)
        run->nsteps = 1; /* no data, but the descriptor takes part in the cross-rank checks */
    else
        run->nsteps = (op->count + run->elems - 1) / run->elems;
    /* ncclScalarDevice: the scalar is read when the collective executes (docs/host-backend.md#premulsum-operators). */
    if (op->scalar_ptr != NULL)
        memcpy(run->scalar, op->scalar_ptr, es);
    else
        memcpy(run->scalar, op->scalar, sizeof run->scalar);
    run->coll_seq = ++c->coll_seq;
    return ncclSuccess;
}

/* Whether this rank's input to a reduction can be read from its sendbuff instead of being staged:
 * a Reduce root's or a ReduceScatter rank's own contribution is read by no peer, so it needs the
 * segment only when the output overlaps it (in place), where the accumulator would overwrite it
 * before its turn in the rank order. Decided by this rank alone: its slot layout is unchanged. */
static int own_input_direct(const host_comm *c, const host_opd *op)
{
    size_t es = host_type_size(op->datatype), in, out = op->count * es;
    const unsigned char *s = op->sendbuff, *d = op->recvbuff;
    if (op->kind == HOST_K_REDUCESCATTER)
        in = out * (size_t)c->nranks;
    else if (op->kind == HOST_K_REDUCE && c->rank == op->root)
        in = out;
    else
        return 0;
    return s + in <= d || d + out <= s;
}

/* Copies this rank's contribution to step stepi into its slot. */
static void publish_data(host_comm *c, host_coll_run *run, unsigned char *slot)
{
    host_opd *op = run->op;
    int n = c->nranks, me = c->rank;
    size_t es = host_type_size(op->datatype);
    size_t E = run->elems;
    const unsigned char *send = op->sendbuff;
    if (op->kind == HOST_K_ALLTOALLV) {
        const size_t *scount = op->v, *sdispl = op->v + n;
        if (run->stepi == 0) {
            uint64_t *counts = (uint64_t *)slot;
            for (int d = 0; d < n; d++)
                counts[d] = scount[d];
            return;
        }
        size_t o = (size_t)(run->stepi - 1) * E;
        for (int d = 0; d < n; d++) {
            size_t len = scount[d] > o ? min_sz(E, scount[d] - o) : 0;
            if (len > 0)
                memcpy(slot + (size_t)d * E * es, send + (sdispl[d] + o) * es, len * es);
        }
        return;
    }
    if (op->count == 0)
        return; /* its buffers may be NULL */
    size_t o = (size_t)run->stepi * E;
    size_t len = min_sz(E, op->count - o);
    switch (op->kind) {
    case HOST_K_BROADCAST:
        if (me == op->root)
            stage_for_peers(slot, send + o * es, len * es);
        return;
    case HOST_K_REDUCE:
    case HOST_K_GATHER:
        /* a Gather root's own block goes straight to its recvbuff (own_block) */
        if ((op->kind == HOST_K_GATHER && me == op->root) || own_input_direct(c, op))
            return;
        memcpy(slot, send + o * es, len * es);
        return;
    case HOST_K_ALLREDUCE:
    case HOST_K_ALLREDUCE_BIAS:
    case HOST_K_ALLGATHER:
        memcpy(slot, send + o * es, len * es);
        return;
    case HOST_K_SCATTER:
    case HOST_K_ALLTOALL:
        if (op->kind == HOST_K_SCATTER && me != op->root)
            return;
        for (int d = 0; d < n; d++) /* not our own sub-block: consume takes it from sendbuff */
            if (d != me)
                memcpy(slot + subpos(d, me) * E * es, send + ((size_t)d * op->count + o) * es, len * es);
        return;
    case HOST_K_REDUCESCATTER:
        for (int d = 0; d < n; d++)
            if (d != me || !own_input_direct(c, op))
                memcpy(slot + (size_t)d * E * es, send + ((size_t)d * op->count + o) * es, len * es);
        return;
    default:
        return;
    }
}

void host_coll_slot_op(const host_comm *c, const host_coll_run *run, int j, host_op *hop)
{
    hop->kind = (host_op_kind)run->op->opkind;
    memcpy(hop->scalar, host_seg_slot(&c->seg, j, run->s)->scalar, sizeof hop->scalar);
}

/* Rank j's input to a reduction step: its slot, or for this rank's own input, when it was not
 * staged, its sendbuff (own, NULL otherwise). */
static const unsigned char *reduce_input(const host_comm *c, const host_coll_run *run, int j, size_t byte_off,
                                         const unsigned char *own)
{
    if (j == c->rank && own != NULL)
        return own;
    return host_seg_slot_data(&c->seg, j, run->s) + byte_off;
}

/* acc = input 0 (+) input 1 (+) ... in rank order; the first two in one pass over memory. */
static void reduce_into(host_comm *c, host_coll_run *run, unsigned char *acc, size_t byte_off, size_t len,
                        const unsigned char *own)
{
    host_opd *op = run->op;
    int n = c->nranks, j = 1;
    host_fp8_mode fp8 = host_params()->fp8;
    host_op hop, hop1;
    host_coll_slot_op(c, run, 0, &hop);
    if (n == 1) {
        host_reduce_prepare(acc, reduce_input(c, run, 0, byte_off, own), len, op->datatype, &hop, fp8, n);
    } else {
        host_coll_slot_op(c, run, 1, &hop1);
        host_reduce_pair(acc, reduce_input(c, run, 0, byte_off, own), reduce_input(c, run, 1, byte_off, own), len,
                         op->datatype, &hop, &hop1, fp8, n);
        hop = hop1;
        j = 2;
    }
    for (; j < n; j++) {
        host_coll_slot_op(c, run, j, &hop);
        host_reduce_step(acc, reduce_input(c, run, j, byte_off, own), len, op->datatype, &hop, fp8, n);
    }
    host_reduce_finish(acc, len, op->datatype, &hop, n);
}

/* This rank's own block, from its sendbuff straight to its recvbuff: nothing to do in place. */
static void own_copy(const host_coll_run *run, unsigned char *dst, const unsigned char *src, size_t bytes)
{
    if (dst + bytes <= src || src + bytes <= dst)
        copy_out(run, dst, src, bytes);
    else if (dst != src)
        memmove(dst, src, bytes);
}

/* This rank's own block of step stepi, which no peer writes: copied right after the step is
 * published, while the peers still stage theirs, instead of after the wait. Only after this
 * step's input was staged, as before, so the in-place forms stay correct. */
static void own_block(host_comm *c, host_coll_run *run)
{
    host_opd *op = run->op;
    int me = c->rank;
    size_t es = host_type_size(op->datatype);
    size_t o = (size_t)run->stepi * run->elems, len;
    unsigned char *recv = op->recvbuff;
    const unsigned char *send = op->sendbuff;
    if (op->kind == HOST_K_ALLTOALLV || op->count == 0)
        return;
    len = min_sz(run->elems, op->count - o) * es;
    switch (op->kind) {
    case HOST_K_BROADCAST:
        if (me == op->root)
            own_copy(run, recv + o * es, send + o * es, len);
        return;
    case HOST_K_ALLGATHER:
    case HOST_K_GATHER:
        if (op->kind == HOST_K_ALLGATHER || me == op->root)
            own_copy(run, recv + ((size_t)me * op->count + o) * es, send + o * es, len);
        return;
    case HOST_K_ALLTOALL:
        own_copy(run, recv + ((size_t)me * op->count + o) * es, send + ((size_t)me * op->count + o) * es, len);
        return;
    case HOST_K_SCATTER:
        if (me == op->root)
            own_copy(run, recv + o * es, send + ((size_t)me * op->count + o) * es, len);
        return;
    default:
        return;
    }
}

/* Reads every peer's slot of step stepi and writes this rank's output (its own block is
 * own_block's). */
static ncclResult_t consume(host_comm *c, host_coll_run *run)
{
    host_opd *op = run->op;
    int n = c->nranks, me = c->rank;
    size_t es = host_type_size(op->datatype);
    size_t E = run->elems;
    unsigned char *recv = op->recvbuff;
    const unsigned char *send = op->sendbuff;
    if (op->kind == HOST_K_ALLTOALLV) {
        const size_t *rcount = op->v + 2 * n, *rdispl = op->v + 3 * n;
        if (run->stepi == 0) {
            uint64_t maxv = 0;
            for (int j = 0; j < n; j++) {
                const uint64_t *counts = (const uint64_t *)host_seg_slot_data(&c->seg, j, run->s);
                if (counts[me] != rcount[j]) {
                    return host_fail(ncclInvalidUsage, "%s: rank %d sends %llu elements to rank %d, which expects %zu "
                                     "(recvcounts[%d])", op->name, j, (unsigned long long)counts[me], me, rcount[j], j);
                }
                for (int d = 0; d < n; d++)
                    if (counts[d] > maxv)
                        maxv = counts[d];
            }
            run->maxv = maxv;
            run->nsteps = 1 + (maxv + E - 1) / E;
            return ncclSuccess;
        }
        size_t o = (size_t)(run->stepi - 1) * E;
        for (int j = 0; j < n; j++) {
            size_t len = rcount[j] > o ? min_sz(E, rcount[j] - o) : 0;
            if (len > 0)
                memcpy(recv + (rdispl[j] + o) * es, host_seg_slot_data(&c->seg, j, run->s) + (size_t)me * E * es,
                       len * es);
        }
        return ncclSuccess;
    }
    if (op->count == 0)
        return ncclSuccess; /* its buffers may be NULL */
    size_t o = (size_t)run->stepi * E;
    size_t len = min_sz(E, op->count - o);
    switch (op->kind) {
    case HOST_K_ALLREDUCE:
    case HOST_K_ALLREDUCE_BIAS:
        reduce_into(c, run, recv + o * es, 0, len, NULL);
        if (op->kind == HOST_K_ALLREDUCE_BIAS)
            host_reduce_add_bias(recv + o * es, (const unsigned char *)op->acc + o * es, len, op->datatype,
                                 host_params()->fp8);
        break;
    case HOST_K_REDUCE:
        if (me == op->root)
            reduce_into(c, run, recv + o * es, 0, len, own_input_direct(c, op) ? send + o * es : NULL);
        break;
    case HOST_K_REDUCESCATTER:
        reduce_into(c, run, recv + o * es, (size_t)me * E * es, len,
                    own_input_direct(c, op) ? send + ((size_t)me * op->count + o) * es : NULL);
        break;
    case HOST_K_BROADCAST:
        if (me != op->root)
            copy_out(run, recv + o * es, host_seg_slot_data(&c->seg, op->root, run->s), len * es);
        break;
    case HOST_K_ALLGATHER:
    case HOST_K_GATHER:
        if (op->kind == HOST_K_GATHER && me != op->root)
            break;
        for (int j = 0; j < n; j++)
            if (j != me)
                copy_out(run, recv + ((size_t)j * op->count + o) * es, host_seg_slot_data(&c->seg, j, run->s),
                         len * es);
        break;
    case HOST_K_ALLTOALL:
        for (int j = 0; j < n; j++)
            if (j != me)
                copy_out(run, recv + ((size_t)j * op->count + o) * es,
                         host_seg_slot_data(&c->seg, j, run->s) + subpos(me, j) * E * es, len * es);
        break;
    case HOST_K_SCATTER:
        if (me != op->root)
            copy_out(run, recv + o * es,
                     host_seg_slot_data(&c->seg, op->root, run->s) + subpos(me, op->root) * E * es, len * es);
        break;
    default:
        break;
    }
    return ncclSuccess;
}

/* Records a cross-rank failure in the segment so ranks stuck elsewhere learn it too. */
void host_seg_error(host_comm *c, ncclResult_t rc, const char *text)
{
    host_seg_header *h = c->seg.hdr;
    uint32_t expected = 0;
    /* The claim makes this rank the only writer of error_*; the release store of error_code then
     * publishes them, so a rank that loads a non-zero code (acquire) reads whole texts
     * (docs/host-backend.md#memory-order). */
    if (atomic_compare_exchange_strong_explicit(&h->error_claim, &expected, 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        h->error_rank = c->rank;
        h->error_cause = atomic_load_explicit(&c->cause, memory_order_seq_cst);
        snprintf(h->error_text, sizeof h->error_text, "%s", text);
        atomic_store_explicit(&h->error_code, (uint32_t)rc, memory_order_release);
    }
    for (int r = 0; r < c->nranks; r++)
        host_bell_ring(&host_seg_rankp(&c->seg, r)->bell);
}

/* Compares every peer's descriptor of step s with ours (those that published s, when ready_only;
 * the others may not have arrived yet). name: our collective's. */
static ncclResult_t check_descriptors(host_comm *c, uint64_t s, const char *name, int ready_only)
{
    host_slot_hdr *mine = host_seg_slot(&c->seg, c->rank, s);
    for (int j = 0; j < c->nranks; j++) {
        host_slot_hdr *o = host_seg_slot(&c->seg, j, s);
        const char *field = NULL;
        long long a = 0, b = 0;
        if (j == c->rank || (ready_only && atomic_load_explicit(&o->seq, memory_order_acquire) != s))
            continue;
        if (o->kind != mine->kind)
            field = "collective", a = mine->kind, b = o->kind;
        else if (o->datatype != mine->datatype)
            field = "datatype", a = mine->datatype, b = o->datatype;
        else if (o->count != mine->count)
            field = "count", a = (long long)mine->count, b = (long long)o->count;
        else if (o->opkind != mine->opkind)
            field = "reduction op", a = mine->opkind, b = o->opkind;
        else if (o->root != mine->root)
            field = "root", a = mine->root, b = o->root;
        else if (o->coll_seq != mine->coll_seq || o->stepi != mine->stepi)
            field = "collective sequence", a = (long long)mine->coll_seq, b = (long long)o->coll_seq;
        else if (o->direct != mine->direct) /* agreed at setup: only a library mix-up gets here */
            field = "single-copy form", a = mine->direct, b = o->direct;
        if (field != NULL) {
            char text[256];
            if (o->kind != mine->kind)
                snprintf(text, sizeof text, "cross-rank mismatch in collective #%llu: rank %d called %s, rank %d called %s",
                         (unsigned long long)mine->coll_seq, c->rank, host_kind_name((host_kind)mine->kind), j,
                         host_kind_name((host_kind)o->kind));
            else if (o->datatype != mine->datatype)
                snprintf(text, sizeof text, "cross-rank mismatch in %s #%llu: rank %d has datatype %s, rank %d has %s",
                         name, (unsigned long long)mine->coll_seq, c->rank, host_type_name(mine->datatype), j,
                         host_type_name(o->datatype));
            else if (o->opkind != mine->opkind)
                snprintf(text, sizeof text, "cross-rank mismatch in %s #%llu: rank %d reduces with %s, rank %d with %s",
                         name, (unsigned long long)mine->coll_seq, c->rank, host_op_name(mine->opkind), j,
                         host_op_name(o->opkind));
            else
                snprintf(text, sizeof text, "cross-rank mismatch in %s #%llu: %s is %lld on rank %d but %lld on rank %d",
                         name, (unsigned long long)mine->coll_seq, field, a, c->rank, b, j);
            host_seg_error(c, ncclInvalidUsage, text);
            return host_fail(ncclInvalidUsage, "%s rank %d: %s", c->name, c->rank, text);
        }
    }
    return ncclSuccess;
}

/* Publishes `done = s` for this rank. Under the eager Broadcast a peer may wait for it (in
 * publish_step, after a step it did not wait for every rank in), and has then raised its
 * wants_done: only such a peer is rung. A ring for anyone else would only wake a rank that sleeps
 * until another step is published. The fence pairs with done_ready's. */
static void publish_done(host_comm *c, uint64_t s)
{
    atomic_store_explicit(&host_seg_rankp(&c->seg, c->rank)->done, s, memory_order_release);
    if (!c->bcast_eager)
        return;
    atomic_thread_fence(memory_order_seq_cst);
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && atomic_load_explicit(&host_seg_rankp(&c->seg, r)->wants_done, memory_order_relaxed))
            host_bell_ring(&host_seg_rankp(&c->seg, r)->bell);
}

/* Whether rank r has finished reading step s-2 (the last user of our buffer for step s). Before
 * reporting "not yet", raise our wants_done and look again, so that r's publish_done either
 * sees the flag or we see its `done`. A rank that left the communicator reads nothing any more,
 * whatever its `done` says (an eager Broadcast root leaves without publishing the `done` it held
 * back): its departure allows the reuse
 * (docs/host-backend.md#what-a-departure-means-for-a-peers-call). */
static int done_ready(host_comm *c, int r, uint64_t s)
{
    host_seg_rank *mine = host_seg_rankp(&c->seg, c->rank);
    _Atomic uint64_t *done = &host_seg_rankp(&c->seg, r)->done;
    if (atomic_load_explicit(done, memory_order_acquire) + 2 >= s)
        return 1;
    atomic_store_explicit(&mine->wants_done, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(done, memory_order_acquire) + 2 >= s || host_peer_left(c, r);
}

/* Whether rank r has published step s. In a pass that checks departures (b->check_gone), a rank
 * that has not is asked whether it is gone, then looked at again: only a step still missing
 * after its departure was seen is one it never provided. */
static int step_published(host_comm *c, int r, uint64_t s, host_blocked *b, const char *opname)
{
    _Atomic uint64_t *seq = &host_seg_slot(&c->seg, r, s)->seq;
    if (atomic_load_explicit(seq, memory_order_acquire) == s)
        return 1;
    if (host_blocked_check(b, c, r)) {
        if (atomic_load_explicit(seq, memory_order_acquire) == s)
            return 1;
        host_blocked_gone(b, r, opname);
    }
    return 0;
}

/* An eager Broadcast root's unchecked step (c->bcast_unchecked): once every peer has published
 * it, compare their descriptors with ours and publish `done`. A peer cannot have moved past that
 * step's buffer meanwhile: it needs our `done` for that. *ready: settled (or nothing to settle). */
ncclResult_t host_coll_settle(host_comm *c, int *ready, host_blocked *b)
{
    uint64_t s = c->bcast_unchecked;
    ncclResult_t rc;
    *ready = 1;
    if (s == 0)
        return ncclSuccess;
    for (int r = 0; r < c->nranks && (*ready || b->check_gone); r++) {
        if (step_published(c, r, s, b, host_kind_name(HOST_K_BROADCAST)) || !*ready)
            continue;
        b->peer = r;
        b->what = "its contribution to an earlier Broadcast";
        *ready = 0;
    }
    if (!*ready)
        return ncclSuccess;
    c->bcast_unchecked = 0;
    if (HOST_FAILED(rc = check_descriptors(c, s, host_kind_name(HOST_K_BROADCAST), 0)))
        return rc;
    publish_done(c, s);
    return ncclSuccess;
}

/* Phase 0: copies our contribution to the next step into our buffer, writes the descriptor and
 * publishes it; *ready 0 while the buffer may still be read (only after an eager Broadcast, when
 * a rank did not wait for every peer). */
static ncclResult_t publish_step(host_comm *c, host_coll_run *run, int *ready, host_blocked *b)
{
    int n = c->nranks, me = c->rank;
    host_opd *op = run->op;
    uint64_t s = c->step + 1;
    host_slot_hdr *sh = host_seg_slot(&c->seg, me, s);
    ncclResult_t rc = host_coll_settle(c, ready, b);
    if (rc != ncclSuccess || !*ready)
        return rc;
    /* Our buffer for step s last held step s-2, which every rank finished reading before it
     * published s-1: seen by every rank that waited for all of step s-1, checked here. */
    for (int r = 0; r < n; r++) {
        if (!done_ready(c, r, s)) {
            b->peer = r;
            b->what = "the previous collective step to be read";
            *ready = 0;
            return ncclSuccess;
        }
    }
    atomic_store_explicit(&host_seg_rankp(&c->seg, me)->wants_done, 0, memory_order_relaxed);
    if (!run->direct)
        publish_data(c, run, host_seg_slot_data(&c->seg, me, s));
    sh->coll_seq = run->coll_seq;
    sh->kind = (int32_t)op->kind;
    sh->datatype = (int32_t)op->datatype;
    sh->opkind = op->opkind;
    sh->root = op->root;
    sh->count = op->kind == HOST_K_ALLTOALLV ? 0 : op->count;
    sh->stepi = run->stepi;
    sh->nsteps = run->nsteps;
    memcpy(sh->scalar, run->scalar, sizeof sh->scalar);
    sh->src = (uint64_t)(uintptr_t)op->sendbuff;
    sh->dst = (uint64_t)(uintptr_t)op->recvbuff;
    sh->direct = run->direct;
    atomic_store_explicit(&sh->seq, s, memory_order_release);
    c->step = s;
    run->s = s;
    if (run->s_first == 0)
        run->s_first = s;
    for (int r = 0; r < n; r++)
        if (r != me)
            host_bell_ring(&host_seg_rankp(&c->seg, r)->bell);
    return ncclSuccess;
}

/* Whether every rank we wait for in step run->s has published it: every rank, except under the
 * eager Broadcast (segment path), where a non-root waits for the root only and the root for
 * nobody (docs/host-backend.md#broadcast-without-a-barrier). A pass that checks departures looks
 * at every missing rank, not only the first. */
static int step_arrived(host_comm *c, const host_coll_run *run, host_blocked *b)
{
    int eager = c->bcast_eager && !run->direct && run->op->kind == HOST_K_BROADCAST, arrived = 1;
    for (int r = 0; r < c->nranks && (arrived || b->check_gone); r++) {
        if ((eager && r != run->op->root) || step_published(c, r, run->s, b, run->op->name) || !arrived)
            continue;
        b->peer = r;
        b->what = "its contribution to the collective";
        arrived = 0;
    }
    return arrived;
}

/* Whether every rank has published step s. */
static int step_arrived_all(host_comm *c, uint64_t s)
{
    for (int r = 0; r < c->nranks; r++)
        if (atomic_load_explicit(&host_seg_slot(&c->seg, r, s)->seq, memory_order_acquire) != s)
            return 0;
    return 1;
}

ncclResult_t host_coll_progress(host_comm *c, host_coll_run *run, int *progress, int *done, host_blocked *b)
{
    ncclResult_t rc;
    int n = c->nranks, me = c->rank, ready, eager, all;
    host_opd *op = run->op;
    b->opname = op->name;
    for (;;) {
        if (run->phase == 2) {
            /* Single copy: our buffers are free once every peer has finished reading them, or
             * has left (then it reads nothing any more). */
            for (int r = 0; r < n; r++) {
                if (atomic_load_explicit(&host_seg_rankp(&c->seg, r)->done, memory_order_acquire) < run->s &&
                    !host_peer_left(c, r)) {
                    b->peer = r;
                    b->what = "peers to finish reading this rank's buffers";
                    return ncclSuccess;
                }
            }
            *done = 1;
            return ncclSuccess;
        }
        if (run->phase == 0) {
            if (HOST_FAILED(rc = publish_step(c, run, &ready, b)) || !ready)
                return rc;
            run->phase = 1;
            *progress = 1;
            if (!run->direct)
                own_block(c, run);
        }
        if (!step_arrived(c, run, b))
            return ncclSuccess;
        /* Eager Broadcast: the peers that have arrived are checked now, the root's missing ones
         * at its next call (host_coll_settle). */
        eager = c->bcast_eager && !run->direct && op->kind == HOST_K_BROADCAST;
        all = !eager || step_arrived_all(c, run->s); /* before the check: it covers these */
        if (HOST_FAILED(rc = check_descriptors(c, run->s, op->name, !all)))
            return rc;
        rc = run->direct ? host_coll_direct_consume(c, run) : consume(c, run);
        if (rc != ncclSuccess) {
            host_seg_error(c, rc, host_last_error());
            return rc;
        }
        if (!all && me == op->root)
            c->bcast_unchecked = run->s; /* our `done` waits for the check */
        else
            publish_done(c, run->s);
        *progress = 1;
        run->stepi++;
        run->phase = 0;
        if (run->stepi >= run->nsteps) {
            if (!run->direct) {
                *done = 1;
                return ncclSuccess;
            }
            for (int r = 0; r < n; r++)
                if (r != me)
                    host_bell_ring(&host_seg_rankp(&c->seg, r)->bell);
            run->phase = 2;
        }
    }
}
