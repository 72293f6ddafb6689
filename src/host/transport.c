/* How the ranks of a communicator move data and wait for each other: the choices made once per
 * communicator, and the single-copy reads between ranks (the bounded spin in
 * docs/host-backend.md#execution-worker-thread-or-inline, docs/host-backend.md#single-copy-direct-transfers).
 *
 * host_transport_setup runs right after the bootstrap of every communicator (init, split,
 * shrink; comm.c, split.c), on every rank, and settles two things by two short exchanges over the control
 * mesh (what each rank offers, then whether its probe succeeded), so that all ranks of the
 * communicator agree and take the same path for every operation:
 *
 * 1. Spin before blocking. A rank that finds nothing to do polls for a bounded, adaptive window
 *    (worker.c) before it sleeps on its futex, as MPI's shared-memory path does: a futex sleep and
 *    wakeup cost more than a whole small collective. Allowed only when the communicator's ranks
 *    are no more than the CPUs they may run on: the union of every rank's sched_getaffinity mask
 *    (ranks pinned to one shared core count once). Oversubscribed, a spinning rank would steal the
 *    CPU from the very peer it waits for, so it never spins there. NCCL_HOST_SPIN_US caps the
 *    window (0: never spin). A wait that does not spin yields for up to NCCL_HOST_YIELD_US
 *    before it sleeps (worker.c). The Broadcast form (NCCL_HOST_BCAST_EAGER, coll.c) is rank 0's,
 *    since ranks of both forms would wait for each other differently.
 *
 * 2. Single copy ("direct"). Large collectives and p2p messages are moved by the receiving rank
 *    reading the sender's own buffer with process_vm_readv(2), instead of the sender copying into
 *    the shared segment and every receiver copying out of it: one copy instead of two, and no
 *    chunking through fixed slots (coll_direct.c, p2p.c). Only reads are used: a rank writes
 *    nothing but its own memory, so a mistaken or stale address can never corrupt another
 *    process. The kernel allows the reads between processes of the same uid when its ptrace
 *    access check passes: the target is dumpable and Yama's kernel.yama.ptrace_scope permits it
 *    (0: classic rules; 1: only the target's descendants or a ptracer it declared; 2: only with
 *    CAP_SYS_PTRACE; 3: never). As MPI implementations do, we do not guess but probe: every rank
 *    publishes the address of a random cookie, every rank reads every peer's cookie with
 *    process_vm_readv, and the path is on only if every read of every rank succeeded and matched
 *    (a second exchange). Otherwise the segment carries everything, as before; NCCL_HOST_DIRECT=0
 *    skips the probe. The decision and its reason are logged (NCCL_DEBUG=INFO, subsystem INIT) as
 *    one "transport:" line, which `python -m nccl doctor` shows.
 *
 *    Allowed is not the same as faster. The kernel's copy pins and maps every page of the peer's
 *    buffer and is measured here, on a virtual AMD EPYC, at 0.2-0.4 of a user-space memcpy's speed
 *    (10 against 45 GB/s in cache, 4.3 against 11 GB/s from memory), so one such copy costs more
 *    than the segment's two memcpys, which the double-buffered slots also overlap across ranks. On
 *    other machines the kernel copy runs close to memcpy speed, and there the single copy wins. So
 *    under NCCL_HOST_DIRECT=auto each process measures the two once (copy_speed: a 1 MiB memcpy
 *    against a 1 MiB process_vm_readv of itself, best of 16), the ranks exchange the ratio, and
 *    the path is used only if the slowest rank's is at least HOST_DIRECT_MIN_SPEED (a single copy
 *    at half memcpy speed breaks even with two memcpys) plus COPY_SPEED_MARGIN, so that a machine
 *    near break-even takes the same path every run. NCCL_HOST_DIRECT=1 skips that test. For tests,
 *    NCCL_HOST_TEST_COPY_SPEED=<ratio> replaces the measurement (either side of the rule on any
 *    machine); it is not a tunable.
 *
 *    Yama scope 1. Ranks are usually siblings started by one launcher, and scope 1 lets a
 *    process read only its descendants, so the probe would fail. A process can name one ptracer
 *    (prctl PR_SET_PTRACER; one per process, the last call wins), which admits that process and
 *    all of its descendants. PR_SET_PTRACER_ANY would admit every process of our uid, undoing
 *    Yama for us entirely; we never use it. Instead each rank names the nearest common ancestor
 *    of its peers in other processes (from /proc/<pid>/stat): the peer itself when there is one,
 *    the launcher for ranks it started. That admits the job's own process tree and nothing
 *    outside it; it is the tightest single declaration that covers every peer. When that
 *    ancestor would be init (unrelated ranks), we declare nothing and use the segment. The
 *    declaration is process-wide, so it is shared by reference among this process's
 *    communicators, only ever widened to cover a new one, and cleared when the last is freed.
 *    It is made only under scope 1 and only when the direct path is wanted; it replaces any
 *    ptracer the application declared itself (NCCL_HOST_DIRECT=0 leaves prctl alone).
 *
 *    A dead peer. A read of a peer that exited fails (ESRCH) or, if the read raced with the exit,
 *    returns what the memory held. Worse, a pid can be reused: a peer that died and was reaped
 *    could be replaced by an unrelated process under the same pid. So every rank holds a pidfd
 *    of each peer process (pidfd_open at setup, when the pid verifiably was the peer: the probe
 *    read its cookie), and after each read checks it: a pidfd turns readable when its process
 *    exits, and a pid cannot be reused while its process lives, so "not readable after the read"
 *    proves the bytes came from the peer. A dead peer gives ncclRemoteError, recorded in the
 *    segment so every rank fails with it at once. Without pidfd_open (Linux < 5.3) the path is
 *    off. Peers in our own process need no pidfd; they are read with process_vm_readv too, so a
 *    buffer freed after an abort gives EFAULT rather than a crash. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nccl_host.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif
#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif

#define ANCESTRY_MAX 64

/* What each rank tells the others at setup. */
typedef struct {
    uint32_t want;           /* 1: this rank would use the direct path (not disabled, prepared) */
    int32_t mode;            /* this rank's NCCL_HOST_DIRECT (HOST_DIRECT_*); rank 0's applies */
    float speed;             /* process_vm_readv / memcpy throughput here, 0 if not measured */
    uint32_t bcast_eager;    /* this rank's NCCL_HOST_BCAST_EAGER; rank 0's applies */
    uint64_t cookie_addr;    /* address of this rank's c->probe_cookie */
    uint64_t cookie;
    uint64_t direct_min;     /* this rank's threshold; rank 0's is used by all */
    unsigned char cpus[sizeof(cpu_set_t)];
} caps_rec;

/* ------------------------------------------------------------------------------------------ */
/* Yama scope 1: one process-wide ptracer declaration shared by this process's communicators    */
/* ------------------------------------------------------------------------------------------ */

static pthread_mutex_t ptracer_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t ptracer_pid;    /* declared ancestor, 0 = none (guarded by ptracer_lock) */
static pid_t ptracer_owner;  /* getpid() of the declaring process: a forked child inherits none */
static int ptracer_users;    /* communicators relying on the declaration */

static int yama_scope(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    int v = 0;
    if (f == NULL)
        return 0; /* no Yama: the classic same-uid rule applies */
    if (fscanf(f, "%d", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    const char *p;
    size_t k;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (f == NULL)
        return 0;
    k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses, so go by the last ')' */
    p = strrchr(buf, ')');
    if (p == NULL)
        return 0;
    int ppid = 0;
    char state;
    if (sscanf(p + 1, " %c %d", &state, &ppid) != 2)
        return 0;
    return (pid_t)ppid;
}

/* The nearest common ancestor (a process counting as its own ancestor) of pids[0..n), or 0. */
static pid_t common_ancestor(const pid_t *pids, int n)
{
    pid_t chain[ANCESTRY_MAX];
    int len = 0, start = 0;
    for (pid_t p = pids[0]; p > 0 && len < ANCESTRY_MAX; p = parent_of(p)) {
        chain[len++] = p;
        if (p == 1)
            break;
    }
    for (int i = 1; i < n && start < len; i++) {
        int depth = 0, found = -1;
        for (pid_t p = pids[i]; p > 0 && depth < ANCESTRY_MAX && found < 0; p = parent_of(p), depth++) {
            for (int k = start; k < len; k++)
                if (chain[k] == p) {
                    found = k;
                    break;
                }
            if (p == 1)
                break;
        }
        if (found < 0)
            return 0;
        start = found;
    }
    return start < len ? chain[start] : 0;
}

static int is_ancestor_or_self(pid_t anc, pid_t p)
{
    for (int depth = 0; p > 0 && depth < ANCESTRY_MAX; depth++, p = parent_of(p))
        if (p == anc)
            return 1;
    return 0;
}

/* Declares (or widens) this process's ptracer so that every peer process of c may read us.
 * Returns NULL, or why it could not. */
static const char *ptracer_declare(host_comm *c, char *why, size_t whylen)
{
    pid_t me = getpid(), *pids = malloc(sizeof(pid_t) * ((size_t)c->nranks + 1)), want;
    int np = 0, covered = 1;
    if (pids == NULL)
        return "out of memory";
    pthread_mutex_lock(&ptracer_lock);
    if (ptracer_owner != me) { /* first declaration of this process (or a forked child's) */
        ptracer_pid = 0;
        ptracer_users = 0;
        ptracer_owner = me;
    }
    for (int j = 0; j < c->nranks; j++) {
        pid_t p = (pid_t)c->peers[j].pid;
        if (j == c->rank || p == me)
            continue;
        pids[np++] = p;
        if (ptracer_pid == 0 || !is_ancestor_or_self(ptracer_pid, p))
            covered = 0;
    }
    if (np == 0 || covered) {
        if (np > 0) {
            ptracer_users++;
            c->ptracer_ref = 1;
        }
        pthread_mutex_unlock(&ptracer_lock);
        free(pids);
        return NULL;
    }
    if (ptracer_pid != 0)
        pids[np++] = ptracer_pid; /* widen: keep covering the communicators that rely on it */
    want = common_ancestor(pids, np);
    free(pids);
    if (want <= 1) {
        pthread_mutex_unlock(&ptracer_lock);
        return "Yama ptrace_scope is 1 and the ranks' processes have no common ancestor below init "
               "(a ptracer declaration would have to admit every process of this user)";
    }
    if (prctl(PR_SET_PTRACER, (unsigned long)want, 0, 0, 0) != 0) {
        snprintf(why, whylen, "Yama ptrace_scope is 1 and prctl(PR_SET_PTRACER, %d) failed: %s", (int)want,
                 strerror(errno));
        pthread_mutex_unlock(&ptracer_lock);
        return why;
    }
    HOST_INFO(HOST_SUB_INIT, "%s rank %d: Yama ptrace_scope 1: declared pid %d (nearest common ancestor of the "
              "peer processes) as this process's ptracer", c->name, c->rank, (int)want);
    ptracer_pid = want;
    ptracer_users++;
    c->ptracer_ref = 1;
    pthread_mutex_unlock(&ptracer_lock);
    return NULL;
}

static void ptracer_release(host_comm *c)
{
    if (!c->ptracer_ref)
        return;
    c->ptracer_ref = 0;
    pthread_mutex_lock(&ptracer_lock);
    if (ptracer_owner == getpid() && --ptracer_users == 0 && ptracer_pid != 0) {
        (void)prctl(PR_SET_PTRACER, 0UL, 0, 0, 0);
        ptracer_pid = 0;
    }
    pthread_mutex_unlock(&ptracer_lock);
}

/* ------------------------------------------------------------------------------------------ */
/* Setup                                                                                        */
/* ------------------------------------------------------------------------------------------ */

#define COPY_SPEED_BYTES ((size_t)1 << 20)
#define COPY_SPEED_ROUNDS 16
/* Under NCCL_HOST_DIRECT=auto the path is on from HOST_DIRECT_MIN_SPEED plus this margin. Just
 * above break-even a single copy gains under 10%, and there the measurement's run-to-run spread
 * (0.02-0.04 with 16 rounds on a loaded machine; 0.08 with the 5 rounds used before) would flip the
 * choice from one run to the next: the margin keeps such a machine on the segment. */
#define COPY_SPEED_MARGIN 0.05f
/* Tests only: a ratio in [0, 10] replaces the measurement, so that either side of the rule can be
 * exercised on any machine. */
#define COPY_SPEED_TEST_ENV "NCCL_HOST_TEST_COPY_SPEED"

static pthread_once_t copy_speed_once = PTHREAD_ONCE_INIT;
static float copy_speed_value; /* written once, under copy_speed_once */

static int copy_speed_forced(float *out)
{
    const char *s = getenv(COPY_SPEED_TEST_ENV);
    char *end;
    double v;
    if (s == NULL || *s == '\0')
        return 0;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= 0.0 && v <= 10.0)) {
        HOST_WARN("%s=%s is not a ratio in [0, 10]; measuring instead", COPY_SPEED_TEST_ENV, s);
        return 0;
    }
    *out = (float)v;
    return 1;
}

/* Best of COPY_SPEED_ROUNDS interleaved pairs (a 1 MiB memcpy, then a 1 MiB process_vm_readv of
 * this process), after one untimed pair that maps the pages: the best time of each is what the
 * machine can do, undisturbed by preemption. The ratio is rounded to hundredths, the precision of
 * the log line, so that the line and the decision never disagree. */
static void copy_speed_measure(void)
{
    unsigned char *a, *b;
    int64_t best_memcpy = INT64_MAX, best_read = INT64_MAX;
    volatile unsigned char sink;
    if (copy_speed_forced(&copy_speed_value))
        return;
    a = malloc(2 * COPY_SPEED_BYTES);
    if (a == NULL)
        return;
    b = a + COPY_SPEED_BYTES;
    memset(a, 1, 2 * COPY_SPEED_BYTES);
    for (int i = -1; i < COPY_SPEED_ROUNDS; i++) {
        struct iovec l = {b, COPY_SPEED_BYTES}, r = {a, COPY_SPEED_BYTES};
        int64_t t0 = host_now_ns(), t1, t2;
        memcpy(b, a, COPY_SPEED_BYTES);
        sink = b[i + 1];
        t1 = host_now_ns();
        if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)COPY_SPEED_BYTES) {
            best_read = INT64_MAX;
            break;
        }
        sink = b[i + 1];
        t2 = host_now_ns();
        if (i >= 0 && t1 - t0 < best_memcpy)
            best_memcpy = t1 - t0;
        if (i >= 0 && t2 - t1 < best_read)
            best_read = t2 - t1;
    }
    (void)sink;
    free(a);
    if (best_read != INT64_MAX && best_read > 0)
        copy_speed_value = (float)(int)((double)best_memcpy / (double)best_read * 100.0 + 0.5) / 100.0f;
}

/* process_vm_readv's throughput as a fraction of memcpy's in this process, measured once (or
 * forced by the test hook); 0 if unmeasurable. */
static float copy_speed(void)
{
    pthread_once(&copy_speed_once, copy_speed_measure);
    return copy_speed_value;
}

static void close_pidfds(host_comm *c)
{
    if (c->pidfd == NULL)
        return;
    for (int j = 0; j < c->nranks; j++)
        if (c->pidfd[j] >= 0)
            close(c->pidfd[j]);
    free(c->pidfd);
    c->pidfd = NULL;
}

/* Reads every peer's cookie; NULL when all match, else why not (in why). */
static const char *probe_peers(host_comm *c, const caps_rec *all, char *why, size_t whylen)
{
    pid_t me = getpid();
    for (int j = 0; j < c->nranks; j++) {
        pid_t pid = (pid_t)c->peers[j].pid;
        uint64_t got = 0;
        struct iovec l = {&got, sizeof got}, r = {(void *)(uintptr_t)all[j].cookie_addr, sizeof got};
        if (j == c->rank)
            continue;
        if (pid != me) {
            int fd = (int)syscall(SYS_pidfd_open, pid, 0);
            if (fd < 0) {
                snprintf(why, whylen, "pidfd_open(%d) for rank %d failed: %s", (int)pid, j, strerror(errno));
                return why;
            }
            c->pidfd[j] = fd;
        }
        if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof got) {
            snprintf(why, whylen, "process_vm_readv from rank %d (pid %d) failed: %s", j, (int)pid, strerror(errno));
            return why;
        }
        if (got != all[j].cookie) {
            snprintf(why, whylen, "rank %d (pid %d) is not the process this rank reads under its pid "
                     "(different pid namespaces?)", j, (int)pid);
            return why;
        }
    }
    return NULL;
}

ncclResult_t host_transport_setup(host_comm *c)
{
    const host_params_t *p = host_params();
    int n = c->nranks, ncpu, all_ok = 1;
    int *members = NULL;
    uint32_t ok = 0, *oks = NULL;
    caps_rec mine, *all = NULL;
    cpu_set_t u;
    char why[256] = "", spin_txt[96];
    const char *reason = NULL;
    ncclResult_t rc = ncclSuccess;

    c->direct = 0;
    c->spin_max_ns = c->spin_ns = c->yield_ns = c->yield_small_max_ns = c->yield_small_ns = 0;
    c->bcast_eager = 0;
    atomic_store_explicit(&host_seg_rankp(&c->seg, c->rank)->cpu, -1, memory_order_relaxed); /* a hint, publishes nothing; not known until it first waits */
    if (n == 1)
        return ncclSuccess;
    members = malloc(sizeof(int) * (size_t)n);
    all = calloc((size_t)n, sizeof *all);
    oks = calloc((size_t)n, sizeof *oks);
    c->pidfd = malloc(sizeof(int) * (size_t)n);
    if (members == NULL || all == NULL || oks == NULL || c->pidfd == NULL) {
        rc = host_fail(ncclSystemError, "%s rank %d: out of memory setting up the transport", c->name, c->rank);
        goto exit;
    }
    for (int j = 0; j < n; j++) {
        members[j] = j;
        c->pidfd[j] = -1;
    }

    memset(&mine, 0, sizeof mine);
    mine.direct_min = p->direct_min;
    mine.mode = p->direct;
    mine.bcast_eager = (uint32_t)p->bcast_eager;
    if (p->direct != HOST_DIRECT_OFF)
        mine.speed = copy_speed();
    if (p->direct == HOST_DIRECT_OFF)
        reason = "NCCL_HOST_DIRECT=0";
    else if (yama_scope() == 1 && !(p->direct == HOST_DIRECT_AUTO && mine.speed < HOST_DIRECT_MIN_SPEED + COPY_SPEED_MARGIN))
        reason = ptracer_declare(c, why, sizeof why); /* not when the speed rule turns it off anyway */
    mine.want = reason == NULL;
    if (HOST_FAILED(rc = host_random_bytes(&c->probe_cookie, sizeof c->probe_cookie)))
        goto exit;
    mine.cookie = c->probe_cookie;
    mine.cookie_addr = (uint64_t)(uintptr_t)&c->probe_cookie;
    CPU_ZERO(&u);
    if (sched_getaffinity(0, sizeof u, &u) != 0)
        CPU_ZERO(&u);
    memcpy(mine.cpus, &u, sizeof u);
    if (HOST_FAILED(rc = host_mgmt_allgather(c, members, n, &mine, sizeof mine, all, "communicator setup")))
        goto exit;

    /* Spin: ranks <= CPUs in the union of the ranks' affinity masks. */
    CPU_ZERO(&u);
    for (int j = 0; j < n; j++) {
        cpu_set_t s;
        memcpy(&s, all[j].cpus, sizeof s);
        CPU_OR(&u, &u, &s);
    }
    ncpu = CPU_COUNT(&u);
    if (ncpu == 0)
        ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (p->spin_us == 0) {
        snprintf(spin_txt, sizeof spin_txt, "no spin (NCCL_HOST_SPIN_US=0)");
    } else if (n > ncpu) {
        snprintf(spin_txt, sizeof spin_txt, "no spin (%d ranks > %d CPUs)", n, ncpu);
    } else {
        c->spin_max_ns = (int64_t)(p->spin_us < 0 ? HOST_SPIN_DEFAULT_US : p->spin_us) * 1000;
        c->spin_ns = c->spin_max_ns;
        snprintf(spin_txt, sizeof spin_txt, "spin up to %lld us before sleeping (%d ranks, %d CPUs)",
                 (long long)(c->spin_max_ns / 1000), n, ncpu);
    }
    /* Yield (worker.c) wherever a wait does not spin; the broadcast form must be one per
     * communicator, since its ranks wait for each other differently (coll.c). */
    c->yield_ns = (int64_t)p->yield_us * 1000;
    c->yield_small_max_ns = p->yield_small_us > p->yield_us && c->yield_ns > 0 ? (int64_t)p->yield_small_us * 1000
                                                                                 : c->yield_ns;
    c->yield_small_ns = c->yield_small_max_ns;
    c->bcast_eager = all[0].bcast_eager != 0;

    /* Direct: every rank wants it, it pays here (auto), and every rank could read every peer. */
    for (int j = 0; j < n && reason == NULL; j++)
        if (!all[j].want) {
            snprintf(why, sizeof why, "rank %d cannot use it", j);
            reason = why;
        }
    if (reason == NULL && all[0].mode == HOST_DIRECT_AUTO) {
        float slowest = all[0].speed;
        for (int j = 1; j < n; j++)
            slowest = all[j].speed < slowest ? all[j].speed : slowest;
        if (slowest < HOST_DIRECT_MIN_SPEED) {
            snprintf(why, sizeof why, "slower than two copies here: process_vm_readv runs at %.2f of memcpy's speed, "
                     "below %.2f; NCCL_HOST_DIRECT=1 uses it anyway", (double)slowest, (double)HOST_DIRECT_MIN_SPEED);
            reason = why;
        } else if (slowest < HOST_DIRECT_MIN_SPEED + COPY_SPEED_MARGIN) {
            snprintf(why, sizeof why, "no faster than two copies here: process_vm_readv runs at %.2f of memcpy's "
                     "speed, below %.2f (break-even %.2f plus a margin of %.2f); NCCL_HOST_DIRECT=1 uses it anyway",
                     (double)slowest, (double)(HOST_DIRECT_MIN_SPEED + COPY_SPEED_MARGIN),
                     (double)HOST_DIRECT_MIN_SPEED, (double)COPY_SPEED_MARGIN);
            reason = why;
        }
    }
    if (reason == NULL)
        reason = probe_peers(c, all, why, sizeof why);
    ok = reason == NULL;
    if (HOST_FAILED(rc = host_mgmt_allgather(c, members, n, &ok, sizeof ok, oks, "communicator setup")))
        goto exit;
    for (int j = 0; j < n; j++)
        if (!oks[j] && all_ok) {
            all_ok = 0;
            if (reason == NULL) {
                snprintf(why, sizeof why, "rank %d could not read its peers", j);
                reason = why;
            }
        }
    c->direct = all_ok;
    c->direct_min = all[0].direct_min;
    if (c->direct) {
        HOST_INFO(HOST_SUB_INIT, "%s rank %d/%d: transport: single-copy reads (process_vm_readv) from %zu bytes, "
                  "shared segment below; %s", c->name, c->rank, n, c->direct_min, spin_txt);
    } else {
        if (p->direct == HOST_DIRECT_ON)
            HOST_WARN("%s rank %d: NCCL_HOST_DIRECT=1 but single-copy reads are not possible: %s; using the shared "
                      "segment", c->name, c->rank, reason);
        HOST_INFO(HOST_SUB_INIT, "%s rank %d/%d: transport: shared segment only (single copy off: %s); %s", c->name,
                  c->rank, n, reason, spin_txt);
    }
exit:
    if (!c->direct) {
        close_pidfds(c);
        ptracer_release(c);
    }
    free(members);
    free(all);
    free(oks);
    return rc;
}

void host_transport_free(host_comm *c)
{
    close_pidfds(c);
    ptracer_release(c);
    free(c->scratch);
    c->scratch = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Reads                                                                                        */
/* ------------------------------------------------------------------------------------------ */

static int peer_exited(const host_comm *c, int peer)
{
    struct pollfd pf;
    if (c->pidfd == NULL || c->pidfd[peer] < 0)
        return 0;
    pf.fd = c->pidfd[peer];
    pf.events = POLLIN;
    pf.revents = 0;
    return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

/* The first cause of the loss of peer, whose process ended: the cause it published, when it
 * failed for another rank's loss before ending (docs/host-backend.md#peer-death-and-abort), else
 * its own death. */
static uint32_t dead_peer_cause(host_comm *c, int peer)
{
    uint32_t inherited = atomic_load_explicit(&host_seg_rankp(&c->seg, peer)->cause, memory_order_acquire);
    int d = HOST_CAUSE_RANK(inherited);
    if (inherited != 0 && d != peer && d != c->rank && d >= 0 && d < c->nranks)
        return inherited;
    return HOST_CAUSE(peer, HOST_PEER_DEAD);
}

ncclResult_t host_direct_read(host_comm *c, int peer, void *dst, uint64_t src, size_t len)
{
    size_t done = 0;
    int err = 0, exited;
    char text[256];
    ncclResult_t rc;
    while (done < len) {
        struct iovec l = {(char *)dst + done, len - done}, r = {(void *)(uintptr_t)(src + done), len - done};
        ssize_t k = process_vm_readv((pid_t)c->peers[peer].pid, &l, 1, &r, 1, 0);
        if (k > 0) {
            done += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        err = k == 0 ? EFAULT : errno;
        break;
    }
    /* The bytes are the peer's only if its process still lives (see the file comment). */
    exited = err == ESRCH || peer_exited(c, peer);
    if (err == 0 && !exited)
        return ncclSuccess;
    if (atomic_load_explicit(&c->seg.hdr->error_code, memory_order_acquire) != 0) {
        /* a rank gave up (worker.c release_exposed) and its buffers, or its process, may be gone
         * since: its reason, which names the first cause of its failure */
        rc = (ncclResult_t)atomic_load_explicit(&c->seg.hdr->error_code, memory_order_acquire);
        host_comm_note_cause(c, c->seg.hdr->error_cause);
        return host_fail(rc, "%s rank %d: single-copy read from rank %d stopped: %s", c->name, c->rank, peer,
                         c->seg.hdr->error_text);
    }
    if (exited) {
        uint32_t cause = dead_peer_cause(c, peer);
        char first[128];
        rc = ncclRemoteError;
        host_comm_note_cause(c, cause);
        if (HOST_CAUSE_RANK(cause) == peer)
            snprintf(text, sizeof text, "rank %d (pid %u) died during a single-copy read by rank %d", peer,
                     c->peers[peer].pid, c->rank);
        else
            snprintf(text, sizeof text, "rank %d (pid %u) died after %s, during a single-copy read by rank %d", peer,
                     c->peers[peer].pid, host_cause_text(c, cause, first, sizeof first), c->rank);
    } else if (atomic_load_explicit(&host_seg_rankp(&c->seg, peer)->state, memory_order_acquire) != HOST_RANK_ALIVE ||
               atomic_load_explicit(&c->peers[peer].gone, memory_order_seq_cst) != HOST_PEER_ALIVE) {
        char how[128];
        rc = ncclRemoteError;
        host_comm_note_cause(c, host_peer_cause(c, peer));
        snprintf(text, sizeof text, "rank %d (pid %u) %s during a single-copy read by rank %d", peer,
                 c->peers[peer].pid, host_peer_gone_text(c, peer, how, sizeof how), c->rank);
    } else if (err == EFAULT) {
        rc = ncclInvalidArgument;
        snprintf(text, sizeof text, "rank %d could not read %zu bytes at %#llx from rank %d into %p: a buffer is not "
                 "valid memory of its size (Bad address)", c->rank, len, (unsigned long long)src, peer, dst);
    } else {
        rc = ncclSystemError;
        snprintf(text, sizeof text, "single-copy read by rank %d from rank %d failed: %s", c->rank, peer,
                 strerror(err));
    }
    host_seg_error(c, rc, text);
    return host_fail(rc, "%s rank %d: %s", c->name, c->rank, text);
}

unsigned char *host_direct_scratch(host_comm *c)
{
    if (c->scratch == NULL)
        c->scratch = malloc(3 * HOST_DIRECT_PIECE);
    return c->scratch;
}
