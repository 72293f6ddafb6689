/* Engine tests of libnccl-host, driven by tests/host/test_host_engine.py.
 *
 *   host_smoke_test <scenario> [nranks]        runs one scenario; exit 0 = pass
 *   host_smoke_test rank <scenario> <r> <n> <id-hex>   (internal) one rank of a process scenario
 *
 * Ranks are threads (ncclCommInitAll or one thread per InitRank) or processes spawned with
 * fork+exec of this binary, the unique id passed on the command line. Data is simple integers:
 * numerics against numpy are covered by the kernel tests and the Python suite; this checks the
 * engine (bootstrap, data plane, groups, errors, deadlines, faults). Every failure prints
 * "FAIL <file>:<line>: ..." and exits nonzero. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

#define API(name, ret, params, args, since) ret name params;
#include "abi.h"
NCCL_ABI(API)
const char *ncclHostGetInfo(void);
ncclResult_t ncclHostSetDevice(int device);
ncclResult_t ncclHostGetDevice(int *device);

static const char *g_self;
static const char *g_scenario;

#define FAILF(...)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                       \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, " [last error: %s]\n", ncclGetLastError(NULL));                            \
        fflush(stderr);                                                                            \
        _exit(1);                                                                                  \
    } while (0)
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            FAILF("check failed: %s", #cond);                                                      \
    } while (0)
#define EXPECT_RC(call, want)                                                                      \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != (want))                                                                          \
            FAILF("%s returned %d (%s), expected %d", #call, (int)r_, ncclGetErrorString(r_), (int)(want)); \
    } while (0)
#define OK(call) EXPECT_RC(call, ncclSuccess)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Running ranks as threads and as processes                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef void rank_fn(ncclComm_t comm, int rank, int n);

typedef struct {
    ncclComm_t comm;
    int rank, n;
    rank_fn *fn;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    a->fn(a->comm, a->rank, a->n);
    return NULL;
}

/* ncclCommInitAll, then one thread per rank; destroys the comms in a plain loop afterwards. */
static void run_threads(int n, rank_fn *fn)
{
    ncclComm_t comms[16];
    pthread_t t[16];
    thread_arg a[16];
    OK(ncclCommInitAll(comms, n, NULL));
    for (int r = 0; r < n; r++) {
        a[r] = (thread_arg){comms[r], r, n, fn};
        CHECK(pthread_create(&t[r], NULL, thread_main, &a[r]) == 0);
    }
    for (int r = 0; r < n; r++)
        pthread_join(t[r], NULL);
    for (int r = 0; r < n; r++)
        OK(ncclCommDestroy(comms[r]));
}

static void id_to_hex(const ncclUniqueId *id, char *hex)
{
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
        sprintf(hex + 2 * i, "%02x", (unsigned char)id->internal[i]);
}

static void hex_to_id(const char *hex, ncclUniqueId *id)
{
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        id->internal[i] = (char)v;
    }
}

/* Spawns n rank processes of `scenario` (fork + exec of this binary), waits for all of them with
 * a wall-clock limit, and returns a bitmask of ranks that failed. expect_killed: ranks expected to
 * die by SIGKILL. */
static unsigned run_procs_id(const char *scenario, int n, const ncclUniqueId *id, unsigned expect_killed,
                             double limit_s)
{
    char hex[2 * NCCL_UNIQUE_ID_BYTES + 1];
    pid_t pids[16];
    unsigned failed = 0;
    double t0 = now_s();
    int left = n;
    id_to_hex(id, hex);
    for (int r = 0; r < n; r++) {
        char rs[16], ns[16];
        snprintf(rs, sizeof rs, "%d", r);
        snprintf(ns, sizeof ns, "%d", n);
        pids[r] = fork();
        CHECK(pids[r] >= 0);
        if (pids[r] == 0) {
            execl(g_self, g_self, "rank", scenario, rs, ns, hex, (char *)NULL);
            _exit(127);
        }
    }
    while (left > 0) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p == 0) {
            if (now_s() - t0 > limit_s) {
                for (int r = 0; r < n; r++)
                    if (pids[r] > 0) {
                        fprintf(stderr, "rank %d of %s exceeded %.0f s: killed\n", r, scenario, limit_s);
                        kill(pids[r], SIGKILL);
                    }
                limit_s = 1e9;
            }
            sleep_s(0.01);
            continue;
        }
        if (p < 0)
            break;
        for (int r = 0; r < n; r++)
            if (pids[r] == p) {
                int killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
                int ok = (expect_killed >> r & 1) ? killed : (WIFEXITED(st) && WEXITSTATUS(st) == 0);
                if (!ok) {
                    fprintf(stderr, "rank %d of %s failed (status 0x%x)\n", r, scenario, st);
                    failed |= 1u << r;
                }
                pids[r] = -1;
                left--;
            }
    }
    return failed;
}

static unsigned run_procs(const char *scenario, int n, unsigned expect_killed, double limit_s)
{
    ncclUniqueId id;
    OK(ncclGetUniqueId(&id));
    return run_procs_id(scenario, n, &id, expect_killed, limit_s);
}

/* ------------------------------------------------------------------------------------------ */
/* The collective suite (every rank)                                                             */
/* ------------------------------------------------------------------------------------------ */

static int32_t val(int rank, size_t i)
{
    return (int32_t)(rank * 1000 + (int)(i % 997));
}

static void suite(ncclComm_t comm, int r, int n)
{
    /* 3000 int32 = 12000 bytes: several steps with NCCL_HOST_CHUNK_BYTES=4096. */
    const size_t N = 3001;
    int32_t *a = malloc(sizeof *a * N * (size_t)n), *b = malloc(sizeof *b * N * (size_t)n);
    int cnt = -1, rk = -1;
    OK(ncclCommCount(comm, &cnt));
    OK(ncclCommUserRank(comm, &rk));
    CHECK(cnt == n && rk == r);

    /* AllReduce, out of place and in place */
    for (size_t i = 0; i < N; i++)
        a[i] = val(r, i);
    OK(ncclAllReduce(a, b, N, ncclInt32, ncclSum, comm, NULL));
    for (size_t i = 0; i < N; i++) {
        int64_t want = 0;
        for (int j = 0; j < n; j++)
            want += val(j, i);
        if (b[i] != (int32_t)want)
            FAILF("allreduce rank %d i %zu: %d != %lld", r, i, b[i], (long long)want);
    }
    OK(ncclAllReduce(a, a, N, ncclInt32, ncclMax, comm, NULL));
    for (size_t i = 0; i < N; i++)
        CHECK(a[i] == val(n - 1, i));

    /* Broadcast from the last rank; Bcast in place from rank 0 */
    for (size_t i = 0; i < N; i++)
        a[i] = val(r, i), b[i] = -1;
    OK(ncclBroadcast(r == n - 1 ? a : NULL, b, N, ncclInt32, n - 1, comm, NULL));
    for (size_t i = 0; i < N; i++)
        CHECK(b[i] == val(n - 1, i));
    OK(ncclBcast(a, N, ncclInt32, 0, comm, NULL));
    for (size_t i = 0; i < N; i++)
        CHECK(a[i] == val(0, i));

    /* Reduce (min) to root 0; other ranks' recv untouched */
    for (size_t i = 0; i < N; i++)
        a[i] = val(r, i), b[i] = -7;
    OK(ncclReduce(a, r == 0 ? b : NULL, N, ncclInt32, ncclMin, 0, comm, NULL));
    for (size_t i = 0; i < N; i++)
        CHECK(b[i] == (r == 0 ? val(0, i) : -7));
    OK(ncclReduce(a, a, N, ncclInt32, ncclSum, n - 1, comm, NULL)); /* in place */
    if (r == n - 1)
        for (size_t i = 0; i < N; i++) {
            int64_t want = 0;
            for (int j = 0; j < n; j++)
                want += val(j, i);
            CHECK(a[i] == (int32_t)want);
        }

    /* AllGather, out of place and in place */
    for (size_t i = 0; i < N; i++)
        a[i] = val(r, i);
    OK(ncclAllGather(a, b, N, ncclInt32, comm, NULL));
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < N; i++)
            CHECK(b[(size_t)j * N + i] == val(j, i));
    for (size_t i = 0; i < N; i++)
        b[(size_t)r * N + i] = val(r, i) + 5;
    OK(ncclAllGather(b + (size_t)r * N, b, N, ncclInt32, comm, NULL));
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < N; i++)
            CHECK(b[(size_t)j * N + i] == val(j, i) + 5);

    /* ReduceScatter, out of place and in place */
    for (size_t i = 0; i < N * (size_t)n; i++)
        a[i] = val(r, i);
    OK(ncclReduceScatter(a, b, N, ncclInt32, ncclSum, comm, NULL));
    for (size_t i = 0; i < N; i++) {
        int64_t want = 0;
        for (int j = 0; j < n; j++)
            want += val(j, (size_t)r * N + i);
        CHECK(b[i] == (int32_t)want);
    }
    OK(ncclReduceScatter(a, a + (size_t)r * N, N, ncclInt32, ncclSum, comm, NULL));
    for (size_t i = 0; i < N; i++)
        CHECK(a[(size_t)r * N + i] == b[i]);

    /* AlltoAll: block j of rank r goes to rank j */
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < N; i++)
            a[(size_t)j * N + i] = r * 100000 + j * 1000 + (int)(i % 500);
    OK(ncclAlltoAll(a, b, N, ncclInt32, comm, NULL));
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < N; i++)
            CHECK(b[(size_t)j * N + i] == j * 100000 + r * 1000 + (int)(i % 500));

    /* Gather to root n-1 and Scatter from root 0 */
    for (size_t i = 0; i < N; i++)
        a[i] = val(r, i);
    OK(ncclGather(a, r == n - 1 ? b : NULL, N, ncclInt32, n - 1, comm, NULL));
    if (r == n - 1)
        for (int j = 0; j < n; j++)
            for (size_t i = 0; i < N; i++)
                CHECK(b[(size_t)j * N + i] == val(j, i));
    for (size_t i = 0; i < N * (size_t)n; i++)
        a[i] = (int32_t)(i * 3 + 1);
    OK(ncclScatter(r == 0 ? a : NULL, b, N, ncclInt32, 0, comm, NULL));
    for (size_t i = 0; i < N; i++)
        CHECK(b[i] == (int32_t)(((size_t)r * N + i) * 3 + 1));
    /* in-place scatter at the root */
    OK(ncclScatter(a, r == 0 ? a : b, N, ncclInt32, 0, comm, NULL));

    /* count 0 on every rank: success, NULL buffers allowed */
    OK(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, NULL));
    OK(ncclAllGather(NULL, NULL, 0, ncclInt8, comm, NULL));

    /* Avg on integers, PreMulSum with a host scalar of rank+1 */
    for (size_t i = 0; i < N; i++)
        a[i] = (int32_t)(10 * r + 3);
    OK(ncclAllReduce(a, b, N, ncclInt32, ncclAvg, comm, NULL));
    {
        int64_t s = 0;
        for (int j = 0; j < n; j++)
            s += 10 * j + 3;
        CHECK(b[0] == (int32_t)(s / n) && b[N - 1] == (int32_t)(s / n));
    }
    {
        ncclRedOp_t op;
        int32_t scalar = r + 1;
        int64_t s = 0;
        OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclInt32, ncclScalarHostImmediate, comm));
        scalar = 999; /* host-immediate: copied at creation */
        for (size_t i = 0; i < N; i++)
            a[i] = (int32_t)(r + 2);
        OK(ncclAllReduce(a, b, N, ncclInt32, op, comm, NULL));
        for (int j = 0; j < n; j++)
            s += (int64_t)(j + 1) * (j + 2);
        CHECK(b[0] == (int32_t)s && b[N - 1] == (int32_t)s);
        OK(ncclRedOpDestroy(op, comm));
        EXPECT_RC(ncclRedOpDestroy(op, comm), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(a, b, N, ncclInt32, op, comm, NULL), ncclInvalidArgument);
    }

    /* PreMulSum with ncclScalarDevice: the scalar is read when the collective executes */
    {
        ncclRedOp_t op;
        int32_t scalar = 0, s2 = 0;
        OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclInt32, ncclScalarDevice, comm));
        scalar = 2 * (r + 1); /* set after creation: must be seen */
        for (size_t i = 0; i < 8; i++)
            a[i] = 1;
        OK(ncclAllReduce(a, b, 8, ncclInt32, op, comm, NULL));
        for (int j = 0; j < n; j++)
            s2 += 2 * (j + 1);
        CHECK(b[0] == s2 && b[7] == s2);
        OK(ncclRedOpDestroy(op, comm));
    }

    /* float sum in rank order: bit-identical on every rank */
    {
        float f[5] = {0.1f * (float)(r + 1), 1e-8f, 3.0f, -1.5f * (float)r, 1e20f}, g[5];
        float want[5] = {0};
        OK(ncclAllReduce(f, g, 5, ncclFloat32, ncclSum, comm, NULL));
        for (int k = 0; k < 5; k++) {
            float acc = 0;
            for (int j = 0; j < n; j++) {
                float x[5] = {0.1f * (float)(j + 1), 1e-8f, 3.0f, -1.5f * (float)j, 1e20f};
                acc = j == 0 ? x[k] : acc + x[k];
            }
            want[k] = acc;
        }
        CHECK(memcmp(g, want, sizeof g) == 0);
    }

    /* Send/recv ring in a group, plus a self send/recv and a zero-length message */
    {
        int next = (r + 1) % n, prev = (r + n - 1) % n;
        int32_t self_in[3] = {r, r, r}, self_out[3] = {-1, -1, -1};
        for (size_t i = 0; i < N; i++)
            a[i] = val(r, i), b[i] = -1;
        OK(ncclGroupStart());
        OK(ncclSend(a, N, ncclInt32, next, comm, NULL));
        OK(ncclRecv(b, N, ncclInt32, prev, comm, NULL));
        OK(ncclSend(self_in, 3, ncclInt32, r, comm, NULL));
        OK(ncclRecv(self_out, 3, ncclInt32, r, comm, NULL));
        OK(ncclSend(NULL, 0, ncclInt32, next, comm, NULL));
        OK(ncclRecv(NULL, 0, ncclInt32, prev, comm, NULL));
        OK(ncclGroupEnd());
        for (size_t i = 0; i < N; i++)
            CHECK(b[i] == val(prev, i));
        CHECK(self_out[0] == r && self_out[2] == r);
    }

    /* A group mixing collectives and p2p (the p2p must progress alongside) */
    if (n > 1) {
        int32_t x = r, y = -1, s = -1;
        int partner = r ^ 1;
        OK(ncclGroupStart());
        OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comm, NULL));
        if (partner < n) {
            OK(ncclSend(&x, 1, ncclInt32, partner, comm, NULL));
            OK(ncclRecv(&y, 1, ncclInt32, partner, comm, NULL));
        }
        OK(ncclAllReduce(&s, &s, 1, ncclInt32, ncclSum, comm, NULL));
        OK(ncclGroupEnd());
        CHECK(s == n * (n * (n - 1) / 2));
        if (partner < n)
            CHECK(y == partner);
    }

    /* Split: colour r % 2, key -r (reverse order); rank 2 opts out with NOCOLOR */
    {
        ncclComm_t sub = (ncclComm_t)1;
        int color = r == 2 ? NCCL_SPLIT_NOCOLOR : r % 2;
        OK(ncclCommSplit(comm, color, -r, &sub, NULL));
        if (color == NCCL_SPLIT_NOCOLOR) {
            CHECK(sub == NULL);
        } else {
            int sn, sr, members = 0, pos = 0;
            int32_t x = r, s = 0, want = 0;
            CHECK(sub != NULL);
            for (int j = n - 1; j >= 0; j--)
                if (j != 2 && j % 2 == color) {
                    if (j == r)
                        pos = members;
                    members++;
                    want += j;
                }
            OK(ncclCommCount(sub, &sn));
            OK(ncclCommUserRank(sub, &sr));
            CHECK(sn == members && sr == pos);
            OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, sub, NULL));
            CHECK(s == want);
            OK(ncclCommFinalize(sub));
            OK(ncclCommDestroy(sub));
        }
    }
    free(a);
    free(b);
}

static void suite_and_finalize(ncclComm_t comm, int r, int n)
{
    suite(comm, r, n);
    OK(ncclCommFinalize(comm));
    EXPECT_RC(ncclCommFinalize(comm), ncclInvalidArgument);
    EXPECT_RC(ncclAllReduce(NULL, NULL, 1, ncclInt32, ncclSum, comm, NULL), ncclInvalidUsage);
}

/* ------------------------------------------------------------------------------------------ */
/* Scenarios                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void scen_threads(int n)
{
    run_threads(n, suite_and_finalize);
}

/* One thread drives every rank of an InitAll in groups (the usual threads-as-ranks pattern). */
static void scen_onethread(int n)
{
    ncclComm_t comms[16];
    int32_t in[16][64], out[16][64];
    OK(ncclCommInitAll(comms, n, NULL));
    for (int round = 0; round < 3; round++) {
        OK(ncclGroupStart());
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < 64; i++)
                in[r][i] = r + i + round;
            OK(ncclAllReduce(in[r], out[r], 64, ncclInt32, ncclSum, comms[r], NULL));
        }
        OK(ncclGroupEnd());
        for (int r = 0; r < n; r++)
            for (int i = 0; i < 64; i++)
                CHECK(out[r][i] == n * (i + round) + n * (n - 1) / 2);
    }
    /* send/recv ring from one thread, unmatched group boundaries across ranks */
    OK(ncclGroupStart());
    for (int r = 0; r < n; r++) {
        OK(ncclSend(in[r], 64, ncclInt32, (r + 1) % n, comms[r], NULL));
        OK(ncclRecv(out[r], 64, ncclInt32, (r + n - 1) % n, comms[r], NULL));
    }
    OK(ncclGroupEnd());
    for (int r = 0; r < n; r++)
        CHECK(out[r][0] == in[(r + n - 1) % n][0]);
    /* split in a group from one thread */
    {
        ncclComm_t sub[16];
        OK(ncclGroupStart());
        for (int r = 0; r < n; r++)
            OK(ncclCommSplit(comms[r], 0, r, &sub[r], NULL));
        OK(ncclGroupEnd());
        OK(ncclGroupStart());
        for (int r = 0; r < n; r++)
            OK(ncclAllReduce(in[r], out[r], 1, ncclInt32, ncclSum, sub[r], NULL));
        OK(ncclGroupEnd());
        OK(ncclGroupStart());
        for (int r = 0; r < n; r++)
            OK(ncclCommDestroy(sub[r]));
        OK(ncclGroupEnd());
    }
    /* GroupSimulateEnd discards the ops */
    {
        ncclSimInfo_t sim = {sizeof sim, NCCL_SIM_INFO_MAGIC, NCCL_ABI_API_VERSION, -1.0f};
        OK(ncclGroupStart());
        OK(ncclAllReduce(in[0], out[0], 64, ncclInt32, ncclSum, comms[0], NULL));
        OK(ncclGroupSimulateEnd(&sim));
        CHECK(sim.estimatedTime > 0);
        sim.magic = 1;
        OK(ncclGroupStart());
        EXPECT_RC(ncclGroupSimulateEnd(&sim), ncclInvalidArgument);
    }
    /* inits grouped from one thread */
    {
        ncclUniqueId id;
        ncclComm_t c2[16];
        int32_t x[16], s[16];
        OK(ncclGetUniqueId(&id));
        OK(ncclGroupStart());
        for (int r = 0; r < n; r++)
            OK(ncclCommInitRank(&c2[r], n, id, r));
        OK(ncclGroupEnd());
        OK(ncclGroupStart());
        for (int r = 0; r < n; r++) {
            x[r] = r;
            OK(ncclAllReduce(&x[r], &s[r], 1, ncclInt32, ncclSum, c2[r], NULL));
        }
        OK(ncclGroupEnd());
        for (int r = 0; r < n; r++) {
            CHECK(s[r] == n * (n - 1) / 2);
            OK(ncclCommDestroy(c2[r]));
        }
    }
    for (int r = 0; r < n; r++)
        OK(ncclCommDestroy(comms[r]));
}

/* Nonblocking init and ops: InitRankConfig(blocking=0) -> IP, then poll GetAsyncError. */
static void wait_ready(ncclComm_t c)
{
    ncclResult_t st = ncclInProgress;
    double t0 = now_s();
    while (st == ncclInProgress) {
        OK(ncclCommGetAsyncError(c, &st));
        CHECK(now_s() - t0 < 30);
        if (st == ncclInProgress)
            sleep_s(0.001);
    }
    EXPECT_RC(st, ncclSuccess);
}

static void rank_nonblocking(const ncclUniqueId *id, int r, int n)
{
    ncclConfig_t cfg;
    ncclComm_t c, sub = NULL;
    ncclResult_t rc;
    int32_t x = r + 1, s = 0;
    memset(&cfg, 0, sizeof cfg);
    cfg.size = sizeof cfg;
    cfg.magic = NCCL_API_MAGIC;
    cfg.version = NCCL_ABI_API_VERSION;
    cfg.blocking = 0;
    cfg.cgaClusterSize = cfg.minCTAs = cfg.maxCTAs = cfg.splitShare = cfg.trafficClass = NCCL_CONFIG_UNDEF_INT;
    cfg.collnetEnable = cfg.CTAPolicy = cfg.shrinkShare = cfg.nvlsCTAs = NCCL_CONFIG_UNDEF_INT;
    cfg.nChannelsPerNetPeer = cfg.nvlinkCentricSched = cfg.graphUsageMode = NCCL_CONFIG_UNDEF_INT;
    cfg.numRmaCtx = cfg.maxP2pPeers = cfg.graphStreamOrdering = NCCL_CONFIG_UNDEF_INT;
    cfg.launchOrderImplicit = cfg.numRmaSig = cfg.rmaEagerInit = cfg.hostCftMode = cfg.nvlsHostMode =
        NCCL_CONFIG_UNDEF_INT;
    cfg.commName = "nb";
    rc = ncclCommInitRankConfig(&c, n, *id, r, &cfg);
    CHECK(rc == ncclInProgress || rc == ncclSuccess);
    CHECK(c != NULL);
    /* used before init completed -> IA (unless already done) */
    if (rc == ncclInProgress) {
        ncclResult_t st;
        OK(ncclCommGetAsyncError(c, &st));
        if (st == ncclInProgress)
            EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL), ncclInvalidArgument);
    }
    wait_ready(c);
    rc = ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL);
    CHECK(rc == ncclInProgress || rc == ncclSuccess);
    wait_ready(c);
    CHECK(s == n * (n + 1) / 2);
    rc = ncclCommSplit(c, 0, r, &sub, NULL);
    CHECK(rc == ncclInProgress || rc == ncclSuccess);
    wait_ready(c);
    CHECK(sub != NULL);
    wait_ready(sub);
    rc = ncclCommFinalize(c);
    CHECK(rc == ncclInProgress || rc == ncclSuccess);
    wait_ready(c);
    OK(ncclCommDestroy(sub));
    OK(ncclCommDestroy(c));
}

typedef struct {
    const ncclUniqueId *id;
    int r, n;
} nb_arg;

static void *nb_main(void *p)
{
    nb_arg *a = p;
    rank_nonblocking(a->id, a->r, a->n);
    return NULL;
}

static void scen_nonblocking(int n)
{
    ncclUniqueId id;
    pthread_t t[16];
    nb_arg a[16];
    OK(ncclGetUniqueId(&id));
    for (int r = 0; r < n; r++) {
        a[r] = (nb_arg){&id, r, n};
        pthread_create(&t[r], NULL, nb_main, &a[r]);
    }
    for (int r = 0; r < n; r++)
        pthread_join(t[r], NULL);
}

/* A peer that never arrives: TO at the deadline (NCCL_HOST_TIMEOUT=2), naming the rank. */
static void rank_timeout(ncclComm_t c, int r, int n)
{
    int32_t x = 1, s;
    (void)n;
    if (r == 0) {
        double t0 = now_s();
        EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL), ncclTimeout);
        CHECK(now_s() - t0 > 1.5 && now_s() - t0 < 10);
        CHECK(strstr(ncclGetLastError(NULL), "rank 1") != NULL);
        {
            ncclResult_t st;
            OK(ncclCommGetAsyncError(c, &st));
            CHECK(st == ncclTimeout);
        }
        EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL), ncclTimeout);
    }
}

typedef struct {
    ncclComm_t c;
    int peer;
    ncclResult_t rc;
} send_arg;

static void *send_first(void *p)
{
    send_arg *a = p;
    int32_t x[8] = {0}, y[8];
    a->rc = ncclSend(x, 8, ncclInt32, a->peer, a->c, NULL);
    if (a->rc == ncclSuccess)
        a->rc = ncclRecv(y, 8, ncclInt32, a->peer, a->c, NULL);
    return NULL;
}

static void scen_timeout(int n)
{
    ncclComm_t comms[2];
    pthread_t t, t1;
    thread_arg a;
    send_arg s0, s1;
    double t0;
    (void)n;
    OK(ncclCommInitAll(comms, 2, NULL));
    a = (thread_arg){comms[0], 0, 2, rank_timeout};
    pthread_create(&t, NULL, thread_main, &a);
    pthread_join(t, NULL);
    OK(ncclCommAbort(comms[0]));
    OK(ncclCommDestroy(comms[1]));
    /* Both ranks send first, ungrouped: with the eager limit 0 this is a TO, not a hang. */
    OK(ncclCommInitAll(comms, 2, NULL));
    s0 = (send_arg){comms[0], 1, ncclSuccess};
    s1 = (send_arg){comms[1], 0, ncclSuccess};
    t0 = now_s();
    pthread_create(&t, NULL, send_first, &s0);
    pthread_create(&t1, NULL, send_first, &s1);
    pthread_join(t, NULL);
    pthread_join(t1, NULL);
    CHECK(s0.rc == ncclTimeout && s1.rc == ncclTimeout);
    CHECK(now_s() - t0 < 10);
    OK(ncclCommDestroy(comms[0]));
    OK(ncclCommDestroy(comms[1]));
}

/* Cross-rank mismatches become IU on every rank, not hangs or corruption. */
typedef struct {
    ncclComm_t c;
    int r;
    int what;
    ncclResult_t rc;
} mm_arg;

static void *mismatch_main(void *p)
{
    mm_arg *a = p;
    int32_t buf[4096] = {0}, out[4096];
    switch (a->what) {
    case 0: a->rc = ncclAllReduce(buf, out, a->r == 0 ? 10 : 20, ncclInt32, ncclSum, a->c, NULL); break;
    case 1: a->rc = ncclAllReduce(buf, out, 10, a->r == 0 ? ncclInt32 : ncclFloat32, ncclSum, a->c, NULL); break;
    case 2: a->rc = ncclAllReduce(buf, out, 10, ncclInt32, a->r == 0 ? ncclSum : ncclMax, a->c, NULL); break;
    case 3: /* both name themselves root: an eager Broadcast root that returned before its peer
             * arrived reports the mismatch at its next call (docs/host-backend.md) */
        a->rc = ncclBroadcast(buf, out, 10, ncclInt32, a->r, a->c, NULL);
        if (a->rc == ncclSuccess)
            a->rc = ncclAllReduce(buf, out, 10, ncclInt32, ncclSum, a->c, NULL);
        break;
    case 4:
        a->rc = a->r == 0 ? ncclAllReduce(buf, out, 10, ncclInt32, ncclSum, a->c, NULL)
                          : ncclAllGather(buf, out, 5, ncclInt32, a->c, NULL);
        break;
    case 5:
        ncclGroupStart();
        if (a->r == 0)
            ncclSend(buf, 100, ncclInt32, 1, a->c, NULL);
        else
            ncclRecv(out, 50, ncclInt32, 0, a->c, NULL);
        a->rc = ncclGroupEnd();
        break;
    case 6: /* a count-0 collective takes part in the checks (NULL buffers on the count-0 rank) */
        a->rc = a->r == 0 ? ncclAllReduce(NULL, NULL, 0, ncclInt32, ncclSum, a->c, NULL)
                          : ncclAllReduce(buf, out, 8, ncclInt32, ncclSum, a->c, NULL);
        break;
    }
    return NULL;
}

static void scen_mismatch(int n)
{
    (void)n;
    for (int what = 0; what < 7; what++) {
        ncclComm_t comms[2];
        pthread_t t[2];
        mm_arg a[2];
        double t0 = now_s();
        OK(ncclCommInitAll(comms, 2, NULL));
        for (int r = 0; r < 2; r++) {
            a[r] = (mm_arg){comms[r], r, what, ncclSuccess};
            pthread_create(&t[r], NULL, mismatch_main, &a[r]);
        }
        for (int r = 0; r < 2; r++)
            pthread_join(t[r], NULL);
        if (a[0].rc != ncclInvalidUsage || a[1].rc != ncclInvalidUsage)
            FAILF("mismatch case %d: ranks returned %d and %d", what, a[0].rc, a[1].rc);
        CHECK(now_s() - t0 < 5);
        CHECK(strstr(ncclGetLastError(NULL), "mismatch") != NULL);
        for (int r = 0; r < 2; r++) {
            ncclResult_t st;
            OK(ncclCommGetAsyncError(comms[r], &st));
            CHECK(st == ncclInvalidUsage);
            OK(ncclCommAbort(comms[r]));
        }
    }
}

/* ncclCommAbort from another thread unblocks a rank stuck in a collective. */
static ncclResult_t g_abort_rc;
static double g_abort_t;

static void *stuck_main(void *p)
{
    ncclComm_t c = p;
    int32_t x = 1, s;
    g_abort_rc = ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL);
    g_abort_t = now_s();
    return NULL;
}

static void scen_abort(int n)
{
    ncclComm_t comms[2];
    pthread_t t;
    int32_t x = 1, s;
    double t0, t1;
    (void)n;
    OK(ncclCommInitAll(comms, 2, NULL));
    pthread_create(&t, NULL, stuck_main, comms[0]);
    sleep_s(0.3);
    t0 = now_s();
    OK(ncclCommAbort(comms[0]));
    t1 = now_s();
    pthread_join(t, NULL);
    EXPECT_RC(g_abort_rc, ncclInvalidUsage);
    CHECK(g_abort_t - t0 < 1.0 && t1 - t0 < 1.0);
    EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comms[0], NULL), ncclInvalidArgument);
    EXPECT_RC(ncclCommAbort(comms[0]), ncclInvalidArgument);
    /* the peer learns at once: RE, not the deadline */
    t0 = now_s();
    EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comms[1], NULL), ncclRemoteError);
    CHECK(now_s() - t0 < 1.0);
    OK(ncclCommDestroy(comms[1]));
    /* abort during a blocking init that waits for a rank that never comes */
    {
        ncclUniqueId id;
        ncclComm_t c = NULL;
        OK(ncclGetUniqueId(&id));
        OK(ncclGroupStart()); /* returns at once with a handle... */
        OK(ncclCommInitRank(&c, 2, id, 0));
        CHECK(c != NULL);
        OK(ncclCommAbort(c)); /* ...which abort drops from the group */
        OK(ncclGroupEnd());
    }
}

/* Argument checks on one process (docs/host-backend.md#argument-checks) and the small API surface. */
static void scen_argcheck(int n)
{
    ncclComm_t comms[2], dead;
    int32_t buf[64], out[64];
    int v;
    void *p;
    (void)n;
    OK(ncclGetVersion(&v));
    CHECK(v == NCCL_ABI_API_VERSION);
    EXPECT_RC(ncclGetVersion(NULL), ncclInvalidArgument);
    CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
    CHECK(strcmp(ncclGetErrorString(ncclInvalidUsage), "invalid usage (run with NCCL_DEBUG=WARN for details)") == 0);
    CHECK(strcmp(ncclGetErrorString(ncclRemoteError), "remote process exited or there was a network error") == 0);
    CHECK(strcmp(ncclGetErrorString(ncclTimeout), "timeout") == 0);
    CHECK(strcmp(ncclGetErrorString((ncclResult_t)42), "unknown result code") == 0);
    CHECK(strncmp(ncclHostGetInfo(), "libnccl-host ", 13) == 0);
    EXPECT_RC(ncclGetUniqueId(NULL), ncclInvalidArgument);
    EXPECT_RC(ncclGroupEnd(), ncclInvalidUsage);
    CHECK(strstr(ncclGetLastError(NULL), "not in a group") != NULL);
    OK(ncclMemAlloc(&p, 100));
    CHECK(p != NULL && ((uintptr_t)p & 4095) == 0);
    OK(ncclMemFree(p));
    EXPECT_RC(ncclMemFree(p), ncclInvalidArgument);
    EXPECT_RC(ncclMemFree(buf), ncclInvalidArgument);
    OK(ncclMemFree(NULL));
    OK(ncclMemAlloc(&p, 0));
    CHECK(p == NULL);
    EXPECT_RC(ncclMemAlloc(NULL, 10), ncclInvalidArgument);

    /* init argument checks */
    {
        ncclUniqueId id, bad;
        ncclComm_t c = (ncclComm_t)1;
        OK(ncclGetUniqueId(&id));
        EXPECT_RC(ncclCommInitRank(NULL, 1, id, 0), ncclInvalidArgument);
        EXPECT_RC(ncclCommInitRank(&c, 0, id, 0), ncclInvalidArgument);
        CHECK(c == NULL);
        EXPECT_RC(ncclCommInitRank(&c, 2, id, 2), ncclInvalidArgument);
        EXPECT_RC(ncclCommInitRank(&c, 2, id, -1), ncclInvalidArgument);
        memset(&bad, 0, sizeof bad);
        EXPECT_RC(ncclCommInitRank(&c, 1, bad, 0), ncclInvalidArgument); /* an NCCL-like id */
        bad = id;
        bad.internal[50] ^= 1; /* corrupted: check value mismatch */
        EXPECT_RC(ncclCommInitRank(&c, 1, bad, 0), ncclInvalidArgument);
        CHECK(strstr(ncclGetLastError(NULL), "corrupted") != NULL);
        EXPECT_RC(ncclCommInitAll(NULL, 1, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclCommInitAll(comms, -1, NULL), ncclInvalidArgument);
        OK(ncclCommInitAll(comms, 0, NULL));
        {
            int dl[2] = {3, 3}, dl2[2] = {0, 64};
            EXPECT_RC(ncclCommInitAll(comms, 2, dl), ncclInvalidUsage);
            EXPECT_RC(ncclCommInitAll(comms, 2, dl2), ncclInvalidArgument);
        }
        /* config checks */
        {
            ncclConfig_t cfg;
            memset(&cfg, 0, sizeof cfg);
            cfg.size = sizeof cfg;
            cfg.magic = 0x1234;
            cfg.version = NCCL_ABI_API_VERSION;
            EXPECT_RC(ncclCommInitRankConfig(&c, 1, id, 0, &cfg), ncclInvalidArgument);
            cfg.magic = NCCL_API_MAGIC;
            cfg.blocking = 2;
            EXPECT_RC(ncclCommInitRankConfig(&c, 1, id, 0, &cfg), ncclInvalidArgument);
            cfg.blocking = 1;
            cfg.minCTAs = 4;
            cfg.maxCTAs = NCCL_CONFIG_UNDEF_INT; /* compared raw, as NCCL 2.30 */
            EXPECT_RC(ncclCommInitRankConfig(&c, 1, id, 0, &cfg), ncclInvalidArgument);
        }
        /* a 1-rank communicator through InitRank; then the id is spent, and its root says so */
        OK(ncclCommInitRank(&c, 1, id, 0));
        OK(ncclCommDestroy(c));
        EXPECT_RC(ncclCommInitRank(&c, 1, id, 0), ncclInvalidUsage);
        CHECK(strstr(ncclGetLastError(NULL), "unique id was already used") != NULL);
        CHECK(c != NULL);
        OK(ncclCommDestroy(c));
    }

    OK(ncclCommInitAll(comms, 2, NULL));
    {
        ncclComm_t c = comms[0];
        int dev = -1;
        OK(ncclCommCuDevice(comms[1], &dev));
        CHECK(dev == 1);
        EXPECT_RC(ncclCommCount(c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclCommCount(NULL, &v), ncclInvalidArgument);
        EXPECT_RC(ncclCommCount((ncclComm_t)buf, &v), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(buf, out, 4, (ncclDataType_t)12, ncclSum, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(buf, out, 4, (ncclDataType_t)-1, ncclSum, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(buf, out, 4, ncclInt32, (ncclRedOp_t)-1, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(buf, out, 4, ncclInt32, (ncclRedOp_t)7, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(NULL, out, 4, ncclInt32, ncclSum, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(buf, NULL, 4, ncclInt32, ncclSum, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(buf, buf + 1, 4, ncclInt32, ncclSum, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAllReduce(buf, out, SIZE_MAX / 2, ncclInt32, ncclSum, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclBroadcast(buf, out, 4, ncclInt32, 2, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclBroadcast(buf, out, 4, ncclInt32, -1, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclReduce(buf, NULL, 4, ncclInt32, ncclSum, 0, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAlltoAll(buf, buf, 4, ncclInt32, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclAllGather(buf, buf + 1, 4, ncclInt32, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclSend(buf, 4, ncclInt32, 5, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclRecv(NULL, 4, ncclInt32, 1, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclSend(buf, 4, ncclInt32, 0, c, NULL), ncclInvalidUsage); /* self, ungrouped */
        /* RCCL-only calls in the nccl flavour */
        EXPECT_RC(ncclAllToAll(buf, out, 4, ncclInt32, c, NULL), ncclInvalidUsage);
        EXPECT_RC(ncclAllReduceWithBias(buf, out, 4, ncclInt32, ncclSum, c, NULL, buf), ncclInvalidUsage);
        /* optional calls say they are not supported */
        {
            void *mp = NULL;
            EXPECT_RC(ncclGetLsaMultimemDevicePointer(NULL, 0, &mp), ncclInvalidUsage);
            CHECK(strstr(ncclGetLastError(NULL), "not supported by the host backend") != NULL);
        }
        EXPECT_RC(ncclCommRevoke(c, 1), ncclInvalidArgument);
        /* an error inside a group is returned by the call and by ncclGroupEnd; nothing runs */
        OK(ncclGroupStart());
        OK(ncclAllReduce(buf, out, 4, ncclInt32, ncclSum, c, NULL));
        EXPECT_RC(ncclAllReduce(buf, out, 4, (ncclDataType_t)99, ncclSum, c, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclGroupEnd(), ncclInvalidArgument);
        /* an unmatched self send in a group -> IU at group end */
        OK(ncclGroupStart());
        OK(ncclSend(buf, 4, ncclInt32, 0, c, NULL));
        EXPECT_RC(ncclGroupEnd(), ncclInvalidUsage);
        /* the comm is still usable: a grouped self exchange works */
        OK(ncclGroupStart());
        OK(ncclSend(buf, 4, ncclInt32, 0, c, NULL));
        OK(ncclRecv(out, 4, ncclInt32, 0, c, NULL));
        OK(ncclGroupEnd());
        /* user ops */
        {
            ncclRedOp_t op;
            float f = 2.0f;
            EXPECT_RC(ncclRedOpCreatePreMulSum(NULL, &f, ncclFloat32, ncclScalarHostImmediate, c), ncclInvalidArgument);
            EXPECT_RC(ncclRedOpCreatePreMulSum(&op, NULL, ncclFloat32, ncclScalarHostImmediate, c), ncclInvalidArgument);
            EXPECT_RC(ncclRedOpCreatePreMulSum(&op, &f, ncclFloat32, (ncclScalarResidence_t)5, c), ncclInvalidArgument);
            OK(ncclRedOpCreatePreMulSum(&op, &f, ncclFloat32, ncclScalarHostImmediate, c));
            CHECK((int)op >= ncclNumOps);
            EXPECT_RC(ncclAllReduce(buf, out, 4, ncclInt32, op, c, NULL), ncclInvalidArgument); /* type mismatch */
            CHECK(strstr(ncclGetLastError(NULL), "data type does not match") != NULL);
            EXPECT_RC(ncclAllReduce(buf, out, 4, ncclFloat32, op, comms[1], NULL), ncclInvalidArgument); /* other comm */
            EXPECT_RC(ncclRedOpDestroy(ncclSum, c), ncclInvalidArgument);
            EXPECT_RC(ncclRedOpDestroy(op, NULL), ncclInvalidArgument);
            EXPECT_RC(ncclRedOpDestroy(op, comms[1]), ncclInvalidArgument);
            OK(ncclRedOpDestroy(op, c));
        }
        /* registration */
        {
            void *h = NULL;
            OK(ncclCommRegister(c, buf, sizeof buf, &h));
            CHECK(h != NULL);
            EXPECT_RC(ncclCommRegister(c, NULL, 10, &h), ncclInvalidArgument);
            OK(ncclCommDeregister(c, h));
            EXPECT_RC(ncclCommDeregister(c, h), ncclInvalidUsage);
            OK(ncclCommDeregister(c, NULL));
        }
        /* host device */
        OK(ncclHostSetDevice(5));
        OK(ncclHostGetDevice(&dev));
        CHECK(dev == 5);
        EXPECT_RC(ncclHostSetDevice(64), ncclInvalidArgument);
        OK(ncclHostSetDevice(0));
        /* shrink argument checks (sorted in place before the checks) */
        {
            int ex[3] = {1, 0, 1};
            ncclComm_t nc;
            EXPECT_RC(ncclCommShrink(c, ex, 3, &nc, NULL, 0), ncclInvalidArgument);
            CHECK(ex[0] == 0 && ex[1] == 1 && ex[2] == 1);
            EXPECT_RC(ncclCommShrink(c, NULL, 1, &nc, NULL, 0), ncclInvalidArgument);
            EXPECT_RC(ncclCommShrink(c, ex, 0, &nc, NULL, 0), ncclInvalidArgument);
            ex[0] = 1;
            EXPECT_RC(ncclCommShrink(c, ex, 1, &nc, NULL, 7), ncclInvalidArgument);
            EXPECT_RC(ncclCommSplit(c, 0, 0, NULL, NULL), ncclInvalidArgument);
        }
    }
    OK(ncclCommDestroy(comms[0]));
    OK(ncclCommDestroy(comms[1]));
    dead = comms[0];
    EXPECT_RC(ncclCommDestroy(dead), ncclInvalidArgument);
    EXPECT_RC(ncclAllReduce(buf, out, 4, ncclInt32, ncclSum, dead, NULL), ncclInvalidArgument);
    CHECK(strstr(ncclGetLastError(NULL), "destroyed") != NULL);
    OK(ncclCommDestroy(NULL));
    OK(ncclCommAbort(NULL));
    OK(ncclCommFinalize(NULL));
}

/* Bootstrap faults: wrong secret, duplicate rank, nranks disagreement, root deadline. */
static uint32_t crc32_ref(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

typedef struct {
    ncclUniqueId id;
    int nranks, rank;
    ncclResult_t rc;
    ncclComm_t comm;
    double delay;
} init_arg;

static void *init_main(void *p)
{
    init_arg *a = p;
    if (a->delay > 0)
        sleep_s(a->delay);
    a->rc = ncclCommInitRank(&a->comm, a->nranks, a->id, a->rank);
    return NULL;
}

static void run_inits(init_arg *a, int k)
{
    pthread_t t[8];
    for (int i = 0; i < k; i++)
        pthread_create(&t[i], NULL, init_main, &a[i]);
    for (int i = 0; i < k; i++)
        pthread_join(t[i], NULL);
}

static void destroy_all(init_arg *a, int k)
{
    for (int i = 0; i < k; i++)
        if (a[i].comm != NULL)
            OK(ncclCommAbort(a[i].comm));
}

static void scen_bootstrap(int n)
{
    ncclUniqueId id, bad;
    init_arg a[4];
    uint32_t crc;
    (void)n;
    /* a foreign connection with a wrong secret is rejected; the bootstrap still succeeds */
    OK(ncclGetUniqueId(&id));
    bad = id;
    bad.internal[48] ^= 0x5a;
    crc = crc32_ref((unsigned char *)bad.internal, 124);
    memcpy(bad.internal + 124, &crc, 4);
    memset(a, 0, sizeof a);
    a[0] = (init_arg){id, 2, 0, 0, NULL, 0.2};
    a[1] = (init_arg){id, 2, 1, 0, NULL, 0.2};
    a[2] = (init_arg){bad, 2, 0, 0, NULL, 0};
    run_inits(a, 3);
    OK(a[0].rc);
    OK(a[1].rc);
    EXPECT_RC(a[2].rc, ncclInvalidUsage);
    destroy_all(a, 3);
    /* duplicate rank: the whole bootstrap fails with IU for every connected rank */
    OK(ncclGetUniqueId(&id));
    a[0] = (init_arg){id, 3, 0, 0, NULL, 0};
    a[1] = (init_arg){id, 3, 1, 0, NULL, 0};
    a[2] = (init_arg){id, 3, 1, 0, NULL, 0.2};
    run_inits(a, 3);
    for (int i = 0; i < 3; i++)
        EXPECT_RC(a[i].rc, ncclInvalidUsage);
    CHECK(strstr(ncclGetLastError(NULL), "duplicate rank") != NULL);
    destroy_all(a, 3);
    /* nranks disagreement */
    OK(ncclGetUniqueId(&id));
    a[0] = (init_arg){id, 2, 0, 0, NULL, 0};
    a[1] = (init_arg){id, 3, 1, 0, NULL, 0.2};
    run_inits(a, 2);
    EXPECT_RC(a[0].rc, ncclInvalidUsage);
    EXPECT_RC(a[1].rc, ncclInvalidUsage);
    destroy_all(a, 2);
    /* not all ranks arrive: TO at the deadline, naming the missing rank (NCCL_HOST_TIMEOUT=2) */
    {
        double t0 = now_s();
        OK(ncclGetUniqueId(&id));
        a[0] = (init_arg){id, 3, 0, 0, NULL, 0};
        a[1] = (init_arg){id, 3, 2, 0, NULL, 0};
        run_inits(a, 2);
        EXPECT_RC(a[0].rc, ncclTimeout);
        EXPECT_RC(a[1].rc, ncclTimeout);
        CHECK(strstr(ncclGetLastError(NULL), "missing rank(s) 1") != NULL);
        CHECK(now_s() - t0 < 6);
        destroy_all(a, 2);
    }
    /* InitRankScalable with two ids: the extra root is dismissed */
    {
        ncclUniqueId ids[2];
        ncclComm_t c[2];
        OK(ncclGetUniqueId(&ids[0]));
        OK(ncclGetUniqueId(&ids[1]));
        OK(ncclGroupStart());
        OK(ncclCommInitRankScalable(&c[0], 2, 0, 2, ids, NULL));
        OK(ncclCommInitRankScalable(&c[1], 2, 1, 2, ids, NULL));
        OK(ncclGroupEnd());
        EXPECT_RC(ncclCommInitRankScalable(&c[0], 2, 0, 3, ids, NULL), ncclInvalidArgument);
        OK(ncclCommDestroy(c[0]));
        OK(ncclCommDestroy(c[1]));
    }
}

/* ---- process scenarios ---- */

static void rank_kill(ncclComm_t c, int r, int n)
{
    int32_t x = r, s = 0;
    double t0;
    OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL));
    CHECK(s == n * (n - 1) / 2);
    if (r == n - 1) {
        sleep_s(0.3);
        raise(SIGKILL);
    }
    t0 = now_s();
    EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL), ncclRemoteError);
    if (now_s() - t0 > 1.5)
        FAILF("peer death took %.2f s to detect", now_s() - t0);
    /* the communicator's error says which rank it was */
    EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL), ncclRemoteError);
    {
        char want[64];
        snprintf(want, sizeof want, "from an earlier failure: peer rank %d (pid ", n - 1);
        if (strstr(ncclGetLastError(NULL), want) == NULL)
            FAILF("the error does not name the dead rank: %s", ncclGetLastError(NULL));
    }
    /* survivors shrink the dead rank away and carry on */
    {
        int ex[1] = {n - 1};
        ncclComm_t nc = NULL;
        int nn;
        OK(ncclCommShrink(c, ex, 1, &nc, NULL, NCCL_SHRINK_ABORT));
        CHECK(nc != NULL);
        OK(ncclCommCount(nc, &nn));
        CHECK(nn == n - 1);
        OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, nc, NULL));
        CHECK(s == (n - 1) * (n - 2) / 2);
        OK(ncclCommDestroy(nc));
    }
    OK(ncclCommAbort(c));
}

static void rank_p2pkill(ncclComm_t c, int r, int n)
{
    /* rank 1 dies while rank 0 waits in a receive from it */
    int32_t buf[16];
    double t0;
    (void)n;
    if (r == 1) {
        sleep_s(0.3);
        raise(SIGKILL);
    }
    t0 = now_s();
    EXPECT_RC(ncclRecv(buf, 16, ncclInt32, 1, c, NULL), ncclRemoteError);
    CHECK(now_s() - t0 < 1.5);
    OK(ncclCommAbort(c));
}

static void rank_fork(ncclComm_t c, int r, int n)
{
    int32_t x = 1, s;
    pid_t p;
    int st;
    (void)r;
    p = fork();
    if (p == 0) {
        if (ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL) != ncclInvalidUsage)
            _exit(3);
        /* leaving from the child would tell the peers that the parent's rank left */
        if (ncclCommDestroy(c) != ncclInvalidUsage || ncclCommAbort(c) != ncclInvalidUsage ||
            ncclCommFinalize(c) != ncclInvalidUsage)
            _exit(4);
        _exit(0);
    }
    CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL));
    CHECK(s == n);
}

static void rank_proc_main(const char *scenario, int r, int n, const char *hex)
{
    ncclUniqueId id;
    ncclComm_t c;
    hex_to_id(hex, &id);
    if (strcmp(scenario, "bootkill") == 0) {
        /* rank 1 dies during the bootstrap, after checking in with the root */
        if (r == 1) {
            pthread_t t;
            init_arg a = {id, n, r, 0, NULL, 0};
            pthread_create(&t, NULL, init_main, &a);
            sleep_s(0.3);
            raise(SIGKILL);
        }
        if (r == 2)
            sleep_s(1.0);
        {
            double t0 = now_s();
            ncclResult_t rc = ncclCommInitRank(&c, n, id, r);
            if (r == 0 && rc != ncclRemoteError)
                FAILF("rank 0 got %d, expected ncclRemoteError", rc);
            if (r == 0 && now_s() - t0 > 1.5)
                FAILF("rank 0 took %.2f s", now_s() - t0);
            /* rank 2 arrives after the root failed the id: the root still tells it why */
            if (r == 2 && rc != ncclRemoteError)
                FAILF("rank 2 got %d, expected ncclRemoteError", rc);
            if (strstr(ncclGetLastError(NULL), "rank 1 (pid ") == NULL)
                FAILF("rank %d's error does not name rank 1: %s", r, ncclGetLastError(NULL));
            if (c != NULL)
                OK(ncclCommAbort(c));
        }
        exit(0);
    }
    OK(ncclCommInitRank(&c, n, id, r));
    if (strcmp(scenario, "suite") == 0)
        suite_and_finalize(c, r, n);
    else if (strcmp(scenario, "kill") == 0)
        rank_kill(c, r, n);
    else if (strcmp(scenario, "p2pkill") == 0)
        rank_p2pkill(c, r, n);
    else if (strcmp(scenario, "fork") == 0)
        rank_fork(c, r, n);
    else
        FAILF("unknown process scenario %s", scenario);
    if (strcmp(scenario, "kill") != 0 && strcmp(scenario, "p2pkill") != 0)
        OK(ncclCommDestroy(c));
    exit(0);
}

static void scen_procs(int n)
{
    CHECK(run_procs("suite", n, 0, 60) == 0);
}

static void scen_kill(int n)
{
    CHECK(run_procs("kill", n, 1u << (n - 1), 30) == 0);
    CHECK(run_procs("p2pkill", 2, 1u << 1, 30) == 0);
    CHECK(run_procs("bootkill", 3, 1u << 1, 30) == 0);
}

static void scen_fork(int n)
{
    CHECK(run_procs("fork", n, 0, 30) == 0);
}

/* ---- the rccl flavour (NCCL_HOST_FLAVOR=rccl): AllToAllv, AllToAll, AllReduceWithBias ---- */
static void rank_rccl(ncclComm_t c, int r, int n)
{
    size_t sc[16], sd[16], rcnt[16], rd[16], so = 0, ro = 0;
    int32_t send[4096], recv[4096], bias[8] = {1, 2, 3, 4, 5, 6, 7, 8}, x[8], y[8];
    /* rank r sends (r + d + 1) * 100 elements to rank d: multi-step with small chunks */
    for (int d = 0; d < n; d++) {
        sc[d] = (size_t)(r + d + 1) * 100;
        sd[d] = so;
        so += sc[d];
        rcnt[d] = (size_t)(d + r + 1) * 100;
        rd[d] = ro;
        ro += rcnt[d];
    }
    for (size_t i = 0; i < so; i++)
        send[i] = r * 100000 + (int)i;
    OK(ncclAllToAllv(send, sc, sd, recv, rcnt, rd, ncclInt32, c, NULL));
    for (int j = 0; j < n; j++) {
        size_t jsd = 0;
        for (int d = 0; d < r; d++)
            jsd += (size_t)(j + d + 1) * 100;
        for (size_t i = 0; i < rcnt[j]; i++)
            CHECK(recv[rd[j] + i] == j * 100000 + (int)(jsd + i));
    }
    OK(ncclAlltoAllv(send, sc, sd, recv, rcnt, rd, ncclInt32, c, NULL));
    OK(ncclAllToAll(send, recv, 10, ncclInt32, c, NULL));
    for (int j = 0; j < n; j++)
        CHECK(recv[j * 10] == j * 100000 + r * 10);
    for (int i = 0; i < 8; i++)
        x[i] = r;
    OK(ncclAllReduceWithBias(x, y, 8, ncclInt32, ncclSum, c, NULL, bias));
    for (int i = 0; i < 8; i++)
        CHECK(y[i] == n * (n - 1) / 2 + bias[i]);
    EXPECT_RC(ncclAllReduceWithBias(x, y, 8, ncclInt32, ncclSum, c, NULL, NULL), ncclInvalidArgument);
    EXPECT_RC(ncclAllToAllv(send, NULL, sd, recv, rcnt, rd, ncclInt32, c, NULL), ncclInvalidArgument);
    /* pairwise count mismatch: rank 0 sends 10 more to rank 1 than rank 1 expects -> IU on every rank */
    if (n > 1) {
        if (r == 0)
            sc[1] += 10;
        EXPECT_RC(ncclAllToAllv(send, sc, sd, recv, rcnt, rd, ncclInt32, c, NULL), ncclInvalidUsage);
    }
}

/* Every count 0 on rank 0 while the others send to it: still a mismatch on every rank. */
static void rank_rccl_zero(ncclComm_t c, int r, int n)
{
    size_t zero[16] = {0}, cnt[16] = {0}, displ[16] = {0};
    int32_t send[16] = {0}, recv[16];
    cnt[0] = 4;
    EXPECT_RC(ncclAllToAllv(send, r == 0 ? zero : cnt, displ, recv, zero, displ, ncclInt32, c, NULL),
              ncclInvalidUsage);
    CHECK(n > 1);
}

static void scen_rccl(int n)
{
    int v;
    OK(ncclGetVersion(&v));
    run_threads(n, rank_rccl);
    if (n > 1)
        run_threads(n, rank_rccl_zero);
    /* a pairwise count mismatch is IU on the rank that sees it and on its peers */
}

/* Many comms per thread, several threads at once (thread safety of the global tables). */
static void *hammer_main(void *p)
{
    int k = (int)(intptr_t)p;
    for (int round = 0; round < 3; round++) {
        ncclComm_t comms[2];
        int32_t x[2] = {k, k + 1}, s[2];
        OK(ncclCommInitAll(comms, 2, NULL));
        for (int i = 0; i < 5; i++) {
            OK(ncclGroupStart());
            OK(ncclAllReduce(&x[0], &s[0], 1, ncclInt32, ncclSum, comms[0], NULL));
            OK(ncclAllReduce(&x[1], &s[1], 1, ncclInt32, ncclSum, comms[1], NULL));
            OK(ncclGroupEnd());
            CHECK(s[0] == 2 * k + 1 && s[1] == 2 * k + 1);
        }
        OK(ncclCommDestroy(comms[0]));
        OK(ncclCommDestroy(comms[1]));
    }
    return NULL;
}

static void scen_hammer(int n)
{
    pthread_t t[8];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, hammer_main, (void *)(intptr_t)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* A rank blocked for a while in a collective (and an idle communicator) must not burn CPU:
 * waits block on futexes, condvars and poll, after at most a short bounded spin (docs/host-backend.md#robustness). */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void *late_main(void *p)
{
    ncclComm_t c = p;
    int32_t x = 1, s;
    sleep_s(1.5);
    OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, c, NULL));
    CHECK(s == 2);
    return NULL;
}

static void scen_idle(int n)
{
    ncclComm_t comms[2];
    pthread_t t;
    int32_t x = 1, s;
    double c0, w0;
    (void)n;
    OK(ncclCommInitAll(comms, 2, NULL));
    c0 = cpu_s();
    w0 = now_s();
    pthread_create(&t, NULL, late_main, comms[1]);
    OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comms[0], NULL)); /* waits ~1.5 s for rank 1 */
    pthread_join(t, NULL);
    CHECK(s == 2);
    sleep_s(0.5); /* idle communicators */
    if (cpu_s() - c0 > 0.15 * (now_s() - w0))
        FAILF("used %.3f s of CPU in %.3f s of waiting", cpu_s() - c0, now_s() - w0);
    OK(ncclCommDestroy(comms[0]));
    OK(ncclCommDestroy(comms[1]));
}

/* A blocking call may run its reduction on the calling thread (worker.c): the caller's rounding
 * mode and flush-to-zero must neither reach the arithmetic (docs/host-backend.md#reductions-and-numerics: default
 * environment) nor be lost. 1 + 2^-24 is a tie: 1.0f to nearest-even, 1 + 2^-23 rounding upward;
 * 2^-149 is the least subnormal, 0 when flushed. */
typedef struct {
    ncclComm_t c;
    float x, out;
    int round_after;
    float tiny, tiny_out;   /* a subnormal, and the sum it gives with flush-to-zero on */
    int ftz_set, ftz_after; /* flush-to-zero took effect in the caller; still there afterwards */
    ncclResult_t rc;
} fenv_arg;

/* Flush-to-zero, which some codes turn on for speed: MXCSR's FZ and DAZ bits on x86-64, FPCR's FZ
 * bit on aarch64. The reduction must still give the subnormal sum (default environment). */
static void set_flush_to_zero(void)
{
#if defined(__x86_64__)
    __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() | 0x8040u);
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    __asm__ __volatile__("msr fpcr, %0" ::"r"(fpcr | (UINT64_C(1) << 24)));
#endif
}

static int flushes(void)
{
    volatile float subnormal = 0x1p-149f, zero = 0.0f;
    return subnormal + zero == 0.0f;
}

static void *fenv_main(void *p)
{
    fenv_arg *a = p;
    fesetround(FE_UPWARD);
    a->rc = ncclAllReduce(&a->x, &a->out, 1, ncclFloat32, ncclSum, a->c, NULL);
    a->round_after = fegetround();
    fesetround(FE_TONEAREST);
    set_flush_to_zero();
    a->ftz_set = flushes();
    if (a->rc == ncclSuccess)
        a->rc = ncclAllReduce(&a->tiny, &a->tiny_out, 1, ncclFloat32, ncclSum, a->c, NULL);
    a->ftz_after = flushes();
    return NULL;
}

static void scen_fenv(int n)
{
    ncclComm_t comms[2];
    pthread_t t[2];
    fenv_arg a[2];
    (void)n;
    OK(ncclCommInitAll(comms, 2, NULL));
    for (int r = 0; r < 2; r++) {
        a[r].c = comms[r];
        a[r].x = r == 0 ? 1.0f : 0x1p-24f;
        a[r].out = -1.0f;
        a[r].tiny = r == 0 ? 0x1p-149f : 0.0f;
        a[r].tiny_out = -1.0f;
        pthread_create(&t[r], NULL, fenv_main, &a[r]);
    }
    for (int r = 0; r < 2; r++) {
        pthread_join(t[r], NULL);
        OK(a[r].rc);
        if (a[r].out != 1.0f)
            FAILF("rank %d: 1 + 2^-24 gave %a, not 1 (the caller's rounding mode leaked)", r, (double)a[r].out);
        CHECK(a[r].round_after == FE_UPWARD);
        CHECK(a[r].ftz_set && a[r].ftz_after);
        if (a[r].tiny_out != 0x1p-149f)
            FAILF("rank %d: 2^-149 + 0 gave %a, not 2^-149 (the caller's flush-to-zero leaked)", r,
                  (double)a[r].tiny_out);
    }
    OK(ncclCommDestroy(comms[0]));
    OK(ncclCommDestroy(comms[1]));
}

/* Misuse that NCCL leaves undefined, turned into errors (docs/host-backend.md#groups, 6.3, appendix 5). */
typedef struct {
    ncclComm_t c;
    int ex;
    ncclComm_t out;
    ncclResult_t rc;
} shrink_arg;

static void *shrink_main(void *p)
{
    shrink_arg *a = p;
    int ex[1] = {a->ex};
    a->rc = ncclCommShrink(a->c, ex, 1, &a->out, NULL, NCCL_SHRINK_ABORT);
    return NULL;
}

static ncclConfig_t config_v(unsigned version, int blocking)
{
    ncclConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.size = sizeof cfg;
    cfg.magic = NCCL_API_MAGIC;
    cfg.version = version;
    cfg.blocking = blocking;
    cfg.cgaClusterSize = cfg.minCTAs = cfg.maxCTAs = cfg.splitShare = cfg.trafficClass = NCCL_CONFIG_UNDEF_INT;
    cfg.collnetEnable = cfg.CTAPolicy = cfg.shrinkShare = cfg.nvlsCTAs = NCCL_CONFIG_UNDEF_INT;
    cfg.nChannelsPerNetPeer = cfg.nvlinkCentricSched = cfg.graphUsageMode = NCCL_CONFIG_UNDEF_INT;
    cfg.numRmaCtx = cfg.maxP2pPeers = cfg.graphStreamOrdering = NCCL_CONFIG_UNDEF_INT;
    cfg.launchOrderImplicit = cfg.numRmaSig = cfg.rmaEagerInit = cfg.hostCftMode = cfg.nvlsHostMode =
        NCCL_CONFIG_UNDEF_INT;
    return cfg;
}

static void scen_misuse(int n)
{
    ncclComm_t comms[3];
    pthread_t t, t1;
    int32_t x = 1, s;
    int cnt;
    (void)n;
    OK(ncclCommInitAll(comms, 3, NULL));
    /* rank 0 is stuck in a collective that ranks 1 and 2 never join */
    pthread_create(&t, NULL, stuck_main, comms[0]);
    sleep_s(0.2);
    EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comms[0], NULL), ncclInvalidUsage); /* 2nd thread */
    CHECK(strstr(ncclGetLastError(NULL), "another thread") != NULL);
    OK(ncclCommCount(comms[0], &cnt)); /* queries are fine meanwhile */
    {
        ncclResult_t st;
        OK(ncclCommGetAsyncError(comms[0], &st));
        EXPECT_RC(st, ncclSuccess);
    }
    /* ranks 0 and 1 shrink rank 2 away with NCCL_SHRINK_ABORT: rank 0's stuck op is cancelled */
    {
        shrink_arg a0 = {comms[0], 2, NULL, ncclSuccess}, a1 = {comms[1], 2, NULL, ncclSuccess};
        ncclComm_t nc[2];
        int32_t v[2] = {3, 4}, r[2];
        pthread_create(&t1, NULL, shrink_main, &a1);
        shrink_main(&a0);
        pthread_join(t1, NULL);
        pthread_join(t, NULL);
        EXPECT_RC(g_abort_rc, ncclInvalidUsage);
        OK(a0.rc);
        OK(a1.rc);
        nc[0] = a0.out;
        nc[1] = a1.out;
        OK(ncclGroupStart());
        for (int i = 0; i < 2; i++)
            OK(ncclAllReduce(&v[i], &r[i], 1, ncclInt32, ncclSum, nc[i], NULL));
        OK(ncclGroupEnd());
        CHECK(r[0] == 7 && r[1] == 7);
        for (int i = 0; i < 2; i++)
            OK(ncclCommDestroy(nc[i]));
    }
    for (int i = 0; i < 3; i++)
        OK(ncclCommAbort(comms[i]));

    /* ncclCommRevoke from another thread stops a stuck op; later ops IU, finalize IA, split works */
    OK(ncclCommInitAll(comms, 2, NULL));
    pthread_create(&t, NULL, stuck_main, comms[0]);
    sleep_s(0.2);
    {
        double t0 = now_s();
        ncclComm_t sub[2];
        int32_t v[2] = {5, 6}, r2[2];
        OK(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT));
        pthread_join(t, NULL);
        CHECK(now_s() - t0 < 1.0);
        EXPECT_RC(g_abort_rc, ncclInvalidUsage);
        EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comms[0], NULL), ncclInvalidUsage);
        EXPECT_RC(ncclCommFinalize(comms[0]), ncclInvalidArgument);
        EXPECT_RC(ncclCommRevoke(comms[0], 0), ncclInvalidArgument);
        OK(ncclGroupStart());
        OK(ncclCommSplit(comms[0], 0, 0, &sub[0], NULL));
        OK(ncclCommSplit(comms[1], 0, 1, &sub[1], NULL));
        OK(ncclGroupEnd());
        OK(ncclGroupStart());
        for (int i = 0; i < 2; i++)
            OK(ncclAllReduce(&v[i], &r2[i], 1, ncclInt32, ncclSum, sub[i], NULL));
        OK(ncclGroupEnd());
        CHECK(r2[0] == 11 && r2[1] == 11);
        for (int i = 0; i < 2; i++) {
            OK(ncclCommDestroy(sub[i]));
            OK(ncclCommDestroy(comms[i]));
        }
    }

    OK(ncclCommInitAll(comms, 1, NULL));
    /* a finalize or destroy in the group that uses the comm -> IU, and the group is discarded */
    OK(ncclGroupStart());
    OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comms[0], NULL));
    EXPECT_RC(ncclCommDestroy(comms[0]), ncclInvalidUsage);
    EXPECT_RC(ncclGroupEnd(), ncclInvalidUsage);
    /* init and communication in one group -> IU */
    {
        ncclUniqueId id;
        ncclComm_t c = NULL;
        OK(ncclGetUniqueId(&id));
        OK(ncclGroupStart());
        OK(ncclCommInitRank(&c, 1, id, 0));
        EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comms[0], NULL), ncclInvalidUsage);
        EXPECT_RC(ncclGroupEnd(), ncclInvalidUsage);
        {
            ncclResult_t st;
            OK(ncclCommGetAsyncError(c, &st)); /* the queued init was never started: ERROR */
            CHECK(st == ncclInvalidUsage);
        }
        OK(ncclCommDestroy(c));
    }
    /* blocking and nonblocking comms in one group -> IA; config version gating */
    {
        ncclUniqueId id;
        ncclComm_t nb = NULL, old = NULL;
        ncclConfig_t cfg = config_v(NCCL_ABI_API_VERSION, 0);
        ncclResult_t rc;
        OK(ncclGetUniqueId(&id));
        rc = ncclCommInitRankConfig(&nb, 1, id, 0, &cfg);
        CHECK(rc == ncclInProgress || rc == ncclSuccess);
        wait_ready(nb);
        OK(ncclGroupStart());
        OK(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comms[0], NULL));
        EXPECT_RC(ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, nb, NULL), ncclInvalidArgument);
        EXPECT_RC(ncclGroupEnd(), ncclInvalidArgument);
        /* the group's mode is its first communicator's, finalize included (destroys do not join):
         * a nonblocking comm's finalize makes the group nonblocking */
        OK(ncclGroupStart());
        OK(ncclCommFinalize(nb));
        EXPECT_RC(ncclGroupEnd(), ncclInProgress);
        wait_ready(nb);
        OK(ncclCommDestroy(nb));
        /* a caller stamping 2.13 never set blocking: the 0 is ignored and init blocks */
        cfg = config_v(NCCL_ABI_VERSION_CODE(2, 13, 0), 0);
        OK(ncclGetUniqueId(&id));
        OK(ncclCommInitRankConfig(&old, 1, id, 0, &cfg));
        OK(ncclCommDestroy(old));
        /* RCCL's short layout ends at splitShare: fields after it are not read */
        cfg = config_v(NCCL_ABI_API_VERSION, 1);
        cfg.size = offsetof(ncclConfig_t, splitShare) + sizeof(int);
        cfg.CTAPolicy = 99; /* beyond size: ignored */
        OK(ncclGetUniqueId(&id));
        OK(ncclCommInitRankConfig(&old, 1, id, 0, &cfg));
        OK(ncclCommDestroy(old));
    }
    OK(ncclCommDestroy(comms[0]));
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(int);
        int def;
    } scen[] = {
        {"threads", scen_threads, 3},   {"onethread", scen_onethread, 3}, {"nonblocking", scen_nonblocking, 3},
        {"timeout", scen_timeout, 2},   {"mismatch", scen_mismatch, 2},   {"abort", scen_abort, 2},
        {"argcheck", scen_argcheck, 2}, {"bootstrap", scen_bootstrap, 3}, {"procs", scen_procs, 3},
        {"kill", scen_kill, 3},         {"fork", scen_fork, 2},           {"rccl", scen_rccl, 3},
        {"hammer", scen_hammer, 4},     {"idle", scen_idle, 2},
        {"misuse", scen_misuse, 3},     {"fenv", scen_fenv, 2},
    };
    g_self = "/proc/self/exe";
    {
        static char path[4096];
        ssize_t l = readlink("/proc/self/exe", path, sizeof path - 1);
        if (l > 0) {
            path[l] = '\0';
            g_self = path;
        }
    }
    if (argc >= 6 && strcmp(argv[1], "rank") == 0) {
        g_scenario = argv[2];
        rank_proc_main(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s <scenario> [nranks]\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof scen / sizeof scen[0]; i++)
        if (strcmp(argv[1], scen[i].name) == 0) {
            int n = argc > 2 ? atoi(argv[2]) : scen[i].def;
            double t0 = now_s();
            g_scenario = argv[1];
            scen[i].fn(n);
            printf("PASS %s n=%d (%.2f s)\n", argv[1], n, now_s() - t0);
            return 0;
        }
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
}
