/* The gate: accepting connections on a listener that any local process can reach (the bootstrap
 * root's, a rank's control-mesh listener) without letting the ones that never authenticate cost
 * the legitimate ones anything.
 *
 * A connection is accepted at once and its fixed-size hello read without blocking; a complete
 * hello goes straight to the owner's check. One that has not sent it all yet waits in one of the
 * gate's preallocated slots (HOST_GATE_SLOTS, and HOST_GATE_PROCESS_MAX over every gate of the
 * process, well below the file limit) for at most HOST_HANDSHAKE_NS; when the slots are full the
 * oldest waiting connection is dropped, not the new one. So silent or slow connections are
 * bounded in number and time, never read one after another, and hold nothing but their socket
 * and a slot: no per-peer allocation happens before a connection proved what it is. */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl_host.h"

/* Connections accepted per service call before the other descriptors get their turn. */
#define GATE_ACCEPT_BURST 256

static _Atomic int gate_parked_total; /* waiting connections over every gate of the process */

/* The process-wide bound: HOST_GATE_PROCESS_MAX, or a quarter of the file limit if lower. */
static int process_max(void)
{
    struct rlimit rl;
    int m = HOST_GATE_PROCESS_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < (rlim_t)m)
        m = (int)(rl.rlim_cur / 4);
    return m > 4 ? m : 4;
}

void host_gate_init(host_gate *g, int lfd, size_t hello_len, const char *what)
{
    memset(g, 0, sizeof *g);
    g->lfd = lfd;
    g->hello_len = hello_len < HOST_GATE_HELLO_MAX ? hello_len : HOST_GATE_HELLO_MAX;
    g->what = what;
    for (int i = 0; i < HOST_GATE_SLOTS; i++)
        g->slot[i].fd = -1;
}

static void slot_drop(host_gate *g, host_gate_slot *s)
{
    host_sock_close(&s->fd);
    s->got = 0;
    g->nparked--;
    atomic_fetch_sub_explicit(&gate_parked_total, 1, memory_order_seq_cst);
}

void host_gate_forget(host_gate *g)
{
    for (int i = 0; i < HOST_GATE_SLOTS; i++)
        if (g->slot[i].fd >= 0)
            slot_drop(g, &g->slot[i]);
}

void host_gate_close(host_gate *g)
{
    host_gate_forget(g);
    if (g->evicted + g->expired + g->rejected > 0)
        HOST_WARN("%s: dropped %lu connection(s) that did not authenticate in time and %lu that failed the check",
                  g->what, g->evicted + g->expired, g->rejected);
}

int host_gate_pollfds(const host_gate *g, struct pollfd *pfd)
{
    int n = 0;
    pfd[n++] = (struct pollfd){g->lfd, POLLIN, 0};
    for (int i = 0; i < HOST_GATE_SLOTS; i++)
        if (g->slot[i].fd >= 0)
            pfd[n++] = (struct pollfd){g->slot[i].fd, POLLIN, 0};
    return n;
}

int64_t host_gate_deadline(const host_gate *g)
{
    int64_t d = HOST_NEVER;
    for (int i = 0; i < HOST_GATE_SLOTS; i++)
        if (g->slot[i].fd >= 0 && g->slot[i].deadline < d)
            d = g->slot[i].deadline;
    return d;
}

/* Reads what is there of the hello; 1 when complete, 0 when more is to come, -1 when the
 * connection is closed or broken. */
static int read_hello(int fd, unsigned char *buf, uint32_t *got, size_t want)
{
    while (*got < want) {
        ssize_t r = recv(fd, buf + *got, want - *got, MSG_DONTWAIT);
        if (r > 0) {
            *got += (uint32_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return -1;
    }
    return 1;
}

/* A slot for a new waiting connection: a free one, else the oldest is dropped. NULL when the
 * process-wide bound is reached and this gate has nothing of its own to give up. */
static host_gate_slot *slot_take(host_gate *g)
{
    host_gate_slot *oldest = NULL;
    int full = g->nparked >= HOST_GATE_SLOTS || atomic_load_explicit(&gate_parked_total, memory_order_seq_cst) >= process_max();
    for (int i = 0; i < HOST_GATE_SLOTS; i++) {
        host_gate_slot *s = &g->slot[i];
        if (s->fd < 0 && !full)
            return s;
        if (s->fd >= 0 && (oldest == NULL || s->seq < oldest->seq))
            oldest = s;
    }
    if (oldest == NULL)
        return NULL;
    slot_drop(g, oldest);
    g->evicted++;
    return oldest;
}

static void accept_new(host_gate *g, host_gate_cb *cb, void *arg)
{
    for (int k = 0; k < GATE_ACCEPT_BURST; k++) {
        unsigned char buf[HOST_GATE_HELLO_MAX];
        uint32_t got = 0;
        host_gate_slot *s;
        int fd, r;
        if (host_sock_accept(g->lfd, host_now_ns(), -1, &fd) != HOST_IO_OK)
            return; /* nothing more waiting (or an error that the next poll reports again) */
        r = read_hello(fd, buf, &got, g->hello_len);
        if (r > 0) {
            if (!cb(arg, fd, buf)) {
                close(fd);
                g->rejected++;
            }
            continue;
        }
        if (r < 0) {
            close(fd);
            continue;
        }
        s = slot_take(g);
        if (s == NULL) {
            close(fd);
            g->evicted++;
            continue;
        }
        s->fd = fd;
        s->got = got;
        memcpy(s->buf, buf, got);
        s->deadline = host_deadline_after(HOST_HANDSHAKE_NS);
        s->seq = ++g->seq;
        g->nparked++;
        atomic_fetch_add_explicit(&gate_parked_total, 1, memory_order_seq_cst);
    }
}

void host_gate_service(host_gate *g, const struct pollfd *pfd, int n, host_gate_cb *cb, void *arg)
{
    int64_t now = host_now_ns();
    for (int i = 0; i < n; i++) {
        host_gate_slot *s = NULL;
        if (pfd[i].fd < 0 || pfd[i].fd == g->lfd || !pfd[i].revents)
            continue;
        for (int k = 0; k < HOST_GATE_SLOTS && s == NULL; k++)
            if (g->slot[k].fd == pfd[i].fd)
                s = &g->slot[k];
        if (s == NULL)
            continue;
        int r = read_hello(s->fd, s->buf, &s->got, g->hello_len);
        if (r < 0) {
            slot_drop(g, s);
        } else if (r > 0) {
            int fd = s->fd;
            unsigned char buf[HOST_GATE_HELLO_MAX];
            memcpy(buf, s->buf, g->hello_len);
            s->fd = -1; /* the connection leaves the gate: the owner keeps or closes it */
            slot_drop(g, s);
            if (!cb(arg, fd, buf)) {
                close(fd);
                g->rejected++;
            }
        }
    }
    for (int k = 0; k < HOST_GATE_SLOTS; k++)
        if (g->slot[k].fd >= 0 && g->slot[k].deadline <= now) {
            slot_drop(g, &g->slot[k]);
            g->expired++;
        }
    if (n > 0 && pfd[0].fd == g->lfd && (pfd[0].revents & POLLIN))
        accept_new(g, cb, arg);
}
