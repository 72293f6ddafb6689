/* The stub entry points that produce outputs: strong definitions overriding the generated weak
 * ones of stub_nccl.c. Each still records its call. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "abi.h"

#define STUB_API __attribute__((visibility("default")))

ncclResult_t stub_record(const char *name, int nargs, const uint64_t *args);
const char *stub_last_error_text(void);

#define REC(name, ...)                                                    \
    do {                                                                  \
        uint64_t a_[] = {0, __VA_ARGS__};                                 \
        rc = stub_record(name, (int)(sizeof a_ / sizeof a_[0]) - 1, a_ + 1); \
    } while (0)

STUB_API ncclResult_t ncclGetVersion(int *version)
{
    ncclResult_t rc;
    REC("ncclGetVersion", (uintptr_t)version);
    *version = 23007;
    return rc;
}

STUB_API const char *ncclGetErrorString(ncclResult_t result)
{
    static char text[64];
    snprintf(text, sizeof text, "stub error %d", (int)result);
    return text;
}

STUB_API const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return stub_last_error_text();
}

STUB_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    ncclResult_t rc;
    REC("ncclGetUniqueId", (uintptr_t)id);
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
        id->internal[i] = (char)(i * 7 + 1);
    return rc;
}

/* Creation calls write a fake handle: 0x1000 + rank-ish value so tests can check it. */
STUB_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    ncclResult_t rc;
    uint64_t first;
    memcpy(&first, id.internal, sizeof first);
    REC("ncclCommInitRank", (uintptr_t)comm, (uint64_t)nranks, first, (uint64_t)rank);
    *comm = (ncclComm_t)(uintptr_t)(0x1000 + rank);
    return rc;
}

STUB_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    ncclResult_t rc;
    REC("ncclCommSplit", (uintptr_t)comm, (uint64_t)(uint32_t)color, (uint64_t)(uint32_t)key, (uintptr_t)newcomm,
        (uintptr_t)config);
    *newcomm = (ncclComm_t)(uintptr_t)0x2000;
    return rc;
}

STUB_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    ncclResult_t rc;
    REC("ncclCommCount", (uintptr_t)comm, (uintptr_t)count);
    *count = 3;
    return rc;
}

STUB_API ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    ncclResult_t rc;
    REC("ncclMemAlloc", (uintptr_t)ptr, (uint64_t)size);
    *ptr = (void *)(uintptr_t)0xABC000;
    return rc;
}

STUB_API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    ncclResult_t rc;
    REC("ncclCommInitAll", (uintptr_t)comms, (uint64_t)ndev, devlist ? (uint64_t)devlist[ndev - 1] : 99);
    for (int i = 0; i < ndev; i++)
        comms[i] = (ncclComm_t)(uintptr_t)(0x3000 + i);
    return rc;
}

STUB_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state)
{
    ncclResult_t rc;
    REC("ncclCommGetAsyncError", (uintptr_t)comm, (uintptr_t)state);
    *state = ncclInProgress;
    return rc;
}
