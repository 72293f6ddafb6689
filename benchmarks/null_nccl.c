/* A "null" NCCL: every entry point the benchmark calls returns at once, so what is timed is the
 * binding's own cost per call. */
#include <stddef.h>

/* Claiming the host-backend flavour makes nccl.core accept host memory (numpy arrays, torch CPU
 * tensors) without asking the library for a device, so the high-level call can be timed here. */
const char *ncclHostGetInfo(void) { return "null library of benchmarks/overhead.py"; }

int ncclGetVersion(int *version)
{
    *version = 23007;
    return 0;
}

int ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op, void *comm, void *stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)op, (void)comm, (void)stream;
    return 0;
}

/* The 2.31 per-call-config form (the last argument is a const ncclCollConfig_t *). */
int ncclAllReduceConfig(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op, void *comm,
                        void *stream, const void *config)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)op, (void)comm, (void)stream, (void)config;
    return 0;
}

/* Asked once per communicator by NVIDIA's nccl4py (benchmarks/upstream_overhead.py) to check
 * that buffers live on the communicator's device. */
int ncclCommCuDevice(const void *comm, int *device)
{
    (void)comm;
    *device = 0;
    return 0;
}

int ncclCommCount(const void *comm, int *count)
{
    (void)comm;
    *count = 1;
    return 0;
}

int ncclCommUserRank(const void *comm, int *rank)
{
    (void)comm;
    *rank = 0;
    return 0;
}

/* Enough of creation for nccl.core's Communicator.init (the flight recorder's on/off rows of
 * benchmarks/overhead.py): a unique id of zeros, and a distinct fake handle per communicator. */
int ncclGetUniqueId(void *id)
{
    for (size_t i = 0; i < 128; i++)
        ((char *)id)[i] = 0;
    return 0;
}

int ncclCommInitRank(void **comm, int nranks, const void *id, int rank)
{
    static char handles[64];
    static int next;
    (void)nranks, (void)id, (void)rank;
    *comm = &handles[next++ % 64];
    return 0;
}
