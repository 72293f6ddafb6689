/* The process-wide handle table and the state checks every call makes
 * (docs/host-backend.md#communicator-lifecycle, docs/host-backend.md#argument-checks).
 *
 * A handle (ncclComm_t) points to a small header that is never freed and never reused, kept in
 * a hash set. So a destroyed, foreign or garbage handle is recognised without dereferencing it:
 * membership is checked first, then the header's impl pointer (NULL once destroyed).
 * host_comm_enter also counts the threads inside the API on a communicator (inapi), so destroy
 * and abort can wait for them before freeing anything. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_host.h"

static pthread_mutex_t host_handles_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t host_handles_cv;          /* inapi reached its floor; with host_handles_lock */
static pthread_once_t host_handles_once = PTHREAD_ONCE_INIT;
static struct ncclComm **host_handles;          /* open-addressing set; guarded by host_handles_lock */
static size_t host_handles_cap, host_handles_len; /* guarded by host_handles_lock */

_Atomic uint64_t host_fork_gen;

static void handles_init(void)
{
    host_cond_init(&host_handles_cv);
}

static size_t slot_of(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static int set_contains(const struct ncclComm *h)
{
    if (host_handles_cap == 0)
        return 0;
    for (size_t i = slot_of(h, host_handles_cap);; i = (i + 1) & (host_handles_cap - 1)) {
        if (host_handles[i] == h)
            return 1;
        if (host_handles[i] == NULL)
            return 0;
    }
}

static void set_put(struct ncclComm **tab, size_t cap, struct ncclComm *h)
{
    size_t i = slot_of(h, cap);
    while (tab[i] != NULL)
        i = (i + 1) & (cap - 1);
    tab[i] = h;
}

ncclResult_t host_handle_new(host_comm *c, ncclComm_t *out)
{
    struct ncclComm *h = calloc(1, sizeof *h);
    pthread_once(&host_handles_once, handles_init);
    if (h == NULL)
        return host_fail(ncclSystemError, "out of memory allocating a communicator handle");
    h->magic = HOST_HANDLE_MAGIC;
    h->impl = c;
    pthread_mutex_lock(&host_handles_lock);
    if ((host_handles_len + 1) * 2 > host_handles_cap) {
        size_t ncap = host_handles_cap ? host_handles_cap * 2 : 64;
        struct ncclComm **nt = calloc(ncap, sizeof *nt);
        if (nt == NULL) {
            pthread_mutex_unlock(&host_handles_lock);
            free(h);
            return host_fail(ncclSystemError, "out of memory growing the handle table");
        }
        for (size_t i = 0; i < host_handles_cap; i++)
            if (host_handles[i] != NULL)
                set_put(nt, ncap, host_handles[i]);
        free(host_handles);
        host_handles = nt;
        host_handles_cap = ncap;
    }
    set_put(host_handles, host_handles_cap, h);
    host_handles_len++;
    pthread_mutex_unlock(&host_handles_lock);
    c->handle = h;
    *out = h;
    return ncclSuccess;
}

ncclResult_t host_comm_enter(ncclComm_t h, const char *fn, host_comm **out)
{
    host_comm *c;
    *out = NULL;
    if (h == NULL)
        return host_fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    pthread_mutex_lock(&host_handles_lock);
    if (!set_contains(h)) {
        pthread_mutex_unlock(&host_handles_lock);
        return host_fail(ncclInvalidArgument, "%s: %p is not a communicator created by this library", fn, (void *)h);
    }
    c = h->impl;
    if (c == NULL) {
        pthread_mutex_unlock(&host_handles_lock);
        return host_fail(ncclInvalidArgument, "%s: communicator %p was already destroyed or aborted", fn, (void *)h);
    }
    c->inapi++;
    pthread_mutex_unlock(&host_handles_lock);
    *out = c;
    return ncclSuccess;
}

void host_comm_leave(host_comm *c)
{
    pthread_mutex_lock(&host_handles_lock);
    if (--c->inapi <= 1)
        pthread_cond_broadcast(&host_handles_cv);
    pthread_mutex_unlock(&host_handles_lock);
}

ncclResult_t host_handle_kill(host_comm *c, int64_t deadline)
{
    ncclResult_t rc = ncclSuccess;
    pthread_mutex_lock(&host_handles_lock);
    c->handle->impl = NULL; /* from here on new calls get IA */
    while (c->inapi > 1) {
        if (host_cond_wait(&host_handles_cv, &host_handles_lock, deadline) == ETIMEDOUT) {
            rc = host_fail(host_timeout_code(),
                           "communicator %s rank %d: %d other thread(s) still inside a call after the deadline",
                           c->name, c->rank, c->inapi - 1);
            break;
        }
    }
    c->inapi--;
    pthread_mutex_unlock(&host_handles_lock);
    return rc;
}

/* fork: the child has none of our threads; every communicator created before the fork answers
 * IU there (docs/host-backend.md#robustness). The handle lock is taken across fork so the child never inherits it
 * locked. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&host_handles_lock);
}
static void fork_parent(void)
{
    pthread_mutex_unlock(&host_handles_lock);
}
void host_monitor_atfork_child(void);
static void fork_child(void)
{
    pthread_mutex_unlock(&host_handles_lock);
    atomic_fetch_add_explicit(&host_fork_gen, 1, memory_order_seq_cst);
    host_monitor_atfork_child();
    host_root_atfork_child();
    host_mem_atfork_child();
    host_win_atfork_child();
}

void host_fork_setup(void)
{
    pthread_once(&host_handles_once, handles_init);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---------------------------------------------------------------------------------------- */

ncclResult_t host_comm_error(host_comm *c)
{
    return (ncclResult_t)atomic_load_explicit(&c->error, memory_order_seq_cst);
}

void host_comm_wake(host_comm *c)
{
    pthread_mutex_lock(&c->lock);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->lock);
    if (c->seg.base != NULL)
        host_bell_ring(&host_seg_rankp(&c->seg, c->rank)->bell);
}

void host_comm_set_error(host_comm *c, ncclResult_t rc)
{
    host_comm_set_error_why(c, rc, NULL);
}

void host_comm_set_error_why(host_comm *c, ncclResult_t rc, const char *why)
{
    int expected = 0;
    uint32_t cause = atomic_load_explicit(&c->cause, memory_order_seq_cst);
    char text[sizeof c->error_why];
    if (rc == ncclSuccess || rc == ncclInProgress || rc == ncclInvalidArgument)
        return;
    if (why == NULL && cause != 0) /* an operation failed for a peer's loss: say which */
        why = host_cause_text(c, cause, text, sizeof text);
    pthread_mutex_lock(&c->lock);
    if (atomic_compare_exchange_strong_explicit(&c->error, &expected, (int)rc, memory_order_seq_cst, memory_order_seq_cst) && why != NULL)
        snprintf(c->error_why, sizeof c->error_why, "%s", why);
    pthread_mutex_unlock(&c->lock);
    host_comm_wake(c);
}

/* How peer r left, as this rank sees it (HOST_PEER_*): its own state word first, since it writes
 * that before sending its notice. The monitor's word is loaded before the state word, so that a
 * departure the monitor saw is also read from the state word (acquire), which orders whatever
 * the peer provided before it (docs/host-backend.md#memory-order). */
static int peer_departure(host_comm *c, int r)
{
    int g = atomic_load_explicit(&c->peers[r].gone, memory_order_seq_cst);
    uint32_t st = c->seg.base != NULL ? atomic_load_explicit(&host_seg_rankp(&c->seg, r)->state, memory_order_acquire) : HOST_RANK_ALIVE;
    if (st == HOST_RANK_ABORTED || g == HOST_PEER_ABORTED)
        return HOST_PEER_ABORTED;
    if (st == HOST_RANK_LEFT || g == HOST_PEER_LEFT)
        return HOST_PEER_LEFT;
    return g == HOST_PEER_DEAD ? HOST_PEER_DEAD : HOST_PEER_ALIVE;
}

int host_peer_is_gone(host_comm *c, int r)
{
    return peer_departure(c, r) != HOST_PEER_ALIVE;
}

int host_peer_left(host_comm *c, int r)
{
    return peer_departure(c, r) == HOST_PEER_LEFT;
}

uint32_t host_peer_cause(host_comm *c, int r)
{
    int how = peer_departure(c, r);
    if (how != HOST_PEER_ALIVE && c->seg.base != NULL) {
        /* A rank that failed because of a peer's loss published that first cause when it noted
         * it, before any departure (its state, then its notice, or its end of file): blame that. */
        uint32_t inherited = atomic_load_explicit(&host_seg_rankp(&c->seg, r)->cause, memory_order_acquire);
        int d = HOST_CAUSE_RANK(inherited);
        if (inherited != 0 && d != r && d != c->rank && d >= 0 && d < c->nranks)
            return inherited;
    }
    return HOST_CAUSE(r, how == HOST_PEER_ALIVE ? HOST_PEER_LEFT : how);
}

/* Whether this rank has aborted or left the communicator: what it published with its departure
 * is what its peers blame, so no later loss it notices (a thread still inside a call, the
 * monitor reading a peer's notice) may be recorded as its first cause. */
static int departed(host_comm *c)
{
    return atomic_load_explicit(&c->aborted, memory_order_seq_cst) ||
           (c->seg.base != NULL &&
            atomic_load_explicit(&host_seg_rankp(&c->seg, c->rank)->state, memory_order_relaxed) != HOST_RANK_ALIVE);
}

void host_comm_note_cause(host_comm *c, uint32_t cause)
{
    uint32_t none = 0;
    int d = HOST_CAUSE_RANK(cause), how = HOST_CAUSE_HOW(cause);
    if (cause != 0 && d >= 0 && d < c->nranks && how >= HOST_PEER_LEFT && how <= HOST_PEER_ABORTED && !departed(c) &&
        atomic_compare_exchange_strong_explicit(&c->cause, &none, cause, memory_order_seq_cst, memory_order_seq_cst) && c->seg.base != NULL)
        /* Published at once, so the peers blame it even if this process ends without leaving;
         * seq_cst, before whatever the failure makes this rank do next. */
        atomic_store_explicit(&host_seg_rankp(&c->seg, c->rank)->cause, cause, memory_order_release);
}

static const char *how_text(int how)
{
    switch (how) {
    case HOST_PEER_DEAD: return "died";
    case HOST_PEER_ABORTED: return "aborted";
    default: return "left the communicator (finalize/destroy)";
    }
}

const char *host_cause_text(host_comm *c, uint32_t cause, char *buf, size_t len)
{
    int d = HOST_CAUSE_RANK(cause);
    snprintf(buf, len, "peer rank %d (pid %u) %s", d, c->peers[d].pid, how_text(HOST_CAUSE_HOW(cause)));
    return buf;
}

const char *host_peer_gone_text(host_comm *c, int r, char *buf, size_t len)
{
    uint32_t cause = host_peer_cause(c, r);
    int d = HOST_CAUSE_RANK(cause), how = peer_departure(c, r);
    if (d == r)
        snprintf(buf, len, "%s", how_text(HOST_CAUSE_HOW(cause)));
    else
        snprintf(buf, len, "%s after rank %d (pid %u) %s", how_text(how), d, c->peers[d].pid,
                 how_text(HOST_CAUSE_HOW(cause)));
    return buf;
}

ncclResult_t host_fail_peer_gone(host_comm *c, const char *what, int r)
{
    char gone[160];
    host_comm_note_cause(c, host_peer_cause(c, r));
    return host_fail(ncclRemoteError, "%s rank %d: %s needs rank %d (pid %u), which %s", c->name, c->rank, what, r,
                     c->peers[r].pid, host_peer_gone_text(c, r, gone, sizeof gone));
}

const char *host_comm_error_why(host_comm *c, char *buf, size_t len)
{
    pthread_mutex_lock(&c->lock);
    snprintf(buf, len, "%s%s", c->error_why[0] ? ": " : "", c->error_why);
    pthread_mutex_unlock(&c->lock);
    return buf;
}

static ncclResult_t usable(host_comm *c, const char *fn, int allow_revoked)
{
    ncclResult_t err;
    int phase, inflight;
    if (c->fork_gen != atomic_load_explicit(&host_fork_gen, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s: communicator was created before fork(); it cannot be used in the child",
                         fn);
    if (atomic_load_explicit(&c->aborted, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s: communicator aborted", fn);
    err = host_comm_error(c);
    if (err != ncclSuccess) {
        char why[220];
        return host_fail(err, "%s: communicator %s rank %d is in an error state (%s) from an earlier failure%s", fn,
                         c->name, c->rank, host_error_string(err), host_comm_error_why(c, why, sizeof why));
    }
    pthread_mutex_lock(&c->lock);
    phase = c->phase;
    inflight = c->inflight;
    pthread_mutex_unlock(&c->lock);
    if (phase == HOST_PHASE_INIT || (inflight > 0 && !c->blocking)) /* BUSY: nonblocking comms only */
        return host_fail(ncclInvalidArgument, "%s: communicator used before the previous operation returned ncclSuccess",
                         fn);
    if (phase == HOST_PHASE_FINALIZED)
        return host_fail(ncclInvalidUsage, "%s: communicator was finalized", fn);
    if (atomic_load_explicit(&c->suspended, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s: communicator is suspended", fn);
    if (!allow_revoked && atomic_load_explicit(&c->revoked, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s: communicator was revoked (ncclCommRevoke)", fn);
    return ncclSuccess;
}

ncclResult_t host_comm_usable(host_comm *c, const char *fn)
{
    return usable(c, fn, 0);
}

ncclResult_t host_comm_usable_revoked(host_comm *c, const char *fn)
{
    return usable(c, fn, 1);
}
