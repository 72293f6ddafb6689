/* Groups and the entry path of every communication call (docs/host-backend.md#groups,
 * docs/host-backend.md#argument-checks).
 *
 * A call validates its arguments on the calling thread, then either runs at once (one task on
 * the communicator's worker; a blocking call waits for it) or, inside ncclGroupStart/End, is
 * copied (arguments and op state) into the thread's group state. The outermost ncclGroupEnd turns
 * each communicator's queued ops into one task, submits every task before waiting for any (so one
 * thread can drive several ranks), then waits (blocking) or returns ncclInProgress. A blocking
 * call, or a blocking group of one communicator's ops, whose worker is idle runs its task on the
 * calling thread instead (host_task_try_inline in worker.c).
 *
 * Errors inside a group follow NCCL 2.30's implementation, not the user guide: the failing call
 * returns its error and records it; the outermost ncclGroupEnd then returns the recorded error and
 * discards the whole group (no op of any communicator runs, queued inits go to ERROR). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nccl_host.h"

/* A group item is a communication op or a job (host_job_kind, which starts at 1). */
enum { GROUP_OP = 0 };

typedef struct host_gitem {
    int job;                     /* a host_job_kind, or GROUP_OP: the item is the communication op `op` */
    ncclComm_t comm;
    host_opd *op;
    host_split_args *args;
    host_task *task;             /* a submitted split/shrink task to wait for */
    int blocking;                /* the communicator's blocking mode when it joined the group */
    struct host_gitem *next;
} host_gitem;

typedef struct {
    int depth;
    ncclResult_t error;          /* last error recorded inside the group */
    int blocking;                /* the group's blocking mode, set by its first comm; -1 before it */
    int nops, ninit;
    host_gitem *head, *tail;
} host_group_state;

/* This thread's group (a group is per thread, as NCCL's). */
static _Thread_local host_group_state this_group = {0, ncclSuccess, -1, 0, 0, NULL, NULL};

int host_group_depth(void)
{
    return this_group.depth;
}

ncclResult_t host_group_start(void)
{
    this_group.depth++;
    return ncclSuccess;
}

void host_group_record(ncclResult_t rc)
{
    if (this_group.depth > 0 && rc != ncclSuccess && rc != ncclInProgress)
        this_group.error = rc;
}

static void opd_free(host_opd *o)
{
    if (o != NULL) {
        free(o->v);
        free(o);
    }
}

static void item_free(host_gitem *it)
{
    opd_free(it->op);
    if (it->args != NULL)
        free(it->args->exclude);
    free(it->args);
    free(it);
}

static host_opd *opd_dup(const host_opd *op)
{
    host_opd *o = malloc(sizeof *o);
    if (o == NULL)
        return NULL;
    *o = *op;
    o->next = NULL;
    o->v = NULL;
    if (op->v != NULL) {
        o->v = malloc(sizeof(size_t) * op->nv);
        if (o->v == NULL) {
            free(o);
            return NULL;
        }
        memcpy(o->v, op->v, sizeof(size_t) * op->nv);
    }
    return o;
}

static void append(host_gitem *it)
{
    it->next = NULL;
    if (this_group.tail != NULL)
        this_group.tail->next = it;
    else
        this_group.head = it;
    this_group.tail = it;
}

static int is_init_job(int job)
{
    return job == HOST_JOB_INIT || job == HOST_JOB_SPLIT || job == HOST_JOB_SHRINK || job == HOST_JOB_GROW;
}

/* ------------------------------------------------------------------------------------------ */
/* Argument checks (docs/host-backend.md#argument-checks)
 * */
/* ------------------------------------------------------------------------------------------ */

static int overlaps(const void *a, size_t al, const void *b, size_t bl)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return al > 0 && bl > 0 && x < y + bl && y < x + al;
}

static int readable(const void *p, size_t len)
{
    char b;
    struct iovec l = {&b, 1}, r = {(void *)p, 1};
    if (len == 0)
        return 1;
    if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1)
        return 0;
    r.iov_base = (char *)p + len - 1;
    return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == 1;
}

static ncclResult_t need(const host_opd *op, const void *p, size_t bytes, const char *which)
{
    if (p == NULL)
        return host_fail(ncclInvalidArgument, "%s: %s is NULL with count %zu", op->name, which, op->count);
    if (host_params()->check_pointers && !readable(p, bytes))
        return host_fail(ncclInvalidArgument, "%s: %s %p is not readable memory", op->name, which, p);
    return ncclSuccess;
}

/* The buffers of one collective on this rank: sendbuff covers sb bytes and recvbuff rb (0: this
 * rank does not use that one, e.g. a non-root's recvbuff of reduce), checked in parameter order;
 * where both are used they must not overlap unless the call is in its in-place form. */
static ncclResult_t need_buffers(const host_opd *op, const char *send, size_t sb, const char *recv, size_t rb,
                                 int in_place, int checks)
{
    ncclResult_t rc;
    if (sb != 0 && HOST_FAILED(rc = need(op, send, sb, "sendbuff")))
        return rc;
    if (rb != 0 && HOST_FAILED(rc = need(op, recv, rb, "recvbuff")))
        return rc;
    if (checks && sb != 0 && rb != 0 && !in_place && overlaps(send, sb, recv, rb))
        return host_fail(ncclInvalidArgument, "%s: sendbuff %p and recvbuff %p overlap without being the in-place form",
                         op->name, (const void *)send, (const void *)recv);
    return ncclSuccess;
}

static ncclResult_t validate_alltoallv(host_comm *c, host_opd *op)
{
    ncclResult_t rc;
    int n = c->nranks;
    size_t es = host_type_size(op->datatype);
    size_t send_end = 0, recv_end = 0;
    int szero = 1, rzero = 1;
    for (int j = 0; j < n; j++) {
        size_t e, b;
        if (__builtin_add_overflow(op->v[n + j], op->v[j], &e) || __builtin_mul_overflow(e, es, &b))
            return host_fail(ncclInvalidArgument, "%s: sdispls[%d] + sendcounts[%d] overflows", op->name, j, j);
        if (op->v[j] > 0) {
            szero = 0;
            send_end = b > send_end ? b : send_end;
        }
        if (__builtin_add_overflow(op->v[3 * n + j], op->v[2 * n + j], &e) || __builtin_mul_overflow(e, es, &b))
            return host_fail(ncclInvalidArgument, "%s: rdispls[%d] + recvcounts[%d] overflows", op->name, j, j);
        if (op->v[2 * n + j] > 0) {
            rzero = 0;
            recv_end = b > recv_end ? b : recv_end;
        }
    }
    if (!szero)
        if (HOST_FAILED(rc = need(op, op->sendbuff, send_end, "sendbuff")))
            return rc;
    if (!rzero)
        if (HOST_FAILED(rc = need(op, op->recvbuff, recv_end, "recvbuff")))
            return rc;
    return ncclSuccess;
}

/* The buffers a collective reads and writes, by kind (nccl_surface.gen.h's buffer rules, from
 * tools/nccl_surface.py): whether sendbuff and recvbuff hold nranks blocks of count elements,
 * which one only root uses, and the in-place form. Kinds without a rule are 0: none. */
typedef enum { ONLY_ROOT_NONE, ONLY_ROOT_SEND, ONLY_ROOT_RECV } only_root;
typedef enum { IN_PLACE_SAME = 1, IN_PLACE_RECV_IN_SEND, IN_PLACE_SEND_IN_RECV } in_place_form;
static const struct {
    int send_blocks, recv_blocks;
    only_root only_root;
    in_place_form in_place;
} buffer_rules[HOST_NKINDS] = {
#define HOST_BUFFER_RULE(id, send_blocks, recv_blocks, root_only, in_place) \
    [HOST_K_##id] = {send_blocks, recv_blocks, ONLY_ROOT_##root_only, IN_PLACE_##in_place},
    NCCL_SURFACE_BUFFER_RULES(HOST_BUFFER_RULE)
#undef HOST_BUFFER_RULE
};

/* The buffers of a collective with a buffer rule, count elements of cb bytes (nb: nranks blocks). */
static ncclResult_t rule_buffers(const host_comm *c, const host_opd *op, size_t cb, size_t nb, int checks)
{
    const char *send = op->sendbuff;
    const char *recv = op->recvbuff;
    int root = c->rank == op->root, block = host_kinds[op->kind].rooted ? op->root : c->rank;
    size_t sb = buffer_rules[op->kind].send_blocks ? nb : cb, rb = buffer_rules[op->kind].recv_blocks ? nb : cb;
    if (buffer_rules[op->kind].only_root == ONLY_ROOT_SEND && !root)
        sb = 0;
    if (buffer_rules[op->kind].only_root == ONLY_ROOT_RECV && !root)
        rb = 0;
    int in_place;
    switch (buffer_rules[op->kind].in_place) {
    case IN_PLACE_SAME: in_place = send == recv; break;
    case IN_PLACE_RECV_IN_SEND: in_place = recv == send + (size_t)block * cb; break;
    case IN_PLACE_SEND_IN_RECV: in_place = send == recv + (size_t)block * cb; break;
    default: return ncclSuccess; /* no rule: nothing to check here */
    }
    return need_buffers(op, send, sb, recv, rb, in_place, checks);
}

/* Validates op on c (docs/host-backend.md#argument-checks). */
static ncclResult_t validate(host_comm *c, host_opd *op)
{
    ncclResult_t rc;
    int n = c->nranks;
    size_t es, cb, nb;
    int rooted = host_kinds[op->kind].rooted, p2p = host_kinds[op->kind].cls == HOST_CLASS_P2P;
    int checks = host_params()->checks;
    if (host_kind_is_rma(op->kind) || host_kind_is_win(op->kind))
        return host_rma_validate(c, op);
    if ((int)op->datatype < 0 || (int)op->datatype >= ncclNumTypes)
        return host_fail(ncclInvalidArgument, "%s: invalid datatype %d", op->name, (int)op->datatype);
    es = host_type_size(op->datatype);
    if (rooted && (op->root < 0 || op->root >= n))
        return host_fail(ncclInvalidArgument, "%s: root %d is outside [0, %d)", op->name, op->root, n);
    if (p2p && (op->peer < 0 || op->peer >= n))
        return host_fail(ncclInvalidArgument, "%s: peer %d is outside [0, %d)", op->name, op->peer, n);
    if (op->has_op)
        if (HOST_FAILED(rc = host_redop_resolve(c, (ncclRedOp_t)op->opkind, op->datatype, op)))
            return rc;
    if (op->kind == HOST_K_ALLREDUCE_BIAS && op->acc == NULL)
        return host_fail(ncclInvalidArgument, "%s: acc is NULL", op->name);
    if (op->kind == HOST_K_ALLTOALLV)
        return validate_alltoallv(c, op); /* all counts 0 still takes part in the cross-rank checks */
    if (__builtin_mul_overflow(op->count, es, &cb) || __builtin_mul_overflow(cb, (size_t)n, &nb))
        return host_fail(ncclInvalidArgument, "%s: count %zu x %zu bytes x %d ranks overflows size_t", op->name,
                         op->count, es, n);
    /* Count 0 needs no buffers, but it is not dropped: a collective still publishes its
     * descriptor, so a rank whose peers pass another count learns it at this call, not at its
     * next one; a send/recv is a zero-length message that must be matched. */
    if (op->count == 0)
        return ncclSuccess;
    switch (op->kind) {
    case HOST_K_ALLREDUCE_BIAS: /* an allreduce, plus acc */
        if (HOST_FAILED(rc = need_buffers(op, op->sendbuff, cb, op->recvbuff, cb, op->sendbuff == op->recvbuff,
                                          checks)))
            return rc;
        return need(op, op->acc, cb, "acc");
    case HOST_K_ALLTOALL: /* in place is NCCL's, but not ours */
        if (HOST_FAILED(rc = rule_buffers(c, op, cb, nb, 0)))
            return rc;
        if (checks && overlaps(op->sendbuff, nb, op->recvbuff, nb))
            return host_fail(ncclInvalidArgument, "%s: sendbuff and recvbuff overlap; in-place all-to-all is not "
                             "supported", op->name);
        return ncclSuccess;
    case HOST_K_SEND: return need_buffers(op, op->sendbuff, cb, op->recvbuff, 0, 1, checks);
    case HOST_K_RECV: return need_buffers(op, op->sendbuff, 0, op->recvbuff, cb, 1, checks);
    default: return rule_buffers(c, op, cb, nb, checks);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Queueing and running                                                                          */
/* ------------------------------------------------------------------------------------------ */

static ncclResult_t claim_for_group(host_comm *c, const char *fn)
{
    ncclResult_t rc = ncclSuccess;
    pthread_mutex_lock(&c->lock);
    if (c->group_owner != NULL && c->group_owner != (void *)&this_group)
        rc = host_fail(ncclInvalidUsage, "%s: communicator is queued in another thread's open group", fn);
    else if (c->active && !pthread_equal(c->active_thread, pthread_self()))
        rc = host_fail(ncclInvalidUsage, "%s: communicator is in use by another thread", fn);
    else
        c->group_owner = (void *)&this_group;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static ncclResult_t group_queue(host_comm *c, ncclComm_t comm, const host_opd *op)
{
    ncclResult_t rc;
    host_gitem *it;
    if (this_group.ninit > 0)
        return host_fail(ncclInvalidUsage, "%s: communication calls cannot share a group with init, split or shrink",
                         op->name);
    if (this_group.blocking >= 0 && this_group.blocking != c->blocking)
        return host_fail(ncclInvalidArgument, "%s: blocking and nonblocking communicators are not allowed in the same "
                         "group", op->name);
    for (host_gitem *g = this_group.head; g != NULL; g = g->next)
        if (g->comm == comm && (g->job == HOST_JOB_FINALIZE || g->job == HOST_JOB_DESTROY))
            return host_fail(ncclInvalidUsage, "%s: communicator is finalized or destroyed in the same group", op->name);
    if (HOST_FAILED(rc = claim_for_group(c, op->name)))
        return rc;
    it = calloc(1, sizeof *it);
    if (it != NULL)
        it->op = opd_dup(op);
    if (it == NULL || it->op == NULL) {
        free(it);
        return host_fail(ncclSystemError, "%s: out of memory queueing the operation", op->name);
    }
    it->comm = comm;
    it->blocking = c->blocking;
    append(it);
    if (this_group.blocking < 0)
        this_group.blocking = c->blocking;
    this_group.nops++;
    return ncclSuccess;
}

static ncclResult_t run_now(host_comm *c, const host_opd *op)
{
    host_task *t;
    ncclResult_t rc;
    if ((op->kind == HOST_K_SEND || op->kind == HOST_K_RECV) && op->peer == c->rank)
        return host_fail(ncclInvalidUsage, "%s: a send to or receive from oneself outside a group can never complete; "
                         "put both halves in one group", op->name);
    pthread_mutex_lock(&c->lock);
    if ((c->active && !pthread_equal(c->active_thread, pthread_self())) || c->group_owner != NULL) {
        pthread_mutex_unlock(&c->lock);
        return host_fail(ncclInvalidUsage, "%s: communicator is in use by another thread", op->name);
    }
    c->active++;
    c->active_thread = pthread_self();
    pthread_mutex_unlock(&c->lock);

    if (c->blocking) {
        /* No allocation for the inline path: the caller's argument copy lives until we return. */
        host_task st;
        host_opd so = *op;
        memset(&st, 0, sizeof st);
        so.next = NULL;
        st.kind = HOST_TASK_OPS;
        st.ops = &so;
        if (host_task_try_inline(c, &st, &rc))
            goto exit;
    }
    t = calloc(1, sizeof *t);
    if (t != NULL)
        t->ops = opd_dup(op);
    if (t == NULL || t->ops == NULL) {
        free(t);
        rc = host_fail(ncclSystemError, "%s: out of memory", op->name);
        goto exit;
    }
    t->kind = HOST_TASK_OPS;
    t->detached = !c->blocking;
    host_task_submit(c, t);
    rc = c->blocking ? host_task_wait(c, t) : ncclInProgress;
exit:
    pthread_mutex_lock(&c->lock);
    c->active--;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static ncclResult_t coll_call(host_opd *op, ncclComm_t comm)
{
    host_comm *c;
    ncclResult_t rc;
    (void)host_params();
    HOST_TRACE(HOST_SUB_CALL, "%s(send %p, recv %p, count %zu, type %d, op %d, root %d, comm %p)", op->name,
               op->sendbuff, op->recvbuff, op->count, (int)op->datatype, op->opkind, op->root, (void *)comm);
    if (HOST_FAILED(rc = host_comm_enter(comm, op->name, &c)))
        return rc;
    if (HOST_FAILED(rc = host_comm_usable(c, op->name)))
        goto exit;
    if (op->kind == HOST_K_ALLTOALLV) {
        size_t n = (size_t)c->nranks;
        for (int i = 0; i < 4; i++)
            if (op->uv[i] == NULL) {
                static const char *names[] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};
                rc = host_fail(ncclInvalidArgument, "%s: %s is NULL", op->name, names[i]);
                goto exit;
            }
        op->v = malloc(sizeof(size_t) * 4 * n);
        if (op->v == NULL) {
            rc = host_fail(ncclSystemError, "%s: out of memory", op->name);
            goto exit;
        }
        op->nv = 4 * n;
        for (int i = 0; i < 4; i++)
            memcpy(op->v + (size_t)i * n, op->uv[i], sizeof(size_t) * n);
    }
    if (op->kind == HOST_K_WAIT_SIGNAL && HOST_FAILED(rc = host_rma_descs(c, op)))
        goto exit;
    if (HOST_FAILED(rc = validate(c, op)))
        goto exit;
    if (this_group.depth > 0)
        rc = group_queue(c, comm, op);
    else
        rc = run_now(c, op);
exit:
    free(op->v); /* queued or submitted ops hold their own copies */
    op->v = NULL;
    host_comm_leave(c);
    return rc;
}

ncclResult_t host_coll_call(host_opd *op, ncclComm_t comm)
{
    ncclResult_t rc = coll_call(op, comm);
    host_group_record(rc);
    return rc;
}

ncclResult_t host_group_add_job(host_job_kind kind, ncclComm_t comm, host_split_args *args)
{
    host_comm *c;
    host_gitem *it;
    ncclResult_t rc = ncclSuccess;
    int blocking;
    if (host_comm_enter(comm, "ncclGroupEnd", &c) != ncclSuccess) {
        rc = ncclInvalidArgument;
        goto fail;
    }
    blocking = c->blocking;
    host_comm_leave(c);
    if (is_init_job((int)kind) && this_group.nops > 0) {
        rc = host_fail(ncclInvalidUsage, "init, split and shrink cannot share a group with communication calls");
        goto fail;
    }
    if (this_group.blocking >= 0 && this_group.blocking != blocking && kind != HOST_JOB_DESTROY) {
        rc = host_fail(ncclInvalidArgument, "blocking and nonblocking communicators are not allowed in the same group");
        goto fail;
    }
    if (kind == HOST_JOB_FINALIZE || kind == HOST_JOB_DESTROY)
        for (host_gitem *g = this_group.head; g != NULL; g = g->next)
            if (g->comm == comm && g->job == GROUP_OP) {
                rc = host_fail(ncclInvalidUsage, "communicator is finalized or destroyed in the group that uses it");
                goto fail;
            }
    it = calloc(1, sizeof *it);
    if (it == NULL) {
        rc = host_fail(ncclSystemError, "out of memory");
        goto fail;
    }
    it->job = (int)kind;
    it->comm = comm;
    it->args = args;
    it->blocking = blocking;
    append(it);
    if (kind != HOST_JOB_DESTROY && this_group.blocking < 0)
        this_group.blocking = blocking;
    if (is_init_job((int)kind))
        this_group.ninit++;
    return ncclSuccess;
fail:
    if (args != NULL)
        free(args->exclude);
    free(args);
    host_group_record(rc);
    return rc;
}

void host_group_drop_comm(ncclComm_t comm)
{
    host_gitem **pp = &this_group.head, *last = NULL;
    while (*pp != NULL) {
        host_gitem *it = *pp;
        if (it->comm == comm) {
            *pp = it->next;
            if (it->job == GROUP_OP)
                this_group.nops--;
            else if (is_init_job(it->job))
                this_group.ninit--;
            item_free(it);
            continue;
        }
        last = it;
        pp = &it->next;
    }
    this_group.tail = last;
}

/* ------------------------------------------------------------------------------------------ */
/* ncclGroupEnd                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    ncclComm_t comm;
    host_comm *c;        /* pinned */
    host_task *task;     /* OPS task being built */
    host_opd *last;
} group_comm;

/* The communicators of one ncclGroupEnd that carry ops, each pinned, with its task. */
typedef struct {
    group_comm *gc;
    int ngc, cap;
} group_comms;

/* Hands c back from this thread's group (c is pinned by the caller). */
static void release_owner(host_comm *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->group_owner == (void *)&this_group)
        c->group_owner = NULL;
    pthread_mutex_unlock(&c->lock);
}

/* Hands back the communicator of a queued item, if it is still alive. */
static void release_item_owner(const host_gitem *it)
{
    host_comm *c;
    if (host_comm_enter(it->comm, "ncclGroupEnd", &c) == ncclSuccess) {
        release_owner(c);
        host_comm_leave(c);
    }
}

static void discard(host_gitem *items, ncclResult_t err)
{
    while (items != NULL) {
        host_gitem *it = items;
        host_comm *c;
        items = it->next;
        if (it->job == HOST_JOB_INIT && host_comm_enter(it->comm, "ncclGroupEnd", &c) == ncclSuccess) {
            int expected = 0;
            atomic_compare_exchange_strong_explicit(&c->error, &expected, (int)err, memory_order_seq_cst, memory_order_seq_cst);
            host_comm_wake(c);
            host_comm_leave(c);
        }
        release_item_owner(it);
        item_free(it);
    }
}

static double estimate_us(const host_gitem *items)
{
    double t = 0;
    for (const host_gitem *it = items; it != NULL; it = it->next)
        if (it->job == GROUP_OP)
            t += 5.0 + (double)it->op->count * (double)host_type_size(it->op->datatype) / 1e4;
    return t;
}

/* The entry of comm in gcs, added (pinned, usable, with an empty OPS task) when missing. */
static ncclResult_t group_comm_of(group_comms *gcs, ncclComm_t comm, group_comm **out)
{
    ncclResult_t rc = ncclSuccess;
    group_comm *g;
    int k = 0;
    while (k < gcs->ngc && gcs->gc[k].comm != comm)
        k++;
    if (k == gcs->ngc && k == gcs->cap) {
        int cap = gcs->cap ? gcs->cap * 2 : 8;
        group_comm *ng = realloc(gcs->gc, sizeof *ng * (size_t)cap);
        if (ng == NULL)
            return host_fail(ncclSystemError, "ncclGroupEnd: out of memory");
        gcs->gc = ng;
        gcs->cap = cap;
    }
    g = &gcs->gc[k];
    if (k == gcs->ngc) {
        memset(g, 0, sizeof *g);
        g->comm = comm;
        if (HOST_FAILED(rc = host_comm_enter(comm, "ncclGroupEnd", &g->c)))
            return rc;
        gcs->ngc++; /* pinned from here: execute's release unpins it */
        if (HOST_FAILED(rc = host_comm_usable(g->c, "ncclGroupEnd")))
            return rc;
        if ((g->task = calloc(1, sizeof *g->task)) == NULL)
            return host_fail(ncclSystemError, "ncclGroupEnd: out of memory");
        g->task->kind = HOST_TASK_OPS;
    }
    *out = g;
    return rc;
}

/* The byte range a send reads or a receive writes, for the group's overlap check. */
typedef struct {
    uintptr_t lo, hi;
    const host_opd *op;
} p2p_span;

static int span_cmp(const void *a, const void *b)
{
    const p2p_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Whether the self receive r is a copy onto itself: the self send it meets (the k-th self send
 * for the k-th self receive, worker.c self_p2p) reads the very bytes it would write, so it writes
 * nothing. */
static int self_copy_onto_itself(const host_opd *ops, const host_opd *r, int me)
{
    int k = 0;
    const host_opd *o;
    for (o = ops; o != r; o = o->next)
        k += o->kind == HOST_K_RECV && o->peer == me;
    for (o = ops; o != NULL; o = o->next)
        if (o->kind == HOST_K_SEND && o->peer == me && k-- == 0)
            break;
    return o != NULL && o->sendbuff == r->recvbuff && o->count == r->count && o->datatype == r->datatype;
}

static HOST_COLD ncclResult_t overlap_error(const host_comm *c, const p2p_span *a, const p2p_span *b)
{
    const p2p_span *snd = a->op->kind == HOST_K_SEND ? a : b, *rcv = snd == a ? b : a;
    return host_fail(ncclInvalidArgument, "ncclGroupEnd: %s rank %d: the ncclRecv from rank %d into %p (%zu bytes) "
                     "overlaps the ncclSend to rank %d from %p (%zu bytes) in the same group: the receive would "
                     "overwrite what the send still reads", c->name, c->rank, rcv->op->peer, (void *)rcv->lo,
                     (size_t)(rcv->hi - rcv->lo), snd->op->peer, (void *)snd->lo, (size_t)(snd->hi - snd->lo));
}

/* A group's sends and receives on one communicator run together, so a receive buffer that
 * overlaps a send buffer gives whatever the interleaving gives. Refused, as one call's
 * overlapping buffers are (NCCL_HOST_CHECKS=0 leaves it undefined, as in NCCL): a sweep over
 * the ranges sorted by start, each against the furthest-reaching range of the other kind before
 * it. A self receive onto its own send's bytes writes nothing and takes no part. */
static ncclResult_t check_p2p_overlap(const host_comm *c, const host_opd *ops)
{
    size_t n = 0, k = 0;
    p2p_span *sp;
    ncclResult_t rc = ncclSuccess;
    for (const host_opd *o = ops; o != NULL; o = o->next)
        n += (o->kind == HOST_K_SEND || o->kind == HOST_K_RECV) && o->count > 0;
    if (n < 2 || !host_params()->checks)
        return ncclSuccess;
    if ((sp = malloc(sizeof *sp * n)) == NULL)
        return host_fail(ncclSystemError, "ncclGroupEnd: out of memory");
    for (const host_opd *o = ops; o != NULL; o = o->next) {
        if (!(o->kind == HOST_K_SEND || o->kind == HOST_K_RECV) || o->count == 0 ||
            (o->kind == HOST_K_RECV && o->peer == c->rank && self_copy_onto_itself(ops, o, c->rank)))
            continue;
        sp[k].lo = (uintptr_t)(o->kind == HOST_K_SEND ? o->sendbuff : o->recvbuff);
        sp[k].hi = sp[k].lo + o->count * host_type_size(o->datatype); /* validated: no overflow */
        sp[k++].op = o;
    }
    qsort(sp, k, sizeof *sp, span_cmp);
    for (size_t i = 0, far[2] = {SIZE_MAX, SIZE_MAX}; i < k && rc == ncclSuccess; i++) {
        int kind = sp[i].op->kind == HOST_K_RECV;
        size_t f = far[!kind];
        if (f != SIZE_MAX && sp[f].hi > sp[i].lo)
            rc = overlap_error(c, &sp[i], &sp[f]);
        else if (far[kind] == SIZE_MAX || sp[i].hi > sp[far[kind]].hi)
            far[kind] = i;
    }
    free(sp);
    return rc;
}

/* Phase 1: one OPS task per communicator, ops in issue order, every comm still usable; self
 * p2p must pair up inside each task, as an unmatched half could never complete, and no receive
 * may overlap a send. */
static ncclResult_t build_tasks(host_gitem *items, group_comms *gcs)
{
    ncclResult_t rc = ncclSuccess;
    for (host_gitem *it = items; it != NULL && rc == ncclSuccess; it = it->next) {
        group_comm *g = NULL;
        if (it->job != GROUP_OP || HOST_FAILED(rc = group_comm_of(gcs, it->comm, &g)))
            continue;
        if (g->last != NULL)
            g->last->next = it->op;
        else
            g->task->ops = it->op;
        g->last = it->op;
        it->op = NULL;
    }
    for (int k = 0; k < gcs->ngc && rc == ncclSuccess; k++) {
        const group_comm *g = &gcs->gc[k];
        int ns = 0, nr = 0;
        for (const host_opd *o = g->task->ops; o != NULL; o = o->next) {
            ns += o->kind == HOST_K_SEND && o->peer == g->c->rank;
            nr += o->kind == HOST_K_RECV && o->peer == g->c->rank;
        }
        if (ns != nr)
            rc = host_fail(ncclInvalidUsage, "ncclGroupEnd: rank %d has %d self send(s) but %d self receive(s) in "
                           "the group", g->c->rank, ns, nr);
        else
            rc = check_p2p_overlap(g->c, g->task->ops);
    }
    return rc;
}

/* A blocking group holding only one communicator's ops: the calling thread may run its task
 * itself (host_task_try_inline). Groups over several comms need every worker at once. Returns
 * 1 when it ran the task (its result in *rc). */
static int run_inline(const host_gitem *items, group_comms *gcs, int blocking, ncclResult_t *rc)
{
    ncclResult_t r;
    if (!blocking || gcs->ngc != 1)
        return 0;
    for (const host_gitem *it = items; it != NULL; it = it->next)
        if (it->job != GROUP_OP)
            return 0;
    if (!host_task_try_inline(gcs->gc[0].c, gcs->gc[0].task, &r))
        return 0;
    *rc = r;
    host_task_free(gcs->gc[0].task);
    gcs->gc[0].task = NULL;
    return 1;
}

static int is_end_job(int job)
{
    return job == HOST_JOB_FINALIZE || job == HOST_JOB_DESTROY;
}

/* Phase 2 for one init, split, shrink or grow job: start it (c pinned). */
static ncclResult_t start_job(host_gitem *it, host_comm *c)
{
    ncclResult_t rc = ncclSuccess;
    if (it->job == HOST_JOB_INIT) {
        rc = host_comm_start(c);
        if (rc != ncclSuccess) {
            int expected = 0;
            atomic_compare_exchange_strong_explicit(&c->error, &expected, (int)rc, memory_order_seq_cst, memory_order_seq_cst);
        }
    } else {
        host_task *t = calloc(1, sizeof *t);
        if (t == NULL)
            rc = host_fail(ncclSystemError, "ncclGroupEnd: out of memory");
        else {
            t->kind = it->job == HOST_JOB_SPLIT ? HOST_TASK_SPLIT :
                      it->job == HOST_JOB_SHRINK ? HOST_TASK_SHRINK : HOST_TASK_GROW;
            t->split = it->args;
            it->args = NULL;
            t->detached = !c->blocking;
            host_task_submit(c, t);
            if (c->blocking)
                it->task = t;
        }
    }
    return rc;
}

/* Phase 2: start everything before waiting on anything. */
static ncclResult_t start_all(host_gitem *items, group_comms *gcs)
{
    ncclResult_t rc = ncclSuccess;
    for (host_gitem *it = items; it != NULL; it = it->next) {
        host_comm *c;
        if (it->job == GROUP_OP || is_end_job(it->job))
            continue;
        if (host_comm_enter(it->comm, "ncclGroupEnd", &c) != ncclSuccess) {
            HOST_CHECKIGNORE(ncclInvalidArgument, rc);
            continue;
        }
        HOST_CHECKIGNORE(start_job(it, c), rc);
        host_comm_leave(c);
    }
    for (int k = 0; k < gcs->ngc; k++) {
        gcs->gc[k].task->detached = !gcs->gc[k].c->blocking;
        host_task_submit(gcs->gc[k].c, gcs->gc[k].task);
    }
    return rc;
}

/* Phase 3: wait (blocking) for every task; the first error among the comms wins. A nonblocking
 * group's tasks are detached: their workers free them. */
static ncclResult_t wait_all(host_gitem *items, group_comms *gcs, int blocking)
{
    ncclResult_t rc = ncclSuccess;
    for (host_gitem *it = items; it != NULL && blocking; it = it->next) {
        host_comm *c;
        if (it->job == GROUP_OP || is_end_job(it->job) || host_comm_enter(it->comm, "ncclGroupEnd", &c) != ncclSuccess)
            continue;
        if (it->job == HOST_JOB_INIT) {
            HOST_CHECKIGNORE(host_comm_wait_init(c), rc);
        } else if (it->task != NULL) {
            HOST_CHECKIGNORE(host_task_wait(c, it->task), rc);
            it->task = NULL;
        }
        host_comm_leave(c);
    }
    for (int k = 0; k < gcs->ngc; k++) {
        if (blocking)
            HOST_CHECKIGNORE(host_task_wait(gcs->gc[k].c, gcs->gc[k].task), rc);
        gcs->gc[k].task = NULL;
    }
    return rc;
}

/* Phase 4: finalize and destroy jobs run after the group's work. */
static ncclResult_t end_all(host_gitem *items)
{
    ncclResult_t rc = ncclSuccess;
    for (host_gitem *it = items; it != NULL; it = it->next) {
        host_comm *c;
        host_task *t;
        if (!is_end_job(it->job))
            continue;
        if (host_comm_enter(it->comm, "ncclGroupEnd", &c) != ncclSuccess) {
            HOST_CHECKIGNORE(ncclInvalidArgument, rc);
            continue;
        }
        if (it->job == HOST_JOB_DESTROY) {
            release_owner(c);
            HOST_CHECKIGNORE(host_destroy_impl(c, 0), rc); /* consumes the pin */
            continue;
        }
        if ((t = calloc(1, sizeof *t)) == NULL) {
            HOST_CHECKIGNORE(host_fail(ncclSystemError, "out of memory"), rc);
        } else {
            t->kind = HOST_TASK_FINALIZE;
            t->detached = !c->blocking;
            host_task_submit(c, t);
            if (c->blocking)
                HOST_CHECKIGNORE(host_task_wait(c, t), rc);
        }
        host_comm_leave(c);
    }
    return rc;
}

/* The group's blocking mode, as NCCL defines it: that of the first communicator that joined the
 * group, which every later one had to match when it joined (group_queue, host_group_add_job).
 * Destroys do not join (they are synchronous); a group without another item blocks. Items of
 * aborted comms are gone (host_group_drop_comm), so the first remaining item decides. */
static int group_blocking(const host_gitem *items)
{
    for (const host_gitem *it = items; it != NULL; it = it->next)
        if (it->job != HOST_JOB_DESTROY)
            return it->blocking;
    return 1;
}

/* Runs a group's items (docs/host-backend.md#groups): tasks built, started, waited for when
 * the group blocks, then finalizes and destroys; every communicator is released at the end. */
static ncclResult_t execute(host_gitem *items, int simulate)
{
    group_comms gcs = {NULL, 0, 0};
    int blocking = group_blocking(items);
    ncclResult_t rc = ncclSuccess;
    if (!simulate)
        rc = build_tasks(items, &gcs);
    if (rc == ncclSuccess && !run_inline(items, &gcs, blocking, &rc)) {
        rc = start_all(items, &gcs);
        HOST_CHECKIGNORE(wait_all(items, &gcs, blocking), rc);
        HOST_CHECKIGNORE(end_all(items), rc);
        if (rc == ncclSuccess && !blocking)
            rc = ncclInProgress;
    }
    for (int k = 0; k < gcs.ngc; k++) {
        host_task_free(gcs.gc[k].task); /* only a task never submitted is left here */
        release_owner(gcs.gc[k].c);
        host_comm_leave(gcs.gc[k].c);
    }
    free(gcs.gc);
    return rc;
}

ncclResult_t host_group_end(ncclSimInfo_t *sim, int simulate)
{
    host_gitem *items;
    ncclResult_t err, rc;
    double est;
    if (this_group.depth == 0)
        return host_fail(ncclInvalidUsage, "%s: not in a group call (ncclGroupEnd without ncclGroupStart)",
                         simulate ? "ncclGroupSimulateEnd" : "ncclGroupEnd");
    if (simulate && sim != NULL && sim->magic != NCCL_SIM_INFO_MAGIC) {
        this_group.error = host_fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo->magic is 0x%x, not 0x%x: "
                                     "initialise it with NCCL_SIM_INFO_INITIALIZER", sim->magic, NCCL_SIM_INFO_MAGIC);
    }
    if (--this_group.depth > 0)
        return simulate && sim != NULL && sim->magic != NCCL_SIM_INFO_MAGIC ? ncclInvalidArgument : ncclSuccess;
    items = this_group.head;
    err = this_group.error;
    this_group.head = this_group.tail = NULL;
    this_group.error = ncclSuccess;
    this_group.blocking = -1;
    this_group.nops = this_group.ninit = 0;
    if (err != ncclSuccess) {
        discard(items, err);
        return err;
    }
    simulate = simulate && sim != NULL;
    est = estimate_us(items);
    rc = execute(items, simulate);
    /* Items still holding ops (simulation, or a failure before submission) release them here. */
    for (host_gitem *it = items; it != NULL;) {
        host_gitem *next = it->next;
        if (it->job == GROUP_OP)
            release_item_owner(it);
        item_free(it);
        it = next;
    }
    if (simulate) {
        size_t end = offsetof(ncclSimInfo_t, estimatedTime) + sizeof sim->estimatedTime;
        if (sim->size >= end)
            sim->estimatedTime = (float)est;
    }
    return rc;
}

/* ------------------------------------------------------------------------------------------ */

const host_kind_info host_kinds[HOST_NKINDS] = {
#define HOST_KIND_INFO(id, entry, cls, reduces, rooted) [HOST_K_##id] = {HOST_CLASS_##cls, entry, reduces, rooted},
    NCCL_SURFACE_HOST_KINDS(HOST_KIND_INFO)
#undef HOST_KIND_INFO
};

const char *host_kind_name(host_kind k)
{
    return k > HOST_K_NONE && k < HOST_NKINDS ? host_kinds[k].entry : "unknown";
}

const char *host_type_name(ncclDataType_t dt)
{
#define HOST_TYPE_NAME(c, core, shortname, size, numpy, kind, dlpack) [c] = shortname,
    static const char *const names[ncclNumTypes] = {NCCL_SURFACE_DTYPES(HOST_TYPE_NAME)};
#undef HOST_TYPE_NAME
    return (int)dt >= 0 && (int)dt < ncclNumTypes ? names[dt] : "invalid";
}

const char *host_op_name(int opkind)
{
    static const char *names[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
    return opkind >= 0 && opkind <= HOST_OP_PREMULSUM ? names[opkind] : "none";
}
