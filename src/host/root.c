/* Unique ids and the bootstrap root (docs/host-backend.md#unique-ids-and-bootstrap).
 *
 * A process serves every unique id it made from one root: one listener on bind_addr:0 and one
 * thread, started by the first ncclGetUniqueId and gone once no id of the process is left. An
 * id is the root's address, the process's pid and a fresh 128-bit secret; it costs the root a
 * small record until its idle deadline (NCCL_HOST_ROOT_IDLE_TIMEOUT), so unused ids pile up
 * neither threads nor sockets (HOST_MAX_OPEN_IDS records at most, a clear error beyond).
 *
 * The listener is reachable by any local process. Connections pass the gate (gate.c): accepted
 * at once, bounded in number, dropped unless a whole HELLO arrives within the handshake
 * deadline; a HELLO names its id by the secret (a wrong one is answered "rejected" and closed).
 * For an open id the root checks what must agree across ranks (protocol, library, flavour,
 * nranks, id hash) and keeps the connection; a conflict (duplicate rank, nranks disagreement,
 * version or flavour mismatch) fails the id with ncclInvalidUsage for every connected rank, a
 * registered rank that disconnects fails it with ncclRemoteError naming the rank, and the idle
 * deadline fails it with ncclTimeout naming the missing ranks. When all ranks are in, the root
 * sends each the peer table and a fresh per-communicator token and closes their connections.
 * A finished id keeps its outcome until its deadline, so a rank arriving late hears what
 * happened (the id was used, which rank died) instead of finding no listener. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl_host.h"

/* Byte offsets inside ncclUniqueId (docs/host-backend.md#unique-ids-and-bootstrap). */
#define ID_MAGIC 0
#define ID_NRANKS 36  /* grow id: the parent's size */
#define ID_LAYOUT 40
#define ID_FLAVOR 42
#define ID_KIND 43
#define ID_PID 44
#define ID_SECRET 48
#define ID_FAMILY 64
#define ID_PORT 66
#define ID_ADDR 68
#define ID_PARENT 72  /* grow id: the parent's commHash */
#define ID_NODE_BOOT 80   /* the creator's machine (node.c): kernel, network namespace, /dev/shm */
#define ID_NODE_NETNS 88
#define ID_NODE_SHM 96
#define ID_NODE_HOST 104  /* its host name, truncated to ID_NODE_HOST_LEN bytes */
#define ID_NODE_HOST_LEN 20
#define ID_CHECK 124
enum { ID_KIND_INIT = 0, ID_KIND_GROW = 1 };
static const char id_magic[8] = {'N', 'C', 'H', 'O', 'S', 'T', 'I', 'D'};

_Static_assert(sizeof(host_hello_msg) <= HOST_GATE_HELLO_MAX, "the gate must hold a whole HELLO");

/* Ids of one process the root keeps at once (unused ones until their deadline). */
#define HOST_MAX_OPEN_IDS 65536
/* How long the root may spend sending one rank its answer (authenticated ranks only). */
#define ANSWER_NS 200000000ll

static void put_u16le(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put_u32le(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t get_u16le(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t get_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static void put_u64le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ------------------------------------------------------------------------------------------ */
/* The root's records                                                                            */
/* ------------------------------------------------------------------------------------------ */

enum { ID_OPEN = 0, ID_DONE, ID_FAILED, ID_DISMISSED };

typedef struct root_id {
    uint8_t secret[HOST_SECRET_BYTES];
    int64_t deadline;
    int state;
    /* while OPEN, from the first HELLO on */
    int nranks, nregistered, first_rank;
    uint32_t flavor;
    uint64_t idhash;
    int *fd;                 /* per rank: its connection, -1 before it checked in */
    host_peer_addr *addr;    /* per rank: from its HELLO */
    host_node node;          /* the first rank's machine; every other must share memory with it */
    int spans_netns;         /* a rank is in another network namespace than the first */
    int shm_differs;         /* a rank sees another /dev/shm than the first */
    /* once FAILED: what every late arrival is told */
    ncclResult_t code;
    char text[512];
    struct root_id *next;
} root_id;

/* Guarded by root_lock: the list head, the count, the listener and whether the thread runs.
 * The records themselves are touched only by the root thread once inserted (and by nobody
 * else), so the thread walks the list from a snapshot of the head without the lock. */
static pthread_mutex_t root_lock = PTHREAD_MUTEX_INITIALIZER;
static root_id *root_ids;
static int root_nids;
static int root_running;
static int root_lfd = -1;
static int root_efd = -1;       /* eventfd: an id was added */
static uint16_t root_port_be;
static host_gate root_gate;     /* the thread's; static so a fork child can close its sockets */

static void id_free(root_id *e)
{
    if (e->fd != NULL)
        for (int r = 0; r < e->nranks; r++)
            host_sock_close(&e->fd[r]);
    free(e->fd);
    free(e->addr);
    e->fd = NULL;
    e->addr = NULL;
}

/* One best-effort send that never waits (unauthenticated peers, late arrivals). */
static void send_fail_now(int fd, ncclResult_t code, const char *text)
{
    struct {
        host_msg_hdr h;
        host_fail_msg f;
    } m;
    memset(&m, 0, sizeof m);
    m.h.type = HOST_MSG_ROOT_FAIL;
    m.h.len = sizeof m.f;
    m.f.code = (int32_t)code;
    snprintf(m.f.text, sizeof m.f.text, "%s", text);
    (void)send(fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Fails an open id: every registered rank gets code and text, so does `extra` (the connection
 * that caused it, not registered) when >= 0; late arrivals hear the same until the deadline. */
static void id_fail(root_id *e, int extra, ncclResult_t code, const char *fmt, ...) HOST_PRINTF(4, 5);
static void id_fail(root_id *e, int extra, ncclResult_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    e->code = code;
    e->state = ID_FAILED;
    HOST_WARN("bootstrap root (port %u): %s", (unsigned)ntohs(root_port_be), e->text);
    for (int r = 0; e->fd != NULL && r < e->nranks; r++)
        if (e->fd[r] >= 0) {
            struct {
                host_msg_hdr h;
                host_fail_msg f;
            } m;
            memset(&m, 0, sizeof m);
            m.h.type = HOST_MSG_ROOT_FAIL;
            m.h.len = sizeof m.f;
            m.f.code = (int32_t)code;
            snprintf(m.f.text, sizeof m.f.text, "%s", e->text);
            (void)host_sock_send(e->fd[r], &m, sizeof m, host_deadline_after(ANSWER_NS), -1);
        }
    if (extra >= 0)
        send_fail_now(extra, code, e->text);
    id_free(e);
}

static void id_success(root_id *e)
{
    size_t len = sizeof(host_table_msg) + (size_t)e->nranks * sizeof(host_peer_addr);
    unsigned char *buf = calloc(1, sizeof(host_msg_hdr) + len);
    host_msg_hdr *h = (host_msg_hdr *)buf;
    host_table_msg *t = (host_table_msg *)(buf + sizeof *h);
    if (buf == NULL || host_random_bytes(t->token, sizeof t->token) != ncclSuccess) {
        free(buf);
        id_fail(e, -1, ncclSystemError, "out of resources while completing the bootstrap");
        return;
    }
    h->type = HOST_MSG_ROOT_OK;
    h->len = (uint32_t)len;
    t->nranks = e->nranks;
    t->flags = e->spans_netns ? HOST_TABLE_SPANS_NETNS : 0;
    memcpy(t + 1, e->addr, (size_t)e->nranks * sizeof(host_peer_addr));
    for (int r = 0; r < e->nranks; r++)
        (void)host_sock_send(e->fd[r], buf, sizeof *h + len, host_deadline_after(ANSWER_NS), -1);
    free(buf);
    HOST_INFO(HOST_SUB_BOOTSTRAP, "bootstrap root (port %u): all %d ranks checked in", (unsigned)ntohs(root_port_be),
              e->nranks);
    e->state = ID_DONE;
    id_free(e);
}

/* A late arrival at a finished id hears what happened to it. */
static void answer_finished(const root_id *e, int fd)
{
    switch (e->state) {
    case ID_DONE:
        send_fail_now(fd, ncclInvalidUsage, "unique id was already used: its communicator completed the bootstrap "
                      "(an id serves one communicator)");
        break;
    case ID_DISMISSED:
        send_fail_now(fd, ncclInvalidUsage, "unique id was dismissed by rank 0 of another communicator");
        break;
    default:
        send_fail_now(fd, e->code, e->text);
        break;
    }
}

/* Whether rank h can share memory with the ranks already in (docs/host-backend.md#several-machines-and-network-namespaces):
 * one kernel, and one /dev/shm once the ranks span network namespaces. Fails the id otherwise. */
static int one_machine(root_id *e, int fd, const host_hello *h)
{
    const char *why = host_node_differs(&e->node, &h->node);
    if (why == NULL) {
        e->spans_netns |= h->node.netns != e->node.netns;
        e->shm_differs |= h->node.shm != e->node.shm;
        if (!(e->spans_netns && e->shm_differs))
            return 1;
        why = "the ranks are in more than one network namespace and do not all share " HOST_UDS_DIR;
    }
    id_fail(e, fd, ncclInvalidUsage, "rank %d (pid %u on host %.64s) and rank %d (pid %u on host %.64s) are not on one "
            "machine: %s. The host backend runs every rank of a communicator on one machine, over shared memory; "
            "across machines use NCCL or RCCL", h->rank, h->pid, h->node.host, e->first_rank,
            e->addr[e->first_rank].pid, e->node.host, why);
    return 0;
}

/* Registers rank h->rank of an open id on fd; 1 when fd was kept. */
static int id_hello(root_id *e, int fd, const host_hello *h)
{
    if (h->proto != HOST_PROTO_VERSION || h->libver != HOST_LIB_VERSION_NUM || h->layout != HOST_ID_LAYOUT) {
        id_fail(e, fd, ncclInvalidUsage, "mismatched libnccl-host version: rank %d has protocol %u library %u, "
                "root has %u/%u", h->rank, h->proto, h->libver, HOST_PROTO_VERSION, HOST_LIB_VERSION_NUM);
        return 0;
    }
    if (e->nregistered == 0) {
        if (h->nranks < 1 || h->nranks > HOST_MAX_RANKS) {
            id_fail(e, fd, ncclInvalidUsage, "rank %d announced nranks %d", h->rank, h->nranks);
            return 0;
        }
        e->fd = malloc(sizeof(int) * (size_t)h->nranks);
        e->addr = calloc((size_t)h->nranks, sizeof *e->addr);
        if (e->fd == NULL || e->addr == NULL) {
            free(e->fd);
            e->fd = NULL;
            id_fail(e, fd, ncclSystemError, "out of memory");
            return 0;
        }
        for (int r = 0; r < h->nranks; r++)
            e->fd[r] = -1;
        e->nranks = h->nranks;
        e->flavor = h->flavor;
        e->idhash = h->idhash;
        e->first_rank = h->rank;
        e->node = h->node;
    }
    if (h->nranks != e->nranks) {
        id_fail(e, fd, ncclInvalidUsage, "nranks disagreement: rank %d says %d, rank %d says %d", e->first_rank,
                e->nranks, h->rank, h->nranks);
        return 0;
    }
    if (h->flavor != e->flavor) {
        id_fail(e, fd, ncclInvalidUsage, "flavour disagreement between rank %d and rank %d", e->first_rank, h->rank);
        return 0;
    }
    if (h->idhash != e->idhash) {
        id_fail(e, fd, ncclInvalidUsage, "ranks %d and %d passed different unique id lists to "
                "ncclCommInitRankScalable", e->first_rank, h->rank);
        return 0;
    }
    if (h->rank < 0 || h->rank >= e->nranks) {
        id_fail(e, fd, ncclInvalidUsage, "rank %d is outside [0, %d)", h->rank, e->nranks);
        return 0;
    }
    if (e->fd[h->rank] >= 0) {
        id_fail(e, fd, ncclInvalidUsage, "duplicate rank %d (two processes or threads claim it)", h->rank);
        return 0;
    }
    if (!one_machine(e, fd, h))
        return 0;
    e->fd[h->rank] = fd;
    e->addr[h->rank].pid = h->pid;
    e->addr[h->rank].addr_be = h->addr_be;
    e->addr[h->rank].port_be = h->port_be;
    if (++e->nregistered == e->nranks)
        id_success(e);
    return 1;
}

/* The gate's check of a complete HELLO or DISMISS (the root thread). */
static int root_check(void *arg, int fd, const unsigned char *buf)
{
    root_id *e;
    host_hello_msg m;
    (void)arg;
    memcpy(&m, buf, sizeof m);
    if ((m.h.type != HOST_MSG_HELLO && m.h.type != HOST_MSG_DISMISS) || m.h.len != sizeof m.p)
        return 0;
    pthread_mutex_lock(&root_lock); /* the head now: the id may be newer than this round's snapshot */
    e = root_ids;
    pthread_mutex_unlock(&root_lock);
    for (; e != NULL; e = e->next)
        if (host_consttime_equal(e->secret, m.p.secret, HOST_SECRET_BYTES))
            break;
    if (e == NULL) {
        send_fail_now(fd, ncclInvalidUsage, "unique id rejected: no open id of this root has its secret (stale or "
                      "corrupted id)");
        return 0;
    }
    if (e->state != ID_OPEN) {
        answer_finished(e, fd);
        return 0;
    }
    if (m.h.type == HOST_MSG_DISMISS) {
        if (e->nregistered > 0)
            id_fail(e, -1, ncclInvalidUsage, "unique id was dismissed by rank 0 of another communicator");
        else
            e->state = ID_DISMISSED;
        HOST_INFO(HOST_SUB_BOOTSTRAP, "bootstrap root: an id was dismissed");
        return 0;
    }
    return id_hello(e, fd, &m.p);
}

static void id_timeout(root_id *e)
{
    char missing[200];
    size_t o = 0;
    int nmiss = 0;
    missing[0] = '\0';
    for (int r = 0; r < e->nranks; r++) {
        if (e->fd[r] >= 0)
            continue;
        if (nmiss++ < 16 && o + 12 < sizeof missing)
            o += (size_t)snprintf(missing + o, sizeof missing - o, "%s%d", o ? " " : "", r);
    }
    id_fail(e, -1, host_timeout_code(),
            "unique id never completed: %d of %d ranks checked in before the deadline; missing rank(s) %s%s",
            e->nregistered, e->nranks, missing, nmiss > 16 ? " ..." : "");
}

/* Unlinks the records past their deadline into *gone; returns the earliest deadline left.
 * Called with root_lock held (the caller fails and frees *gone after unlocking). */
static int64_t expire(int64_t now, root_id **gone)
{
    int64_t next = HOST_NEVER;
    for (root_id **pp = &root_ids; *pp != NULL;) {
        root_id *e = *pp;
        if (e->deadline > now) {
            if (e->deadline < next)
                next = e->deadline;
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        root_nids--;
        e->next = *gone;
        *gone = e;
    }
    return next;
}

static int poll_ms(int64_t deadline)
{
    int64_t left;
    if (deadline == HOST_NEVER)
        return -1;
    left = deadline - host_now_ns();
    if (left <= 0)
        return 0;
    left = (left + 999999) / 1000000;
    return left > 1000000 ? 1000000 : (int)left;
}

static void *root_main(void *arg)
{
    struct pollfd *pfd = NULL;
    root_id **owner = NULL;   /* per poll entry after the gate's: the id whose rank it is */
    int *rank_of = NULL;
    size_t cap = 0;
    (void)arg;
    host_log_set_background();
    for (;;) {
        root_id *head, *gone = NULL;
        int64_t next;
        size_t n = 0, want = 2 + HOST_GATE_SLOTS, ngate;
        int last;
        pthread_mutex_lock(&root_lock);
        next = expire(host_now_ns(), &gone);
        head = root_ids;
        last = head == NULL;
        if (last) {
            /* Nothing left to serve: the listener goes; the next ncclGetUniqueId starts anew
             * (and may reinitialise root_gate as soon as the lock is released). */
            host_gate_close(&root_gate);
            root_running = 0;
            host_sock_close(&root_lfd);
        }
        pthread_mutex_unlock(&root_lock);
        while (gone != NULL) {
            root_id *e = gone;
            gone = e->next;
            if (e->state == ID_OPEN && e->nregistered > 0)
                id_timeout(e);
            else if (e->state == ID_OPEN)
                HOST_INFO(HOST_SUB_BOOTSTRAP, "bootstrap root: an unused unique id expired");
            id_free(e);
            free(e);
        }
        if (last)
            break;
        for (root_id *e = head; e != NULL; e = e->next)
            if (e->state == ID_OPEN)
                want += (size_t)e->nregistered;
        if (want > cap) {
            struct pollfd *np = realloc(pfd, want * sizeof *pfd);
            root_id **no = np ? realloc(owner, want * sizeof *owner) : NULL;
            int *nr = no ? realloc(rank_of, want * sizeof *nr) : NULL;
            if (np != NULL)
                pfd = np;
            if (no != NULL)
                owner = no;
            if (nr == NULL) { /* out of memory: try again shortly */
                usleep(100000);
                continue;
            }
            rank_of = nr;
            cap = want;
        }
        pfd[n++] = (struct pollfd){root_efd, POLLIN, 0};
        ngate = (size_t)host_gate_pollfds(&root_gate, pfd + n);
        n += ngate;
        for (root_id *e = head; e != NULL; e = e->next)
            for (int r = 0; e->state == ID_OPEN && r < e->nranks && e->nregistered > 0; r++)
                if (e->fd[r] >= 0) {
                    owner[n] = e;
                    rank_of[n] = r;
                    pfd[n++] = (struct pollfd){e->fd[r], POLLIN, 0};
                }
        if (host_gate_deadline(&root_gate) < next)
            next = host_gate_deadline(&root_gate);
        if (poll(pfd, (nfds_t)n, poll_ms(next)) < 0 && errno != EINTR) {
            usleep(10000);
            continue;
        }
        if (pfd[0].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(root_efd, &v, sizeof v);
            (void)r;
        }
        /* A registered rank sends nothing more until it has its answer: readable means it left. */
        for (size_t i = 1 + ngate; i < n; i++) {
            root_id *e = owner[i];
            int r = rank_of[i];
            if (!pfd[i].revents || e->state != ID_OPEN || e->fd[r] != pfd[i].fd)
                continue;
            host_sock_close(&e->fd[r]);
            id_fail(e, -1, ncclRemoteError, "rank %d (pid %u) exited or closed its connection during the bootstrap",
                    r, e->addr[r].pid);
        }
        host_gate_service(&root_gate, pfd + 1, (int)ngate, root_check, NULL);
    }
    free(pfd);
    free(owner);
    free(rank_of);
    return NULL;
}

/* Starts the root (listener and thread) unless it runs. Called with root_lock held. */
static ncclResult_t root_start(void)
{
    const host_params_t *p = host_params();
    char why[160];
    pthread_t t;
    ncclResult_t rc;
    if (root_running)
        return ncclSuccess;
    if (root_efd < 0 && (root_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return host_fail(ncclSystemError, "ncclGetUniqueId: cannot start the bootstrap root: eventfd failed: %s",
                         host_errno_text(errno, why, sizeof why));
    rc = host_sock_listen(p->bind_addr, &root_lfd, &root_port_be);
    if (rc != ncclSuccess)
        return host_fail(rc, "ncclGetUniqueId: cannot start the bootstrap root: %s", host_last_error());
    host_gate_init(&root_gate, root_lfd, sizeof(host_hello_msg), "bootstrap root");
    rc = host_thread_create(&t, root_main, NULL, 1);
    if (rc != ncclSuccess) {
        host_sock_close(&root_lfd);
        return rc;
    }
    root_running = 1;
    HOST_INFO(HOST_SUB_BOOTSTRAP, "bootstrap root listening on port %u", (unsigned)ntohs(root_port_be));
    return ncclSuccess;
}

ncclResult_t host_unique_id(ncclUniqueId *id)
{
    const host_params_t *p = host_params();
    unsigned char *b = (unsigned char *)id->internal;
    root_id *e;
    ncclResult_t rc;
    uint16_t port_be;
    uint64_t one = 1;
    host_node node;
    if (p->comm_id != NULL)
        return host_fail(ncclInvalidUsage, "ncclGetUniqueId: NCCL_COMM_ID is set, but the host backend does not "
                         "support ids built from it; unset it");
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return host_fail(ncclSystemError, "ncclGetUniqueId: out of memory");
    if (HOST_FAILED(rc = host_random_bytes(e->secret, sizeof e->secret)))
        goto fail;
    e->deadline = host_deadline_after(p->root_idle_ns);
    pthread_mutex_lock(&root_lock);
    if (root_nids >= HOST_MAX_OPEN_IDS) {
        pthread_mutex_unlock(&root_lock);
        rc = host_fail(ncclSystemError, "ncclGetUniqueId: this process already has %d unique ids open (the limit); "
                       "an id stays open until a communicator used it or NCCL_HOST_ROOT_IDLE_TIMEOUT (%.0f s) "
                       "passed", HOST_MAX_OPEN_IDS, (double)p->root_idle_ns / 1e9);
        goto fail;
    }
    rc = root_start();
    if (rc != ncclSuccess) {
        pthread_mutex_unlock(&root_lock);
        goto fail;
    }
    e->next = root_ids;
    root_ids = e;
    root_nids++;
    port_be = root_port_be;
    if (write(root_efd, &one, sizeof one) < 0) { /* the thread's poll deadline may have changed */
        /* an eventfd write fails only on overflow, which leaves it readable */
    }
    pthread_mutex_unlock(&root_lock);

    memset(id, 0, sizeof *id);
    memcpy(b + ID_MAGIC, id_magic, sizeof id_magic);
    put_u16le(b + ID_LAYOUT, HOST_ID_LAYOUT);
    b[ID_FLAVOR] = (unsigned char)p->flavor;
    b[ID_KIND] = 0;
    put_u32le(b + ID_PID, (uint32_t)getpid());
    memcpy(b + ID_SECRET, e->secret, HOST_SECRET_BYTES); /* e is the thread's now; its secret never changes */
    put_u16le(b + ID_FAMILY, AF_INET);
    memcpy(b + ID_PORT, &port_be, 2);
    memcpy(b + ID_ADDR, &p->bind_addr, 4);
    host_node_get(&node);
    put_u64le(b + ID_NODE_BOOT, node.boot);
    put_u64le(b + ID_NODE_NETNS, node.netns);
    put_u64le(b + ID_NODE_SHM, node.shm);
    memcpy(b + ID_NODE_HOST, node.host, strnlen(node.host, ID_NODE_HOST_LEN)); /* zero-padded; no NUL when full */
    put_u32le(b + ID_CHECK, host_crc32(b, ID_CHECK));
    return ncclSuccess;
fail:
    free(e);
    memset(id, 0, sizeof *id);
    return rc;
}

ncclResult_t host_grow_id(ncclUniqueId *id, int parent_nranks, uint64_t parent_hash)
{
    unsigned char *b = (unsigned char *)id->internal;
    ncclResult_t rc = host_unique_id(id);
    if (rc != ncclSuccess)
        return rc;
    b[ID_KIND] = ID_KIND_GROW;
    put_u32le(b + ID_NRANKS, (uint32_t)parent_nranks);
    for (int i = 0; i < 8; i++)
        b[ID_PARENT + i] = (unsigned char)(parent_hash >> (8 * i));
    put_u32le(b + ID_CHECK, host_crc32(b, ID_CHECK));
    return ncclSuccess;
}

/* An id of the given kind (ID_KIND_*), made by this library and naming a root we may use. */
static ncclResult_t id_check_kind(const ncclUniqueId *id, int kind, const char *fn)
{
    const unsigned char *b = (const unsigned char *)id->internal;
    uint32_t addr;
    if (memcmp(b + ID_MAGIC, id_magic, sizeof id_magic) != 0)
        return host_fail(ncclInvalidArgument, "%s: malformed unique id (not from this library's ncclGetUniqueId; an "
                         "NCCL/RCCL id?)", fn);
    if (get_u32le(b + ID_CHECK) != host_crc32(b, ID_CHECK))
        return host_fail(ncclInvalidArgument, "%s: unique id is corrupted (check value mismatch)", fn);
    if (get_u16le(b + ID_LAYOUT) != HOST_ID_LAYOUT || b[ID_KIND] > ID_KIND_GROW)
        return host_fail(ncclInvalidArgument, "%s: unique id layout %u kind %u is not supported", fn,
                         (unsigned)get_u16le(b + ID_LAYOUT), (unsigned)b[ID_KIND]);
    if (b[ID_KIND] != kind)
        return host_fail(ncclInvalidArgument, kind == ID_KIND_GROW ?
                         "%s: unique id is not a grow id: pass the id that ncclCommGetUniqueId returned on the "
                         "communicator being grown, not one of ncclGetUniqueId" :
                         "%s: unique id is a grow id (from ncclCommGetUniqueId): it serves ncclCommGrow only", fn);
    if (get_u16le(b + ID_FAMILY) != AF_INET)
        return host_fail(ncclInvalidArgument, "%s: unique id has address family %u, not AF_INET", fn,
                         (unsigned)get_u16le(b + ID_FAMILY));
    memcpy(&addr, b + ID_ADDR, 4);
    if ((ntohl(addr) >> 24) != 127 && !host_params()->allow_nonloopback)
        return host_fail(ncclInvalidArgument, "%s: unique id names a non-loopback root address, which "
                         "NCCL_HOST_ALLOW_NONLOOPBACK=1 allows (set it on every rank)", fn);
    if (b[ID_FLAVOR] != (unsigned char)host_params()->flavor)
        return host_fail(ncclInvalidUsage, "%s: unique id was made by a process with NCCL_HOST_FLAVOR=%s", fn,
                         b[ID_FLAVOR] ? "rccl" : "nccl");
    return ncclSuccess;
}

ncclResult_t host_id_check(const ncclUniqueId *id, const char *fn)
{
    return id_check_kind(id, ID_KIND_INIT, fn);
}

ncclResult_t host_grow_id_check(const ncclUniqueId *id, const char *fn, int *parent_nranks, uint64_t *parent_hash)
{
    const unsigned char *b = (const unsigned char *)id->internal;
    ncclResult_t rc = id_check_kind(id, ID_KIND_GROW, fn);
    if (rc != ncclSuccess)
        return rc;
    *parent_nranks = (int)get_u32le(b + ID_NRANKS);
    *parent_hash = 0;
    for (int i = 0; i < 8; i++)
        *parent_hash |= (uint64_t)b[ID_PARENT + i] << (8 * i);
    return ncclSuccess;
}

uint64_t host_ids_hash(const ncclUniqueId *ids, int nids)
{
    uint64_t h = (uint64_t)nids;
    for (int i = 0; i < nids; i++)
        h = host_hash64(ids[i].internal, sizeof ids[i].internal, h);
    return h;
}

void host_id_root(const ncclUniqueId *id, uint32_t *addr_be, uint16_t *port_be, uint8_t *secret)
{
    const unsigned char *b = (const unsigned char *)id->internal;
    memcpy(addr_be, b + ID_ADDR, 4);
    memcpy(port_be, b + ID_PORT, 2);
    memcpy(secret, b + ID_SECRET, HOST_SECRET_BYTES);
}

uint32_t host_id_pid(const ncclUniqueId *id)
{
    return get_u32le((const unsigned char *)id->internal + ID_PID);
}

void host_id_node(const ncclUniqueId *id, host_node *node)
{
    const unsigned char *b = (const unsigned char *)id->internal;
    memset(node, 0, sizeof *node);
    node->boot = get_u64le(b + ID_NODE_BOOT);
    node->netns = get_u64le(b + ID_NODE_NETNS);
    node->shm = get_u64le(b + ID_NODE_SHM);
    memcpy(node->host, b + ID_NODE_HOST, ID_NODE_HOST_LEN);
}

void host_dismiss_roots(const ncclUniqueId *ids, int nids)
{
    for (int i = 0; i < nids; i++) {
        host_hello_msg m;
        uint32_t addr;
        uint16_t port;
        int fd;
        memset(&m, 0, sizeof m);
        host_id_root(&ids[i], &addr, &port, m.p.secret);
        m.h.type = HOST_MSG_DISMISS;
        m.h.len = sizeof m.p;
        if (host_sock_connect(addr, port, host_deadline_after(1000000000), -1, &fd) != HOST_IO_OK)
            continue;
        (void)host_sock_send(fd, &m, sizeof m, host_deadline_after(1000000000), -1);
        close(fd);
    }
}

/* In a fork child the root thread does not exist: the child closes the root's sockets (the
 * parent keeps serving its ids) and starts a root of its own at its first ncclGetUniqueId. */
void host_root_atfork_child(void)
{
    pthread_mutex_init(&root_lock, NULL);
    for (root_id *e = root_ids, *next; e != NULL; e = next) {
        next = e->next;
        id_free(e);
        free(e);
    }
    root_ids = NULL;
    root_nids = 0;
    if (root_running)
        host_gate_forget(&root_gate);
    root_running = 0;
    host_sock_close(&root_lfd);
    host_sock_close(&root_efd);
}
