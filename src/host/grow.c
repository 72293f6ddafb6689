/* ncclCommGetUniqueId and ncclCommGrow (docs/host-backend.md#growing-a-communicator).
 *
 * A grown communicator is a new communicator of nRanks ranks, bootstrapped through the root of
 * the grow id exactly as an init is (bootstrap.c, root.c): new sockets, a new segment, every
 * collective. The existing ranks keep their ranks; the new ones take the ranks above the
 * parent's size. The grow id is an ordinary id of the coordinator's root that also names the
 * parent (its size and commHash), so a new rank can check its rank and nobody can grow a
 * communicator with another one's id.
 *
 * The existing ranks first run one exchange over the parent's control mesh (as split does), in
 * which the coordinator, the rank whose ncclCommGetUniqueId made the id, hands it to the others
 * (who pass NULL, as NCCL's header says) and everyone checks that they agree: the size, one
 * coordinator, the same id. Then each builds its rank of the new communicator on the parent's
 * worker, listening to the parent's wake descriptor, so aborting the parent cancels it. The new
 * ranks run an init with the grow id. Every wait is an init's or an exchange's: the deadline, an
 * abort and a peer's death end it with the same errors. A failed grow leaves the parent as it
 * was; the id is consumed either way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_host.h"

/* What an existing rank contributes to the grow exchange on the parent. */
typedef struct {
    int32_t nranks;       /* the grown size this rank asked for */
    int32_t coordinator;  /* 1: this rank's ncclCommGetUniqueId made the id (sent in id) */
    int32_t passed;       /* 1: the caller passed an id (in id when not the coordinator) */
    int32_t pad;
    ncclUniqueId id;
} grow_rec;

/* The parent's commHash (as ncclCommQueryProperties reports it), named by its grow ids. */
static uint64_t comm_hash(const host_comm *c)
{
    return host_hash64(c->token, sizeof c->token, 0);
}

ncclResult_t host_comm_get_unique_id(ncclComm_t comm, ncclUniqueId *id)
{
    const char *fn = "ncclCommGetUniqueId";
    host_comm *c;
    ncclResult_t rc;
    if (HOST_FAILED(rc = host_comm_enter(comm, fn, &c)))
        return rc;
    if (HOST_FAILED(rc = host_comm_usable(c, fn)))
        goto exit;
    if (id == NULL) {
        rc = host_fail(ncclInvalidArgument, "%s: uniqueId is NULL", fn);
        goto exit;
    }
    pthread_mutex_lock(&c->lock);
    if (c->grow_pending)
        rc = host_fail(ncclInvalidUsage, "%s: %s rank %d already made a grow id that no ncclCommGrow consumed yet "
                       "(one grow at a time; each id serves one grow)", fn, c->name, c->rank);
    else if ((rc = host_grow_id(&c->grow_id, c->nranks, comm_hash(c))) == ncclSuccess)
        c->grow_pending = 1;
    if (rc == ncclSuccess)
        *id = c->grow_id;
    pthread_mutex_unlock(&c->lock);
    if (rc == ncclSuccess)
        HOST_INFO(HOST_SUB_INIT, "%s: %s rank %d made a grow id for its %d ranks", fn, c->name, c->rank, c->nranks);
exit:
    host_comm_leave(c);
    return rc;
}

/* A new process joining: no communicator, the grow id, and a rank above the parent's. */
static ncclResult_t grow_new_rank(int nranks, const ncclUniqueId *id, int rank, ncclComm_t *newcomm,
                                  ncclConfig_t *config)
{
    const char *fn = "ncclCommGrow";
    int parent_n;
    uint64_t parent_hash;
    ncclResult_t rc;
    if (id == NULL)
        return host_fail(ncclInvalidArgument, "%s: a new rank (comm NULL) must pass the uniqueId that "
                         "ncclCommGetUniqueId returned on the communicator being grown", fn);
    if (HOST_FAILED(rc = host_grow_id_check(id, fn, &parent_n, &parent_hash)))
        return rc;
    if (nranks <= parent_n || nranks > HOST_MAX_RANKS)
        return host_fail(ncclInvalidArgument, "%s: nRanks %d must be larger than the communicator's %d ranks (and "
                         "at most %d)", fn, nranks, parent_n, HOST_MAX_RANKS);
    if (rank < parent_n || rank >= nranks)
        return host_fail(ncclInvalidArgument, "%s: a new rank must take a rank in [%d, %d), not %d (ranks 0..%d "
                         "keep their existing holders)", fn, parent_n, nranks, rank, parent_n - 1);
    return host_init_checked(newcomm, nranks, id, 1, rank, config, fn);
}

/* Checks an existing rank's arguments that need no peer; the id, if passed, must be a grow id
 * of this communicator, and the coordinator's must be the one it made. */
static ncclResult_t grow_existing_checks(host_comm *c, int nranks, const ncclUniqueId *id, int rank)
{
    const char *fn = "ncclCommGrow";
    int parent_n, mismatch;
    uint64_t parent_hash;
    ncclResult_t rc;
    if (rank != -1)
        return host_fail(ncclInvalidArgument, "%s: an existing rank must pass rank -1 (it keeps its rank %d), not %d",
                         fn, c->rank, rank);
    if (nranks <= c->nranks || nranks > HOST_MAX_RANKS)
        return host_fail(ncclInvalidArgument, "%s: nRanks %d must be larger than the communicator's %d ranks (and "
                         "at most %d)", fn, nranks, c->nranks, HOST_MAX_RANKS);
    if (id == NULL)
        return ncclSuccess;
    if (HOST_FAILED(rc = host_grow_id_check(id, fn, &parent_n, &parent_hash)))
        return rc;
    if (parent_hash != comm_hash(c) || parent_n != c->nranks)
        return host_fail(ncclInvalidArgument, "%s: uniqueId was made by ncclCommGetUniqueId on another communicator",
                         fn);
    pthread_mutex_lock(&c->lock);
    mismatch = c->grow_pending && memcmp(id, &c->grow_id, sizeof *id) != 0;
    pthread_mutex_unlock(&c->lock);
    if (mismatch)
        return host_fail(ncclInvalidArgument, "%s: uniqueId is not the id ncclCommGetUniqueId last returned on this "
                         "rank (an id serves one grow)", fn);
    return ncclSuccess;
}

ncclResult_t host_grow(ncclComm_t comm, int nranks, const ncclUniqueId *id, int rank, ncclComm_t *newcomm,
                       ncclConfig_t *config)
{
    const char *fn = "ncclCommGrow";
    host_comm *c;
    host_split_args *a;
    ncclResult_t rc;
    (void)host_params();
    if (newcomm == NULL)
        return host_fail(ncclInvalidArgument, "%s: newcomm is NULL", fn);
    *newcomm = NULL;
    if (comm == NULL)
        return grow_new_rank(nranks, id, rank, newcomm, config);
    if (HOST_FAILED(rc = host_comm_enter(comm, fn, &c)))
        return rc;
    if (HOST_FAILED(rc = host_comm_usable(c, fn)) || HOST_FAILED(rc = grow_existing_checks(c, nranks, id, rank)) ||
        HOST_FAILED(rc = host_child_args(c, newcomm, config, fn, &a)))
        goto exit;
    a->grow_nranks = nranks;
    a->grow_passed = id != NULL;
    if (id != NULL)
        a->grow_id = *id;
    rc = host_submit_child(c, comm, HOST_TASK_GROW, a);
exit:
    host_comm_leave(c);
    return rc;
}

/* After the exchange: every rank's record agrees (the same on every rank, so every rank fails
 * alike); *coord is the coordinator's index. */
static ncclResult_t grow_agree(const host_comm *parent, const grow_rec *recs, int *coord)
{
    const char *fn = "ncclCommGrow";
    int n = parent->nranks;
    *coord = -1;
    for (int i = 0; i < n; i++) {
        if (recs[i].nranks != recs[0].nranks)
            return host_fail(ncclInvalidUsage, "%s: rank 0 asks for %d ranks, rank %d for %d", fn, recs[0].nranks, i,
                             recs[i].nranks);
        if (!recs[i].coordinator)
            continue;
        if (*coord >= 0)
            return host_fail(ncclInvalidUsage, "%s: ranks %d and %d both made a grow id with ncclCommGetUniqueId "
                             "(one coordinator per grow)", fn, *coord, i);
        *coord = i;
    }
    if (*coord < 0)
        return host_fail(ncclInvalidUsage, "%s: no rank of %s holds a grow id: one rank (the coordinator) calls "
                         "ncclCommGetUniqueId before the grow", fn, parent->name);
    for (int i = 0; i < n; i++)
        if (recs[i].passed && memcmp(&recs[i].id, &recs[*coord].id, sizeof recs[i].id) != 0)
            return host_fail(ncclInvalidUsage, "%s: rank %d passed a uniqueId that is not the coordinator's (rank %d)",
                             fn, i, *coord);
    return ncclSuccess;
}

/* Builds this rank of the grown communicator from the agreed id, on the parent's worker. */
static ncclResult_t grow_build(host_comm *parent, const host_split_args *a, const ncclUniqueId *id)
{
    const char *fn = "ncclCommGrow";
    host_comm *child;
    ncclComm_t h;
    ncclResult_t rc;
    int own;
    if (HOST_FAILED(rc = host_child_create(parent, a, a->grow_nranks, parent->rank, &child, &h)))
        return rc;
    child->id = *id;
    child->nids = 1;
    child->idhash = host_ids_hash(id, 1);
    /* While it is built the child listens to the parent's wake fd: aborting the parent cancels
     * the grow. Nobody else holds the child yet. */
    own = child->wake_fd;
    child->wake_fd = parent->wake_fd;
    rc = host_run_init(child);
    child->wake_fd = own;
    if (HOST_FAILED(rc = host_child_start(parent, child, h, rc, 0, a, fn)))
        return rc;
    HOST_INFO(HOST_SUB_INIT, "%s: rank %d of %d ranks -> rank %d of %d", fn, parent->rank, parent->nranks,
              parent->rank, a->grow_nranks);
    return ncclSuccess;
}

ncclResult_t host_run_grow(host_comm *parent, host_task *t)
{
    const char *fn = "ncclCommGrow";
    const host_split_args *a = t->split;
    int n = parent->nranks, coord;
    int *members = NULL;
    grow_rec mine, *recs = NULL;
    ncclResult_t rc;
    if (atomic_load_explicit(&parent->aborted, memory_order_seq_cst))
        return host_fail(ncclInvalidUsage, "%s: communicator aborted", fn);
    if ((rc = host_comm_error(parent)) != ncclSuccess)
        return rc;
    memset(&mine, 0, sizeof mine);
    mine.nranks = a->grow_nranks;
    mine.passed = a->grow_passed;
    mine.id = a->grow_id;
    pthread_mutex_lock(&parent->lock);
    if (parent->grow_pending) { /* consumed by this grow, whatever its outcome */
        mine.coordinator = 1;
        mine.id = parent->grow_id;
        parent->grow_pending = 0;
    }
    pthread_mutex_unlock(&parent->lock);
    members = malloc(sizeof *members * (size_t)n);
    recs = calloc((size_t)n, sizeof *recs);
    if (members == NULL || recs == NULL) {
        rc = host_fail(ncclSystemError, "%s: out of memory", fn);
        goto exit;
    }
    for (int r = 0; r < n; r++)
        members[r] = r;
    if (HOST_FAILED(rc = host_mgmt_allgather(parent, members, n, &mine, sizeof mine, recs, fn)))
        goto exit;
    if (HOST_FAILED(rc = grow_agree(parent, recs, &coord)))
        goto exit;
    rc = grow_build(parent, a, &recs[coord].id);
exit:
    free(members);
    free(recs);
    return rc;
}
