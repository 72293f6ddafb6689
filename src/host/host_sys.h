/* libnccl-host's system layer (sys.c: clocks, futexes and event counts, random bytes, CRC-32,
 * sockets; gate.c: the bounded listener anyone may reach). Included by nccl_host.h after its
 * logging and result helpers, which these declarations use. */
#ifndef NCCL_HOST_SYS_H
#define NCCL_HOST_SYS_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------------------------------------ */
/* sys.c: time, futexes, event counts, randomness, CRC, sockets                                */
/* ------------------------------------------------------------------------------------------ */

#define HOST_NEVER INT64_MAX
int64_t host_now_ns(void);
/* now + timeout, or HOST_NEVER when the timeout is infinite. */
int64_t host_deadline_after(int64_t timeout_ns);
double host_elapsed_s(int64_t since_ns);
/* Absolute CLOCK_MONOTONIC timespec for condvars (created with host_cond_init). */
void host_abstime(int64_t deadline_ns, struct timespec *ts);
void host_cond_init(pthread_cond_t *cv);
/* 0 when signalled (or spurious), ETIMEDOUT at the deadline. */
int host_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns);

/* Shared (not FUTEX_PRIVATE) futex words, so they work across processes in the segment. */
int host_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline_ns);
void host_futex_wake(_Atomic uint32_t *word);

/* An event count ("doorbell"): a waiter snapshots, re-checks its conditions, then sleeps only
 * if nothing rang since the snapshot, so no wakeup is lost. The waiters word lets ringers skip
 * the wake syscall when nobody sleeps. Both words live in shared memory. */
typedef struct {
    _Atomic uint32_t seq;
    _Atomic uint32_t waiters;
} host_bell;
uint32_t host_bell_prepare(host_bell *b);                  /* waiters++, returns the snapshot */
int host_bell_wait(host_bell *b, uint32_t snap, int64_t deadline_ns); /* sleeps; waiters-- */
void host_bell_cancel(host_bell *b);                       /* waiters-- without sleeping */
void host_bell_ring(host_bell *b);

/* One polite iteration of a spin: lets a hyperthread sibling run and saves power. */
static inline void host_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

ncclResult_t host_random_bytes(void *buf, size_t len);
uint32_t host_crc32(const void *buf, size_t len);
uint64_t host_hash64(const void *buf, size_t len, uint64_t seed);
int host_consttime_equal(const void *a, const void *b, size_t len);

/* Outcome of a socket operation; callers turn it into a result code with context. */
typedef enum { HOST_IO_OK = 0, HOST_IO_EOF, HOST_IO_TIMEOUT, HOST_IO_ABORT, HOST_IO_ERROR } host_io;
/* Listener on addr:0 (kernel-chosen port), CLOEXEC, nonblocking accept. */
ncclResult_t host_sock_listen(uint32_t addr_be, int *fd, uint16_t *port_be);
/* Connects to addr:port; waits up to the deadline; wake_fd (may be -1) readable = abort.
 * HOST_IO_ERROR leaves errno (ECONNREFUSED: nothing listens there). */
host_io host_sock_connect(uint32_t addr_be, uint16_t port_be, int64_t deadline, int wake_fd, int *fd);
/* The same in two halves, for many connections at once: start (*pending when the connection
 * completes later: wait for POLLOUT, then finish, which reports its outcome with errno). */
host_io host_sock_connect_start(uint32_t addr_be, uint16_t port_be, int *fd, int *pending);
host_io host_sock_connect_finish(int fd);
host_io host_sock_send(int fd, const void *buf, size_t len, int64_t deadline, int wake_fd);
host_io host_sock_recv(int fd, void *buf, size_t len, int64_t deadline, int wake_fd);
/* Accept one connection (loopback peers only unless allowed) or report TIMEOUT/ABORT. */
host_io host_sock_accept(int lfd, int64_t deadline, int wake_fd, int *fd);
void host_sock_close(int *fd);
const char *host_io_str(host_io io);
/* Turns an I/O failure into a result code: EOF -> RE, TIMEOUT -> TO, ABORT -> IU, ERROR -> SE. */
ncclResult_t host_io_result(host_io io);

/* Creating internal threads: all blockable signals blocked, as docs/host-backend.md#robustness requires. */
ncclResult_t host_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, int detached);
/* "socket() failed: Too many open files (this process may open 1024 files: RLIMIT_NOFILE)":
 * errno's text, naming the limit when it is the one that was reached. */
const char *host_errno_text(int err, char *buf, size_t len);

/* Unix-domain sockets that pass descriptors between the ranks. A name is abstract (no file; it
 * dies with the socket, but is seen only in its own network namespace) or, starting with '/', a
 * path in HOST_UDS_DIR, for ranks in different network namespaces of one machine
 * (docs/host-backend.md#several-machines-and-network-namespaces), whose file host_uds_close
 * removes. */
#define HOST_UDS_DIR "/dev/shm"
/* "nccl-host-<what>-<pid>-<random>", or the same in HOST_UDS_DIR when path is set. */
void host_uds_name(char *buf, size_t len, int path, const char *what, uint64_t random);
ncclResult_t host_uds_listen(const char *name, int backlog, int *fd);
host_io host_uds_connect(const char *name, int64_t deadline, int wake_fd, int *fd);
/* Closes a listener made by host_uds_listen(name) (when *fd >= 0), removing a path's file. */
void host_uds_close(int *fd, const char *name);
/* One byte with a descriptor attached (SCM_RIGHTS), without blocking. */
host_io host_uds_send_fd(int sock, int fd);
/* Waits for one byte with a descriptor; *fd is -1 when none came with it. */
host_io host_uds_recv_fd(int sock, int64_t deadline, int wake_fd, int *fd);
/* The effective uid of the process at the other end (SO_PEERCRED); -1 on failure. */
long host_uds_peer_uid(int sock);

/* ------------------------------------------------------------------------------------------ */
/* gate.c: a listener that any local process may connect to                                    */
/* ------------------------------------------------------------------------------------------ */

#define HOST_GATE_SLOTS 32              /* connections one gate lets wait for their hello */
#define HOST_GATE_PROCESS_MAX 256       /* the same over every gate of the process */
#define HOST_GATE_HELLO_MAX 256        /* the longest hello: the root's (root.c checks) */
#define HOST_HANDSHAKE_NS 2000000000ll  /* time a connection has to send its whole hello */

typedef struct {
    int fd;                         /* -1: free */
    uint32_t got;
    int64_t deadline;
    uint64_t seq;                   /* arrival order: the oldest is dropped first */
    unsigned char buf[HOST_GATE_HELLO_MAX];
} host_gate_slot;

typedef struct {
    int lfd;
    size_t hello_len;
    const char *what;               /* for the log */
    int nparked;
    uint64_t seq;
    unsigned long evicted, expired, rejected;
    host_gate_slot slot[HOST_GATE_SLOTS];
} host_gate;

/* Called with a connection that sent a complete hello (hello_len bytes at `hello`): returns 1
 * when it keeps fd (the connection authenticated), 0 to have the gate close it. */
typedef int host_gate_cb(void *arg, int fd, const unsigned char *hello);
void host_gate_init(host_gate *g, int lfd, size_t hello_len, const char *what);
/* Writes the gate's poll entries at pfd (the listener first; at most 1 + HOST_GATE_SLOTS). */
int host_gate_pollfds(const host_gate *g, struct pollfd *pfd);
/* The earliest handshake deadline of a waiting connection, HOST_NEVER when none waits. */
int64_t host_gate_deadline(const host_gate *g);
/* Handles the entries host_gate_pollfds wrote, after poll: accepts what waits on the listener,
 * reads hellos, hands complete ones to cb, and drops connections past their deadline. */
void host_gate_service(host_gate *g, const struct pollfd *pfd, int n, host_gate_cb *cb, void *arg);
/* Closes every waiting connection (not the listener), with a log line if any were dropped. */
void host_gate_close(host_gate *g);
/* The same without a word (a fork child, where the log's lock may be held). */
void host_gate_forget(host_gate *g);

#endif /* NCCL_HOST_SYS_H */
