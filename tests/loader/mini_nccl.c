/* A minimal NCCL-ABI library for the loader's discovery tests: it only says which copy it is.
 * Built several times with different -D flags:
 *   MINI_VERSION  the ncclGetVersion code (tells copies apart)
 *   MINI_RCCL     also export ncclAllReduceWithBias, as RCCL does
 *   MINI_NOT_NCCL export nothing NCCL-like ("not an NCCL/RCCL library")
 *   MINI_INIT     export the communicator constructors of a release: 1 ncclCommInitRank only (RCCL
 *                 2.13), 2 also ncclCommInitRankConfig (2.14 to 2.22), 3 also
 *                 ncclCommInitRankScalable. Each fails with its own status (6, 4, 5 for Scalable,
 *                 Config, InitRank) and leaves "<function> nranks=N rank=R id=B config=0|1" as the
 *                 last error, B being the first byte of the (first) unique id. */
#include <stddef.h>
#include <stdio.h>

#ifndef MINI_NOT_NCCL
int ncclGetVersion(int *version)
{
    *version = MINI_VERSION;
    return 0;
}

const char *ncclGetErrorString(int result)
{
    (void)result;
    return "mini: unhandled cuda error";
}

#ifdef MINI_RCCL
int ncclAllReduceWithBias(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream, const void *acc)
{
    (void)s, (void)r, (void)n, (void)dt, (void)op, (void)comm, (void)stream, (void)acc;
    return 0;
}
#endif

#ifdef MINI_INIT
typedef struct {
    char internal[128];
} mini_id;

static char last_error[256];

const char *ncclGetLastError(void *comm)
{
    (void)comm;
    return last_error;
}

static int record(const char *fn, int status, int nranks, int rank, const mini_id *id, const void *config)
{
    snprintf(last_error, sizeof last_error, "%s nranks=%d rank=%d id=%d config=%d", fn, nranks, rank,
             (unsigned char)id->internal[0], config != NULL);
    return status;
}

int ncclCommInitRank(void **comm, int nranks, mini_id id, int rank)
{
    (void)comm;
    return record("ncclCommInitRank", 5, nranks, rank, &id, NULL);
}

#if MINI_INIT >= 2
int ncclCommInitRankConfig(void **comm, int nranks, mini_id id, int rank, void *config)
{
    (void)comm;
    return record("ncclCommInitRankConfig", 4, nranks, rank, &id, config);
}
#endif

#if MINI_INIT >= 3
int ncclCommInitRankScalable(void **comm, int nranks, int rank, int nid, mini_id *ids, void *config)
{
    (void)comm, (void)nid;
    return record("ncclCommInitRankScalable", 6, nranks, rank, &ids[0], config);
}
#endif
#endif
#else
int mini_unrelated_symbol(void) { return 0; }
#endif
