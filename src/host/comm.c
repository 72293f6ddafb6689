/* Communicator lifecycle (docs/host-backend.md#communicator-lifecycle): create, init (blocking, nonblocking,
 * grouped, scalable, InitAll), finalize, destroy, abort, queries; split and shrink are in split.c.
 *
 * Every communicator has its own worker thread; the bootstrap itself runs there as the first
 * task, so blocking init, nonblocking init and inits grouped from one thread share one path.
 * Finalize and destroy are local (Differs from NCCL, docs/host-backend.md#communicator-lifecycle): peers learn
 * through a LEAVE
 * notice and the rank's state word in the segment; data this rank delivered stays receivable. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nccl_host.h"

static _Thread_local int host_device; /* ncclHostSetDevice */

ncclResult_t host_set_device(int dev)
{
    int nd = host_params()->num_devices;
    if (dev < 0 || dev >= nd)
        return host_fail(ncclInvalidArgument, "ncclHostSetDevice: device %d is outside [0, %d) "
                         "(NCCL_HOST_NUM_DEVICES)", dev, nd);
    host_device = dev;
    return ncclSuccess;
}

ncclResult_t host_get_device(int *dev)
{
    if (dev == NULL)
        return host_fail(ncclInvalidArgument, "ncclHostGetDevice: device is NULL");
    *dev = host_device;
    return ncclSuccess;
}

int host_current_device(void)
{
    return host_device;
}

/* ------------------------------------------------------------------------------------------ */

ncclResult_t host_comm_create(int nranks, int rank, const ncclConfig_t *cfg, host_comm **out)
{
    host_comm *c = calloc(1, sizeof *c);
    *out = NULL;
    if (c == NULL)
        return host_fail(ncclSystemError, "out of memory creating a communicator");
    pthread_mutex_init(&c->lock, NULL);
    host_cond_init(&c->cv);
    c->nranks = nranks;
    c->rank = rank;
    c->device = host_current_device();
    c->config = *cfg;
    c->blocking = cfg->blocking;
    if (cfg->commName != NULL)
        snprintf(c->name, sizeof c->name, "%s", cfg->commName);
    else
        snprintf(c->name, sizeof c->name, "comm");
    c->config.commName = NULL; /* the caller's string may not outlive the call */
    c->config.netName = NULL;
    c->fork_gen = atomic_load_explicit(&host_fork_gen, memory_order_seq_cst);
    c->phase = HOST_PHASE_INIT;
    c->listen_fd = -1;
    c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c->peers = calloc((size_t)nranks, sizeof *c->peers);
    c->send_pos = calloc((size_t)nranks, sizeof *c->send_pos);
    c->recv_pos = calloc((size_t)nranks, sizeof *c->recv_pos);
    if (c->wake_fd < 0 || c->peers == NULL || c->send_pos == NULL || c->recv_pos == NULL) {
        int e = errno;
        if (c->wake_fd >= 0)
            close(c->wake_fd);
        free(c->peers);
        free(c->send_pos);
        free(c->recv_pos);
        free(c);
        return host_fail(ncclSystemError, "cannot create a communicator: %s", strerror(e));
    }
    for (int j = 0; j < nranks; j++) {
        c->peers[j].fd = -1;
        pthread_mutex_init(&c->peers[j].send_lock, NULL);
    }
    *out = c;
    return ncclSuccess;
}

void host_comm_free(host_comm *c)
{
    if (c == NULL)
        return;
    host_redop_free_all(c);
    host_reg_free_all(c);
    host_win_free_all(c);
    while (c->mail != NULL) {
        host_mail *m = c->mail;
        c->mail = m->next;
        free(m);
    }
    for (int j = 0; j < c->nranks; j++) {
        host_sock_close(&c->peers[j].fd);
        pthread_mutex_destroy(&c->peers[j].send_lock);
    }
    host_sock_close(&c->listen_fd);
    host_sock_close(&c->wake_fd);
    host_transport_free(c);
    host_seg_unmap(&c->seg);
    free(c->peers);
    free(c->send_pos);
    free(c->recv_pos);
    free(c->extra_ids);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* Marks this rank gone in the segment and tells every peer, best effort, without waiting. */
static void announce_departure(host_comm *c, int abort)
{
    uint32_t want = abort ? HOST_RANK_ABORTED : HOST_RANK_LEFT;
    if (c->seg.base != NULL) {
        host_seg_rank *me = host_seg_rankp(&c->seg, c->rank);
        /* the first cause before the state: a peer that sees us aborted blames what we saw */
        atomic_store_explicit(&me->cause, atomic_load_explicit(&c->cause, memory_order_seq_cst), memory_order_relaxed);
        if (abort || atomic_load_explicit(&me->state, memory_order_relaxed) == HOST_RANK_ALIVE) /* our own word */
            atomic_store_explicit(&me->state, want, memory_order_release); /* publishes me->cause */
        for (int r = 0; r < c->nranks; r++)
            host_bell_ring(&host_seg_rankp(&c->seg, r)->bell);
    }
    for (int j = 0; j < c->nranks; j++)
        if (j != c->rank && c->peers[j].fd >= 0)
            (void)host_ctl_send(c, j, abort ? HOST_MSG_ABORT : HOST_MSG_LEAVE, 0, NULL, 0, host_now_ns(),
                                "sending the departure notice");
}

void host_comm_teardown(host_comm *c, int abort)
{
    int64_t deadline = host_deadline_after(host_params()->timeout_ns);
    host_worker_stop(c, deadline);
    if (c->worker_started == 3)
        return; /* the worker is stuck past the deadline: leak rather than free under it */
    host_monitor_remove(c);
    /* Destroy leaves at once, even as the root of an eager Broadcast whose peers have not all
     * arrived: what they need of it is published, and the reuse it still held back is allowed by
     * its departure (docs/host-backend.md#what-a-departure-means-for-a-peers-call). */
    if (abort || c->phase != HOST_PHASE_FINALIZED) /* finalize already announced it */
        announce_departure(c, abort);
    host_comm_free(c);
}

/* ------------------------------------------------------------------------------------------ */
/* Init                                                                                          */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t host_run_init(host_comm *c)
{
    ncclResult_t rc;
    if (atomic_load_explicit(&c->aborted, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s rank %d: communicator aborted during init", c->name, c->rank);
    if (HOST_FAILED(rc = host_sock_listen(host_params()->bind_addr, &c->listen_fd, &c->listen_port_be)))
        return rc;
    rc = host_bootstrap(c);
    host_sock_close(&c->listen_fd);
    if (rc == ncclSuccess)
        rc = host_transport_setup(c);
    return rc;
}

ncclResult_t host_comm_start(host_comm *c)
{
    ncclResult_t rc;
    host_task *t;
    if (HOST_FAILED(rc = host_worker_start(c)))
        return rc;
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return host_fail(ncclSystemError, "out of memory");
    t->kind = HOST_TASK_INIT;
    t->detached = 1;
    return host_task_submit(c, t);
}

ncclResult_t host_comm_wait_init(host_comm *c)
{
    ncclResult_t rc;
    pthread_mutex_lock(&c->lock);
    /* The INIT task ends by itself (its waits have the deadline; abort wakes them). An error
     * while it runs (a peer that finished its init and died at once, seen by the monitor) does
     * not decide the outcome: the task does, and a later failure stays for the next call. */
    while (c->phase == HOST_PHASE_INIT && (atomic_load_explicit(&c->error, memory_order_seq_cst) == 0 || c->worker_busy))
        pthread_cond_wait(&c->cv, &c->lock);
    rc = c->phase == HOST_PHASE_READY ? ncclSuccess : host_comm_error(c);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* Puts a communicator whose init never ran (a discarded group) into ERROR(rc). */
static void force_error(host_comm *c, ncclResult_t rc)
{
    int expected = 0;
    atomic_compare_exchange_strong_explicit(&c->error, &expected, (int)rc, memory_order_seq_cst, memory_order_seq_cst);
    host_comm_wake(c);
}

ncclResult_t host_init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *ids, int nids, int rank,
                            const ncclConfig_t *config, const char *fn)
{
    ncclResult_t rc;
    (void)host_params();
    if (comm == NULL)
        return host_fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    *comm = NULL;
    for (int i = 0; i < nids; i++)
        if (HOST_FAILED(rc = host_id_check(&ids[i], fn)))
            return rc;
    return host_init_checked(comm, nranks, ids, nids, rank, config, fn);
}

ncclResult_t host_init_checked(ncclComm_t *comm, int nranks, const ncclUniqueId *ids, int nids, int rank,
                               const ncclConfig_t *config, const char *fn)
{
    ncclConfig_t cfg;
    host_comm *c = NULL, *pinned = NULL;
    ncclComm_t h = NULL;
    ncclResult_t rc;
    if (comm == NULL)
        return host_fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    *comm = NULL;
    if (nranks < 1 || nranks > HOST_MAX_RANKS)
        return host_fail(ncclInvalidArgument, "%s: nranks %d is outside [1, %d]", fn, nranks, HOST_MAX_RANKS);
    if (rank < 0 || rank >= nranks)
        return host_fail(ncclInvalidArgument, "%s: rank %d is outside [0, %d)", fn, rank, nranks);
    if (HOST_FAILED(rc = host_config_parse(config, &cfg, fn)))
        return rc;
    if (HOST_FAILED(rc = host_comm_create(nranks, rank, &cfg, &c)))
        return rc;
    c->id = ids[0];
    c->nids = nids;
    c->idhash = host_ids_hash(ids, nids);
    if (nids > 1) {
        c->extra_ids = malloc(sizeof *ids * (size_t)(nids - 1));
        if (c->extra_ids == NULL) {
            host_comm_free(c);
            return host_fail(ncclSystemError, "%s: out of memory", fn);
        }
        memcpy(c->extra_ids, ids + 1, sizeof *ids * (size_t)(nids - 1));
    }
    rc = host_handle_new(c, &h);
    if (rc != ncclSuccess) {
        host_comm_free(c);
        return rc;
    }
    *comm = h; /* a valid handle before any rank talks to any other (docs/host-backend.md#communicator-lifecycle) */
    if (HOST_FAILED(rc = host_comm_enter(h, fn, &pinned)))
        return rc;
    if (host_group_depth() > 0) {
        rc = host_group_add_job(HOST_JOB_INIT, h, NULL);
        if (rc != ncclSuccess)
            force_error(c, rc);
        goto exit;
    }
    if (HOST_FAILED(rc = host_comm_start(c)))
        goto fail;
    if (!c->blocking) {
        rc = ncclInProgress;
        goto exit;
    }
    rc = host_comm_wait_init(c);
    goto exit;
fail:
    force_error(c, rc);
exit:
    host_comm_leave(pinned);
    return rc;
}

ncclResult_t host_init_all(ncclComm_t *comms, int ndev, const int *devlist)
{
    const host_params_t *p = host_params();
    ncclConfig_t cfg;
    ncclUniqueId id;
    host_comm **cs = NULL;
    ncclResult_t rc = ncclSuccess;
    int created = 0;
    if (comms == NULL)
        return host_fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL");
    if (ndev < 0)
        return host_fail(ncclInvalidArgument, "ncclCommInitAll: ndev %d is negative", ndev);
    if (ndev == 0)
        return ncclSuccess;
    if (ndev > HOST_MAX_RANKS)
        return host_fail(ncclInvalidArgument, "ncclCommInitAll: ndev %d is larger than %d", ndev, HOST_MAX_RANKS);
    for (int i = 0; devlist != NULL && i < ndev; i++) {
        if (devlist[i] < 0 || devlist[i] >= p->num_devices)
            return host_fail(ncclInvalidArgument, "ncclCommInitAll: devlist[%d] = %d is outside [0, %d)", i,
                             devlist[i], p->num_devices);
        for (int j = 0; j < i; j++)
            if (devlist[j] == devlist[i] && !p->multi_rank_gpu)
                return host_fail(ncclInvalidUsage, "ncclCommInitAll: device %d appears twice in devlist (set "
                                 "NCCL_MULTI_RANK_GPU_ENABLE=1 to allow it)", devlist[i]);
    }
    for (int i = 0; i < ndev; i++)
        comms[i] = NULL;
    if (HOST_FAILED(rc = host_config_parse(NULL, &cfg, "ncclCommInitAll")))
        return rc;
    cfg.blocking = 1; /* InitAll returns initialised communicators */
    if (HOST_FAILED(rc = host_unique_id(&id)))
        return rc;
    cs = calloc((size_t)ndev, sizeof *cs);
    if (cs == NULL)
        return host_fail(ncclSystemError, "ncclCommInitAll: out of memory");
    for (int i = 0; i < ndev; i++) {
        host_comm *c;
        if (HOST_FAILED(rc = host_comm_create(ndev, i, &cfg, &c)))
            goto fail;
        c->device = devlist != NULL ? devlist[i] : i;
        c->id = id;
        c->nids = 1;
        c->idhash = host_ids_hash(&id, 1);
        rc = host_handle_new(c, &comms[i]);
        if (rc != ncclSuccess) {
            host_comm_free(c);
            goto fail;
        }
        cs[i] = c;
        created++;
    }
    for (int i = 0; i < ndev; i++)
        if (HOST_FAILED(rc = host_comm_start(cs[i])))
            goto fail;
    for (int i = 0; i < ndev; i++)
        HOST_CHECKIGNORE(host_comm_wait_init(cs[i]), rc);
    if (rc != ncclSuccess)
        goto fail;
    free(cs);
    return ncclSuccess;
fail:
    /* Differs (appendix 13): on failure every communicator created here is aborted and NULL. */
    for (int i = 0; i < created; i++) {
        host_comm *c;
        if (host_comm_enter(comms[i], "ncclCommInitAll", &c) == ncclSuccess)
            (void)host_destroy_impl(c, 1);
        comms[i] = NULL;
    }
    free(cs);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Finalize, destroy, abort                                                                     */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t host_run_finalize(host_comm *c)
{
    /* Everything this rank issued before has completed (FIFO), once an eager Broadcast's checks
     * are settled: its mismatch, if any, is this call's error. Tell the peers. */
    ncclResult_t rc = host_settle_before_leaving(c);
    announce_departure(c, 0);
    return rc;
}

static ncclResult_t submit_simple(host_comm *c, host_task_kind kind)
{
    host_task *t = calloc(1, sizeof *t);
    if (t == NULL)
        return host_fail(ncclSystemError, "out of memory");
    t->kind = kind;
    t->detached = !c->blocking;
    host_task_submit(c, t);
    if (!c->blocking)
        return ncclInProgress;
    return host_task_wait(c, t);
}

ncclResult_t host_finalize(ncclComm_t comm)
{
    host_comm *c;
    ncclResult_t rc;
    if (comm == NULL)
        return ncclSuccess;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommFinalize", &c)))
        return rc;
    if (atomic_load_explicit(&c->finalizing, memory_order_seq_cst)) {
        rc = host_fail(ncclInvalidArgument, "ncclCommFinalize: communicator was already finalized");
        goto exit;
    }
    if (atomic_load_explicit(&c->revoked, memory_order_seq_cst)) {
        rc = host_fail(ncclInvalidArgument, "ncclCommFinalize: communicator was revoked; destroy or abort it");
        goto exit;
    }
    if (HOST_FAILED(rc = host_comm_usable(c, "ncclCommFinalize")))
        goto exit;
    if (host_group_depth() > 0) {
        rc = host_group_add_job(HOST_JOB_FINALIZE, comm, NULL);
        if (rc == ncclSuccess)
            atomic_store_explicit(&c->finalizing, 1, memory_order_seq_cst);
        goto exit;
    }
    atomic_store_explicit(&c->finalizing, 1, memory_order_seq_cst);
    rc = submit_simple(c, HOST_TASK_FINALIZE);
exit:
    host_comm_leave(c);
    return rc;
}

/* c is pinned by the caller (host_comm_enter); this consumes the pin. */
ncclResult_t host_destroy_impl(host_comm *c, int abort)
{
    int64_t deadline = host_deadline_after(host_params()->timeout_ns);
    ncclResult_t rc;
    if (abort) {
        uint64_t one = 1;
        ssize_t w;
        atomic_store_explicit(&c->aborted, 1, memory_order_seq_cst);
        w = write(c->wake_fd, &one, sizeof one); /* ends every bootstrap poll of this comm */
        (void)w;
        announce_departure(c, 1);
        host_comm_wake(c);
    }
    rc = host_handle_kill(c, deadline);
    if (rc != ncclSuccess)
        return rc; /* another thread is still inside: leaking is the only safe choice */
    host_comm_teardown(c, abort);
    return ncclSuccess;
}

/* In a fork child the communicator's threads do not exist and its sockets and segment are the
 * parent's too: leaving would tell the peers that the parent's rank left. Refused, touching
 * nothing (docs/host-backend.md#robustness). Consumes the pin on refusal. */
static ncclResult_t refuse_in_child(host_comm *c, const char *fn)
{
    if (HOST_LIKELY(c->fork_gen == atomic_load_explicit(&host_fork_gen, memory_order_seq_cst)))
        return ncclSuccess;
    host_comm_leave(c);
    return host_fail(ncclInvalidUsage, "%s: communicator was created before fork(); it cannot be used in the child, "
                     "where destroying or aborting it would end the parent's rank (the memory goes with the child)",
                     fn);
}

ncclResult_t host_destroy(ncclComm_t comm)
{
    ncclResult_t rc;
    host_comm *c;
    if (comm == NULL)
        return ncclSuccess;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommDestroy", &c)))
        return rc;
    if (HOST_FAILED(rc = refuse_in_child(c, "ncclCommDestroy")))
        return rc;
    if (host_group_depth() > 0) {
        rc = host_group_add_job(HOST_JOB_DESTROY, comm, NULL);
        host_comm_leave(c);
        return rc;
    }
    return host_destroy_impl(c, 0);
}

ncclResult_t host_abort(ncclComm_t comm)
{
    ncclResult_t rc;
    host_comm *c;
    if (comm == NULL)
        return ncclSuccess;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommAbort", &c)))
        return rc;
    if (HOST_FAILED(rc = refuse_in_child(c, "ncclCommAbort")))
        return rc;
    host_group_drop_comm(comm); /* immediate, even inside a group (appendix 14) */
    return host_destroy_impl(c, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Queries                                                                                      */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t host_get_async_error(ncclComm_t comm, ncclResult_t *err)
{
    ncclResult_t rc;
    host_comm *c;
    ncclResult_t e;
    if (err == NULL)
        return host_fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommGetAsyncError", &c)))
        return rc;
    e = host_comm_error(c);
    if (e == ncclSuccess) {
        pthread_mutex_lock(&c->lock);
        if (c->phase == HOST_PHASE_INIT || (c->inflight > 0 && !c->blocking))
            e = ncclInProgress;
        pthread_mutex_unlock(&c->lock);
    }
    *err = e;
    host_comm_leave(c);
    return ncclSuccess;
}

/* Queries are allowed on FINALIZED comms; INIT/BUSY -> IA, ERROR -> the error. */
static ncclResult_t query_usable(host_comm *c, const char *fn)
{
    ncclResult_t e = host_comm_error(c);
    int phase, inflight;
    if (e != ncclSuccess)
        return host_fail(e, "%s: communicator is in an error state (%s)", fn, host_error_string(e));
    pthread_mutex_lock(&c->lock);
    phase = c->phase;
    inflight = c->inflight;
    pthread_mutex_unlock(&c->lock);
    if (phase == HOST_PHASE_INIT || (inflight > 0 && !c->blocking)) /* BUSY: nonblocking comms only */
        return host_fail(ncclInvalidArgument, "%s: communicator used before the previous operation returned "
                         "ncclSuccess", fn);
    return ncclSuccess;
}

ncclResult_t host_comm_query(ncclComm_t comm, int what, int *out, const char *fn)
{
    host_comm *c;
    ncclResult_t rc;
    if (HOST_FAILED(rc = host_comm_enter(comm, fn, &c)))
        return rc;
    if (HOST_FAILED(rc = query_usable(c, fn)))
        goto exit;
    if (out == NULL) {
        rc = host_fail(ncclInvalidArgument, "%s: output pointer is NULL", fn);
        goto exit;
    }
    *out = what == 0 ? c->nranks : what == 1 ? c->device : c->rank;
exit:
    host_comm_leave(c);
    return rc;
}

/* ncclCommQueryProperties in the 2.32 layout, for callers of any release: like NCCL, a version
 * above the one this library reports is refused (ncclInvalidUsage), and a field is written only
 * when the caller's version has it and it lies within the caller's `size`, so an older caller's
 * shorter struct is never overrun. The host backend has no device API: no GIN, multimem or CFT
 * support; one LSA team (every rank shares this machine). commHash is the same on every rank of
 * a communicator: a hash of its segment token. */
ncclResult_t host_query_properties(ncclComm_t comm, ncclCommProperties_t *props)
{
    host_comm *c;
    ncclCommProperties_t p;
    ncclResult_t rc;
    size_t n = 0;
    unsigned int version;
    const int lib_version = host_params()->version_code;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommQueryProperties", &c)))
        return rc;
    if (HOST_FAILED(rc = query_usable(c, "ncclCommQueryProperties")))
        goto exit;
    if (props == NULL) {
        rc = host_fail(ncclInvalidArgument, "ncclCommQueryProperties: props is NULL");
        goto exit;
    }
    if (props->magic != NCCL_API_MAGIC) {
        rc = host_fail(ncclInvalidUsage, "ncclCommQueryProperties: props.magic is 0x%x, not 0x%x: initialise it "
                       "with NCCL_COMM_PROPERTIES_INITIALIZER", props->magic, NCCL_API_MAGIC);
        goto exit;
    }
    version = props->version;
    if ((int)version > lib_version) {
        rc = host_fail(ncclInvalidUsage, "ncclCommQueryProperties: props.version %u is newer than this library "
                       "(%d)", version, lib_version);
        goto exit;
    }
    memset(&p, 0, sizeof p);
    p.rank = c->rank;
    p.nRanks = c->nranks;
    p.cudaDev = c->device;
    p.nvmlDev = c->device;
    p.ginType = ncclGinTypeNone;
    p.nLsaTeams = 1;
    p.railedGinType = ncclGinTypeNone;
    p.hostRmaSupport = 1; /* windows, ncclPutSignal/ncclSignal/ncclWaitSignal (window.c, rma.c) */
    p.commHash = host_hash64(c->token, sizeof c->token, 0);
    p.ginMinStride = 0;
    p.ginConnectionType = ncclGinConnectionNone;
    p.devCommRuntimeVersionSize = 0;
    /* The prefix each release's layout ends at; size then bounds it further. */
    if (version >= NCCL_ABI_VERSION_CODE(2, 32, 0))
        n = sizeof p;
    else if (version >= NCCL_ABI_VERSION_CODE(2, 31, 0))
        n = offsetof(ncclCommProperties_t, cftSupport);
    else if (version >= NCCL_ABI_VERSION_CODE(2, 29, 4))
        n = offsetof(ncclCommProperties_t, commHash);
    else
        n = offsetof(ncclCommProperties_t, nLsaTeams);
    if (props->size < n)
        n = props->size;
    if (n > offsetof(ncclCommProperties_t, rank))
        memcpy((char *)props + offsetof(ncclCommProperties_t, rank), (const char *)&p + offsetof(ncclCommProperties_t, rank),
               n - offsetof(ncclCommProperties_t, rank));
exit:
    host_comm_leave(c);
    return rc;
}

ncclResult_t host_suspend(ncclComm_t comm, int flags, int resume)
{
    host_comm *c;
    ncclResult_t rc = ncclSuccess;
    const char *fn = resume ? "ncclCommResume" : "ncclCommSuspend";
    if (HOST_FAILED(rc = host_comm_enter(comm, fn, &c)))
        return rc;
    if (!resume && flags != 0 && flags != NCCL_SUSPEND_MEM) {
        rc = host_fail(ncclInvalidArgument, "%s: flags %d are not supported", fn, flags);
        goto exit;
    }
    if (resume != atomic_load_explicit(&c->suspended, memory_order_seq_cst)) {
        rc = host_fail(ncclInvalidUsage, "%s: communicator is %s suspended", fn, resume ? "not" : "already");
        goto exit;
    }
    if (!resume)
        if (HOST_FAILED(rc = host_comm_usable(c, fn)))
            goto exit;
    atomic_store_explicit(&c->suspended, !resume, memory_order_seq_cst);
exit:
    host_comm_leave(c);
    return rc;
}

/* ncclCommRevoke (O): stops in-flight work (it completes with ncclInvalidUsage), keeps every
 * resource; afterwards communication calls return IU and finalize IA, while split, shrink,
 * destroy and abort still work. Local, like abort: peers that wait for this rank's part of a
 * cancelled operation end at their deadline unless they revoke too. */
ncclResult_t host_revoke(ncclComm_t comm, int flags)
{
    host_comm *c;
    ncclResult_t rc = ncclSuccess;
    int phase;
    if (comm == NULL)
        return ncclSuccess;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommRevoke", &c)))
        return rc;
    pthread_mutex_lock(&c->lock);
    phase = c->phase;
    pthread_mutex_unlock(&c->lock);
    if (flags != NCCL_REVOKE_DEFAULT)
        rc = host_fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags %d is not NCCL_REVOKE_DEFAULT", flags);
    else if (phase != HOST_PHASE_READY || atomic_load_explicit(&c->finalizing, memory_order_seq_cst))
        rc = host_fail(ncclInvalidArgument, "ncclCommRevoke: communicator is not initialised or was finalized");
    else if (atomic_exchange_explicit(&c->revoked, 1, memory_order_seq_cst))
        rc = host_fail(ncclInvalidArgument, "ncclCommRevoke: communicator was already revoked");
    if (rc == ncclSuccess) {
        atomic_fetch_add_explicit(&c->cancel_epoch, 1, memory_order_seq_cst);
        host_comm_wake(c);
    }
    host_comm_leave(c);
    return rc;
}

ncclResult_t host_mem_stats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    host_comm *c;
    ncclResult_t rc = ncclSuccess;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommMemStats", &c)))
        return rc;
    if (value == NULL) {
        rc = host_fail(ncclInvalidArgument, "ncclCommMemStats: value is NULL");
        goto exit;
    }
    switch (stat) {
    case ncclStatGpuMemSuspend: *value = 0; break;
    case ncclStatGpuMemSuspended: *value = (uint64_t)atomic_load_explicit(&c->suspended, memory_order_seq_cst); break;
    case ncclStatGpuMemPersist:
    case ncclStatGpuMemTotal: *value = c->seg.size; break;
    default: rc = host_fail(ncclInvalidArgument, "ncclCommMemStats: unknown stat %d", (int)stat); break;
    }
exit:
    host_comm_leave(c);
    return rc;
}
