/* The monitor: one thread per process that reads every control socket of every READY
 * communicator (docs/host-backend.md#peer-death-and-abort).
 *
 * EOF or a reset on a peer's socket, without a LEAVE notice first, means the peer died: its
 * communicators go to ERROR(ncclRemoteError) and their waiters wake within milliseconds, not at
 * the deadline. LEAVE marks the peer as gone (operations that still need it fail with
 * ncclRemoteError, the communicator stays usable otherwise); ABORT marks it aborted and the
 * communicator ERROR(RE); MGMT messages (split/shrink exchanges) go to the communicator's mailbox.
 *
 * Entries are registered and removed under host_monitor_lock; the thread polls a snapshot, then
 * re-finds each ready entry by serial under the lock before touching it, so a communicator that
 * was removed meanwhile is never dereferenced. Lock order: host_monitor_lock -> comm->lock. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl_host.h"

typedef struct mon_entry {
    uint64_t serial;
    int fd;
    host_comm *c;
    int peer;
    int closed;           /* EOF seen: no longer polled */
    unsigned char *buf;
    size_t got, cap;
    struct mon_entry *next;
} mon_entry;

static pthread_mutex_t host_monitor_lock = PTHREAD_MUTEX_INITIALIZER;
static mon_entry *mon_entries;   /* guarded by host_monitor_lock */
static int mon_started;          /* guarded by host_monitor_lock */
static int mon_efd = -1;         /* eventfd: the entry set changed; set once under the lock */
static uint64_t mon_serial;      /* guarded by host_monitor_lock */

static void mon_kick(void)
{
    uint64_t one = 1;
    ssize_t r = write(mon_efd, &one, sizeof one);
    (void)r; /* an eventfd write fails only on overflow, which still leaves it readable */
}

static void peer_gone(host_comm *c, int peer, int how)
{
    int expected = HOST_PEER_ALIVE;
    char why[200], gone[160];
    if (how == HOST_PEER_DEAD && c->seg.base != NULL) {
        /* A rank that left or aborted says so in its state word before its notice, and the notice
         * is best effort: an end of file after that state is a departure, not a death. */
        uint32_t st = atomic_load_explicit(&host_seg_rankp(&c->seg, peer)->state, memory_order_acquire);
        how = st == HOST_RANK_ABORTED ? HOST_PEER_ABORTED : st == HOST_RANK_LEFT ? HOST_PEER_LEFT : how;
        if (how != HOST_PEER_DEAD && atomic_load_explicit(&c->peers[peer].gone, memory_order_seq_cst) != HOST_PEER_ALIVE)
            return; /* its notice came first */
    }
    if (how == HOST_PEER_DEAD) {
        if (atomic_compare_exchange_strong_explicit(&c->peers[peer].gone, &expected, HOST_PEER_DEAD, memory_order_seq_cst, memory_order_seq_cst)) {
            /* one that died after failing for another's loss passes that first cause on */
            host_comm_note_cause(c, host_peer_cause(c, peer));
            snprintf(why, sizeof why, "peer rank %d (pid %u) %s (it exited or closed its connection without "
                     "leaving)", peer, c->peers[peer].pid, host_peer_gone_text(c, peer, gone, sizeof gone));
            HOST_WARN("%s rank %d: %s; communicator is now in error (ncclRemoteError)", c->name, c->rank, why);
            host_comm_set_error_why(c, ncclRemoteError, why);
        }
        return;
    }
    if (how == HOST_PEER_ABORTED) {
        /* An abort's first cause (a death it saw first) travels on: blame that, not the peer. */
        atomic_store_explicit(&c->peers[peer].gone, HOST_PEER_ABORTED, memory_order_seq_cst);
        host_comm_note_cause(c, host_peer_cause(c, peer));
        snprintf(why, sizeof why, "peer rank %d (pid %u) %s", peer, c->peers[peer].pid,
                 host_peer_gone_text(c, peer, gone, sizeof gone));
        HOST_WARN("%s rank %d: %s; communicator is now in error (ncclRemoteError)", c->name, c->rank, why);
        host_comm_set_error_why(c, ncclRemoteError, why);
        return;
    }
    atomic_compare_exchange_strong_explicit(&c->peers[peer].gone, &expected, HOST_PEER_LEFT, memory_order_seq_cst, memory_order_seq_cst);
    host_comm_wake(c);
}

static void deliver_mail(host_comm *c, int peer, const host_msg_hdr *h, const unsigned char *payload)
{
    host_mail *m = malloc(sizeof *m + h->len);
    host_mail **pp;
    if (m == NULL) {
        host_fail(ncclSystemError, "%s rank %d: out of memory for a control message", c->name, c->rank);
        host_comm_set_error(c, ncclSystemError);
        return;
    }
    m->from = peer;
    m->tag = h->tag;
    m->len = h->len;
    m->next = NULL;
    memcpy(m->data, payload, h->len);
    pthread_mutex_lock(&c->lock);
    for (pp = &c->mail; *pp != NULL; pp = &(*pp)->next)
        ;
    *pp = m;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->lock);
}

/* Reads what is available; returns 0 to keep polling, 1 when the entry reached EOF. */
static int mon_read(mon_entry *e)
{
    for (;;) {
        ssize_t r;
        if (e->cap - e->got < 4096) {
            size_t ncap = e->cap ? e->cap * 2 : 8192;
            unsigned char *nb;
            if (ncap > HOST_MSG_MAX_PAYLOAD + sizeof(host_msg_hdr) + 8192)
                ncap = HOST_MSG_MAX_PAYLOAD + sizeof(host_msg_hdr) + 8192;
            nb = ncap > e->cap ? realloc(e->buf, ncap) : NULL;
            if (nb == NULL && e->cap == e->got)
                return 1;
            if (nb != NULL) {
                e->buf = nb;
                e->cap = ncap;
            }
        }
        r = recv(e->fd, e->buf + e->got, e->cap - e->got, MSG_DONTWAIT);
        if (r > 0) {
            e->got += (size_t)r;
        } else if (r == 0) {
            return 1;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            return 1;
        }
        /* Dispatch every complete message. */
        size_t off = 0;
        while (e->got - off >= sizeof(host_msg_hdr)) {
            host_msg_hdr h;
            memcpy(&h, e->buf + off, sizeof h);
            if (h.len > HOST_MSG_MAX_PAYLOAD) {
                HOST_WARN("%s rank %d: corrupt control message from rank %d", e->c->name, e->c->rank, e->peer);
                return 1;
            }
            if (e->got - off < sizeof h + h.len)
                break;
            switch (h.type) {
            case HOST_MSG_LEAVE: peer_gone(e->c, e->peer, HOST_PEER_LEFT); break;
            case HOST_MSG_ABORT: peer_gone(e->c, e->peer, HOST_PEER_ABORTED); break;
            case HOST_MSG_MGMT: deliver_mail(e->c, e->peer, &h, e->buf + off + sizeof h); break;
            default:
                HOST_INFO(HOST_SUB_BOOTSTRAP, "%s rank %d: ignored control message 0x%x from rank %d", e->c->name,
                          e->c->rank, h.type, e->peer);
                break;
            }
            off += sizeof h + h.len;
        }
        if (off > 0) {
            memmove(e->buf, e->buf + off, e->got - off);
            e->got -= off;
        }
    }
    return 0;
}

static void *mon_main(void *arg)
{
    struct pollfd *pfd = NULL;
    uint64_t *serials = NULL;
    size_t cap = 0;
    (void)arg;
    for (;;) {
        size_t n = 1;
        mon_entry *e;
        pthread_mutex_lock(&host_monitor_lock);
        for (e = mon_entries; e != NULL; e = e->next)
            n += !e->closed;
        if (n > cap) {
            struct pollfd *np = realloc(pfd, n * sizeof *pfd);
            uint64_t *ns = np ? realloc(serials, n * sizeof *ns) : NULL;
            if (np != NULL)
                pfd = np;
            if (ns != NULL) {
                serials = ns;
                cap = n;
            }
        }
        n = 0;
        if (cap > 0) {
            pfd[n] = (struct pollfd){mon_efd, POLLIN, 0};
            serials[n++] = 0;
            for (e = mon_entries; e != NULL && n < cap; e = e->next)
                if (!e->closed) {
                    pfd[n] = (struct pollfd){e->fd, POLLIN, 0};
                    serials[n++] = e->serial;
                }
        }
        pthread_mutex_unlock(&host_monitor_lock);
        if (n == 0) { /* out of memory for the poll set: try again shortly */
            usleep(100000);
            continue;
        }
        /* Every change to the entry set writes mon_efd, so this poll needs no timeout to stay
         * current; the 1 s bound only keeps a lost wakeup from ever mattering. */
        if (poll(pfd, (nfds_t)n, 1000) <= 0)
            continue;
        if (pfd[0].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(mon_efd, &v, sizeof v);
            (void)r;
        }
        pthread_mutex_lock(&host_monitor_lock);
        for (size_t i = 1; i < n; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            for (e = mon_entries; e != NULL && e->serial != serials[i]; e = e->next)
                ;
            if (e == NULL || e->closed)
                continue;
            if (mon_read(e)) {
                e->closed = 1;
                peer_gone(e->c, e->peer, HOST_PEER_DEAD);
            }
        }
        pthread_mutex_unlock(&host_monitor_lock);
    }
    return NULL;
}

ncclResult_t host_monitor_add(host_comm *c)
{
    ncclResult_t rc = ncclSuccess;
    pthread_mutex_lock(&host_monitor_lock);
    if (!mon_started) {
        pthread_t t;
        if (mon_efd < 0)
            mon_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (mon_efd < 0) {
            rc = host_fail(ncclSystemError, "eventfd failed: %s", strerror(errno));
            goto out;
        }
        if (HOST_FAILED(rc = host_thread_create(&t, mon_main, NULL, 1)))
            goto out;
        mon_started = 1;
    }
    for (int j = 0; j < c->nranks; j++) {
        mon_entry *e;
        if (j == c->rank || c->peers[j].fd < 0)
            continue;
        e = calloc(1, sizeof *e);
        if (e == NULL) {
            rc = host_fail(ncclSystemError, "out of memory registering control sockets");
            goto out;
        }
        e->serial = ++mon_serial;
        e->fd = c->peers[j].fd;
        e->c = c;
        e->peer = j;
        e->next = mon_entries;
        mon_entries = e;
    }
    c->monitored = 1;
    mon_kick();
out:
    pthread_mutex_unlock(&host_monitor_lock);
    if (rc != ncclSuccess)
        host_monitor_remove(c);
    return rc;
}

void host_monitor_remove(host_comm *c)
{
    pthread_mutex_lock(&host_monitor_lock);
    for (mon_entry **pp = &mon_entries; *pp != NULL;) {
        mon_entry *e = *pp;
        if (e->c == c) {
            *pp = e->next;
            free(e->buf);
            free(e);
        } else {
            pp = &e->next;
        }
    }
    c->monitored = 0;
    if (mon_efd >= 0)
        mon_kick();
    pthread_mutex_unlock(&host_monitor_lock);
}

/* In a fork child the monitor thread does not exist; forget the parent's entries (their
 * communicators are unusable there) so a communicator created in the child starts a new one. */
void host_monitor_atfork_child(void)
{
    pthread_mutex_init(&host_monitor_lock, NULL);
    mon_entries = NULL;
    mon_started = 0;
    if (mon_efd >= 0)
        close(mon_efd);
    mon_efd = -1;
}
