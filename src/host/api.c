/* The exported entry points of libnccl-host: thin shells over the host_* internals.
 *
 * Prototypes come from abi.h's X-macro table, so a signature here can never drift from what the
 * bindings call. Only nccl* (and the pnccl* aliases NCCL also exports) leave the library: the
 * build uses hidden visibility, HOST_API marks these functions, and libnccl-host.map is a second
 * guard. The library never calls its own exported names. */
#include <string.h>

#include "nccl_host.h"

#define HOST_DECL(name, ret, params, args, since) HOST_API ret name params;
NCCL_ABI(HOST_DECL)
#undef HOST_DECL
HOST_API const char *ncclHostGetInfo(void);
HOST_API ncclResult_t ncclHostSetDevice(int device);
HOST_API ncclResult_t ncclHostGetDevice(int *device);

/* Entry points the host backend does not implement: a clear ncclInvalidUsage, never a silent
 * success (HOST_BACKEND.md marks them optional). */
static ncclResult_t unsupported(const char *fn)
{
    return host_fail(ncclInvalidUsage, "%s is not supported by the host backend (libnccl-host %s)", fn,
                     HOST_LIB_VERSION);
}

static ncclResult_t rccl_only(const char *fn)
{
    if (host_params()->flavor == HOST_FLAVOR_RCCL)
        return ncclSuccess;
    ncclResult_t rc = host_fail(ncclInvalidUsage, "%s is an RCCL entry point; the host backend runs with "
                                "NCCL_HOST_FLAVOR=nccl (set it to rccl to use it)", fn);
    host_group_record(rc);
    return rc;
}

static ncclResult_t coll(host_kind kind, const char *name, const void *send, void *recv, size_t count,
                         ncclDataType_t dt, int op, int root, const void *acc, ncclComm_t comm)
{
    host_opd o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.name = name;
    o.sendbuff = send;
    o.recvbuff = recv;
    o.count = count;
    o.datatype = dt;
    o.has_op = kind == HOST_K_ALLREDUCE || kind == HOST_K_REDUCE || kind == HOST_K_REDUCESCATTER ||
               kind == HOST_K_ALLREDUCE_BIAS;
    o.opkind = o.has_op ? op : -1;
    o.root = root;
    o.acc = acc;
    return host_coll_call(&o, comm);
}

/* ------------------------------------------------------------------------------------------ */
/* Versions, ids, errors                                                                        */
/* ------------------------------------------------------------------------------------------ */

const char *ncclHostGetInfo(void)
{
    return host_info_text();
}

ncclResult_t ncclHostSetDevice(int device)
{
    return host_set_device(device);
}

ncclResult_t ncclHostGetDevice(int *device)
{
    return host_get_device(device);
}

ncclResult_t ncclGetVersion(int *version)
{
    if (version == NULL)
        return host_fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = host_params()->version_code;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    if (uniqueId == NULL)
        return host_fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    return host_unique_id(uniqueId);
}

const char *ncclGetErrorString(ncclResult_t result)
{
    return host_error_string(result);
}

const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm; /* process-global, as in NCCL 2.30 (section 9.2) */
    return host_last_error();
}

/* ------------------------------------------------------------------------------------------ */
/* Communicator lifecycle                                                                       */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return host_init_rank(comm, nranks, &commId, 1, rank, NULL, "ncclCommInitRank");
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config)
{
    return host_init_rank(comm, nranks, &commId, 1, rank, config, "ncclCommInitRankConfig");
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
                                      ncclConfig_t *config)
{
    if (newcomm != NULL)
        *newcomm = NULL;
    if (commIds == NULL)
        return host_fail(ncclInvalidArgument, "ncclCommInitRankScalable: commIds is NULL");
    if (nId < 1 || nId > nranks)
        return host_fail(ncclInvalidArgument, "ncclCommInitRankScalable: nId %d is outside [1, nranks=%d]", nId,
                         nranks);
    return host_init_rank(newcomm, nranks, commIds, nId, myrank, config, "ncclCommInitRankScalable");
}

ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    return host_init_all(comm, ndev, devlist);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    return host_finalize(comm);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    return host_destroy(comm);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    return host_abort(comm);
}

ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    return host_revoke(comm, revokeFlags);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    ncclResult_t rc = host_split(comm, color, key, newcomm, config);
    host_group_record(rc);
    return rc;
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                            ncclConfig_t *config, int shrinkFlags)
{
    ncclResult_t rc = host_shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
    host_group_record(rc);
    return rc;
}

ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId)
{
    (void)comm;
    (void)uniqueId;
    return unsupported("ncclCommGetUniqueId");
}

ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                          ncclConfig_t *config)
{
    (void)comm;
    (void)nRanks;
    (void)uniqueId;
    (void)rank;
    (void)config;
    if (newcomm != NULL)
        *newcomm = NULL;
    return unsupported("ncclCommGrow");
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    return host_get_async_error(comm, asyncError);
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    return host_comm_query(comm, 0, count, "ncclCommCount");
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    return host_comm_query(comm, 1, device, "ncclCommCuDevice");
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    return host_comm_query(comm, 2, rank, "ncclCommUserRank");
}

ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t *props)
{
    return host_query_properties(comm, props);
}

ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags)
{
    return host_suspend(comm, flags, 0);
}

ncclResult_t ncclCommResume(ncclComm_t comm)
{
    return host_suspend(comm, 0, 1);
}

ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    return host_mem_stats(comm, stat, value);
}

/* ------------------------------------------------------------------------------------------ */
/* Memory, registration, windows                                                                 */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    (void)host_params();
    return host_mem_alloc(ptr, size);
}

ncclResult_t ncclMemFree(void *ptr)
{
    return host_mem_free(ptr);
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    return host_register(comm, buff, size, handle);
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    return host_deregister(comm, handle);
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags)
{
    (void)comm;
    (void)buff;
    (void)size;
    (void)winFlags;
    if (win != NULL)
        *win = NULL;
    return unsupported("ncclCommWindowRegister");
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    (void)comm;
    (void)win;
    return unsupported("ncclCommWindowDeregister");
}

ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr)
{
    (void)comm;
    (void)win;
    (void)outUserPtr;
    return unsupported("ncclWinGetUserPtr");
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm)
{
    return host_redop_create(op, scalar, datatype, residence, comm);
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    return host_redop_destroy(op, comm);
}

/* ------------------------------------------------------------------------------------------ */
/* Collectives and point-to-point                                                               */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_REDUCE, "ncclReduce", sendbuff, recvbuff, count, datatype, (int)op, root, NULL, comm);
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_BROADCAST, "ncclBcast", buff, buff, count, datatype, -1, root, NULL, comm);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_BROADCAST, "ncclBroadcast", sendbuff, recvbuff, count, datatype, -1, root, NULL, comm);
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_ALLREDUCE, "ncclAllReduce", sendbuff, recvbuff, count, datatype, (int)op, -1, NULL, comm);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_REDUCESCATTER, "ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, (int)op, -1, NULL,
                comm);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_ALLGATHER, "ncclAllGather", sendbuff, recvbuff, sendcount, datatype, -1, -1, NULL, comm);
}

ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_ALLTOALL, "ncclAlltoAll", sendbuff, recvbuff, count, datatype, -1, -1, NULL, comm);
}

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_GATHER, "ncclGather", sendbuff, recvbuff, count, datatype, -1, root, NULL, comm);
}

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_SCATTER, "ncclScatter", sendbuff, recvbuff, count, datatype, -1, root, NULL, comm);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_SEND, "ncclSend", sendbuff, NULL, count, datatype, -1, peer, NULL, comm);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)stream;
    return coll(HOST_K_RECV, "ncclRecv", NULL, recvbuff, count, datatype, -1, peer, NULL, comm);
}

ncclResult_t ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                           ncclComm_t comm, cudaStream_t stream)
{
    (void)localbuff, (void)count, (void)datatype, (void)peer, (void)peerWin, (void)peerWinOffset;
    (void)sigIdx, (void)ctx, (void)flags, (void)comm, (void)stream;
    ncclResult_t rc = unsupported("ncclPutSignal");
    host_group_record(rc);
    return rc;
}

ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream)
{
    (void)peer, (void)sigIdx, (void)ctx, (void)flags, (void)comm, (void)stream;
    ncclResult_t rc = unsupported("ncclSignal");
    host_group_record(rc);
    return rc;
}

ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream)
{
    (void)nDesc, (void)signalDescs, (void)comm, (void)stream;
    ncclResult_t rc = unsupported("ncclWaitSignal");
    host_group_record(rc);
    return rc;
}

ncclResult_t ncclGroupStart(void)
{
    return host_group_start();
}

ncclResult_t ncclGroupEnd(void)
{
    return host_group_end(NULL, 0);
}

ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    return host_group_end(simInfo, 1);
}

/* Device-side APIs: nothing to offer on the host. */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t *reqs, ncclDevComm_t *outDevComm)
{
    (void)comm, (void)reqs, (void)outDevComm;
    return unsupported("ncclDevCommCreate");
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t *devComm)
{
    (void)comm, (void)devComm;
    return unsupported("ncclDevCommDestroy");
}

ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr)
{
    (void)window, (void)offset, (void)outPtr;
    return unsupported("ncclGetLsaMultimemDevicePointer");
}

ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void **outPtr)
{
    (void)window, (void)offset, (void)lsaRank, (void)outPtr;
    return unsupported("ncclGetLsaDevicePointer");
}

ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void **outPtr)
{
    (void)window, (void)offset, (void)peer, (void)outPtr;
    return unsupported("ncclGetPeerDevicePointer");
}

/* ------------------------------------------------------------------------------------------ */
/* RCCL-only entry points                                                                        */
/* ------------------------------------------------------------------------------------------ */

ncclResult_t ncclAllReduceWithBias(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclRedOp_t op, ncclComm_t comm, hipStream_t stream, const void *acc)
{
    ncclResult_t rc;
    (void)stream;
    if (HOST_FAILED(rc = rccl_only("ncclAllReduceWithBias")))
        return rc;
    return coll(HOST_K_ALLREDUCE_BIAS, "ncclAllReduceWithBias", sendbuff, recvbuff, count, datatype, (int)op, -1, acc,
                comm);
}

static ncclResult_t alltoallv(const char *name, const void *sendbuff, const size_t sendcounts[],
                              const size_t sdispls[], void *recvbuff, const size_t recvcounts[],
                              const size_t rdispls[], ncclDataType_t datatype, ncclComm_t comm)
{
    ncclResult_t rc;
    host_opd o;
    if (HOST_FAILED(rc = rccl_only(name)))
        return rc;
    memset(&o, 0, sizeof o);
    o.kind = HOST_K_ALLTOALLV;
    o.name = name;
    o.sendbuff = sendbuff;
    o.recvbuff = recvbuff;
    o.datatype = datatype;
    o.opkind = -1;
    o.root = -1;
    o.uv[0] = sendcounts;
    o.uv[1] = sdispls;
    o.uv[2] = recvcounts;
    o.uv[3] = rdispls;
    return host_coll_call(&o, comm);
}

ncclResult_t ncclAlltoAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff,
                           const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype,
                           ncclComm_t comm, hipStream_t stream)
{
    (void)stream;
    return alltoallv("ncclAlltoAllv", sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, comm);
}

ncclResult_t ncclAllToAllv(const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff,
                           const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype,
                           ncclComm_t comm, hipStream_t stream)
{
    (void)stream;
    return alltoallv("ncclAllToAllv", sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, comm);
}

ncclResult_t ncclAllToAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, hipStream_t stream)
{
    ncclResult_t rc;
    (void)stream;
    if (HOST_FAILED(rc = rccl_only("ncclAllToAll")))
        return rc;
    return coll(HOST_K_ALLTOALL, "ncclAllToAll", sendbuff, recvbuff, count, datatype, -1, -1, NULL, comm);
}

/* pnccl* aliases, as NCCL exports them (profiling tools interpose on nccl* and call pnccl*). */
#define HOST_ALIAS(name, ret, params, args, since) \
    extern __typeof__(name) p##name __attribute__((alias(#name), visibility("default")));
NCCL_ABI(HOST_ALIAS)
#undef HOST_ALIAS
