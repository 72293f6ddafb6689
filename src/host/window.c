/* Windows (docs/host-backend.md#windows-and-one-sided-operations).
 *
 * ncclCommWindowRegister is collective. Every rank registers a range of its own memory; when the
 * range lies inside one ncclMemAlloc block (a sealed memfd, mem.c), the rank also offers the
 * block's descriptor to its peers, over a Unix-domain socket (host_uds_name) whose random name
 * travels over the authenticated control mesh, and only to processes of its own uid (as the
 * segment is passed, bootstrap.c). Every peer maps the block and so can load from and
 * store into that rank's part of the window directly: ncclGetPeerDevicePointer returns that
 * address, and ncclPutSignal is a memcpy into it. A part over other memory (a numpy array, a
 * torch CPU tensor) is registered too, so code that registers a window and then runs collectives
 * on the buffer works, but peers cannot map it: its peer pointer is NULL and a put into it is
 * ncclInvalidUsage naming the rank.
 *
 * A registration inside a group, like every communication call, is queued and runs at the
 * outermost ncclGroupEnd, which then writes the handle. Registration and deregistration run on
 * the task's thread before the task's other ops, in issue order (worker.c). A handle is a number
 * naming a host_win kept in its communicator's list and a process-wide registry: a deregistered,
 * foreign or garbage handle is recognised by lookup, never dereferenced, and never names a later
 * window. Registration refuses memory that is not live and pins the ncclMemAlloc block it lies
 * in, so the block cannot be freed under the window (mem.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccl_host.h"

static pthread_mutex_t wins_lock = PTHREAD_MUTEX_INITIALIZER;
static host_win *wins; /* every registered window of the process; guarded by wins_lock */

/* Window handles are numbers with this tag, never addresses: a deregistered handle never names a
 * later window (malloc would hand the same address to the next one), and one that is dereferenced
 * faults at once. */
#define WIN_HANDLE_TAG ((uintptr_t)0x4e57u << 48)
static _Atomic uint64_t win_ids;

/* What each rank tells the others when registering (and, with serial only, deregistering). */
typedef struct {
    uint64_t serial;
    uint64_t size;
    uint64_t off;        /* the range's offset in its ncclMemAlloc block */
    int32_t mappable;    /* 1: the block's descriptor is served at name */
    int32_t status;      /* second round: 0, or this rank's failure code */
    char name[48];
} win_rec;

host_win *host_win_find(host_comm *c, ncclWindow_t w)
{
    for (host_win *x = c->wins; x != NULL; x = x->next)
        if (x->handle == w)
            return x;
    return NULL;
}

static void win_unmap(host_win *w, int n)
{
    for (int j = 0; j < n && w->part != NULL; j++)
        if (w->part[j].map != NULL)
            munmap(w->part[j].map, w->part[j].map_len);
    host_mem_unpin(w->block);
    free(w->part);
    free(w);
}

/* Maps rank j's part from the descriptor it served: only a sealed memfd of our uid, at least as
 * large as the range it announced. */
static ncclResult_t map_part(host_comm *c, host_win_part *p, int fd, const win_rec *r, int j)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), start = r->off / page * page;
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    void *m;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || seals < 0 || !(seals & F_SEAL_SHRINK) ||
        (uint64_t)st.st_size < r->off || (uint64_t)st.st_size - r->off < r->size)
        return host_fail(ncclSystemError, "ncclCommWindowRegister: %s rank %d: refusing rank %d's memory: not a "
                         "sealed block of this user covering the %llu bytes it registered", c->name, c->rank, j,
                         (unsigned long long)r->size);
    p->map_len = r->off - start + r->size;
    if (p->map_len == 0)
        return ncclSuccess;
    m = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);
    if (m == MAP_FAILED)
        return host_fail(ncclSystemError, "ncclCommWindowRegister: %s rank %d: mmap of rank %d's window failed: %s",
                         c->name, c->rank, j, strerror(errno));
    p->map = m;
    p->base = (unsigned char *)m + (r->off - start);
    return ncclSuccess;
}

/* Serves our block's descriptor to every peer and fetches every mappable peer's, in one poll
 * loop (so no two ranks wait for each other), with the deadline, abort and peer death. */
static ncclResult_t exchange_fds(host_comm *c, host_win *w, const win_rec *recs, int lfd, int myfd)
{
    int n = c->nranks, me = c->rank, served = 0, need_serve = lfd >= 0 ? n - 1 : 0, need = 0, got = 0;
    int64_t deadline = host_deadline_after(host_params()->timeout_ns);
    int *sock = malloc(sizeof(int) * (size_t)n);
    struct pollfd *pfd = malloc(sizeof *pfd * (size_t)(n + 2));
    ncclResult_t rc = ncclSuccess, refused = ncclSuccess;
    if (sock == NULL || pfd == NULL) {
        rc = host_fail(ncclSystemError, "ncclCommWindowRegister: out of memory");
        goto exit;
    }
    for (int j = 0; j < n; j++)
        sock[j] = -1;
    for (int j = 0; j < n; j++) {
        if (j == me || !recs[j].mappable)
            continue;
        need++;
        if (host_uds_connect(recs[j].name, deadline, c->wake_fd, &sock[j]) != HOST_IO_OK) {
            rc = host_fail(ncclSystemError, "ncclCommWindowRegister: %s rank %d: cannot reach rank %d to map its "
                           "window: %s", c->name, me, j, strerror(errno));
            goto exit;
        }
    }
    while (served < need_serve || got < need) {
        int k = 0, r;
        if (atomic_load_explicit(&c->aborted, memory_order_seq_cst)) {
            rc = host_fail(ncclInvalidUsage, "ncclCommWindowRegister: communicator aborted");
            goto exit;
        }
        for (int j = 0; j < n; j++)
            if (j != me && host_peer_is_gone(c, j)) {
                rc = host_fail_peer_gone(c, "ncclCommWindowRegister", j);
                goto exit;
            }
        if (host_now_ns() >= deadline) {
            rc = host_fail(host_timeout_code(), "ncclCommWindowRegister: %s rank %d: timed out exchanging window "
                           "memory (%d of %d peers served, %d of %d mapped)", c->name, me, served, need_serve, got,
                           need);
            goto exit;
        }
        pfd[k++] = (struct pollfd){c->wake_fd, POLLIN, 0};
        pfd[k++] = (struct pollfd){served < need_serve ? lfd : -1, POLLIN, 0};
        for (int j = 0; j < n; j++)
            pfd[k++] = (struct pollfd){sock[j], POLLIN, 0};
        r = poll(pfd, (nfds_t)k, 100);
        if (r <= 0)
            continue;
        if (pfd[1].revents)
            for (int s; served < need_serve && (s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
                if (host_uds_peer_uid(s) == (long)geteuid() && host_uds_send_fd(s, myfd) == HOST_IO_OK)
                    served++;
                close(s);
            }
        for (int j = 0; j < n; j++) {
            int fd = -1;
            ncclResult_t mr;
            if (sock[j] < 0 || !pfd[j + 2].revents)
                continue;
            if (host_uds_recv_fd(sock[j], deadline, c->wake_fd, &fd) != HOST_IO_OK || fd < 0) {
                rc = host_fail(ncclSystemError, "ncclCommWindowRegister: %s rank %d: rank %d did not pass its window "
                               "memory", c->name, me, j);
                goto exit;
            }
            host_sock_close(&sock[j]);
            /* A part we refuse fails the registration, but only after the loop: the peers still
             * wait for us to fetch theirs, and would otherwise wait until their deadline. */
            mr = map_part(c, &w->part[j], fd, &recs[j], j);
            close(fd);
            if (mr != ncclSuccess && refused == ncclSuccess)
                refused = mr;
            got++;
        }
    }
    rc = refused;
exit:
    for (int j = 0; sock != NULL && j < n; j++)
        host_sock_close(&sock[j]);
    free(sock);
    free(pfd);
    return rc;
}

/* The allgather over every rank of the communicator. */
static ncclResult_t allgather(host_comm *c, const win_rec *mine, win_rec *all, const char *fn)
{
    int *members = malloc(sizeof(int) * (size_t)c->nranks);
    ncclResult_t rc;
    if (members == NULL)
        return host_fail(ncclSystemError, "%s: out of memory", fn);
    for (int j = 0; j < c->nranks; j++)
        members[j] = j;
    rc = host_mgmt_allgather(c, members, c->nranks, mine, sizeof *mine, all, fn);
    free(members);
    return rc;
}

/* Every rank learns whether every other rank succeeded, so they all fail or succeed together. */
static ncclResult_t agree(host_comm *c, win_rec *mine, win_rec *all, ncclResult_t rc, const char *fn)
{
    ncclResult_t r2;
    mine->status = (int32_t)rc;
    if (HOST_FAILED(r2 = allgather(c, mine, all, fn)))
        return rc != ncclSuccess ? rc : r2;
    if (rc != ncclSuccess)
        return rc;
    for (int j = 0; j < c->nranks; j++)
        if (all[j].status != ncclSuccess)
            return host_fail((ncclResult_t)all[j].status, "%s: %s rank %d: rank %d failed its part (%s)", fn, c->name,
                             c->rank, j, host_error_string((ncclResult_t)all[j].status));
    return ncclSuccess;
}

/* When op's range lies inside one ncclMemAlloc block: a duplicate of the block's descriptor in
 * *myfd and a listener on a random name in *lfd (host_uds_name), announced in mine. */
static ncclResult_t offer_block(host_comm *c, const host_opd *op, win_rec *mine, int *lfd, int *myfd)
{
    size_t off = 0;
    uint64_t rnd;
    ncclResult_t rc;
    if (c->nranks == 1 || !host_mem_lookup(op->recvbuff, op->count, myfd, &off))
        return ncclSuccess;
    mine->off = off;
    if (HOST_FAILED(rc = host_random_bytes(&rnd, sizeof rnd)))
        return rc;
    host_uds_name(mine->name, sizeof mine->name, c->uds_path, "win", rnd);
    if (HOST_FAILED(rc = host_uds_listen(mine->name, c->nranks < 1024 ? c->nranks : 1024, lfd)))
        return rc;
    mine->mappable = 1;
    return ncclSuccess;
}

/* Links a registered window into its communicator's list and the registry. */
static void win_publish(host_comm *c, host_win *w)
{
    pthread_mutex_lock(&c->lock);
    w->next = c->wins;
    c->wins = w;
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_lock(&wins_lock);
    w->gnext = wins;
    wins = w;
    pthread_mutex_unlock(&wins_lock);
}

static ncclResult_t run_register(host_comm *c, host_opd *op)
{
    int n = c->nranks, lfd = -1, myfd = -1;
    win_rec mine, *all = calloc((size_t)n, sizeof *all);
    host_win *w = calloc(1, sizeof *w);
    ncclResult_t rc;
    memset(&mine, 0, sizeof mine);
    mine.serial = c->win_serial + 1;
    mine.size = op->count;
    c->win_serial = mine.serial; /* every rank consumes the number, registered or not */
    if (w != NULL)
        w->part = calloc((size_t)n, sizeof *w->part);
    if (all == NULL || w == NULL || w->part == NULL) {
        rc = host_fail(ncclSystemError, "ncclCommWindowRegister: out of memory"); /* peers: their deadline */
        goto exit;
    }
    /* Memory that is not live is refused here, on the task thread, so the peers learn it in the
     * first round instead of waiting for this rank; a block is pinned while the window covers it. */
    rc = host_mem_pin(op->recvbuff, op->count, "ncclCommWindowRegister", &w->block);
    if (rc == ncclSuccess)
        rc = offer_block(c, op, &mine, &lfd, &myfd);
    /* Everyone takes part in both rounds even after a local failure, so nobody waits in vain. */
    if (HOST_FAILED(rc = agree(c, &mine, all, rc, "ncclCommWindowRegister")))
        goto exit;
    w->comm = c;
    w->serial = mine.serial;
    w->handle = (ncclWindow_t)(WIN_HANDLE_TAG | (uintptr_t)(atomic_fetch_add_explicit(&win_ids, 1,
                                                                                      memory_order_relaxed) + 1));
    w->buff = op->recvbuff;
    w->size = op->count;
    w->flags = op->flags;
    for (int j = 0; j < n; j++)
        w->part[j].size = all[j].size;
    w->part[c->rank].base = op->recvbuff;
    rc = exchange_fds(c, w, all, lfd, myfd);
    host_uds_close(&lfd, mine.name);
    if (HOST_FAILED(rc = agree(c, &mine, all, rc, "ncclCommWindowRegister")))
        goto exit;
    win_publish(c, w);
    if (op->winp != NULL)
        *op->winp = w->handle;
    HOST_INFO(HOST_SUB_ALLOC, "%s rank %d: window %llu registered: %zu bytes at %p%s", c->name, c->rank,
              (unsigned long long)w->serial, w->size, w->buff, mine.mappable ? "" : " (not ncclMemAlloc memory: "
              "peers cannot map it)");
    w = NULL;
exit:
    host_uds_close(&lfd, mine.name);
    if (myfd >= 0)
        close(myfd);
    if (w != NULL)
        win_unmap(w, n);
    free(all);
    return rc;
}

/* Unlinks w from the registry and the communicator's list, then unmaps the peers' parts. */
static void win_release(host_comm *c, host_win *w)
{
    pthread_mutex_lock(&wins_lock);
    for (host_win **pp = &wins; *pp != NULL; pp = &(*pp)->gnext)
        if (*pp == w) {
            *pp = w->gnext;
            break;
        }
    pthread_mutex_unlock(&wins_lock);
    pthread_mutex_lock(&c->lock);
    for (host_win **pp = &c->wins; *pp != NULL; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    win_unmap(w, c->nranks);
}

static ncclResult_t run_deregister(host_comm *c, host_opd *op)
{
    win_rec mine, *all = calloc((size_t)c->nranks, sizeof *all);
    host_win *w;
    ncclResult_t rc = ncclSuccess;
    memset(&mine, 0, sizeof mine);
    if (all == NULL)
        return host_fail(ncclSystemError, "ncclCommWindowDeregister: out of memory");
    pthread_mutex_lock(&c->lock);
    w = host_win_find(c, op->win);
    pthread_mutex_unlock(&c->lock);
    if (w == NULL)
        rc = host_fail(ncclInvalidArgument, "ncclCommWindowDeregister: %s rank %d: win %p is not a registered window "
                       "of this communicator (deregistered twice?)", c->name, c->rank, (void *)op->win);
    else
        mine.serial = w->serial;
    if (HOST_FAILED(rc = agree(c, &mine, all, rc, "ncclCommWindowDeregister")))
        goto exit;
    for (int j = 0; j < c->nranks; j++)
        if (all[j].serial != mine.serial) {
            rc = host_fail(ncclInvalidUsage, "ncclCommWindowDeregister: %s rank %d deregisters window %llu but rank "
                           "%d window %llu: windows are deregistered collectively, in the same order", c->name,
                           c->rank, (unsigned long long)mine.serial, j, (unsigned long long)all[j].serial);
            goto exit;
        }
    win_release(c, w);
exit:
    free(all);
    return rc;
}

ncclResult_t host_win_run(host_comm *c, host_opd *op)
{
    return op->kind == HOST_K_WIN_REGISTER ? run_register(c, op) : run_deregister(c, op);
}

void host_win_free_all(host_comm *c)
{
    while (c->wins != NULL)
        win_release(c, c->wins);
    free(c->sig_seen);
    c->sig_seen = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry points                                                                                 */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t host_win_register(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags)
{
    host_opd o;
    host_win_opd(&o, HOST_K_WIN_REGISTER, "ncclCommWindowRegister", -1);
    o.recvbuff = buff;
    o.count = size;
    o.winp = win;
    o.flags = flags;
    if (win != NULL && host_group_depth() == 0)
        *win = NULL;
    return host_coll_call(&o, comm);
}

ncclResult_t host_win_deregister(ncclComm_t comm, ncclWindow_t win)
{
    host_opd o;
    host_win_opd(&o, HOST_K_WIN_DEREGISTER, "ncclCommWindowDeregister", -1);
    o.win = win;
    return host_coll_call(&o, comm);
}

ncclResult_t host_win_user_ptr(ncclComm_t comm, ncclWindow_t win, void **out)
{
    host_comm *c;
    host_win *w;
    ncclResult_t rc;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclWinGetUserPtr", &c)))
        return rc;
    if (out == NULL) {
        rc = host_fail(ncclInvalidArgument, "ncclWinGetUserPtr: outUserPtr is NULL");
        goto exit;
    }
    pthread_mutex_lock(&c->lock);
    w = host_win_find(c, win);
    *out = w != NULL ? w->buff : NULL;
    pthread_mutex_unlock(&c->lock);
    if (w == NULL)
        rc = host_fail(ncclInvalidArgument, "ncclWinGetUserPtr: win %p is not a registered window of this "
                       "communicator", (void *)win);
exit:
    host_comm_leave(c);
    return rc;
}

ncclResult_t host_win_peer_ptr(ncclWindow_t win, size_t offset, int peer, void **out, const char *fn)
{
    host_win *w;
    ncclResult_t rc = ncclSuccess;
    if (out == NULL)
        return host_fail(ncclInvalidArgument, "%s: outPtr is NULL", fn);
    *out = NULL;
    pthread_mutex_lock(&wins_lock);
    for (w = wins; w != NULL && w->handle != win; w = w->gnext)
        ;
    if (w == NULL)
        rc = host_fail(ncclInvalidArgument, "%s: window %p is not a registered window", fn, (void *)win);
    else if (w->comm->fork_gen != atomic_load_explicit(&host_fork_gen, memory_order_seq_cst))
        rc = host_fail(ncclInvalidUsage, "%s: window %p belongs to a communicator created before fork(); it cannot be "
                       "used in the child", fn, (void *)win);
    else if (peer < 0 || peer >= w->comm->nranks)
        rc = host_fail(ncclInvalidArgument, "%s: peer %d is outside [0, %d)", fn, peer, w->comm->nranks);
    else if (offset > w->part[peer].size)
        rc = host_fail(ncclInvalidArgument, "%s: offset %zu is beyond rank %d's %zu bytes of the window", fn, offset,
                       peer, w->part[peer].size);
    else if (w->part[peer].base != NULL)
        *out = w->part[peer].base + offset;
    pthread_mutex_unlock(&wins_lock);
    return rc;
}

/* In a fork child the registry's lock may have been held by a thread that does not exist there. */
void host_win_atfork_child(void)
{
    pthread_mutex_init(&wins_lock, NULL);
}
