/* A litmus-style stress test of the host backend's cross-process publication
 * (docs/host-backend.md#memory-order), driven by tests/host/test_litmus.py:
 *
 *   litmus_test <nranks> <rounds>                 spawns the ranks, exit 0 = every round checked
 *   litmus_test rank <r> <n> <rounds> <id-hex>    (internal) one rank
 *
 * Every round publishes fresh data through each path whose order the memory-order table
 * describes, and every consumer checks every word of what it got against what the round's
 * producer must have written: a consumer that saw the flag before the data (a missing release or
 * acquire) reads the previous round's words and fails. The paths: an eager Broadcast from a
 * rotating root, an AllReduce through the slots, a Send/Recv ring through the p2p rings, and
 * put_signal into the next rank's window with wait_signal on the previous rank's signal. Small
 * messages keep each round short, so the publish/consume pairs are many. On x86 the hardware
 * orders stores itself; on aarch64 (.ci/aarch64) only the written orders do. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

#define API(name, ret, params, args, since) ret name params;
#include "abi.h"
NCCL_ABI(API)

#define WORDS 32

static void fail(int r, int round, const char *what, int k, uint32_t got, uint32_t want)
{
    fprintf(stderr, "FAIL rank %d round %d: %s word %d is 0x%08x, expected 0x%08x [last error: %s]\n", r, round,
            what, k, (unsigned)got, (unsigned)want, ncclGetLastError(NULL));
    _exit(1);
}

static void ok(ncclResult_t rc, int r, const char *call)
{
    if (rc != ncclSuccess) {
        fprintf(stderr, "FAIL rank %d: %s returned %d [last error: %s]\n", r, call, (int)rc, ncclGetLastError(NULL));
        _exit(1);
    }
}

/* The word k of what `from` publishes in `round` on path `path`: differs in every argument. */
static uint32_t word(int path, int round, int from, int k)
{
    uint32_t h = (uint32_t)round * 2654435761u ^ (uint32_t)from * 40503u ^ (uint32_t)k * 2246822519u;
    return h ^ (uint32_t)path << 28;
}

static void check(const uint32_t *got, int path, int round, int from, int r, const char *what)
{
    for (int k = 0; k < WORDS; k++)
        if (got[k] != word(path, round, from, k))
            fail(r, round, what, k, got[k], word(path, round, from, k));
}

static void rank_main(int r, int n, int rounds, const char *hex)
{
    ncclUniqueId id;
    ncclComm_t c;
    ncclWindow_t win;
    uint32_t buf[WORDS], sum[WORDS], out[WORDS], in[WORDS], *mem;
    for (int i = 0; i < (int)sizeof id.internal; i++)
        sscanf(hex + 2 * i, "%2hhx", (unsigned char *)&id.internal[i]);
    ok(ncclCommInitRank(&c, n, id, r), r, "ncclCommInitRank");
    ok(ncclMemAlloc((void **)&mem, 2 * n * WORDS * sizeof *mem), r, "ncclMemAlloc");
    ok(ncclCommWindowRegister(c, mem, 2 * n * WORDS * sizeof *mem, &win, 0), r, "ncclCommWindowRegister");
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    /* LITMUS_PLANT=1: rank 0 sends one wrong word in round 7, so a test sees that a check fails */
    int plant = getenv("LITMUS_PLANT") != NULL && r == 0;
    for (int i = 0; i < rounds; i++) {
        int root = i % n;
        for (int k = 0; k < WORDS; k++)
            buf[k] = r == root ? word(0, i, root, k) : 0;
        ok(ncclBroadcast(buf, buf, WORDS, ncclUint32, root, c, NULL), r, "ncclBroadcast");
        check(buf, 0, i, root, r, "Broadcast");
        /* The AllReduce is also the round's barrier: no rank puts round i + 1's words into a
         * window slot before its owner has checked round i - 1's in it (two slots, by parity). */
        for (int k = 0; k < WORDS; k++)
            buf[k] = word(1, i, r, k);
        ok(ncclAllReduce(buf, sum, WORDS, ncclUint32, ncclSum, c, NULL), r, "ncclAllReduce");
        for (int k = 0; k < WORDS; k++) {
            uint32_t want = 0;
            for (int q = 0; q < n; q++)
                want += word(1, i, q, k);
            if (sum[k] != want)
                fail(r, i, "AllReduce", k, sum[k], want);
        }
        for (int k = 0; k < WORDS; k++)
            out[k] = word(2, i, r, k);
        if (plant && i == 7)
            out[5] ^= 1;
        ok(ncclGroupStart(), r, "ncclGroupStart");
        ok(ncclSend(out, WORDS, ncclUint32, next, c, NULL), r, "ncclSend");
        ok(ncclRecv(in, WORDS, ncclUint32, prev, c, NULL), r, "ncclRecv");
        ok(ncclGroupEnd(), r, "ncclGroupEnd");
        check(in, 2, i, prev, r, "Send/Recv");
        for (int k = 0; k < WORDS; k++)
            out[k] = word(3, i, r, k);
        size_t slot = ((size_t)(i & 1) * n + r) * WORDS * sizeof *mem;
        ok(ncclPutSignal(out, WORDS, ncclUint32, next, win, slot, 0, 0, 0, c, NULL), r, "ncclPutSignal");
        ncclWaitSignalDesc_t d = {1, prev, 0, 0};
        ok(ncclWaitSignal(1, &d, c, NULL), r, "ncclWaitSignal");
        check(mem + ((size_t)(i & 1) * n + prev) * WORDS, 3, i, prev, r, "PutSignal");
    }
    ok(ncclCommWindowDeregister(c, win), r, "ncclCommWindowDeregister");
    ok(ncclCommDestroy(c), r, "ncclCommDestroy");
    ok(ncclMemFree(mem), r, "ncclMemFree");
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "rank") == 0)
        rank_main(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), argv[5]);
    if (argc != 3) {
        fprintf(stderr, "usage: %s <nranks> <rounds>\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), rounds = atoi(argv[2]);
    ncclUniqueId id;
    char hex[2 * sizeof id.internal + 1], rs[16], ns[16], ro[16];
    struct timespec t0, t1;
    ok(ncclGetUniqueId(&id), -1, "ncclGetUniqueId");
    for (int i = 0; i < (int)sizeof id.internal; i++)
        sprintf(hex + 2 * i, "%02x", (unsigned char)id.internal[i]);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pids[16];
    if (n < 2 || n > 16 || rounds < 1) {
        fprintf(stderr, "nranks must be 2 to 16 and rounds at least 1\n");
        return 2;
    }
    for (int r = 0; r < n; r++) {
        snprintf(rs, sizeof rs, "%d", r);
        snprintf(ns, sizeof ns, "%d", n);
        snprintf(ro, sizeof ro, "%d", rounds);
        pids[r] = fork();
        if (pids[r] == 0) {
            execl("/proc/self/exe", argv[0], "rank", rs, ns, ro, hex, (char *)NULL);
            _exit(127);
        }
    }
    int failed = 0;
    for (int r = 0; r < n; r++) {
        int st;
        if (waitpid(pids[r], &st, 0) != pids[r] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "rank %d ended with status 0x%x\n", r, st);
            failed = 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (failed)
        return 1;
    printf("PASS litmus: %d ranks x %d rounds x 4 paths, %d words checked per round and rank, %.2f s\n", n, rounds,
           4 * WORDS, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
