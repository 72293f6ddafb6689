/* Bootstrap, rank side (docs/host-backend.md#unique-ids-and-bootstrap); the root is root.c.
 *
 * 1. Each rank opens its own mesh listener, connects to the id's root and sends a HELLO with the
 *    secret and what must agree across ranks; the root answers with the peer table and a fresh
 *    per-communicator token, or with the reason the bootstrap failed.
 * 2. host_mesh_build: rank i connects to every j > i at once and presents {token, i}; each rank
 *    accepts its lower ranks through a gate (gate.c), so connections that never present the
 *    token are dropped within the handshake deadline without delaying the real ones. Then every
 *    rank tells rank 0 its mesh is complete (MESH_DONE).
 * 3. Rank 0 creates the segment (an anonymous memfd) and sends every rank the name of a
 *    Unix-domain socket, abstract, or a path in /dev/shm when the ranks span network namespaces
 *    (the root says so); each rank fetches the descriptor there (rank 0 passes it only to
 *    processes of its own uid), maps and checks it, and acknowledges.
 * 4. Rank 0 alone decides the outcome: READY when every rank acknowledged, otherwise a failure
 *    (with the first reason it saw) to every rank. A rank that acknowledged never gives up on
 *    its own before rank 0 could have decided (its wait runs a grace period past its deadline),
 *    so both sides of an init agree on whether it succeeded; a failure before that point is
 *    reported to the peers (MESH_FAIL) and reaches everyone through rank 0.
 * Every wait has the deadline and also watches the communicator's wake_fd, which ncclCommAbort
 * makes readable. A peer that exits during init is reported as ncclRemoteError naming its rank.
 * After READY the monitor thread is the only reader of the mesh sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl_host.h"

/* How long past its own deadline a rank waits for rank 0's verdict: rank 0 decides at its
 * deadline, which differs from ours only by the moment each received the peer table. */
#define VERDICT_GRACE_NS 5000000000ll

static int64_t verdict_deadline(int64_t deadline)
{
    return deadline == HOST_NEVER ? deadline : deadline + VERDICT_GRACE_NS;
}

typedef struct {
    uint8_t token[HOST_TOKEN_BYTES];
    int32_t rank, pad;
} host_mesh_hello;

typedef struct {
    char name[64]; /* the Unix socket that passes the segment (host_uds_name) */
} host_seg_msg;

/* ------------------------------------------------------------------------------------------ */
/* Messages                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Whether a socket result means the peer's end is gone (closed, reset, refused). */
static int peer_closed(host_io io, int err)
{
    return io == HOST_IO_EOF || (io == HOST_IO_ERROR && (err == ECONNREFUSED || err == ECONNRESET || err == EPIPE));
}

static ncclResult_t io_fail(host_comm *c, host_io io, const char *what, int peer)
{
    ncclResult_t rc = host_io_result(io);
    int err = errno;
    if (io == HOST_IO_ABORT)
        return host_fail(rc, "%s rank %d: communicator aborted during %s", c->name, c->rank, what);
    if (peer >= 0 && c->seg.base != NULL && host_peer_is_gone(c, peer) && peer_closed(io, err))
        return host_fail_peer_gone(c, what, peer); /* it left or aborted: name why (peer-death-and-abort) */
    if (peer >= 0 && (io == HOST_IO_EOF || (io == HOST_IO_ERROR && (err == ECONNREFUSED || err == ECONNRESET))))
        /* "peer rank N" as every other peer-loss text words it (handle.c, monitor.c); `what`
         * says which exchange, init's or a later one (registration, split, grow). */
        return host_fail(ncclRemoteError, "%s rank %d: %s: peer rank %d (pid %u) exited or failed (%s)",
                         c->name, c->rank, what, peer, c->peers[peer].pid,
                         io == HOST_IO_EOF ? "it closed its connection" : strerror(err));
    if (io == HOST_IO_ERROR && peer >= 0)
        return host_fail(rc, "%s rank %d: %s with rank %d: socket error: %s", c->name, c->rank, what, peer,
                         strerror(err));
    if (io == HOST_IO_ERROR)
        return host_fail(rc, "%s rank %d: %s: socket error: %s", c->name, c->rank, what, strerror(err));
    if (peer >= 0)
        return host_fail(rc, "%s rank %d: %s with rank %d: %s", c->name, c->rank, what, peer, host_io_str(io));
    return host_fail(rc, "%s rank %d: %s: %s", c->name, c->rank, what, host_io_str(io));
}

/* Reads one message of an expected type and exact payload size. A MESH_FAIL instead carries
 * the peer's failure (its code and text). */
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
        return host_fail((ncclResult_t)f.code, "%s rank %d: %s: rank %d failed: %s", c->name, c->rank, what, peer,
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

/* Waits until fd is readable (a message or EOF is there). */
static ncclResult_t wait_readable(host_comm *c, int fd, int64_t deadline, const char *what, int peer)
{
    struct pollfd p[2] = {{fd, POLLIN, 0}, {c->wake_fd, POLLIN, 0}};
    for (;;) {
        int64_t left = deadline == HOST_NEVER ? -1 : (deadline - host_now_ns() + 999999) / 1000000;
        int r;
        if (deadline != HOST_NEVER && left <= 0)
            return host_fail(host_timeout_code(), "%s rank %d: timed out %s (rank %d)", c->name, c->rank, what, peer);
        r = poll(p, 2, left < 0 || left > 1000000 ? 1000000 : (int)left);
        if (r < 0 && errno != EINTR)
            return io_fail(c, HOST_IO_ERROR, what, peer);
        if (r > 0 && p[1].revents)
            return io_fail(c, HOST_IO_ABORT, what, peer);
        if (r > 0 && p[0].revents)
            return ncclSuccess;
    }
}

/* Tells every connected peer that init failed here (best effort, never waits). */
static void report_failure(host_comm *c, ncclResult_t code)
{
    struct {
        host_msg_hdr h;
        host_fail_msg f;
    } m;
    memset(&m, 0, sizeof m);
    m.h.type = HOST_MSG_MESH_FAIL;
    m.h.len = sizeof m.f;
    m.f.code = (int32_t)code;
    snprintf(m.f.text, sizeof m.f.text, "%s", host_last_error());
    for (int j = 0; j < c->nranks; j++)
        if (j != c->rank && c->peers[j].fd >= 0)
            (void)host_sock_send(c->peers[j].fd, &m, sizeof m, host_now_ns(), -1);
}

/* ------------------------------------------------------------------------------------------ */
/* Phase 1: the root                                                                             */
/* ------------------------------------------------------------------------------------------ */

/* A root on loopback serves only its own network namespace: a rank elsewhere would reach
 * nothing, or an unrelated process on its own loopback, so it is told why at once
 * (docs/host-backend.md#several-machines-and-network-namespaces). A non-loopback root is left to
 * decide (root.c one_machine), since it sees every rank. */
static ncclResult_t check_root_reachable(host_comm *c, uint32_t root_addr, const host_node *me)
{
    host_node maker;
    const char *why;
    if ((ntohl(root_addr) >> 24) != 127)
        return ncclSuccess;
    host_id_node(&c->id, &maker);
    why = host_node_differs(&maker, me);
    if (why != NULL)
        return host_fail(ncclInvalidUsage, "%s rank %d (host %.64s) cannot use this unique id: it was made on another "
                         "machine (pid %u on host %.20s): %s. The host backend runs every rank of a communicator on one "
                         "machine, over shared memory; across machines use NCCL or RCCL", c->name, c->rank, me->host,
                         host_id_pid(&c->id), maker.host, why);
    if (maker.netns != me->netns)
        return host_fail(ncclInvalidUsage, "%s rank %d (host %.64s) cannot reach the unique id's root: it listens on "
                         "loopback in another network namespace (pid %u on host %.20s); set "
                         "NCCL_HOST_ALLOW_NONLOOPBACK=1 on every rank, and NCCL_SOCKET_IFNAME to the interface that "
                         "joins the namespaces", c->name, c->rank, me->host, host_id_pid(&c->id), maker.host);
    return ncclSuccess;
}

/* The root's address could not be connected to (err): the root is gone, or the id expired. */
static ncclResult_t root_unreachable(host_comm *c, uint32_t root_addr, uint16_t root_port, int err)
{
    struct in_addr a = {root_addr};
    char where[INET_ADDRSTRLEN];
    host_node maker;
    host_id_node(&c->id, &maker);
    return host_fail(err == ECONNREFUSED ? ncclRemoteError : ncclSystemError,
                     "%s rank %d: cannot reach the unique id's root at %s:%u: %s; the process that created the id "
                     "(pid %u on host %.20s) exited, or the id expired (NCCL_HOST_ROOT_IDLE_TIMEOUT)", c->name,
                     c->rank, inet_ntop(AF_INET, &a, where, sizeof where) ? where : "?", (unsigned)ntohs(root_port),
                     strerror(err), host_id_pid(&c->id), maker.host);
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
    host_id_root(&c->id, &root_addr, &root_port, m.p.secret);
    host_node_get(&m.p.node);
    if (HOST_FAILED(rc = check_root_reachable(c, root_addr, &m.p.node)))
        goto exit;
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
        rc = root_unreachable(c, root_addr, root_port, errno);
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
        rc = host_fail(ncclRemoteError, "%s rank %d: the bootstrap root closed the connection (the process that "
                       "created the id, pid %u, exited?)", c->name, c->rank, host_id_pid(&c->id));
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
    c->uds_path = (t.flags & HOST_TABLE_SPANS_NETNS) != 0;
    if (HOST_FAILED(rc = host_mesh_build(c, table)))
        goto exit;
    if (c->rank == 0 && c->nids > 1)
        host_dismiss_roots(c->extra_ids, c->nids - 1);
exit:
    host_sock_close(&fd);
    free(table);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Phase 2: the control mesh                                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    host_comm *c;
    int got; /* lower ranks that presented the token */
} mesh_accept;

/* The gate's check of a MESH_HELLO: this communicator's token and a lower rank not seen yet. */
static int mesh_check(void *arg, int fd, const unsigned char *buf)
{
    mesh_accept *a = arg;
    host_comm *c = a->c;
    host_msg_hdr h;
    host_mesh_hello mh;
    memcpy(&h, buf, sizeof h);
    memcpy(&mh, buf + sizeof h, sizeof mh);
    if (h.type != HOST_MSG_MESH_HELLO || h.len != sizeof mh || !host_consttime_equal(mh.token, c->token, sizeof mh.token) ||
        mh.rank < 0 || mh.rank >= c->rank || c->peers[mh.rank].fd >= 0)
        return 0;
    c->peers[mh.rank].fd = fd;
    a->got++;
    return 1;
}

static ncclResult_t mesh_hello(host_comm *c, int j, int64_t deadline)
{
    host_mesh_hello mh;
    memset(&mh, 0, sizeof mh);
    memcpy(mh.token, c->token, sizeof mh.token);
    mh.rank = c->rank;
    return send_msg(c, c->peers[j].fd, HOST_MSG_MESH_HELLO, &mh, sizeof mh, deadline, "connecting the control mesh", j);
}

/* A peer sent something when only its failure (MESH_FAIL) or its EOF can come: returns the
 * error that describes it. */
static ncclResult_t peer_failure(host_comm *c, int j, int64_t deadline, const char *what)
{
    ncclResult_t rc = recv_msg(c, c->peers[j].fd, 0, NULL, 0, deadline, what, j);
    if (rc == ncclSuccess)
        rc = host_fail(ncclInternalError, "%s rank %d: %s: unexpected empty message from rank %d", c->name, c->rank,
                       what, j);
    return rc;
}

/* "0 3 5" for the ranks r in [from, to) whose flag is 0. */
static void missing_list(char *buf, size_t len, const char *flags, int from, int to)
{
    size_t o = 0;
    int k = 0;
    buf[0] = '\0';
    for (int r = from; r < to; r++)
        if (!flags[r] && k++ < 16 && o + 12 < len)
            o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? " " : "", r);
    if (k > 16 && o + 5 < len)
        snprintf(buf + o, len - o, " ...");
}

static int poll_ms(int64_t deadline)
{
    int64_t left;
    if (deadline == HOST_NEVER)
        return 1000;
    left = (deadline - host_now_ns() + 999999) / 1000000;
    return left <= 0 ? 0 : left > 1000 ? 1000 : (int)left;
}

typedef struct {
    char *up;      /* up[j]: the connection to j > me is complete and greeted */
    char *down;    /* down[i]: i < me connected and presented the token */
    char *done;    /* rank 0: done[j]: j reported MESH_DONE */
    int nup, ndone;
} mesh_state;

static ncclResult_t mesh_timeout(host_comm *c, const mesh_state *m)
{
    int n = c->nranks, me = c->rank;
    char missing[200];
    double t = host_params()->timeout_s;
    for (int i = 0; i < me; i++)
        m->down[i] = c->peers[i].fd >= 0;
    missing_list(missing, sizeof missing, m->down, 0, me);
    if (missing[0])
        return host_fail(host_timeout_code(), "%s rank %d: timed out after %.1f s: rank(s) %s did not connect to this "
                         "rank's control mesh listener", c->name, me, t, missing);
    missing_list(missing, sizeof missing, m->up, me + 1, n);
    if (missing[0])
        return host_fail(host_timeout_code(), "%s rank %d: timed out after %.1f s connecting the control mesh to "
                         "rank(s) %s", c->name, me, t, missing);
    missing_list(missing, sizeof missing, m->done, 1, n);
    return host_fail(host_timeout_code(), "%s rank %d: timed out after %.1f s waiting for rank(s) %s to complete the "
                     "control mesh", c->name, me, t, missing);
}

/* Connects up (to every j > me, all at once) and accepts down (every i < me, through the gate);
 * rank 0 also collects MESH_DONE from every rank. Fills c->peers[*].fd. */
static ncclResult_t mesh_connect(host_comm *c, const host_peer_addr *peers, int64_t deadline)
{
    int n = c->nranks, me = c->rank;
    size_t cap = 2 + HOST_GATE_SLOTS + (size_t)n;
    struct pollfd *pfd = malloc(cap * sizeof *pfd);
    int *who = malloc(cap * sizeof *who);
    char *flags = calloc((size_t)n, 3), what[96];
    mesh_state m = {flags, flags + n, flags + 2 * n, 0, 0};
    mesh_accept acc = {c, 0};
    host_gate g;
    ncclResult_t rc = ncclSuccess;
    snprintf(what, sizeof what, "%s rank %d: control mesh listener", c->name, me);
    host_gate_init(&g, c->listen_fd, sizeof(host_msg_hdr) + sizeof(host_mesh_hello), what);
    if (pfd == NULL || who == NULL || flags == NULL) {
        rc = host_fail(ncclSystemError, "%s rank %d: out of memory building the control mesh", c->name, me);
        goto exit;
    }
    for (int j = me + 1; j < n; j++) {
        int pending;
        host_io io = host_sock_connect_start(peers[j].addr_be, peers[j].port_be, &c->peers[j].fd, &pending);
        if (io != HOST_IO_OK) {
            rc = io_fail(c, io, "connecting the control mesh", j);
            goto exit;
        }
        if (!pending) {
            if (HOST_FAILED(rc = mesh_hello(c, j, deadline)))
                goto exit;
            m.up[j] = 1;
            m.nup++;
        }
    }
    while (acc.got < me || m.nup < n - 1 - me || (me == 0 && m.ndone < n - 1)) {
        int k = 0, ngate = 0, r;
        int64_t wake = deadline;
        if (host_now_ns() >= deadline) {
            rc = mesh_timeout(c, &m);
            goto exit;
        }
        pfd[k] = (struct pollfd){c->wake_fd, POLLIN, 0};
        who[k++] = -1;
        if (acc.got < me) {
            ngate = host_gate_pollfds(&g, pfd + k);
            for (int i = 0; i < ngate; i++)
                who[k + i] = -1;
            k += ngate;
            if (host_gate_deadline(&g) < wake)
                wake = host_gate_deadline(&g);
        }
        for (int j = 0; j < n; j++)
            if (j != me && c->peers[j].fd >= 0) {
                pfd[k] = (struct pollfd){c->peers[j].fd, (short)(j > me && !m.up[j] ? POLLOUT : POLLIN), 0};
                who[k++] = j;
            }
        r = poll(pfd, (nfds_t)k, poll_ms(wake));
        if (r < 0 && errno != EINTR) {
            rc = io_fail(c, HOST_IO_ERROR, "building the control mesh", -1);
            goto exit;
        }
        if (r <= 0)
            continue;
        if (pfd[0].revents) {
            rc = io_fail(c, HOST_IO_ABORT, "building the control mesh", -1);
            goto exit;
        }
        for (int i = 1 + ngate; i < k; i++) {
            int j = who[i];
            int32_t z;
            if (!pfd[i].revents)
                continue;
            if (j > me && !m.up[j]) {
                host_io io = host_sock_connect_finish(c->peers[j].fd);
                if (io != HOST_IO_OK) {
                    rc = io_fail(c, io, "connecting the control mesh", j);
                    goto exit;
                }
                if (HOST_FAILED(rc = mesh_hello(c, j, deadline)))
                    goto exit;
                m.up[j] = 1;
                m.nup++;
            } else if (me == 0 && !m.done[j]) {
                if (HOST_FAILED(rc = recv_msg(c, c->peers[j].fd, HOST_MSG_MESH_DONE, &z, sizeof z, deadline,
                        "building the control mesh", j)))
                    goto exit;
                m.done[j] = 1;
                m.ndone++;
            } else {
                rc = peer_failure(c, j, deadline, "building the control mesh");
                goto exit;
            }
        }
        if (ngate > 0)
            host_gate_service(&g, pfd + 1, ngate, mesh_check, &acc);
    }
exit:
    host_gate_close(&g);
    host_sock_close(&c->listen_fd);
    free(pfd);
    free(who);
    free(flags);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Phase 3: the segment, and rank 0's verdict                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Rank 0 hands the segment's descriptor to whoever connects with our uid (the socket's name was
 * sent only to the ranks, over the mesh, and the peers check the segment's token); anyone else
 * is closed at once. Never blocks. */
static void serve_segment(int lfd, int segfd, unsigned long *refused)
{
    for (int k = 0; k < 64; k++) {
        int s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (s < 0)
            return;
        if (host_uds_peer_uid(s) == (long)geteuid())
            (void)host_uds_send_fd(s, segfd);
        else
            ++*refused;
        close(s);
    }
}

/* Rank 0: create the segment, pass it to every rank, collect the acknowledgements. */
static ncclResult_t share_segment(host_comm *c, int64_t deadline)
{
    int n = c->nranks, segfd = -1, lfd = -1, nack = 0;
    unsigned long refused = 0;
    char *acked = NULL;
    struct pollfd *pfd = NULL;
    host_seg_msg sm;
    uint64_t rnd;
    ncclResult_t rc;
    if (HOST_FAILED(rc = host_seg_create(&c->seg, n, c->token, &segfd)))
        return rc;
    if (n == 1) {
        close(segfd);
        return ncclSuccess;
    }
    if (HOST_FAILED(rc = host_random_bytes(&rnd, sizeof rnd)))
        goto exit;
    memset(&sm, 0, sizeof sm);
    host_uds_name(sm.name, sizeof sm.name, c->uds_path, "seg", rnd);
    if (HOST_FAILED(rc = host_uds_listen(sm.name, n < 1024 ? n : 1024, &lfd)))
        goto exit;
    acked = calloc((size_t)n, 1);
    pfd = malloc(sizeof *pfd * (size_t)(n + 1));
    if (acked == NULL || pfd == NULL) {
        rc = host_fail(ncclSystemError, "%s rank 0: out of memory sharing the segment", c->name);
        goto exit;
    }
    for (int j = 1; j < n; j++)
        if (HOST_FAILED(rc = send_msg(c, c->peers[j].fd, HOST_MSG_SEG_NAME, &sm, sizeof sm, deadline,
                "sending where to fetch the shared segment", j)))
            goto exit;
    while (nack < n - 1) {
        int k = 0, r;
        if (host_now_ns() >= deadline) {
            char missing[200];
            missing_list(missing, sizeof missing, acked, 1, n);
            rc = host_fail(host_timeout_code(), "%s rank 0: timed out after %.1f s waiting for rank(s) %s to attach "
                           "the shared segment", c->name, host_params()->timeout_s, missing);
            goto exit;
        }
        pfd[k++] = (struct pollfd){c->wake_fd, POLLIN, 0};
        pfd[k++] = (struct pollfd){lfd, POLLIN, 0};
        for (int j = 1; j < n; j++)
            pfd[k++] = (struct pollfd){acked[j] ? -1 : c->peers[j].fd, POLLIN, 0};
        r = poll(pfd, (nfds_t)k, poll_ms(deadline));
        if (r < 0 && errno != EINTR) {
            rc = io_fail(c, HOST_IO_ERROR, "sharing the segment", -1);
            goto exit;
        }
        if (r <= 0)
            continue;
        if (pfd[0].revents) {
            rc = io_fail(c, HOST_IO_ABORT, "sharing the segment", -1);
            goto exit;
        }
        if (pfd[1].revents)
            serve_segment(lfd, segfd, &refused);
        for (int j = 1; j < n; j++) {
            int32_t z;
            if (!pfd[j + 1].revents)
                continue;
            if (HOST_FAILED(rc = recv_msg(c, c->peers[j].fd, HOST_MSG_SEG_ACK, &z, sizeof z, deadline,
                    "waiting for the ranks to attach the shared segment", j)))
                goto exit;
            acked[j] = 1;
            nack++;
        }
    }
    rc = ncclSuccess;
exit:
    if (refused > 0)
        HOST_WARN("%s rank 0: refused the shared segment to %lu connection(s) of another user", c->name, refused);
    host_uds_close(&lfd, sm.name);
    host_sock_close(&segfd);
    free(acked);
    free(pfd);
    return rc;
}

/* A rank j > 0: fetch the segment where rank 0 said, check it, acknowledge. */
static ncclResult_t fetch_segment(host_comm *c, int64_t deadline)
{
    host_seg_msg sm;
    int s = -1, segfd = -1;
    int32_t z = 0;
    host_io io;
    ncclResult_t rc;
    /* Rank 0 sends it once every rank's mesh is complete, or its reason to fail. */
    if (HOST_FAILED(rc = wait_readable(c, c->peers[0].fd, verdict_deadline(deadline), "waiting for rank 0 to share the "
            "segment", 0)))
        goto exit;
    if (HOST_FAILED(rc = recv_msg(c, c->peers[0].fd, HOST_MSG_SEG_NAME, &sm, sizeof sm, verdict_deadline(deadline),
            "waiting for rank 0 to share the segment", 0)))
        goto exit;
    sm.name[sizeof sm.name - 1] = '\0';
    io = host_uds_connect(sm.name, deadline, c->wake_fd, &s);
    if (io == HOST_IO_OK)
        io = host_uds_recv_fd(s, deadline, c->wake_fd, &segfd);
    if (io != HOST_IO_OK) {
        rc = io_fail(c, io, "fetching the shared segment from rank 0", 0);
        /* rank 0 failed meanwhile: its reason is on the mesh, and says more */
        if (io != HOST_IO_ABORT && wait_readable(c, c->peers[0].fd, host_deadline_after(100000000), "", 0) ==
            ncclSuccess)
            rc = peer_failure(c, 0, deadline, "fetching the shared segment from rank 0");
        goto exit;
    }
    if (segfd < 0) {
        rc = host_fail(ncclSystemError, "%s rank %d: rank 0 did not pass the shared segment (is this rank running as "
                       "another user?)", c->name, c->rank);
        goto exit;
    }
    if (HOST_FAILED(rc = host_seg_attach(&c->seg, segfd, c->nranks, c->token)))
        goto exit;
    rc = send_msg(c, c->peers[0].fd, HOST_MSG_SEG_ACK, &z, sizeof z, deadline, "acknowledging the shared segment", 0);
exit:
    host_sock_close(&s);
    host_sock_close(&segfd);
    return rc;
}

ncclResult_t host_mesh_build(host_comm *c, const host_peer_addr *peers)
{
    const host_params_t *p = host_params();
    int64_t deadline = host_deadline_after(p->timeout_ns);
    int n = c->nranks, me = c->rank, decided = 0;
    int64_t verdict = verdict_deadline(deadline);
    int32_t z = 0;
    ncclResult_t rc = ncclSuccess;

    for (int j = 0; j < n; j++)
        c->peers[j].pid = peers[j].pid;
    if (HOST_FAILED(rc = mesh_connect(c, peers, deadline)))
        goto fail;
    if (me == 0) {
        if (HOST_FAILED(rc = share_segment(c, deadline)))
            goto fail;
        decided = 1; /* every rank acknowledged: from here on, success whatever a send does */
        for (int j = 1; j < n; j++)
            (void)send_msg(c, c->peers[j].fd, HOST_MSG_READY, &z, sizeof z, deadline, "completing the bootstrap", j);
    } else {
        if (HOST_FAILED(rc = send_msg(c, c->peers[0].fd, HOST_MSG_MESH_DONE, &z, sizeof z, deadline,
                "reporting the control mesh complete", 0)))
            goto fail;
        if (HOST_FAILED(rc = fetch_segment(c, deadline)))
            goto fail;
        /* Acknowledged: only rank 0 decides now, so wait for its verdict past our own deadline. */
        decided = 1;
        if (HOST_FAILED(rc = wait_readable(c, c->peers[0].fd, verdict, "waiting for rank 0 to complete the bootstrap", 0)))
            goto fail;
        if (HOST_FAILED(rc = recv_msg(c, c->peers[0].fd, HOST_MSG_READY, &z, sizeof z, verdict,
                "waiting for rank 0 to complete the bootstrap", 0)))
            goto fail;
    }
    host_seg_rankp(&c->seg, me)->pid = (uint32_t)getpid();
    if (HOST_FAILED(rc = host_monitor_add(c)))
        goto fail;
    HOST_INFO(HOST_SUB_INIT, "%s rank %d/%d: communicator ready (segment %zu bytes%s)", c->name, c->rank, n,
              c->seg.size, c->uds_path ? "; the ranks span network namespaces: descriptors pass through "
              HOST_UDS_DIR : "");
    return ncclSuccess;
fail:
    /* Before rank 0's verdict our peers learn why; after it (decided) rank 0 has told them. */
    if (!decided && !atomic_load_explicit(&c->aborted, memory_order_seq_cst))
        report_failure(c, rc);
    host_seg_unmap(&c->seg);
    host_sock_close(&c->listen_fd);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Control messages after READY                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* How long a failed send waits for the monitor's verdict on the peer (it reads the same socket's
 * end of file a moment later, after delivering the mail the peer sent before going). */
#define MONITOR_VERDICT_NS 1000000000ll

/* A send that met a peer's closed socket before the monitor saw it go: wait, bounded, for the
 * monitor, so the error names how the peer went and its first cause, as every other wait does
 * (docs/host-backend.md#peer-death-and-abort), instead of a bare "closed its connection". */
static void await_monitor_verdict(host_comm *c, int peer)
{
    int64_t until = host_now_ns() + MONITOR_VERDICT_NS;
    pthread_mutex_lock(&c->lock);
    while (!host_peer_is_gone(c, peer) && !atomic_load_explicit(&c->aborted, memory_order_seq_cst) &&
           host_cond_wait(&c->cv, &c->lock, until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&c->lock);
}

ncclResult_t host_ctl_send(host_comm *c, int peer, uint32_t type, uint64_t tag, const void *payload, uint32_t len,
                           int64_t deadline, const char *fn)
{
    host_peer *pp = &c->peers[peer];
    host_msg_hdr h;
    host_io io = HOST_IO_OK;
    int notice = type == HOST_MSG_LEAVE || type == HOST_MSG_ABORT, err;
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
    if (io == HOST_IO_OK)
        return ncclSuccess;
    err = errno;
    if (!notice && c->monitored && peer_closed(io, err))
        await_monitor_verdict(c, peer);
    errno = err; /* io_fail reads the send's errno */
    return io_fail(c, io, fn, peer);
}

/* The tag of the next exchange among `members` (docs/host-backend.md#communicator-lifecycle).
 * Exchanges among every rank of c are numbered 1, 2, ...; those among some of its ranks (a
 * shrink: the excluded ranks never call it) in a series of their own, bit 63 set. So a shrink
 * leaves the numbering of the exchanges every rank makes alike on every rank, and a split or a
 * window registration on the parent after it meets the same tag everywhere. Survivors of one
 * shrink share its tag even when their exclusion lists differ, so the records compare and the
 * difference is reported. */
static uint64_t mgmt_tag(host_comm *c, int nmembers)
{
    return nmembers == c->nranks ? ++c->mgmt_seq : (1ULL << 63) | ++c->subset_seq;
}

/* Mail from an earlier exchange of the same series that failed here (a later one's is kept). */
static int stale_mail(uint64_t have, uint64_t want)
{
    return have >> 63 == want >> 63 && have < want;
}

ncclResult_t host_mgmt_allgather(host_comm *c, const int *members, int nmembers, const void *mine, uint32_t len,
                                 void *out, const char *fn)
{
    int64_t deadline = host_deadline_after(host_params()->timeout_ns);
    int64_t start = host_now_ns();
    uint64_t tag = mgmt_tag(c, nmembers);
    ncclResult_t rc = ncclSuccess;
    for (int i = 0; i < nmembers; i++) {
        if (members[i] == c->rank) {
            memcpy((char *)out + (size_t)i * len, mine, len);
            continue;
        }
        if (HOST_FAILED(rc = host_ctl_send(c, members[i], HOST_MSG_MGMT, tag, mine, len, deadline, fn)))
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
                if (e->from == m && stale_mail(e->tag, tag)) { /* left over from an exchange that failed here */
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
            if (atomic_load_explicit(&c->aborted, memory_order_seq_cst)) {
                rc = host_fail(ncclInvalidUsage, "%s: communicator aborted", fn);
                break;
            }
            /* The monitor's word, not the segment's: it marks the peer gone only after delivering
             * the mail the peer sent before leaving. The text names the first cause. */
            if (atomic_load_explicit(&c->peers[m].gone, memory_order_seq_cst) != HOST_PEER_ALIVE) {
                rc = host_fail_peer_gone(c, fn, m);
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
