/* Bootstrap (HOST_BACKEND.md sections 3 and 11.2).
 *
 * 1. ncclGetUniqueId binds a listener on 127.0.0.1:0, starts one detached root thread, and
 *    writes the id: magic, secret, the listener's address, a CRC.
 * 2. Each rank opens its own mesh listener, connects to the root and sends a HELLO with the
 *    secret and what must agree across ranks (protocol, library, flavour, nranks, id hash).
 * 3. The root checks every HELLO. A wrong secret is answered "rejected" and closed, without
 *    disturbing the legitimate ranks; a conflict (duplicate rank, nranks disagreement, version or
 *    flavour mismatch) fails the whole bootstrap with ncclInvalidUsage for every connected rank;
 *    a registered rank that disconnects fails it with ncclRemoteError; the idle deadline fails it
 *    with ncclTimeout naming the missing ranks. When all ranks are in, the root sends each the
 *    peer table and a fresh per-communicator token, closes everything and exits.
 * 4. host_mesh_build: rank i connects to every j > i and presents {token, i}; acceptors check
 *    both (a stray connection is closed, the mesh still completes).
 * 5. Rank 0 creates the segment and sends its name; all attach and acknowledge; rank 0 unlinks
 *    the name and sends READY: the communicator is usable.
 * Every wait has the deadline and also watches the communicator's wake_fd, which ncclCommAbort
 * makes readable. After READY the monitor thread is the only reader of the mesh sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl_host.h"

/* Byte offsets inside ncclUniqueId (section 3). */
#define ID_MAGIC 0
#define ID_NRANKS 36
#define ID_LAYOUT 40
#define ID_FLAVOR 42
#define ID_KIND 43
#define ID_PID 44
#define ID_SECRET 48
#define ID_FAMILY 64
#define ID_PORT 66
#define ID_ADDR 68
#define ID_CHECK 124
static const char id_magic[8] = {'N', 'C', 'H', 'O', 'S', 'T', 'I', 'D'};

typedef struct {
    uint8_t secret[HOST_SECRET_BYTES];
    uint32_t proto, libver, layout, flavor;
    int32_t nranks, rank;
    uint32_t pid, addr_be;
    uint16_t port_be, pad16;
    uint32_t pad32;
    uint64_t idhash;
} host_hello;

typedef struct {
    host_msg_hdr h;
    host_hello p;
} host_hello_msg;

typedef struct {
    int32_t code;
    char text[300];
} host_fail_msg;

typedef struct {
    int32_t nranks, pad;
    uint8_t token[HOST_TOKEN_BYTES];
    /* host_peer_addr[nranks] follow */
} host_table_msg;

typedef struct {
    uint8_t token[HOST_TOKEN_BYTES];
    int32_t rank, pad;
} host_mesh_hello;

typedef struct {
    char name[64];
} host_seg_msg;

/* ------------------------------------------------------------------------------------------ */
/* Unique ids                                                                                  */
/* ------------------------------------------------------------------------------------------ */

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

typedef struct {
    int lfd;
    uint8_t secret[HOST_SECRET_BYTES];
    int64_t deadline;
    uint16_t port_be;
} host_root_args;

static void *root_main(void *arg);

ncclResult_t host_unique_id(ncclUniqueId *id)
{
    const host_params_t *p = host_params();
    host_root_args *ra;
    unsigned char *b = (unsigned char *)id->internal;
    pthread_t t;
    ncclResult_t rc;
    if (p->comm_id != NULL)
        return host_fail(ncclInvalidUsage, "ncclGetUniqueId: NCCL_COMM_ID is set, but the host backend does not "
                         "support ids built from it; unset it");
    ra = calloc(1, sizeof *ra);
    if (ra == NULL)
        return host_fail(ncclSystemError, "ncclGetUniqueId: out of memory");
    ra->lfd = -1;
    if (HOST_FAILED(rc = host_random_bytes(ra->secret, sizeof ra->secret)))
        goto fail;
    if (HOST_FAILED(rc = host_sock_listen(p->bind_addr, &ra->lfd, &ra->port_be)))
        goto fail;
    ra->deadline = host_deadline_after(p->root_idle_ns);
    memset(id, 0, sizeof *id);
    memcpy(b + ID_MAGIC, id_magic, sizeof id_magic);
    put_u16le(b + ID_LAYOUT, HOST_ID_LAYOUT);
    b[ID_FLAVOR] = (unsigned char)p->flavor;
    b[ID_KIND] = 0;
    put_u32le(b + ID_PID, (uint32_t)getpid());
    memcpy(b + ID_SECRET, ra->secret, HOST_SECRET_BYTES);
    put_u16le(b + ID_FAMILY, AF_INET);
    memcpy(b + ID_PORT, &ra->port_be, 2);
    memcpy(b + ID_ADDR, &p->bind_addr, 4);
    put_u32le(b + ID_CHECK, host_crc32(b, ID_CHECK));
    if (HOST_FAILED(rc = host_thread_create(&t, root_main, ra, 1)))
        goto fail;
    HOST_INFO(HOST_SUB_BOOTSTRAP, "unique id root listening on port %u", (unsigned)ntohs(ra->port_be));
    return ncclSuccess;
fail:
    host_sock_close(&ra->lfd);
    free(ra);
    memset(id, 0, sizeof *id);
    return rc;
}

ncclResult_t host_id_check(const ncclUniqueId *id, const char *fn)
{
    const unsigned char *b = (const unsigned char *)id->internal;
    uint32_t addr;
    if (memcmp(b + ID_MAGIC, id_magic, sizeof id_magic) != 0)
        return host_fail(ncclInvalidArgument, "%s: malformed unique id (not from this library's ncclGetUniqueId; an "
                         "NCCL/RCCL id?)", fn);
    if (get_u32le(b + ID_CHECK) != host_crc32(b, ID_CHECK))
        return host_fail(ncclInvalidArgument, "%s: unique id is corrupted (check value mismatch)", fn);
    if (get_u16le(b + ID_LAYOUT) != HOST_ID_LAYOUT || b[ID_KIND] != 0)
        return host_fail(ncclInvalidArgument, "%s: unique id layout %u kind %u is not supported", fn,
                         (unsigned)get_u16le(b + ID_LAYOUT), (unsigned)b[ID_KIND]);
    if (get_u16le(b + ID_FAMILY) != AF_INET)
        return host_fail(ncclInvalidArgument, "%s: unique id has address family %u, not AF_INET", fn,
                         (unsigned)get_u16le(b + ID_FAMILY));
    memcpy(&addr, b + ID_ADDR, 4);
    if ((ntohl(addr) >> 24) != 127 && !host_params()->allow_nonloopback)
        return host_fail(ncclInvalidArgument, "%s: unique id names a non-loopback root address", fn);
    if (b[ID_FLAVOR] != (unsigned char)host_params()->flavor)
        return host_fail(ncclInvalidUsage, "%s: unique id was made by a process with NCCL_HOST_FLAVOR=%s", fn,
                         b[ID_FLAVOR] ? "rccl" : "nccl");
    return ncclSuccess;
}

uint64_t host_ids_hash(const ncclUniqueId *ids, int nids)
{
    uint64_t h = (uint64_t)nids;
    for (int i = 0; i < nids; i++)
        h = host_hash64(ids[i].internal, sizeof ids[i].internal, h);
    return h;
}

static void id_root(const ncclUniqueId *id, uint32_t *addr_be, uint16_t *port_be, uint8_t *secret)
{
    const unsigned char *b = (const unsigned char *)id->internal;
    memcpy(addr_be, b + ID_ADDR, 4);
    memcpy(port_be, b + ID_PORT, 2);
    memcpy(secret, b + ID_SECRET, HOST_SECRET_BYTES);
}

/* ------------------------------------------------------------------------------------------ */
/* The root thread                                                                             */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    int fd;
    size_t got;
    host_hello_msg msg;
    int rank;         /* registered rank, -1 before */
} root_conn;

typedef struct {
    host_root_args *a;
    root_conn *conns;
    int nconns, capconns;
    int nranks;       /* fixed by the first HELLO */
    int nregistered;
    int *by_rank;     /* conn index per rank */
    uint32_t proto, libver, flavor;
    uint64_t idhash;
    int first_rank;
} root_state;

static void root_send_fail(int fd, ncclResult_t code, const char *text)
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
    (void)host_sock_send(fd, &m, sizeof m, host_deadline_after(1000000000), -1);
}

static void root_close_all(root_state *st)
{
    for (int i = 0; i < st->nconns; i++)
        host_sock_close(&st->conns[i].fd);
    host_sock_close(&st->a->lfd);
}

/* Fails the whole bootstrap: every connected, registered rank gets the code and text. */
static void root_fail_all(root_state *st, ncclResult_t code, const char *fmt, ...) HOST_PRINTF(3, 4);
static void root_fail_all(root_state *st, ncclResult_t code, const char *fmt, ...)
{
    char text[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    HOST_WARN("bootstrap root (port %u): %s", (unsigned)ntohs(st->a->port_be), text);
    for (int i = 0; i < st->nconns; i++)
        if (st->conns[i].fd >= 0 && st->conns[i].rank >= 0)
            root_send_fail(st->conns[i].fd, code, text);
    root_close_all(st);
}

static void root_success(root_state *st)
{
    size_t len = sizeof(host_table_msg) + (size_t)st->nranks * sizeof(host_peer_addr);
    unsigned char *buf = calloc(1, sizeof(host_msg_hdr) + len);
    host_msg_hdr *h = (host_msg_hdr *)buf;
    host_table_msg *t = (host_table_msg *)(buf + sizeof *h);
    host_peer_addr *pa = (host_peer_addr *)(t + 1);
    if (buf == NULL || host_random_bytes(t->token, sizeof t->token) != ncclSuccess) {
        free(buf);
        root_fail_all(st, ncclSystemError, "out of resources while completing the bootstrap");
        return;
    }
    h->type = HOST_MSG_ROOT_OK;
    h->len = (uint32_t)len;
    t->nranks = st->nranks;
    for (int r = 0; r < st->nranks; r++) {
        const host_hello *hp = &st->conns[st->by_rank[r]].msg.p;
        pa[r].pid = hp->pid;
        pa[r].addr_be = hp->addr_be;
        pa[r].port_be = hp->port_be;
    }
    for (int r = 0; r < st->nranks; r++)
        (void)host_sock_send(st->conns[st->by_rank[r]].fd, buf, sizeof *h + len, host_deadline_after(2000000000), -1);
    free(buf);
    HOST_INFO(HOST_SUB_BOOTSTRAP, "bootstrap root (port %u): all %d ranks checked in", (unsigned)ntohs(st->a->port_be),
              st->nranks);
    root_close_all(st);
}

/* Returns 1 when the root is finished (success or failure). */
static int root_handle_hello(root_state *st, int ci)
{
    root_conn *cn = &st->conns[ci];
    host_hello *h = &cn->msg.p;
    if (!host_consttime_equal(h->secret, st->a->secret, HOST_SECRET_BYTES)) {
        HOST_WARN("bootstrap root (port %u): rejected a connection with a wrong secret (stale or corrupted id)",
                  (unsigned)ntohs(st->a->port_be));
        root_send_fail(cn->fd, ncclInvalidUsage, "unique id rejected: stale or corrupted id");
        host_sock_close(&cn->fd);
        return 0;
    }
    if (cn->msg.h.type == HOST_MSG_DISMISS) {
        if (st->nregistered > 0)
            root_fail_all(st, ncclInvalidUsage, "unique id was dismissed by rank 0 of another communicator");
        else
            root_close_all(st);
        HOST_INFO(HOST_SUB_BOOTSTRAP, "bootstrap root dismissed");
        return 1;
    }
    if (h->proto != HOST_PROTO_VERSION || h->libver != HOST_LIB_VERSION_NUM || h->layout != HOST_ID_LAYOUT) {
        cn->rank = h->rank; /* so it hears the failure */
        root_fail_all(st, ncclInvalidUsage,
                      "mismatched libnccl-host version: rank %d has protocol %u library %u, root has %u/%u", h->rank,
                      h->proto, h->libver, HOST_PROTO_VERSION, HOST_LIB_VERSION_NUM);
        return 1;
    }
    if (st->nregistered == 0) {
        if (h->nranks < 1 || h->nranks > HOST_MAX_RANKS) {
            cn->rank = h->rank;
            root_fail_all(st, ncclInvalidUsage, "rank %d announced nranks %d", h->rank, h->nranks);
            return 1;
        }
        st->nranks = h->nranks;
        st->flavor = h->flavor;
        st->idhash = h->idhash;
        st->first_rank = h->rank;
        st->by_rank = malloc(sizeof(int) * (size_t)st->nranks);
        if (st->by_rank == NULL) {
            root_fail_all(st, ncclSystemError, "out of memory");
            return 1;
        }
        for (int r = 0; r < st->nranks; r++)
            st->by_rank[r] = -1;
    }
    cn->rank = h->rank;
    if (h->nranks != st->nranks) {
        root_fail_all(st, ncclInvalidUsage, "nranks disagreement: rank %d says %d, rank %d says %d", st->first_rank,
                      st->nranks, h->rank, h->nranks);
        return 1;
    }
    if (h->flavor != st->flavor) {
        root_fail_all(st, ncclInvalidUsage, "flavour disagreement between rank %d and rank %d", st->first_rank,
                      h->rank);
        return 1;
    }
    if (h->idhash != st->idhash) {
        root_fail_all(st, ncclInvalidUsage,
                      "ranks %d and %d passed different unique id lists to ncclCommInitRankScalable", st->first_rank,
                      h->rank);
        return 1;
    }
    if (h->rank < 0 || h->rank >= st->nranks) {
        root_fail_all(st, ncclInvalidUsage, "rank %d is outside [0, %d)", h->rank, st->nranks);
        return 1;
    }
    if (st->by_rank[h->rank] >= 0) {
        root_fail_all(st, ncclInvalidUsage, "duplicate rank %d (two processes or threads claim it)", h->rank);
        return 1;
    }
    st->by_rank[h->rank] = ci;
    st->nregistered++;
    if (st->nregistered == st->nranks) {
        root_success(st);
        return 1;
    }
    return 0;
}

static void root_timeout(root_state *st)
{
    char missing[200];
    size_t o = 0;
    int nmiss = 0;
    missing[0] = '\0';
    for (int r = 0; r < st->nranks && st->by_rank != NULL; r++) {
        if (st->by_rank[r] >= 0)
            continue;
        if (nmiss++ < 16 && o + 12 < sizeof missing)
            o += (size_t)snprintf(missing + o, sizeof missing - o, "%s%d", o ? " " : "", r);
    }
    if (st->nregistered == 0) {
        HOST_WARN("bootstrap root (port %u): unique id never completed (no rank connected before the deadline)",
                  (unsigned)ntohs(st->a->port_be));
        root_close_all(st);
        return;
    }
    root_fail_all(st, host_timeout_code(),
                  "unique id never completed: %d of %d ranks checked in before the deadline; missing rank(s) %s%s",
                  st->nregistered, st->nranks, missing, nmiss > 16 ? " ..." : "");
}

static void *root_main(void *arg)
{
    root_state st;
    struct pollfd *pfd = NULL;
    memset(&st, 0, sizeof st);
    st.a = arg;
    for (;;) {
        int n = 0, r, tmo;
        int64_t left;
        struct pollfd *np = realloc(pfd, sizeof *pfd * (size_t)(st.nconns + 1));
        if (np == NULL) {
            root_fail_all(&st, ncclSystemError, "out of memory");
            break;
        }
        pfd = np;
        pfd[n++] = (struct pollfd){st.a->lfd, POLLIN, 0};
        for (int i = 0; i < st.nconns; i++)
            pfd[n++] = (struct pollfd){st.conns[i].fd, POLLIN, 0}; /* fd -1 is ignored by poll */
        if (st.a->deadline == HOST_NEVER) {
            tmo = -1;
        } else {
            left = st.a->deadline - host_now_ns();
            if (left <= 0) {
                root_timeout(&st);
                break;
            }
            tmo = (int)((left + 999999) / 1000000 > 1000000 ? 1000000 : (left + 999999) / 1000000);
        }
        r = poll(pfd, (nfds_t)n, tmo);
        if (r < 0 && errno != EINTR) {
            root_fail_all(&st, ncclSystemError, "poll failed: %s", strerror(errno));
            break;
        }
        if (r <= 0)
            continue;
        int polled = st.nconns; /* pfd has entries only for these */
        if (pfd[0].revents & POLLIN) {
            int fd;
            if (host_sock_accept(st.a->lfd, host_now_ns(), -1, &fd) == HOST_IO_OK) {
                if (st.nconns == st.capconns) {
                    int nc = st.capconns ? st.capconns * 2 : 16;
                    root_conn *cc = nc <= 4 * HOST_MAX_RANKS ? realloc(st.conns, sizeof *cc * (size_t)nc) : NULL;
                    if (cc == NULL) {
                        close(fd);
                        continue;
                    }
                    st.conns = cc;
                    st.capconns = nc;
                }
                memset(&st.conns[st.nconns], 0, sizeof st.conns[0]);
                st.conns[st.nconns].fd = fd;
                st.conns[st.nconns].rank = -1;
                st.nconns++;
            }
        }
        int finished = 0;
        for (int i = 0; i < polled && !finished; i++) {
            root_conn *cn = &st.conns[i];
            ssize_t got;
            if (cn->fd < 0 || pfd[i + 1].fd != cn->fd || !(pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            got = recv(cn->fd, (char *)&cn->msg + cn->got, sizeof cn->msg - cn->got, MSG_DONTWAIT);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got <= 0) {
                if (cn->rank >= 0 && st.by_rank != NULL && cn->rank < st.nranks && st.by_rank[cn->rank] == i) {
                    host_sock_close(&cn->fd);
                    root_fail_all(&st, ncclRemoteError, "rank %d exited during the bootstrap", cn->rank);
                    finished = 1;
                } else {
                    host_sock_close(&cn->fd);
                }
                continue;
            }
            cn->got += (size_t)got;
            if (cn->got >= sizeof cn->msg.h &&
                ((cn->msg.h.type != HOST_MSG_HELLO && cn->msg.h.type != HOST_MSG_DISMISS) ||
                 cn->msg.h.len != sizeof cn->msg.p)) {
                HOST_WARN("bootstrap root (port %u): dropped a connection that did not speak our protocol",
                          (unsigned)ntohs(st.a->port_be));
                host_sock_close(&cn->fd);
                continue;
            }
            if (cn->got == sizeof cn->msg)
                finished = root_handle_hello(&st, i);
        }
        if (finished)
            break;
    }
    free(pfd);
    free(st.conns);
    free(st.by_rank);
    free(st.a);
    return NULL;
}

void host_dismiss_roots(const ncclUniqueId *ids, int nids)
{
    for (int i = 0; i < nids; i++) {
        host_hello_msg m;
        uint32_t addr;
        uint16_t port;
        int fd;
        memset(&m, 0, sizeof m);
        id_root(&ids[i], &addr, &port, m.p.secret);
        m.h.type = HOST_MSG_DISMISS;
        m.h.len = sizeof m.p;
        if (host_sock_connect(addr, port, host_deadline_after(1000000000), -1, &fd) != HOST_IO_OK)
            continue;
        (void)host_sock_send(fd, &m, sizeof m, host_deadline_after(1000000000), -1);
        close(fd);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Rank side                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static ncclResult_t io_fail(host_comm *c, host_io io, const char *what, int peer)
{
    ncclResult_t rc = host_io_result(io);
    if (io == HOST_IO_ABORT)
        return host_fail(rc, "%s rank %d: communicator aborted during %s", c->name, c->rank, what);
    if (peer >= 0)
        return host_fail(rc, "%s rank %d: %s with rank %d: %s%s", c->name, c->rank, what, peer, host_io_str(io),
                         io == HOST_IO_ERROR ? strerror(errno) : "");
    return host_fail(rc, "%s rank %d: %s: %s", c->name, c->rank, what, host_io_str(io));
}

/* Reads one message of an expected type and exact payload size. */
static ncclResult_t recv_msg(host_comm *c, int fd, uint32_t type, void *payload, uint32_t len, int64_t deadline,
                             const char *what, int peer)
{
    host_msg_hdr h;
    host_io io = host_sock_recv(fd, &h, sizeof h, deadline, c->wake_fd);
    if (io != HOST_IO_OK)
        return io_fail(c, io, what, peer);
    if (h.type == HOST_MSG_MESH_FAIL && h.len == sizeof(host_fail_msg)) {
        host_fail_msg f;
        io = host_sock_recv(fd, &f, sizeof f, deadline, c->wake_fd);
        if (io != HOST_IO_OK)
            return io_fail(c, io, what, peer);
        f.text[sizeof f.text - 1] = '\0';
        return host_fail((ncclResult_t)f.code, "%s rank %d: %s failed on rank %d: %s", c->name, c->rank, what, peer,
                         f.text);
    }
    if (h.type != type || h.len != len)
        return host_fail(ncclInternalError, "%s rank %d: %s: unexpected message 0x%x (%u bytes) from rank %d", c->name,
                         c->rank, what, h.type, h.len, peer);
    io = host_sock_recv(fd, payload, len, deadline, c->wake_fd);
    if (io != HOST_IO_OK)
        return io_fail(c, io, what, peer);
    return ncclSuccess;
}

static ncclResult_t send_msg(host_comm *c, int fd, uint32_t type, const void *payload, uint32_t len, int64_t deadline,
                             const char *what, int peer)
{
    unsigned char buf[sizeof(host_msg_hdr) + 512];
    host_msg_hdr *h = (host_msg_hdr *)buf;
    host_io io;
    if (len > sizeof buf - sizeof *h)
        return host_fail(ncclInternalError, "%s: message too large", what);
    memset(h, 0, sizeof *h);
    h->type = type;
    h->len = len;
    memcpy(buf + sizeof *h, payload, len);
    io = host_sock_send(fd, buf, sizeof *h + len, deadline, c->wake_fd);
    if (io != HOST_IO_OK)
        return io_fail(c, io, what, peer);
    return ncclSuccess;
}

ncclResult_t host_bootstrap(host_comm *c)
{
    const host_params_t *p = host_params();
    int64_t deadline = host_deadline_after(p->timeout_ns);
    host_hello_msg m;
    host_msg_hdr h;
    host_table_msg t;
    host_peer_addr *table = NULL;
    uint32_t root_addr;
    uint16_t root_port;
    int fd = -1;
    host_io io;
    ncclResult_t rc = ncclSuccess;

    memset(&m, 0, sizeof m);
    id_root(&c->id, &root_addr, &root_port, m.p.secret);
    m.h.type = HOST_MSG_HELLO;
    m.h.len = sizeof m.p;
    m.p.proto = HOST_PROTO_VERSION;
    m.p.libver = HOST_LIB_VERSION_NUM;
    m.p.layout = HOST_ID_LAYOUT;
    m.p.flavor = (uint32_t)p->flavor;
    m.p.nranks = c->nranks;
    m.p.rank = c->rank;
    m.p.pid = (uint32_t)getpid();
    m.p.addr_be = p->bind_addr;
    m.p.port_be = c->listen_port_be;
    m.p.idhash = c->idhash;

    io = host_sock_connect(root_addr, root_port, deadline, c->wake_fd, &fd);
    if (io == HOST_IO_ERROR) {
        rc = host_fail(ncclSystemError,
                       "%s rank %d: cannot reach the unique id's root (port %u): %s; the id was already used, its root "
                       "timed out, or the process that created it exited", c->name, c->rank,
                       (unsigned)ntohs(root_port), strerror(errno));
        goto exit;
    }
    if (io != HOST_IO_OK) {
        rc = io_fail(c, io, "connecting to the bootstrap root", -1);
        goto exit;
    }
    io = host_sock_send(fd, &m, sizeof m, deadline, c->wake_fd);
    if (io != HOST_IO_OK) {
        rc = io_fail(c, io, "sending the bootstrap hello", -1);
        goto exit;
    }
    /* The root answers at its own deadline with ncclTimeout; ours is a backstop a little later. */
    io = host_sock_recv(fd, &h, sizeof h, deadline == HOST_NEVER ? deadline : deadline + 1000000000, c->wake_fd);
    if (io == HOST_IO_EOF) {
        rc = host_fail(ncclRemoteError, "%s rank %d: the bootstrap root closed the connection (its process exited?)",
                       c->name, c->rank);
        goto exit;
    }
    if (io != HOST_IO_OK) {
        rc = io_fail(c, io, "waiting for the other ranks in the bootstrap", -1);
        goto exit;
    }
    if (h.type == HOST_MSG_ROOT_FAIL && h.len == sizeof(host_fail_msg)) {
        host_fail_msg f;
        io = host_sock_recv(fd, &f, sizeof f, deadline, c->wake_fd);
        if (io != HOST_IO_OK) {
            rc = io_fail(c, io, "reading the bootstrap root's answer", -1);
            goto exit;
        }
        f.text[sizeof f.text - 1] = '\0';
        rc = host_fail((ncclResult_t)f.code, "%s rank %d: bootstrap failed: %s", c->name, c->rank, f.text);
        goto exit;
    }
    if (h.type != HOST_MSG_ROOT_OK || h.len != sizeof t + (size_t)c->nranks * sizeof *table) {
        rc = host_fail(ncclInternalError, "%s rank %d: unexpected bootstrap answer 0x%x", c->name, c->rank, h.type);
        goto exit;
    }
    table = malloc(sizeof *table * (size_t)c->nranks);
    if (table == NULL) {
        rc = host_fail(ncclSystemError, "out of memory");
        goto exit;
    }
    io = host_sock_recv(fd, &t, sizeof t, deadline, c->wake_fd);
    if (io == HOST_IO_OK)
        io = host_sock_recv(fd, table, sizeof *table * (size_t)c->nranks, deadline, c->wake_fd);
    if (io != HOST_IO_OK) {
        rc = io_fail(c, io, "reading the peer table", -1);
        goto exit;
    }
    host_sock_close(&fd);
    memcpy(c->token, t.token, sizeof c->token);
    if (HOST_FAILED(rc = host_mesh_build(c, table)))
        goto exit;
    if (c->rank == 0 && c->nids > 1)
        host_dismiss_roots(c->extra_ids, c->nids - 1);
exit:
    host_sock_close(&fd);
    free(table);
    return rc;
}

/* Tells every connected peer that the mesh setup failed here (best effort). */
static void mesh_report_failure(host_comm *c, ncclResult_t code)
{
    host_fail_msg f;
    memset(&f, 0, sizeof f);
    f.code = (int32_t)code;
    snprintf(f.text, sizeof f.text, "%s", host_last_error());
    for (int j = 0; j < c->nranks; j++)
        if (j != c->rank && c->peers[j].fd >= 0) {
            struct {
                host_msg_hdr h;
                host_fail_msg f;
            } m;
            memset(&m.h, 0, sizeof m.h);
            m.h.type = HOST_MSG_MESH_FAIL;
            m.h.len = sizeof f;
            m.f = f;
            (void)host_sock_send(c->peers[j].fd, &m, sizeof m, host_now_ns(), -1);
        }
}

ncclResult_t host_mesh_build(host_comm *c, const host_peer_addr *peers)
{
    const host_params_t *p = host_params();
    int64_t deadline = host_deadline_after(p->timeout_ns);
    int n = c->nranks, me = c->rank, got = 0;
    char segname[64] = "";
    int unlinked = 1;
    ncclResult_t rc = ncclSuccess;
    host_seg_msg sm;

    for (int j = 0; j < n; j++)
        c->peers[j].pid = peers[j].pid;
    /* Connect up: every j > me is listening already (it opened its listener before it told anyone
     * its port), and the kernel completes the connection into its backlog. */
    for (int j = me + 1; j < n; j++) {
        host_mesh_hello mh;
        host_io io = host_sock_connect(peers[j].addr_be, peers[j].port_be, deadline, c->wake_fd, &c->peers[j].fd);
        if (io != HOST_IO_OK) {
            rc = io_fail(c, io, "connecting the control mesh", j);
            goto fail;
        }
        memset(&mh, 0, sizeof mh);
        memcpy(mh.token, c->token, sizeof mh.token);
        mh.rank = me;
        if (HOST_FAILED(rc = send_msg(c, c->peers[j].fd, HOST_MSG_MESH_HELLO, &mh, sizeof mh, deadline,
                                      "connecting the control mesh", j)))
            goto fail;
    }
    /* Accept down: each j < me presents {token, j}; anything else is closed. */
    while (got < me) {
        int fd;
        host_mesh_hello mh;
        host_msg_hdr h;
        int64_t conn_deadline;
        host_io io = host_sock_accept(c->listen_fd, deadline, c->wake_fd, &fd);
        if (io != HOST_IO_OK) {
            rc = io == HOST_IO_TIMEOUT
                     ? host_fail(host_timeout_code(), "%s rank %d: timed out after %.1f s waiting for %d lower rank(s) "
                                 "to connect the control mesh", c->name, c->rank, p->timeout_s, me - got)
                     : io_fail(c, io, "accepting control mesh connections", -1);
            goto fail;
        }
        /* A stray connection that sends nothing may cost at most a second. */
        conn_deadline = host_deadline_after(1000000000);
        if (conn_deadline > deadline)
            conn_deadline = deadline;
        io = host_sock_recv(fd, &h, sizeof h, conn_deadline, c->wake_fd);
        if (io == HOST_IO_OK && h.type == HOST_MSG_MESH_HELLO && h.len == sizeof mh)
            io = host_sock_recv(fd, &mh, sizeof mh, conn_deadline, c->wake_fd);
        else if (io == HOST_IO_OK)
            io = HOST_IO_ERROR;
        if (io == HOST_IO_ABORT) {
            close(fd);
            rc = io_fail(c, io, "accepting control mesh connections", -1);
            goto fail;
        }
        if (io != HOST_IO_OK || !host_consttime_equal(mh.token, c->token, sizeof mh.token) || mh.rank < 0 ||
            mh.rank >= me || c->peers[mh.rank].fd >= 0) {
            HOST_WARN("%s rank %d: closed a control connection that did not present this communicator's token",
                      c->name, c->rank);
            close(fd);
            continue;
        }
        c->peers[mh.rank].fd = fd;
        got++;
    }
    host_sock_close(&c->listen_fd);

    /* Segment: rank 0 creates, everyone attaches and acknowledges, rank 0 unlinks, READY. */
    if (me == 0) {
        if (HOST_FAILED(rc = host_seg_create(&c->seg, n, c->token, segname, sizeof segname)))
            goto fail;
        unlinked = 0;
        memset(&sm, 0, sizeof sm);
        snprintf(sm.name, sizeof sm.name, "%s", segname);
        for (int j = 1; j < n; j++)
            if (HOST_FAILED(rc = send_msg(c, c->peers[j].fd, HOST_MSG_SEG_NAME, &sm, sizeof sm, deadline,
                                          "sending the shared segment name", j)))
                goto fail;
        for (int j = 1; j < n; j++) {
            int32_t ack;
            if (HOST_FAILED(rc = recv_msg(c, c->peers[j].fd, HOST_MSG_SEG_ACK, &ack, sizeof ack, deadline,
                                          "waiting for peers to attach the shared segment", j)))
                goto fail;
        }
        if (HOST_FAILED(rc = host_seg_unlink(segname)))
            goto fail;
        unlinked = 1;
        for (int j = 1; j < n; j++) {
            int32_t z = 0;
            if (HOST_FAILED(rc = send_msg(c, c->peers[j].fd, HOST_MSG_READY, &z, sizeof z, deadline,
                                          "completing the bootstrap", j)))
                goto fail;
        }
    } else {
        int32_t ack = 0;
        if (HOST_FAILED(rc = recv_msg(c, c->peers[0].fd, HOST_MSG_SEG_NAME, &sm, sizeof sm, deadline,
                                      "waiting for the shared segment name", 0)))
            goto fail;
        sm.name[sizeof sm.name - 1] = '\0';
        if (HOST_FAILED(rc = host_seg_attach(&c->seg, sm.name, n, c->token)))
            goto fail;
        if (HOST_FAILED(rc = send_msg(c, c->peers[0].fd, HOST_MSG_SEG_ACK, &ack, sizeof ack, deadline,
                                      "acknowledging the shared segment", 0)))
            goto fail;
        if (HOST_FAILED(rc = recv_msg(c, c->peers[0].fd, HOST_MSG_READY, &ack, sizeof ack, deadline,
                                      "waiting for the bootstrap to complete", 0)))
            goto fail;
    }
    host_seg_rankp(&c->seg, me)->pid = (uint32_t)getpid();
    if (HOST_FAILED(rc = host_monitor_add(c)))
        goto fail;
    HOST_INFO(HOST_SUB_INIT, "%s rank %d/%d: communicator ready (segment %zu bytes)", c->name, c->rank, n,
              c->seg.size);
    return ncclSuccess;
fail:
    if (!unlinked)
        (void)host_seg_unlink(segname);
    if (rc != ncclInvalidUsage || !atomic_load(&c->aborted))
        mesh_report_failure(c, rc);
    host_sock_close(&c->listen_fd);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Control messages after READY                                                                 */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t host_ctl_send(host_comm *c, int peer, uint32_t type, uint64_t tag, const void *payload, uint32_t len,
                           int64_t deadline)
{
    host_peer *pp = &c->peers[peer];
    host_msg_hdr h;
    host_io io = HOST_IO_OK;
    int notice = type == HOST_MSG_LEAVE || type == HOST_MSG_ABORT;
    memset(&h, 0, sizeof h);
    h.type = type;
    h.len = len;
    h.tag = tag;
    pthread_mutex_lock(&pp->send_lock);
    if (pp->fd < 0) {
        pthread_mutex_unlock(&pp->send_lock);
        return ncclRemoteError;
    }
    /* Notices are best effort and never wait (abort must not block on a stuck peer). */
    io = host_sock_send(pp->fd, &h, sizeof h, notice ? host_now_ns() : deadline, notice ? -1 : c->wake_fd);
    if (io == HOST_IO_OK && len > 0)
        io = host_sock_send(pp->fd, payload, len, notice ? host_now_ns() : deadline, notice ? -1 : c->wake_fd);
    pthread_mutex_unlock(&pp->send_lock);
    if (io != HOST_IO_OK)
        return io_fail(c, io, "sending a control message", peer);
    return ncclSuccess;
}

ncclResult_t host_mgmt_allgather(host_comm *c, const int *members, int nmembers, const void *mine, uint32_t len,
                                 void *out, const char *fn)
{
    int64_t deadline = host_deadline_after(host_params()->timeout_ns);
    int64_t start = host_now_ns();
    uint64_t tag = ++c->mgmt_seq;
    ncclResult_t rc = ncclSuccess;
    for (int i = 0; i < nmembers; i++) {
        if (members[i] == c->rank) {
            memcpy((char *)out + (size_t)i * len, mine, len);
            continue;
        }
        if (HOST_FAILED(rc = host_ctl_send(c, members[i], HOST_MSG_MGMT, tag, mine, len, deadline)))
            return rc;
    }
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < nmembers && rc == ncclSuccess; i++) {
        int m = members[i];
        if (m == c->rank)
            continue;
        for (;;) {
            host_mail **pp = &c->mail, *found = NULL;
            while (*pp != NULL) {
                host_mail *e = *pp;
                if (e->from == m && e->tag < tag) { /* left over from an exchange that failed here */
                    *pp = e->next;
                    free(e);
                    continue;
                }
                if (e->from == m && e->tag == tag) {
                    *pp = e->next;
                    found = e;
                    break;
                }
                pp = &e->next;
            }
            if (found != NULL) {
                if (found->len != len)
                    rc = host_fail(ncclInvalidUsage, "%s: rank %d and rank %d disagree on the operation (%u vs %u "
                                   "bytes exchanged)", fn, c->rank, m, len, found->len);
                else
                    memcpy((char *)out + (size_t)i * len, found->data, len);
                free(found);
                break;
            }
            if (atomic_load(&c->aborted)) {
                rc = host_fail(ncclInvalidUsage, "%s: communicator aborted", fn);
                break;
            }
            if (atomic_load(&c->peers[m].gone) != HOST_PEER_ALIVE) {
                rc = host_fail(ncclRemoteError, "%s: rank %d: peer rank %d %s before the exchange completed", fn,
                               c->rank, m,
                               atomic_load(&c->peers[m].gone) == HOST_PEER_LEFT ? "left the communicator" : "died or aborted");
                break;
            }
            if (host_cond_wait(&c->cv, &c->lock, deadline) == ETIMEDOUT) {
                rc = host_fail(host_timeout_code(), "%s: rank %d timed out after %.1f s waiting for rank %d", fn,
                               c->rank, host_elapsed_s(start), m);
                break;
            }
        }
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}
