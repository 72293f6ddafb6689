/* Processes for the hostile-neighbour tests of libnccl-host (tests/host/test_host_engine.py).
 *
 *   hostile_test hold <nofile>              makes a unique id (its root lives here), prints it as
 *                                           hex, and keeps the root until stdin closes
 *   hostile_test rank <r> <n> <id-hex>      one rank: init, an AllReduce, destroy; prints
 *                                           "INIT <r> <seconds>" (the init's duration)
 *   hostile_test blame <r> <n> <id-hex>     one rank: init, prints "READY <r>", then AllReduces
 *                                           until one fails; prints "ERR <r> <result> <last
 *                                           error>" as the call left it, then aborts at once
 *   hostile_test initabort <trials>         a blocking init (ncclGroupEnd) of rank 0 of 2 in the
 *                                           process that holds the id's root, aborted from
 *                                           another thread: the error says "aborted" every time
 *   hostile_test ids                        2000 unused ids cost one thread and one listener; the
 *                                           open-id limit is reported by name
 *   hostile_test nofile                     with no file descriptor left, ncclGetUniqueId names
 *                                           the limit it hit
 * <nofile> is the soft RLIMIT_NOFILE the process sets for itself first. Exit 0 = pass; a failure
 * prints "FAIL ..." with the library's last error. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

#define API(name, ret, params, args, since) ret name params;
#include "abi.h"
NCCL_ABI(API)

#define FAILF(...)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                       \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, " [last error: %s]\n", ncclGetLastError(NULL));                            \
        exit(1);                                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void set_nofile(long n)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = (rlim_t)n;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        FAILF("setrlimit(RLIMIT_NOFILE, %ld)", n);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static int count_threads(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

static void hex_to_id(const char *hex, ncclUniqueId *id)
{
    if (strlen(hex) != 2 * NCCL_UNIQUE_ID_BYTES)
        FAILF("the id must be %d hex digits", 2 * NCCL_UNIQUE_ID_BYTES);
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        id->internal[i] = (char)v;
    }
}

static int hold(long nofile)
{
    ncclUniqueId id;
    char c;
    set_nofile(nofile);
    if (ncclGetUniqueId(&id) != ncclSuccess)
        FAILF("ncclGetUniqueId");
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
        printf("%02x", (unsigned char)id.internal[i]);
    printf("\n");
    fflush(stdout);
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}

static int rank(int r, int n, const char *hex)
{
    ncclUniqueId id;
    ncclComm_t comm;
    int32_t x = r + 1, s = 0;
    double t0;
    ncclResult_t rc;
    hex_to_id(hex, &id);
    t0 = now_s();
    rc = ncclCommInitRank(&comm, n, id, r);
    if (rc != ncclSuccess)
        FAILF("rank %d: ncclCommInitRank returned %d after %.2f s", r, (int)rc, now_s() - t0);
    printf("INIT %d %.3f\n", r, now_s() - t0);
    fflush(stdout);
    if (ncclAllReduce(&x, &s, 1, ncclInt32, ncclSum, comm, NULL) != ncclSuccess || s != n * (n + 1) / 2)
        FAILF("rank %d: AllReduce gave %d", r, s);
    if (ncclCommDestroy(comm) != ncclSuccess)
        FAILF("rank %d: ncclCommDestroy", r);
    return 0;
}

static int blame(int r, int n, const char *hex)
{
    ncclUniqueId id;
    ncclComm_t comm;
    static float x[1024];
    ncclResult_t rc = ncclSuccess;
    char msg[1024];
    hex_to_id(hex, &id);
    if (ncclCommInitRank(&comm, n, id, r) != ncclSuccess)
        FAILF("rank %d: ncclCommInitRank", r);
    printf("READY %d\n", r);
    fflush(stdout);
    for (long k = 0; k < 100000000 && rc == ncclSuccess; k++)
        rc = ncclAllReduce(x, x, 1024, ncclFloat32, ncclSum, comm, NULL);
    snprintf(msg, sizeof msg, "%s", ncclGetLastError(NULL));
    ncclCommAbort(comm);
    printf("ERR %d %d %s\n", r, (int)rc, msg);
    return 0;
}

typedef struct {
    ncclUniqueId id;
    ncclComm_t _Atomic comm;
    ncclResult_t rc;
    char msg[1024];
} init_job;

static void *blocking_init(void *arg)
{
    init_job *j = arg;
    ncclComm_t c = NULL;
    ncclGroupStart();
    if (ncclCommInitRank(&c, 2, j->id, 0) != ncclSuccess)
        FAILF("ncclCommInitRank in a group");
    j->comm = c;
    j->rc = ncclGroupEnd(); /* blocks: rank 1 never comes */
    snprintf(j->msg, sizeof j->msg, "%s", ncclGetLastError(NULL));
    return NULL;
}

static int initabort(int trials)
{
    int wrong = 0;
    for (int k = 0; k < trials; k++) {
        init_job j = {0};
        pthread_t t;
        if (ncclGetUniqueId(&j.id) != ncclSuccess)
            FAILF("ncclGetUniqueId");
        pthread_create(&t, NULL, blocking_init, &j);
        while (j.comm == NULL)
            usleep(1000);
        usleep(20000); /* the init is waiting for the root's answer */
        if (ncclCommAbort(j.comm) != ncclSuccess)
            FAILF("ncclCommAbort during the init");
        pthread_join(t, NULL);
        if (j.rc == ncclSuccess || strstr(j.msg, "aborted") == NULL) {
            printf("trial %d: ncclGroupEnd returned %d: %s\n", k, (int)j.rc, j.msg);
            wrong++;
        }
    }
    printf("%d of %d aborted inits said something else than aborted\n", wrong, trials);
    return wrong != 0;
}

static int ids(void)
{
    ncclUniqueId id;
    ncclComm_t comm;
    int fds0, threads0, k;
    ncclResult_t rc = ncclSuccess;
    set_nofile(256);
    fds0 = count_fds();
    threads0 = count_threads();
    for (k = 0; k < 2000; k++)
        if (ncclGetUniqueId(&id) != ncclSuccess)
            FAILF("ncclGetUniqueId call %d of 2000 failed (fd limit 256)", k + 1);
    printf("after 2000 unused ids: %d threads (%d before), %d fds (%d before)\n", count_threads(), threads0,
           count_fds(), fds0);
    if (count_threads() > threads0 + 1 || count_fds() > fds0 + 2)
        FAILF("2000 unused ids hold %d threads and %d fds (before: %d, %d)", count_threads(), count_fds(), threads0,
              fds0);
    /* the root still serves the newest id */
    if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess || ncclCommDestroy(comm) != ncclSuccess)
        FAILF("a 1-rank communicator from the last id");
    /* the limit on open ids is reported by name */
    for (k = 0; k < 70000 && (rc = ncclGetUniqueId(&id)) == ncclSuccess; k++)
        ;
    if (rc != ncclSystemError || strstr(ncclGetLastError(NULL), "unique ids open (the limit)") == NULL)
        FAILF("after %d more ids: result %d", k, (int)rc);
    printf("open-id limit reached after %d more ids: %s\n", k, ncclGetLastError(NULL));
    return 0;
}

static int nofile(void)
{
    ncclUniqueId id;
    ncclResult_t rc;
    set_nofile(64);
    while (open("/dev/null", O_RDONLY) >= 0)
        ;
    rc = ncclGetUniqueId(&id);
    if (rc != ncclSystemError || strstr(ncclGetLastError(NULL), "RLIMIT_NOFILE") == NULL)
        FAILF("ncclGetUniqueId without a free descriptor returned %d", (int)rc);
    printf("%s\n", ncclGetLastError(NULL));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "hold") == 0)
        return hold(atol(argv[2]));
    if (argc == 5 && strcmp(argv[1], "rank") == 0)
        return rank(atoi(argv[2]), atoi(argv[3]), argv[4]);
    if (argc == 5 && strcmp(argv[1], "blame") == 0)
        return blame(atoi(argv[2]), atoi(argv[3]), argv[4]);
    if (argc == 3 && strcmp(argv[1], "initabort") == 0)
        return initabort(atoi(argv[2]));
    if (argc == 2 && strcmp(argv[1], "ids") == 0)
        return ids();
    if (argc == 2 && strcmp(argv[1], "nofile") == 0)
        return nofile();
    fprintf(stderr, "usage: %s hold <nofile> | rank|blame <r> <n> <id-hex> | initabort <trials> | ids | nofile\n", argv[0]);
    return 2;
}
