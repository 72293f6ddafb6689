/* Split and shrink (docs/host-backend.md#communicator-lifecycle): a rank's part of ncclCommSplit and
 * ncclCommShrink, run as a task on the parent's worker, or deferred to the outermost group end.
 *
 * Every member of the parent exchanges a record (colour, key, exclusion list, address, token) over
 * the parent's mesh; each new group builds its child communicator from the records of its
 * members: host_run_split's phases are split_exchange, shrink_ranks/split_ranks, split_child. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_host.h"

typedef struct {
    int32_t color, key;
    uint32_t pid, addr_be;
    uint16_t port_be, pad;
    int32_t flags, nexclude;
    uint64_t exclude_hash;
    uint8_t token[HOST_TOKEN_BYTES];
} split_rec;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* One rank's part of a split or shrink while it runs (host_run_split). */
typedef struct {
    const char *fn;
    int shrink;
    int nm, newn, newrank;
    int *members;          /* the parent ranks taking part, ascending */
    int *newmembers;       /* the child's ranks as indices into members/recs, in child rank order */
    split_rec mine, *recs; /* this rank's record, and every member's */
    host_peer_addr *table; /* the child's ranks' addresses */
    int lfd;               /* the child's listener until the child owns it */
    uint16_t port;
} split_state;

/* Phase 1: every member's record (colour, key, exclusion list, address, token), gathered over
 * the parent; a rank that will join a child listens first. */
static ncclResult_t split_exchange(host_comm *parent, const host_split_args *a, split_state *s)
{
    ncclResult_t rc = ncclSuccess;
    int n = parent->nranks;
    s->members = malloc(sizeof(int) * (size_t)n);
    s->newmembers = malloc(sizeof(int) * (size_t)n);
    s->recs = calloc((size_t)n, sizeof *s->recs);
    s->table = calloc((size_t)n, sizeof *s->table);
    if (s->members == NULL || s->newmembers == NULL || s->recs == NULL || s->table == NULL)
        return host_fail(ncclSystemError, "%s: out of memory", s->fn);
    for (int r = 0, k = 0; r < n; r++) {
        if (s->shrink && k < a->nexclude && a->exclude[k] == r) {
            k++;
            continue;
        }
        s->members[s->nm++] = r;
    }
    s->mine.color = a->color;
    s->mine.key = a->key;
    s->mine.pid = (uint32_t)getpid();
    s->mine.addr_be = host_params()->bind_addr;
    s->mine.flags = a->flags;
    s->mine.nexclude = a->nexclude;
    s->mine.exclude_hash = host_hash64(a->exclude, sizeof(int) * (size_t)a->nexclude, (uint64_t)a->flags);
    if (HOST_FAILED(rc = host_random_bytes(s->mine.token, sizeof s->mine.token)))
        return rc;
    if ((s->shrink || a->color != NCCL_SPLIT_NOCOLOR) &&
        HOST_FAILED(rc = host_sock_listen(host_params()->bind_addr, &s->lfd, &s->port)))
        return rc;
    s->mine.port_be = s->port; /* 0 when not listening */
    return host_mgmt_allgather(parent, s->members, s->nm, &s->mine, sizeof s->mine, s->recs, s->fn);
}

/* Phase 2 of a shrink: every member passed the same exclusion list and flags; the child keeps
 * the members' order. */
static ncclResult_t shrink_ranks(const host_comm *parent, split_state *s)
{
    for (int i = 0; i < s->nm; i++)
        if (s->recs[i].flags != s->mine.flags || s->recs[i].nexclude != s->mine.nexclude ||
            s->recs[i].exclude_hash != s->mine.exclude_hash)
            return host_fail(ncclInvalidUsage, "%s: rank %d and rank %d passed different exclusion lists or flags",
                             s->fn, parent->rank, s->members[i]);
    for (int i = 0; i < s->nm; i++) {
        s->newmembers[s->newn] = i;
        if (s->members[i] == parent->rank)
            s->newrank = s->newn;
        s->newn++;
    }
    return ncclSuccess;
}

/* Phase 2 of a split: the members of this rank's colour, ordered by key, ties by parent rank
 * (stable). */
static void split_ranks(const host_comm *parent, const host_split_args *a, split_state *s)
{
    for (int i = 0; i < s->nm; i++)
        if (s->recs[i].color == a->color)
            s->newmembers[s->newn++] = i;
    for (int i = 1; i < s->newn; i++) {
        int v = s->newmembers[i], j = i - 1;
        while (j >= 0 && s->recs[s->newmembers[j]].key > s->recs[v].key) {
            s->newmembers[j + 1] = s->newmembers[j];
            j--;
        }
        s->newmembers[j + 1] = v;
    }
    for (int i = 0; i < s->newn; i++)
        if (s->members[s->newmembers[i]] == parent->rank)
            s->newrank = i;
}

/* Phase 3: the child communicator, meshed, with its transport and worker; *a->newcomm is set
 * only when it is ready. */
static ncclResult_t split_child(host_comm *parent, const host_split_args *a, split_state *s)
{
    host_comm *child;
    ncclComm_t h;
    ncclResult_t rc;
    int own;
    for (int i = 0; i < s->newn; i++) {
        const split_rec *r = &s->recs[s->newmembers[i]];
        s->table[i].pid = r->pid;
        s->table[i].addr_be = r->addr_be;
        s->table[i].port_be = r->port_be;
    }
    if (HOST_FAILED(rc = host_child_create(parent, a, s->newn, s->newrank, &child, &h)))
        return rc;
    child->listen_fd = s->lfd;
    child->listen_port_be = s->port;
    s->lfd = -1;
    memcpy(child->token, s->recs[s->newmembers[0]].token, sizeof child->token);
    /* While the child is built it listens to the parent's wake fd: aborting the parent cancels
     * the child under construction (docs/host-backend.md#communicator-lifecycle). Nobody else holds the child yet. */
    own = child->wake_fd;
    child->wake_fd = parent->wake_fd;
    rc = host_mesh_build(child, s->table);
    child->wake_fd = own;
    if (HOST_FAILED(rc = host_child_start(parent, child, h, rc, 1, a, s->fn)))
        return rc;
    HOST_INFO(HOST_SUB_INIT, "%s: parent rank %d -> rank %d of %d", s->fn, parent->rank, s->newrank, s->newn);
    return ncclSuccess;
}

ncclResult_t host_run_split(host_comm *parent, host_task *t)
{
    host_split_args *a = t->split;
    split_state s;
    ncclResult_t rc = ncclSuccess;
    memset(&s, 0, sizeof s);
    s.shrink = t->kind == HOST_TASK_SHRINK;
    s.fn = s.shrink ? "ncclCommShrink" : "ncclCommSplit";
    s.newrank = s.lfd = -1;
    if (atomic_load_explicit(&parent->aborted, memory_order_seq_cst))
        rc = host_fail(ncclInvalidUsage, "%s: communicator aborted", s.fn);
    else if (!s.shrink)
        rc = host_comm_error(parent);
    if (rc == ncclSuccess)
        rc = split_exchange(parent, a, &s);
    if (rc == ncclSuccess && s.shrink)
        rc = shrink_ranks(parent, &s);
    else if (rc == ncclSuccess && a->color != NCCL_SPLIT_NOCOLOR)
        split_ranks(parent, a, &s);
    /* A rank passing NCCL_SPLIT_NOCOLOR takes part in the exchange and gets NULL. */
    if (rc == ncclSuccess && (s.shrink || a->color != NCCL_SPLIT_NOCOLOR)) {
        if (s.newrank < 0)
            rc = host_fail(ncclInternalError, "%s: this rank is missing from its own group", s.fn);
        else
            rc = split_child(parent, a, &s);
    }
    host_sock_close(&s.lfd);
    free(s.members);
    free(s.newmembers);
    free(s.recs);
    free(s.table);
    return rc;
}

ncclResult_t host_submit_child(host_comm *c, ncclComm_t comm, host_task_kind kind, host_split_args *a)
{
    host_task *t;
    if (host_group_depth() > 0)
        return host_group_add_job(kind == HOST_TASK_SPLIT ? HOST_JOB_SPLIT :
                                  kind == HOST_TASK_SHRINK ? HOST_JOB_SHRINK : HOST_JOB_GROW, comm, a);
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        free(a->exclude);
        free(a);
        return host_fail(ncclSystemError, "out of memory");
    }
    t->kind = kind;
    t->split = a;
    t->detached = !c->blocking;
    host_task_submit(c, t);
    if (!c->blocking)
        return ncclInProgress;
    return host_task_wait(c, t);
}

ncclResult_t host_child_args(host_comm *parent, ncclComm_t *newcomm, ncclConfig_t *config, const char *fn,
                             host_split_args **out)
{
    host_split_args *a = calloc(1, sizeof *a);
    ncclConfig_t cfg;
    ncclResult_t rc = ncclSuccess;
    *out = NULL;
    if (a == NULL)
        return host_fail(ncclSystemError, "out of memory");
    a->newcomm = newcomm;
    a->child_blocking = parent->blocking;
    if (config != NULL) {
        if (HOST_FAILED(rc = host_config_parse(config, &cfg, fn)))
            goto exit;
        a->child_blocking = cfg.blocking;
        if (cfg.commName != NULL)
            snprintf(a->child_name, sizeof a->child_name, "%s", cfg.commName);
    }
    *out = a;
    a = NULL;
exit:
    free(a);
    return rc;
}

ncclResult_t host_child_create(host_comm *parent, const host_split_args *a, int nranks, int rank, host_comm **child,
                               ncclComm_t *h)
{
    ncclConfig_t cfg = parent->config;
    ncclResult_t rc;
    *h = NULL;
    cfg.blocking = a->child_blocking;
    if (HOST_FAILED(rc = host_comm_create(nranks, rank, &cfg, child)))
        return rc;
    snprintf((*child)->name, sizeof (*child)->name, "%s", a->child_name[0] ? a->child_name : parent->name);
    (*child)->device = parent->device;
    (*child)->uds_path = parent->uds_path; /* a grow's root says anew (bootstrap.c) */
    if (HOST_FAILED(rc = host_handle_new(*child, h))) {
        host_comm_free(*child);
        *child = NULL;
    }
    return rc;
}

ncclResult_t host_child_start(host_comm *parent, host_comm *child, ncclComm_t h, ncclResult_t rc, int transport,
                              const host_split_args *a, const char *fn)
{
    host_comm *pc;
    if (rc == ncclSuccess && atomic_load_explicit(&parent->aborted, memory_order_seq_cst))
        rc = host_fail(ncclInvalidUsage, "%s: parent communicator aborted", fn);
    if (rc == ncclSuccess && transport)
        rc = host_transport_setup(child);
    if (rc == ncclSuccess)
        rc = host_worker_start(child);
    if (rc != ncclSuccess) {
        if (host_comm_enter(h, fn, &pc) == ncclSuccess)
            (void)host_destroy_impl(pc, 1);
        return rc;
    }
    pthread_mutex_lock(&child->lock);
    child->phase = HOST_PHASE_READY;
    pthread_mutex_unlock(&child->lock);
    *a->newcomm = h;
    return ncclSuccess;
}

ncclResult_t host_split(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    host_comm *c;
    host_split_args *a = NULL;
    ncclResult_t rc;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommSplit", &c)))
        return rc;
    if (HOST_FAILED(rc = host_comm_usable_revoked(c, "ncclCommSplit")))
        goto exit;
    if (newcomm == NULL) {
        rc = host_fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
        goto exit;
    }
    *newcomm = NULL;
    if (color < NCCL_SPLIT_NOCOLOR)
        HOST_WARN("ncclCommSplit: negative colour %d is treated as an ordinary colour (NCCL documents colours >= 0)",
                  color);
    if (HOST_FAILED(rc = host_child_args(c, newcomm, config, "ncclCommSplit", &a)))
        goto exit;
    a->color = color;
    a->key = key;
    rc = host_submit_child(c, comm, HOST_TASK_SPLIT, a);
exit:
    host_comm_leave(c);
    return rc;
}

ncclResult_t host_shrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm, ncclConfig_t *config,
                         int flags)
{
    host_comm *c;
    host_split_args *a = NULL;
    ncclResult_t rc = ncclSuccess;
    int k = 0;
    if (newcomm == NULL)
        return host_fail(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
    if (exclude == NULL)
        return host_fail(ncclInvalidArgument, "ncclCommShrink: excludeRanksList is NULL");
    if (nexclude <= 0)
        return host_fail(ncclInvalidArgument, "ncclCommShrink: excludeRanksCount %d must be > 0", nexclude);
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommShrink", &c)))
        return rc;
    *newcomm = NULL;
    qsort(exclude, (size_t)nexclude, sizeof *exclude, cmp_int); /* visible to the caller, as in NCCL */
    for (int i = 0; i < nexclude; i++) {
        if (exclude[i] == c->rank) {
            rc = host_fail(ncclInvalidArgument, "ncclCommShrink: the calling rank %d is in the exclusion list", c->rank);
            goto exit;
        }
        if (exclude[i] < 0 || exclude[i] >= c->nranks) {
            rc = host_fail(ncclInvalidArgument, "ncclCommShrink: excluded rank %d is outside [0, %d)", exclude[i],
                           c->nranks);
            goto exit;
        }
    }
    if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT) {
        rc = host_fail(ncclInvalidArgument, "ncclCommShrink: shrinkFlags %d is neither NCCL_SHRINK_DEFAULT nor "
                       "NCCL_SHRINK_ABORT", flags);
        goto exit;
    }
    if (flags == NCCL_SHRINK_DEFAULT) {
        if (HOST_FAILED(rc = host_comm_usable_revoked(c, "ncclCommShrink")))
            goto exit;
    } else {
        int phase;
        if (atomic_load_explicit(&c->aborted, memory_order_seq_cst) || c->fork_gen != atomic_load_explicit(&host_fork_gen, memory_order_seq_cst)) {
            rc = host_fail(ncclInvalidUsage, "ncclCommShrink: communicator aborted or used after fork");
            goto exit;
        }
        pthread_mutex_lock(&c->lock);
        phase = c->phase;
        pthread_mutex_unlock(&c->lock);
        if (phase != HOST_PHASE_READY) {
            rc = host_fail(ncclInvalidArgument, "ncclCommShrink: communicator is not initialised or was finalized");
            goto exit;
        }
    }
    if (HOST_FAILED(rc = host_child_args(c, newcomm, config, "ncclCommShrink", &a)))
        goto exit;
    a->exclude = malloc(sizeof(int) * (size_t)nexclude);
    if (a->exclude == NULL) {
        free(a);
        rc = host_fail(ncclSystemError, "out of memory");
        goto exit;
    }
    for (int i = 0; i < nexclude; i++) /* duplicates ignored */
        if (k == 0 || a->exclude[k - 1] != exclude[i])
            a->exclude[k++] = exclude[i];
    a->nexclude = k;
    a->flags = flags;
    a->color = 0;
    if (flags == NCCL_SHRINK_ABORT) {
        /* Cancel queued and running work: it completes with the parent's error
         * (docs/host-backend.md#communicator-lifecycle). */
        atomic_fetch_add_explicit(&c->cancel_epoch, 1, memory_order_seq_cst);
        host_comm_wake(c);
    }
    rc = host_submit_child(c, comm, HOST_TASK_SHRINK, a);
exit:
    host_comm_leave(c);
    return rc;
}
