/* The per-communicator worker thread and its task FIFO (docs/host-backend.md#execution-worker-thread-or-inline).
 *
 * The tasks of a communicator run in submission order: the bootstrap (INIT), groups of
 * communication ops (OPS), split/shrink jobs, finalize. Why a worker: one thread's group may hold
 * several ranks' communicators that must progress at the same time, and nonblocking communicators
 * need progress that never depends on the polling thread. A blocking communicator's OPS task that
 * would find its worker idle runs on the calling thread instead (host_task_try_inline): the same
 * code, two thread wakeups cheaper.
 *
 * An OPS task is driven by host_run_ops: every p2p op and the current collective are advanced in
 * non-blocking steps; when none can move, the thread sleeps on its rank's doorbell in the segment
 * (an event count rung by peers, the monitor and abort), with a deadline that restarts whenever
 * something moves. No lock is held while waiting for a peer.
 *
 * Before it sleeps, a thread may spin: poll the same non-blocking steps for a short window, since
 * a futex sleep and wakeup cost more than a whole small collective, and a spinning rank is not a
 * registered sleeper, so its peers also skip the wake syscall. Only communicators whose ranks do
 * not outnumber their CPUs spin (transport.c decides, once); oversubscribed, a spinning rank would
 * take the CPU from the peer it waits for, so there the wait goes straight to the futex.
 *
 * A rank does not spin either while the peer it waits for last ran on its own CPU (each rank
 * records its CPU in the segment when it begins to wait): on a machine loaded by other work the
 * scheduler often queues the two on one CPU, and there a spin only delays the peer.
 *
 * The window adapts per communicator (spin_adapt), by how a wait ends: one that a spin ended, or
 * that ended soon after the window (a near miss: within twice the longest window), doubles it up
 * to NCCL_HOST_SPIN_US (default HOST_SPIN_DEFAULT_US); one much longer than that halves it down
 * to HOST_SPIN_FLOOR_NS. Ranks calling collectives back to back meet within microseconds, so
 * there the window stays long and waits end without a sleep; a rank whose peers are busy
 * elsewhere for long stretches soon spins only briefly before each sleep. A spin ends at once on
 * abort; a rank waiting longer than the window sleeps and uses no CPU.
 *
 * A wait that does not spin yields instead (ops_poll): it polls with a sched_yield() between
 * passes for up to NCCL_HOST_YIELD_US after the wait began, then sleeps. Oversubscribed, the rank
 * waited for is usually runnable but without a CPU, and yielding hands it ours at the cost of one
 * syscall, where a sleep costs a futex wait, a wake syscall from each peer that publishes, and two
 * context switches. Bounded, so an idle rank still sleeps.
 *
 * A task whose ops each move at most HOST_YIELD_SMALL_BYTES waits for its peers' calls, not for
 * their copies, and with several ranks per CPU that wait is a few of their turns on the CPU: longer
 * than NCCL_HOST_YIELD_US once a call costs some microseconds of Python (torch.distributed's),
 * and a rank that then sleeps pulls every other one into sleeps and wakeups (docs/host-backend.md
 * #execution-worker-thread-or-inline). Its yield window adapts per communicator as the spin
 * window does, from NCCL_HOST_YIELD_SMALL_US down to NCCL_HOST_YIELD_US, so a rank whose peers
 * are busy for long still sleeps soon. Larger tasks keep the short window: there the peers copy,
 * and a rank that keeps yielding holds a CPU the scheduler would otherwise give to a copier. */
#include <errno.h>
#include <fenv.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_host.h"

void host_task_free(host_task *t)
{
    if (t == NULL)
        return;
    while (t->ops != NULL) {
        host_opd *o = t->ops;
        t->ops = o->next;
        free(o->v);
        free(o);
    }
    if (t->split != NULL)
        free(t->split->exclude);
    free(t->split);
    free(t);
}

/* Work cancelled by revoke/shrink-abort does not make the communicator fail by itself; neither
 * does a failed grow, whose failure belongs to the communicator it was building (grow.c). */
static void task_outcome(host_comm *c, const host_task *t, ncclResult_t rc)
{
    if (rc != ncclSuccess && t->kind != HOST_TASK_GROW &&
        !(rc == ncclInvalidUsage && t->epoch < atomic_load_explicit(&c->cancel_epoch, memory_order_seq_cst)))
        host_comm_set_error(c, rc);
}

static void *worker_main(void *arg)
{
    host_comm *c = arg;
    int exiting = 0;
    /* A process may run with flush-to-zero or another rounding mode set by a fast-math library;
     * reductions must not depend on it (docs/host-backend.md#reductions-and-numerics). */
    fesetenv(FE_DFL_ENV);
    host_log_set_rank(c->rank);
    while (!exiting) {
        host_task *t;
        ncclResult_t rc = ncclSuccess;
        pthread_mutex_lock(&c->lock);
        /* Idle: waiting for our own API threads, not for a peer; no deadline applies. While an
         * API thread runs a task inline, later tasks wait for it (FIFO order). */
        while (c->q_head == NULL || c->inline_busy)
            pthread_cond_wait(&c->cv, &c->lock);
        t = c->q_head;
        c->q_head = t->next;
        if (c->q_head == NULL)
            c->q_tail = NULL;
        c->worker_busy = 1;
        pthread_mutex_unlock(&c->lock);

        switch (t->kind) {
        case HOST_TASK_INIT: rc = host_run_init(c); break;
        case HOST_TASK_OPS: rc = host_run_ops(c, t); break;
        case HOST_TASK_SPLIT:
        case HOST_TASK_SHRINK: rc = host_run_split(c, t); break;
        case HOST_TASK_GROW: rc = host_run_grow(c, t); break;
        case HOST_TASK_FINALIZE: rc = host_run_finalize(c); break;
        case HOST_TASK_EXIT: exiting = 1; break;
        }
        task_outcome(c, t, rc);

        pthread_mutex_lock(&c->lock);
        t->result = rc;
        t->done = 1;
        c->inflight--;
        c->worker_busy = 0;
        if (t->kind == HOST_TASK_INIT && rc == ncclSuccess)
            c->phase = HOST_PHASE_READY;
        if (t->kind == HOST_TASK_FINALIZE && rc == ncclSuccess)
            c->phase = HOST_PHASE_FINALIZED;
        if (exiting)
            c->worker_started = 2; /* exited: host_worker_stop may join */
        pthread_cond_broadcast(&c->cv);
        if (t->detached) {
            pthread_mutex_unlock(&c->lock);
            host_task_free(t);
        } else {
            pthread_mutex_unlock(&c->lock);
        }
    }
    return NULL;
}

ncclResult_t host_worker_start(host_comm *c)
{
    ncclResult_t rc;
    pthread_mutex_lock(&c->lock);
    if (c->worker_started) {
        pthread_mutex_unlock(&c->lock);
        return ncclSuccess;
    }
    c->worker_started = 1;
    pthread_mutex_unlock(&c->lock);
    rc = host_thread_create(&c->worker, worker_main, c, 0);
    if (rc != ncclSuccess) {
        pthread_mutex_lock(&c->lock);
        c->worker_started = 0;
        pthread_mutex_unlock(&c->lock);
    }
    return rc;
}

ncclResult_t host_task_submit(host_comm *c, host_task *t)
{
    t->next = NULL;
    t->done = 0;
    t->epoch = atomic_load_explicit(&c->cancel_epoch, memory_order_seq_cst);
    pthread_mutex_lock(&c->lock);
    if (c->q_tail != NULL)
        c->q_tail->next = t;
    else
        c->q_head = t;
    c->q_tail = t;
    c->inflight++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->lock);
    return ncclSuccess;
}

ncclResult_t host_task_wait(host_comm *c, host_task *t)
{
    ncclResult_t rc;
    pthread_mutex_lock(&c->lock);
    /* The worker ends every task by itself: each of its waits has the deadline, and abort wakes
     * it. This wait needs no deadline of its own. */
    while (!t->done)
        pthread_cond_wait(&c->cv, &c->lock);
    rc = t->result;
    pthread_mutex_unlock(&c->lock);
    host_task_free(t);
    return rc;
}

/* Runs an OPS task in the default floating-point environment (docs/host-backend.md#reductions-and-numerics), then
 * gives the
 * calling thread its own back, exception flags included. On x86-64 the engine's arithmetic is
 * SSE only (no long double), so when MXCSR already holds the defaults (round to nearest, every
 * exception masked, no flush-to-zero, no denormals-are-zero) saving and restoring MXCSR is the
 * whole job: fegetenv/fesetenv also store and load the x87 environment, which on some virtual
 * machines costs more than the rest of a small call. Elsewhere fegetenv/fesetenv are the whole
 * environment and cheap: on aarch64 fenv_t is FPCR (rounding, flush-to-zero FZ, default NaN) and
 * FPSR (the flags), and FE_DFL_ENV clears FZ, so a caller's flush-to-zero never reaches a
 * reduction (tests/host/test_reduce_kernels.py). */
static ncclResult_t run_ops_default_fenv(host_comm *c, host_task *t)
{
    fenv_t env;
    ncclResult_t rc;
#if defined(__x86_64__)
    unsigned int mxcsr = __builtin_ia32_stmxcsr();
    if ((mxcsr & ~0x3fu) == 0x1f80u) { /* the low six bits are the exception flags */
        rc = host_run_ops(c, t);
        __builtin_ia32_ldmxcsr(mxcsr);
        return rc;
    }
#endif
    fegetenv(&env);
    fesetenv(FE_DFL_ENV);
    rc = host_run_ops(c, t);
    fesetenv(&env);
    return rc;
}

/* The handoff to the worker costs two thread wakeups per blocking call (the worker's, then the
 * caller's), which dominated small-message latency; a blocking call with an idle worker gains
 * nothing from it. So the calling thread runs the task itself, through the same host_run_ops.
 * What the worker thread provides is reproduced here: the default floating-point environment
 * (docs/host-backend.md#reductions-and-numerics) and the log prefix rank, both restored afterwards. Abort,
 * revoke, peer death and
 * errors reach this thread as they reach the worker: by the comm's flags and its rank's doorbell,
 * which host_comm_wake rings; the caller is pinned (in-API count), so abort waits for it to
 * leave. Nonblocking comms and groups over several comms always use the workers
 * (docs/host-backend.md#execution-worker-thread-or-inline). */
int host_task_try_inline(host_comm *c, host_task *t, ncclResult_t *rc)
{
    int log_rank;
    pthread_mutex_lock(&c->lock);
    if (!c->blocking || t->kind != HOST_TASK_OPS || c->worker_started != 1 || c->q_head != NULL ||
        c->worker_busy || c->inline_busy) {
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    c->inline_busy = 1;
    c->inflight++;
    pthread_mutex_unlock(&c->lock);
    t->next = NULL;
    t->done = 0;
    t->epoch = atomic_load_explicit(&c->cancel_epoch, memory_order_seq_cst);

    log_rank = host_log_get_rank();
    host_log_set_rank(c->rank);
    *rc = run_ops_default_fenv(c, t);
    host_log_set_rank(log_rank);
    task_outcome(c, t, *rc);

    pthread_mutex_lock(&c->lock);
    t->result = *rc;
    t->done = 1;
    c->inflight--;
    c->inline_busy = 0;
    /* Only the worker waits for inline_busy to clear, and only with a task queued (finalize from
     * another thread, say): waking it otherwise costs a futex wake and two context switches per
     * call for nothing. */
    if (c->q_head != NULL)
        pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->lock);
    return 1;
}

void host_worker_stop(host_comm *c, int64_t deadline)
{
    host_task *t;
    int started;
    pthread_mutex_lock(&c->lock);
    started = c->worker_started;
    pthread_mutex_unlock(&c->lock);
    if (!started)
        return;
    t = calloc(1, sizeof *t);
    if (t != NULL) {
        t->kind = HOST_TASK_EXIT;
        t->detached = 1;
        host_task_submit(c, t);
    }
    pthread_mutex_lock(&c->lock);
    while (c->worker_started != 2) {
        if (t == NULL || host_cond_wait(&c->cv, &c->lock, deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&c->lock);
            HOST_WARN("%s rank %d: worker thread did not stop before the deadline; leaving it detached", c->name,
                      c->rank);
            pthread_detach(c->worker);
            c->worker_started = 3; /* leaked on purpose: it may still touch the communicator */
            return;
        }
    }
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->worker, NULL);
    c->worker_started = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* OPS tasks                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* A peer that aborted or died, preferring one that died: a rank that aborted may have done so
 * because of that death. A peer that left is not one: it fails only the ops that still need
 * something from it (host_blocked.gone). */
static int any_peer_lost(host_comm *c, int *who)
{
    *who = -1;
    for (int r = 0; r < c->nranks; r++) {
        if (r == c->rank || !host_peer_is_gone(c, r) || host_peer_left(c, r))
            continue;
        if (*who < 0 || atomic_load_explicit(&c->peers[r].gone, memory_order_seq_cst) == HOST_PEER_DEAD)
            *who = r;
    }
    return *who >= 0;
}

/* Nothing could move, after a pass that checked departures (b->check_gone): is there a reason it
 * never will? An error another rank recorded, a cancellation, the communicator's own error, a
 * peer that aborted or died (the communicator is broken: every op fails at once), or a peer that
 * left without providing what an op still needs (only that op's need fails it;
 * docs/host-backend.md#what-a-departure-means-for-a-peers-call). */
static ncclResult_t stuck_check(host_comm *c, host_task *t, const host_blocked *b)
{
    host_seg_header *h = c->seg.hdr;
    uint32_t code = atomic_load_explicit(&h->error_code, memory_order_acquire);
    ncclResult_t err;
    int who;
    if (code != 0) {
        host_comm_note_cause(c, h->error_cause);
        return host_fail((ncclResult_t)code, "%s rank %d: %s failed: %s", c->name, c->rank,
                         b->opname ? b->opname : "operation", h->error_text);
    }
    if (t->epoch < atomic_load_explicit(&c->cancel_epoch, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s rank %d: %s cancelled by ncclCommRevoke or ncclCommShrink(NCCL_SHRINK_ABORT)", c->name,
                         c->rank, b->opname ? b->opname : "operation");
    err = host_comm_error(c);
    if (err != ncclSuccess) {
        char why[220];
        return host_fail(err, "%s rank %d: %s failed: communicator is in error (%s)%s", c->name, c->rank,
                         b->opname ? b->opname : "operation", host_error_string(err),
                         host_comm_error_why(c, why, sizeof why));
    }
    if (any_peer_lost(c, &who))
        return host_fail_peer_gone(c, b->opname ? b->opname : "operation", who);
    if (b->gone >= 0)
        return host_fail_peer_gone(c, b->gone_op ? b->gone_op : "operation", b->gone);
    return ncclSuccess;
}

typedef struct {
    host_p2p_run run;
    int next;        /* next op with the same (peer, direction), -1 at the end */
} p2p_slot;

/* Shortest adaptive spin window: longer than the jitter of a peer's call path. */
#define HOST_SPIN_FLOOR_NS 4000

/* Bytes per op up to which a task's waits yield for the longer, adaptive window (see the file
 * comment): the sizes whose waits are for the peers' calls rather than for their copies. */
#define HOST_YIELD_SMALL_BYTES 65536

/* The progress loop's clock: when something last moved, the deadline that follows from it, when
 * the current wait began (0: not waiting), whether it has slept and whether it yielded. */
typedef struct {
    int64_t last, deadline, wait_start;
    int slept, yielded;
} ops_clock;

/* A window after a wait that lasted `waited`: doubled when the wait ended within the polling or
 * soon after it (within twice the longest window, a near miss), halved after a longer one, kept
 * within [lo, hi]. */
static int64_t window_adapt(int64_t w, int64_t waited, int slept, int64_t lo, int64_t hi)
{
    w = !slept || waited <= 2 * hi ? 2 * w : w / 2;
    return w < lo ? lo : w > hi ? hi : w;
}

/* The current wait (none when k->wait_start is 0) has ended: adapt the spin window and, for a
 * small task that yielded, the yield window (see the file comment), and reset the wait. */
static void wait_adapt(host_comm *c, int small, ops_clock *k)
{
    int64_t waited;
    if (k->wait_start == 0)
        return; /* most calls: nothing waited, so no clock read */
    waited = host_now_ns() - k->wait_start;
    if (c->spin_max_ns > 0)
        c->spin_ns = window_adapt(c->spin_ns, waited, k->slept,
                                  c->spin_max_ns < HOST_SPIN_FLOOR_NS ? c->spin_max_ns : HOST_SPIN_FLOOR_NS,
                                  c->spin_max_ns);
    if (small && k->yielded)
        c->yield_small_ns = window_adapt(c->yield_small_ns, waited, k->slept, c->yield_ns, c->yield_small_max_ns);
    k->wait_start = 0;
    k->slept = k->yielded = 0;
}

/* Whether to spin now: allowed, and the peer we wait for did not last run on our CPU. Records
 * our CPU for the peers' same question. */
static int spin_now(host_comm *c, const host_blocked *b)
{
    int cpu = sched_getcpu();
    atomic_store_explicit(&host_seg_rankp(&c->seg, c->rank)->cpu, cpu, memory_order_relaxed);
    if (b->peer < 0 || b->peer == c->rank || cpu < 0)
        return 1;
    return atomic_load_explicit(&host_seg_rankp(&c->seg, b->peer)->cpu, memory_order_relaxed) != cpu;
}

static ncclResult_t self_p2p(host_comm *c, host_opd *ops)
{
    /* Self send/recv: the k-th self send of the task matches its k-th self recv (docs/host-backend.md#groups). */
    host_opd *s = ops, *r = ops;
    for (;;) {
        while (s != NULL && !(s->kind == HOST_K_SEND && s->peer == c->rank))
            s = s->next;
        while (r != NULL && !(r->kind == HOST_K_RECV && r->peer == c->rank))
            r = r->next;
        if (s == NULL && r == NULL)
            return ncclSuccess;
        if (s == NULL || r == NULL)
            return host_fail(ncclInvalidUsage, "%s rank %d: unmatched self %s: a send to and a receive from oneself "
                             "must be in the same group", c->name, c->rank, s ? "ncclSend" : "ncclRecv");
        if (s->count != r->count || s->datatype != r->datatype)
            return host_fail(ncclInvalidUsage, "%s rank %d: self send of %zu x %s does not match self receive of "
                             "%zu x %s", c->name, c->rank, s->count, host_type_name(s->datatype), r->count,
                             host_type_name(r->datatype));
        if (s->count > 0 && r->recvbuff != s->sendbuff)
            memmove(r->recvbuff, s->sendbuff, s->count * host_type_size(s->datatype));
        s = s->next;
        r = r->next;
    }
}

/* An OPS task in progress: its p2p ops chained per (peer, direction), and the current
 * collective. */
typedef struct {
    int n, np;
    p2p_slot *ps;
    int *head;            /* per peer: [0,n) sends, [n,2n) recvs; -1 when that chain is done */
    host_opd *coll;       /* current collective, NULL when all collectives are done */
    int settle;           /* the task has no collective: it settles an eager Broadcast's checks */
    host_coll_run crun;
    host_opd *rma;        /* current one-sided op (rma.c), NULL when they are all done */
    int small;            /* every op moves at most HOST_YIELD_SMALL_BYTES (task_is_small) */
} ops_state;

/* Whether every op of t moves at most HOST_YIELD_SMALL_BYTES: its count times its datatype's
 * size (the count it was called with: per rank for AllGather, per peer for AlltoAll), an
 * AlltoAllv its largest send count. */
static int task_is_small(const host_task *t)
{
    for (const host_opd *o = t->ops; o != NULL; o = o->next) {
        size_t count = o->count;
        if (o->kind == HOST_K_ALLTOALLV)
            for (size_t i = 0; o->v != NULL && i < o->nv / 4; i++)
                count = o->v[i] > count ? o->v[i] : count;
        size_t size = host_type_size(o->datatype);
        if (count > HOST_YIELD_SMALL_BYTES / (size > 0 ? size : 1))
            return 0;
    }
    return 1;
}

/* The next op from o on (o included) that is a collective, or a one-sided op. */
static host_opd *next_coll(host_opd *o)
{
    while (o != NULL && !host_kind_is_coll(o->kind))
        o = o->next;
    return o;
}

static host_opd *next_rma(host_opd *o)
{
    while (o != NULL && !host_kind_is_rma(o->kind))
        o = o->next;
    return o;
}

/* Takes what a stuck op waits for into the pass's b: the whole of it when `first` (what the
 * deadline message names), and in any case the first peer found gone with a need unmet. */
static void blocked_merge(host_blocked *b, const host_blocked *op, int first)
{
    int gone = b->gone;
    const char *gone_op = b->gone_op;
    if (first) {
        b->peer = op->peer;
        b->what = op->what;
        b->opname = op->opname;
    }
    b->gone = gone >= 0 ? gone : op->gone;
    b->gone_op = gone >= 0 ? gone_op : op->gone_op;
}

/* One non-blocking pass over every chain and the collective sequence. *pending: something is
 * left; *progress: something moved; *b: what the first stuck op waits for. */
static ncclResult_t ops_pass(host_comm *c, ops_state *st, int *progress, int *pending, host_blocked *b)
{
    ncclResult_t rc;
    for (int q = 0; q < 2 * st->n && st->np > 0; q++) {
        while (st->head[q] >= 0) {
            int done = 0, moved = 0;
            host_blocked pb = host_blocked_init(b->check_gone);
            if (HOST_FAILED(rc = host_p2p_progress(c, &st->ps[st->head[q]].run, &moved, &done, &pb)))
                return rc;
            *progress |= moved;
            if (!done) {
                blocked_merge(b, &pb, b->peer < 0);
                *pending = 1;
                break;
            }
            st->head[q] = st->ps[st->head[q]].next;
        }
    }
    if (st->settle && c->bcast_unchecked != 0) {
        /* A task without a collective still reports an eager Broadcast's mismatch (coll.c). */
        int ready;
        host_blocked sb = host_blocked_init(b->check_gone);
        if (HOST_FAILED(rc = host_coll_settle(c, &ready, &sb)))
            return rc;
        *progress |= ready;
        if (!ready) {
            blocked_merge(b, &sb, b->peer < 0);
            *pending = 2 | *pending;
        }
    }
    while (st->rma != NULL) {
        int done = 0, moved = 0;
        host_blocked rb = host_blocked_init(b->check_gone);
        if (HOST_FAILED(rc = host_rma_progress(c, st->rma, &moved, &done, &rb)))
            return rc;
        *progress |= moved;
        if (!done) {
            blocked_merge(b, &rb, b->peer < 0);
            *pending = 1;
            break;
        }
        st->rma = next_rma(st->rma->next);
    }
    while (st->coll != NULL) {
        int done = 0, moved = 0;
        host_blocked cb = host_blocked_init(b->check_gone);
        if (HOST_FAILED(rc = host_coll_progress(c, &st->crun, &moved, &done, &cb)))
            return rc;
        *progress |= moved;
        if (!done) {
            blocked_merge(b, &cb, b->peer < 0 || b->what == NULL);
            *pending = 2 | *pending;
            break;
        }
        st->coll = next_coll(st->coll->next);
        if (st->coll != NULL) {
            rc = host_coll_begin(c, &st->crun, st->coll);
            if (rc != ncclSuccess) {
                st->coll = NULL;
                return rc;
            }
        }
    }
    return ncclSuccess;
}

/* A task that fails while peers may be reading its buffers (a single-copy collective whose step
 * every rank published and some peer has not finished, or a single-copy send whose receiver has
 * begun) hands them back to a caller that may free them at once; the peer's read would then
 * fail with EFAULT and blame a bad address. So the failure is recorded in the segment before we
 * return, and such a read reports it instead (host_direct_read). An abort reaches the peers as
 * ncclRemoteError, as an abort notice does. A failure while nobody can be reading (a rank that
 * never arrived, a receive never posted) records nothing: every rank reports its own. */
static void release_exposed(host_comm *c, ops_state *st, ncclResult_t rc)
{
    const char *what = NULL;
    uint32_t cause = atomic_load_explicit(&c->cause, memory_order_seq_cst);
    char text[256], how[128] = "";
    if (st->coll != NULL && host_coll_direct_exposed(c, &st->crun))
        what = st->coll->name;
    for (int i = 0; i < st->np && what == NULL; i++) {
        host_p2p_run *run = &st->ps[i].run;
        if (run->op->kind == HOST_K_SEND && host_p2p_direct_exposed(c, run))
            what = run->op->name;
    }
    if (what == NULL)
        return;
    if (cause != 0) /* the loss of a peer that made us give up travels with the reason */
        host_cause_text(c, cause, how, sizeof how);
    snprintf(text, sizeof text, "rank %d left a single-copy %s its peers may still be reading: %s%s%s%s", c->rank,
             what, host_error_string(rc), cause != 0 ? " (" : "", how, cause != 0 ? ")" : "");
    host_seg_error(c, rc == ncclInvalidUsage && atomic_load_explicit(&c->aborted, memory_order_seq_cst) ? ncclRemoteError : rc, text);
}

/* Whether t may run: the communicator is not aborted nor failed, no peer aborted, and t was not
 * cancelled. */
static ncclResult_t ops_admit(host_comm *c, const host_task *t)
{
    if (atomic_load_explicit(&c->aborted, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s rank %d: communicator aborted", c->name, c->rank);
    if (host_comm_error(c) != ncclSuccess)
        return host_comm_error(c);
    /* An aborted peer cancelled its side of everything: work that its stale, already published
     * contribution could still complete must fail instead (its abort marked the segment before
     * returning, so a call issued after it always sees this). */
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && atomic_load_explicit(&host_seg_rankp(&c->seg, r)->state, memory_order_acquire) == HOST_RANK_ABORTED)
            return host_fail_peer_gone(c, t->ops != NULL ? t->ops->name : "operation", r);
    if (t->epoch < atomic_load_explicit(&c->cancel_epoch, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s rank %d: cancelled by ncclCommRevoke or ncclCommShrink(NCCL_SHRINK_ABORT)", c->name,
                         c->rank);
    return ncclSuccess;
}

/* The task's p2p ops with a peer other than this rank, chained per (peer, direction) in issue
 * order. */
static ncclResult_t ops_chain_p2p(host_comm *c, host_task *t, ops_state *st)
{
    int n = st->n, *tail, i = 0;
    for (host_opd *o = t->ops; o != NULL; o = o->next)
        if (o->kind == HOST_K_SEND || o->kind == HOST_K_RECV)
            st->np += o->peer != c->rank;
    if (st->np == 0)
        return ncclSuccess;
    st->ps = calloc((size_t)st->np, sizeof *st->ps);
    st->head = malloc(sizeof(int) * 4 * (size_t)n);
    if (st->ps == NULL || st->head == NULL) {
        int np = st->np;
        st->np = 0; /* nothing is chained for release_exposed to look at */
        return host_fail(ncclSystemError, "out of memory scheduling %d p2p operations", np);
    }
    tail = st->head + 2 * n;
    for (int q = 0; q < 2 * n; q++)
        st->head[q] = tail[q] = -1;
    for (host_opd *o = t->ops; o != NULL; o = o->next) {
        int q;
        if ((o->kind != HOST_K_SEND && o->kind != HOST_K_RECV) || o->peer == c->rank)
            continue;
        q = o->peer + (o->kind == HOST_K_RECV ? n : 0);
        st->ps[i].run.op = o;
        st->ps[i].next = -1;
        if (tail[q] >= 0)
            st->ps[tail[q]].next = i;
        else
            st->head[q] = i;
        tail[q] = i;
        i++;
    }
    return ncclSuccess;
}

/* Window (de)registrations first, in issue order (collective exchanges over the mesh); then the
 * first one-sided op and the first collective. */
static ncclResult_t ops_begin(host_comm *c, host_task *t, ops_state *st)
{
    ncclResult_t rc = ncclSuccess;
    for (host_opd *o = t->ops; o != NULL; o = o->next)
        if (host_kind_is_win(o->kind) && HOST_FAILED(rc = host_win_run(c, o)))
            return rc;
    st->rma = next_rma(t->ops);
    st->coll = next_coll(t->ops);
    st->settle = st->coll == NULL;
    st->small = task_is_small(t);
    if (st->coll != NULL)
        (void)HOST_FAILED(rc = host_coll_begin(c, &st->crun, st->coll));
    return rc;
}

/* ops_pass from a clean slate; check_gone: the pass before sleeping, which also looks for peers
 * gone with a need unmet (host_blocked). */
static ncclResult_t ops_pass_fresh(host_comm *c, ops_state *st, int check_gone, int *progress, int *pending,
                                   host_blocked *b)
{
    *progress = *pending = 0;
    *b = host_blocked_init(check_gone);
    return ops_pass(c, st, progress, pending, b);
}

/* Polls the passes until something moves, up to window_ns after the wait began, pausing between
 * passes: a spin (host_cpu_relax) while a peer that is running may move soon (spin_now), or a
 * sched_yield for a wait that does not spin (ranks outnumber CPUs, or the peer last ran on our
 * CPU), so the rank we wait for can run here instead of us sleeping and being woken for each of
 * its steps. */
static ncclResult_t ops_poll(host_comm *c, ops_state *st, const ops_clock *k, int64_t window_ns, int yield,
                             int *progress, int *pending, host_blocked *b)
{
    ncclResult_t rc;
    int64_t until = k->wait_start + window_ns;
    do {
        if (yield)
            sched_yield();
        else
            host_cpu_relax();
        if (HOST_FAILED(rc = ops_pass_fresh(c, st, 0, progress, pending, b)))
            break;
    } while (!*progress && *pending && !atomic_load_explicit(&c->aborted, memory_order_seq_cst) && host_now_ns() < until);
    return rc;
}

/* Drives st until everything is done: pass, spin while that pays, else sleep on the bell until
 * a peer rings it or the deadline passes. */
static ncclResult_t ops_progress(host_comm *c, host_task *t, ops_state *st, ops_clock *k)
{
    const host_params_t *p = host_params();
    host_bell *bell = &host_seg_rankp(&c->seg, c->rank)->bell;
    ncclResult_t rc = ncclSuccess;
    for (;;) {
        host_blocked b;
        int progress, pending;
        uint32_t snap;
        if (atomic_load_explicit(&c->aborted, memory_order_seq_cst)) {
            rc = host_fail(ncclInvalidUsage, "%s rank %d: communicator aborted", c->name, c->rank);
            break;
        }
        if (HOST_FAILED(rc = ops_pass_fresh(c, st, 0, &progress, &pending, &b)))
            break;
        if (!progress && pending) {
            if (k->wait_start == 0)
                k->wait_start = host_now_ns();
            if (!k->slept && c->spin_ns > 0 && spin_now(c, &b)) {
                rc = ops_poll(c, st, k, c->spin_ns, 0, &progress, &pending, &b);
            } else if (!k->slept && c->yield_ns > 0) {
                k->yielded = 1;
                rc = ops_poll(c, st, k, st->small ? c->yield_small_ns : c->yield_ns, 1, &progress, &pending, &b);
            }
            if (HOST_FAILED(rc))
                break;
            if (!progress && pending && atomic_load_explicit(&c->aborted, memory_order_seq_cst))
                continue; /* reported at the top of the loop */
        }
        if (!progress && pending) {
            /* Nothing moved: register as a sleeper only now, then look once more before
             * sleeping, so peers skip the wake syscall whenever this rank is busy rather than
             * asleep. That look also checks departures: every departure rings the bell, so a
             * wait that sleeps past one has seen it here. */
            snap = host_bell_prepare(bell);
            rc = ops_pass_fresh(c, st, 1, &progress, &pending, &b);
            if (rc == ncclSuccess && pending && !progress &&
                (rc = stuck_check(c, t, &b)) == ncclSuccess) {
                k->slept = 1;
                if (host_bell_wait(bell, snap, k->deadline) == ETIMEDOUT) {
                    rc = host_fail(host_timeout_code(),
                                   "%s rank %d: %s timed out after %.1f s without progress, waiting for rank %d (%s)",
                                   c->name, c->rank, b.opname ? b.opname : "operation", host_elapsed_s(k->last),
                                   b.peer, b.what ? b.what : "?");
                    break;
                }
                continue;
            }
            host_bell_cancel(bell);
            if (rc != ncclSuccess)
                break;
        }
        /* Something moved, or nothing is left. */
        wait_adapt(c, st->small, k);
        if (!pending)
            break;
        k->last = host_now_ns();
        k->deadline = host_deadline_after(p->timeout_ns);
    }
    return rc;
}

ncclResult_t host_run_ops(host_comm *c, host_task *t)
{
    ops_clock k = {host_now_ns(), host_deadline_after(host_params()->timeout_ns), 0, 0, 0};
    ops_state st;
    ncclResult_t rc;
    memset(&st, 0, sizeof st);
    st.n = c->nranks;
    rc = ops_admit(c, t);
    if (rc == ncclSuccess)
        rc = self_p2p(c, t->ops);
    if (rc == ncclSuccess)
        rc = ops_chain_p2p(c, t, &st);
    if (rc == ncclSuccess)
        rc = ops_begin(c, t, &st);
    if (rc == ncclSuccess)
        rc = ops_progress(c, t, &st, &k);
    if (rc != ncclSuccess)
        release_exposed(c, &st, rc); /* a no-op before any op began */
    free(st.ps);
    free(st.head);
    return rc;
}

ncclResult_t host_settle_before_leaving(host_comm *c)
{
    host_task t;
    if (c->bcast_unchecked == 0)
        return ncclSuccess;
    memset(&t, 0, sizeof t);
    t.kind = HOST_TASK_OPS; /* no ops: the progress loop only settles (ops_state.settle) */
    t.epoch = atomic_load_explicit(&c->cancel_epoch, memory_order_seq_cst);
    return host_run_ops(c, &t);
}
