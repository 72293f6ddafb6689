/* Operating-system helpers: clocks and deadlines, futexes and event counts, random bytes, CRC-32,
 * and socket operations that all take an absolute CLOCK_MONOTONIC deadline plus an optional
 * "wake" file descriptor whose readability means "abort now" (docs/host-backend.md#robustness: a deadline on every
 * wait, EINTR retried with the remaining time; nothing here busy-waits: the bounded spin before
 * a futex sleep is worker.c's). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nccl_host.h"

int64_t host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t host_deadline_after(int64_t timeout_ns)
{
    int64_t now = host_now_ns();
    if (timeout_ns == HOST_NEVER || timeout_ns > HOST_NEVER - now)
        return HOST_NEVER;
    return now + timeout_ns;
}

double host_elapsed_s(int64_t since_ns)
{
    return (double)(host_now_ns() - since_ns) / 1e9;
}

void host_abstime(int64_t deadline_ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(deadline_ns / 1000000000);
    ts->tv_nsec = (long)(deadline_ns % 1000000000);
}

void host_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

int host_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns)
{
    struct timespec ts;
    if (deadline_ns == HOST_NEVER)
        return pthread_cond_wait(cv, mu);
    if (host_now_ns() >= deadline_ns)
        return ETIMEDOUT;
    host_abstime(deadline_ns, &ts);
    return pthread_cond_timedwait(cv, mu, &ts) == ETIMEDOUT ? ETIMEDOUT : 0;
}

/* ---------------------------------------------------------------------------------------- */

int host_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns)
{
    struct timespec ts, *tsp = NULL;
    if (deadline_ns != HOST_NEVER) {
        if (host_now_ns() >= deadline_ns)
            return ETIMEDOUT;
        host_abstime(deadline_ns, &ts);
        tsp = &ts;
    }
    /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time, so EINTR needs no recomputation:
     * the caller's loop simply calls again. Not FUTEX_PRIVATE: the word may be shared. */
    long r = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET, expected, tsp, NULL, FUTEX_BITSET_MATCH_ANY);
    if (r == -1 && errno == ETIMEDOUT)
        return ETIMEDOUT;
    return 0;
}

void host_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

uint32_t host_bell_prepare(host_bell *b)
{
    atomic_fetch_add_explicit(&b->waiters, 1, memory_order_seq_cst);
    return atomic_load_explicit(&b->seq, memory_order_seq_cst);
}

int host_bell_wait(host_bell *b, uint32_t snap, int64_t deadline_ns)
{
    int r = host_futex_wait(&b->seq, snap, deadline_ns);
    atomic_fetch_sub_explicit(&b->waiters, 1, memory_order_seq_cst);
    return r;
}

void host_bell_cancel(host_bell *b)
{
    atomic_fetch_sub_explicit(&b->waiters, 1, memory_order_seq_cst);
}

void host_bell_ring(host_bell *b)
{
    /* The fence orders the condition the ringer published before its load of `waiters`; a
     * waiter increments `waiters` (seq_cst) before it re-checks its conditions. So either we see
     * the waiter, or it sees the condition and does not sleep. Only then is `seq` touched: a
     * ring of a rank that is busy or spinning costs no write to its cache line and no syscall. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->waiters, memory_order_seq_cst) != 0) {
        atomic_fetch_add_explicit(&b->seq, 1, memory_order_seq_cst);
        host_futex_wake(&b->seq);
    }
}

/* ---------------------------------------------------------------------------------------- */

ncclResult_t host_random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t r = getrandom(p, len, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return host_fail(ncclSystemError, "getrandom failed: %s", strerror(errno));
        }
        p += r;
        len -= (size_t)r;
    }
    return ncclSuccess;
}

uint32_t host_crc32(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

uint64_t host_hash64(const void *buf, size_t len, uint64_t seed)
{
    /* FNV-1a; only used to compare values that must be equal on every rank. */
    const unsigned char *p = buf;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int host_consttime_equal(const void *a, const void *b, size_t len)
{
    const volatile unsigned char *x = a, *y = b;
    unsigned char d = 0;
    for (size_t i = 0; i < len; i++)
        d |= (unsigned char)(x[i] ^ y[i]);
    return d == 0;
}

/* ---------------------------------------------------------------------------------------- */

static int poll_timeout_ms(int64_t deadline)
{
    int64_t left;
    if (deadline == HOST_NEVER)
        return -1;
    left = deadline - host_now_ns();
    if (left <= 0)
        return 0;
    left = (left + 999999) / 1000000;
    return left > INT_MAX ? INT_MAX : (int)left;
}

/* Waits for `events` on fd; HOST_IO_OK when ready. */
static host_io wait_fd(int fd, short events, int64_t deadline, int wake_fd)
{
    for (;;) {
        struct pollfd p[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
        int n = wake_fd >= 0 ? 2 : 1;
        int tmo = poll_timeout_ms(deadline);
        int r = poll(p, (nfds_t)n, tmo);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return HOST_IO_ERROR;
        }
        if (n == 2 && p[1].revents)
            return HOST_IO_ABORT;
        if (r > 0 && p[0].revents)
            return HOST_IO_OK;
        if (tmo == 0 || (deadline != HOST_NEVER && host_now_ns() >= deadline))
            return HOST_IO_TIMEOUT;
    }
}

static void sock_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

ncclResult_t host_sock_listen(uint32_t addr_be, int *fd, uint16_t *port_be)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    char why[160];
    int s;
    if (addr_be == htonl(INADDR_NONE)) /* no bootstrap address could be chosen (node.c) */
        return host_fail(ncclInvalidUsage, "%s", host_params()->bind_error);
    s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return host_fail(ncclSystemError, "socket() failed: %s", host_errno_text(errno, why, sizeof why));
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = addr_be;
    sa.sin_port = 0;
    if (bind(s, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s, 1024) != 0 ||
        getsockname(s, (struct sockaddr *)&sa, &sl) != 0) {
        int e = errno;
        close(s);
        return host_fail(ncclSystemError, "cannot listen on %s: %s", inet_ntoa(sa.sin_addr), strerror(e));
    }
    *fd = s;
    *port_be = sa.sin_port;
    return ncclSuccess;
}

host_io host_sock_connect_start(uint32_t addr_be, uint16_t port_be, int *fd, int *pending)
{
    struct sockaddr_in sa;
    int s, err;
    *fd = -1;
    *pending = 0;
    s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return HOST_IO_ERROR;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = addr_be;
    sa.sin_port = port_be;
    if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno != EINPROGRESS && errno != EINTR) {
            err = errno;
            close(s);
            errno = err;
            return HOST_IO_ERROR;
        }
        *pending = 1;
    } else {
        sock_tune(s);
    }
    *fd = s;
    return HOST_IO_OK;
}

host_io host_sock_connect_finish(int fd)
{
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) {
        errno = err;
        return HOST_IO_ERROR;
    }
    sock_tune(fd);
    return HOST_IO_OK;
}

host_io host_sock_connect(uint32_t addr_be, uint16_t port_be, int64_t deadline, int wake_fd, int *fd)
{
    int s, pending, err;
    host_io io = host_sock_connect_start(addr_be, port_be, &s, &pending);
    *fd = -1;
    if (io != HOST_IO_OK || !pending) {
        *fd = s;
        return io;
    }
    io = wait_fd(s, POLLOUT, deadline, wake_fd);
    if (io == HOST_IO_OK)
        io = host_sock_connect_finish(s);
    if (io != HOST_IO_OK) {
        err = errno;
        close(s);
        errno = err;
        return io;
    }
    *fd = s;
    return HOST_IO_OK;
}

host_io host_sock_send(int fd, const void *buf, size_t len, int64_t deadline, int wake_fd)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t r = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0) {
            p += r;
            len -= (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            host_io io = wait_fd(fd, POLLOUT, deadline, wake_fd);
            if (io != HOST_IO_OK)
                return io;
            continue;
        }
        if (r < 0 && (errno == EPIPE || errno == ECONNRESET))
            return HOST_IO_EOF;
        return HOST_IO_ERROR;
    }
    return HOST_IO_OK;
}

host_io host_sock_recv(int fd, void *buf, size_t len, int64_t deadline, int wake_fd)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = recv(fd, p, len, MSG_DONTWAIT);
        if (r > 0) {
            p += r;
            len -= (size_t)r;
            continue;
        }
        if (r == 0)
            return HOST_IO_EOF;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            host_io io = wait_fd(fd, POLLIN, deadline, wake_fd);
            if (io != HOST_IO_OK)
                return io;
            continue;
        }
        if (errno == ECONNRESET)
            return HOST_IO_EOF;
        return HOST_IO_ERROR;
    }
    return HOST_IO_OK;
}

host_io host_sock_accept(int lfd, int64_t deadline, int wake_fd, int *fd)
{
    for (;;) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int s = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (s >= 0) {
            if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127 && !host_params()->allow_nonloopback) {
                HOST_WARN("refused a connection from non-loopback %s", inet_ntoa(sa.sin_addr));
                close(s);
                continue;
            }
            sock_tune(s);
            *fd = s;
            return HOST_IO_OK;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            host_io io = wait_fd(lfd, POLLIN, deadline, wake_fd);
            if (io != HOST_IO_OK)
                return io;
            continue;
        }
        return HOST_IO_ERROR;
    }
}

void host_sock_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

const char *host_io_str(host_io io)
{
    switch (io) {
    case HOST_IO_OK: return "ok";
    case HOST_IO_EOF: return "connection closed by peer";
    case HOST_IO_TIMEOUT: return "timed out";
    case HOST_IO_ABORT: return "communicator aborted";
    default: return "socket error";
    }
}

ncclResult_t host_io_result(host_io io)
{
    switch (io) {
    case HOST_IO_OK: return ncclSuccess;
    case HOST_IO_EOF: return ncclRemoteError;
    case HOST_IO_TIMEOUT: return host_timeout_code();
    case HOST_IO_ABORT: return ncclInvalidUsage;
    default: return ncclSystemError;
    }
}

ncclResult_t host_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, int detached)
{
    sigset_t all, old;
    pthread_attr_t attr;
    int r;
    sigfillset(&all);
    pthread_attr_init(&attr);
    if (detached)
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the new thread inherits the full mask */
    r = pthread_create(t, &attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (r != 0)
        return host_fail(ncclSystemError, "pthread_create failed: %s", strerror(r));
    return ncclSuccess;
}

const char *host_errno_text(int err, char *buf, size_t len)
{
    struct rlimit rl;
    if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
        snprintf(buf, len, "%s (this process may open %llu files: RLIMIT_NOFILE, ulimit -n)", strerror(err),
                 (unsigned long long)rl.rlim_cur);
    else if (err == ENFILE)
        snprintf(buf, len, "%s (the system-wide limit, fs.file-max)", strerror(err));
    else
        snprintf(buf, len, "%s", strerror(err));
    return buf;
}

/* ---------------------------------------------------------------------------------------- */

void host_uds_name(char *buf, size_t len, int path, const char *what, uint64_t random)
{
    snprintf(buf, len, "%snccl-host-%s-%d-%016llx", path ? HOST_UDS_DIR "/" : "", what, (int)getpid(),
             (unsigned long long)random);
}

/* A path name as it is; an abstract one with sun_path starting with a NUL byte, the length
 * counting only the name. */
static socklen_t uds_addr(const char *name, struct sockaddr_un *sa)
{
    int path = name[0] == '/';
    size_t n = strlen(name);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (n > sizeof sa->sun_path - 1)
        n = sizeof sa->sun_path - 1;
    memcpy(sa->sun_path + !path, name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + !path + n + path);
}

ncclResult_t host_uds_listen(const char *name, int backlog, int *fd)
{
    struct sockaddr_un sa;
    socklen_t sl = uds_addr(name, &sa);
    char why[160];
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return host_fail(ncclSystemError, "socket(AF_UNIX) failed: %s", host_errno_text(errno, why, sizeof why));
    /* A path's file is the owner's alone; the peer's uid is checked on every connection anyway. */
    if (bind(s, (struct sockaddr *)&sa, sl) != 0 || (name[0] == '/' && chmod(name, 0600) != 0) ||
        listen(s, backlog) != 0) {
        int e = errno;
        close(s);
        if (name[0] == '/' && e != EADDRINUSE)
            (void)unlink(name);
        return host_fail(ncclSystemError, "cannot listen on the Unix socket %s%s: %s", name[0] == '/' ? "" : "@",
                         name, strerror(e));
    }
    *fd = s;
    return ncclSuccess;
}

void host_uds_close(int *fd, const char *name)
{
    if (*fd >= 0 && name[0] == '/')
        (void)unlink(name);
    host_sock_close(fd);
}

host_io host_uds_connect(const char *name, int64_t deadline, int wake_fd, int *fd)
{
    struct sockaddr_un sa;
    socklen_t sl = uds_addr(name, &sa);
    int s;
    *fd = -1;
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return HOST_IO_ERROR;
    for (;;) {
        if (connect(s, (struct sockaddr *)&sa, sl) == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN) { /* the listener's backlog is full: try again shortly */
            struct pollfd p = {wake_fd, POLLIN, 0};
            int64_t left = deadline == HOST_NEVER ? 10000000 : deadline - host_now_ns();
            if (left <= 0) {
                close(s);
                return HOST_IO_TIMEOUT;
            }
            if (poll(&p, wake_fd >= 0 ? 1 : 0, left < 10000000 ? (int)(left / 1000000) + 1 : 10) > 0) {
                close(s);
                return HOST_IO_ABORT;
            }
            continue;
        }
        {
            int e = errno;
            close(s);
            errno = e;
            return HOST_IO_ERROR;
        }
    }
    *fd = s;
    return HOST_IO_OK;
}

host_io host_uds_send_fd(int sock, int fd)
{
    char byte = 'S';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr m;
    struct cmsghdr *cm;
    memset(&m, 0, sizeof m);
    memset(&ctl, 0, sizeof ctl);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof ctl.buf;
    cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    for (;;) {
        ssize_t r = sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r == 1)
            return HOST_IO_OK;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EPIPE || errno == ECONNRESET))
            return HOST_IO_EOF;
        return HOST_IO_ERROR;
    }
}

host_io host_uds_recv_fd(int sock, int64_t deadline, int wake_fd, int *fd)
{
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr m;
    *fd = -1;
    for (;;) {
        ssize_t r;
        memset(&m, 0, sizeof m);
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof ctl.buf;
        r = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r == 1) {
            struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
            if (cm != NULL && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                cm->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(fd, CMSG_DATA(cm), sizeof(int));
            return HOST_IO_OK;
        }
        if (r == 0)
            return HOST_IO_EOF;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            host_io io = wait_fd(sock, POLLIN, deadline, wake_fd);
            if (io != HOST_IO_OK)
                return io;
            continue;
        }
        return errno == ECONNRESET ? HOST_IO_EOF : HOST_IO_ERROR;
    }
}

long host_uds_peer_uid(int sock)
{
    struct ucred cr;
    socklen_t l = sizeof cr;
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0)
        return -1;
    return (long)cr.uid;
}
