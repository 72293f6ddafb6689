/* The exported entry points of libnccl-host: thin shells over the host_* internals.
 *
 * Prototypes come from abi.h's X-macro table (declared in nccl_host.h), so a signature here can
 * never drift from what the bindings call. Only nccl* (and the pnccl* aliases NCCL also exports) leave the library: the
 * build uses hidden visibility, HOST_API marks these functions, and libnccl-host.map is a second
 * guard. The library never calls its own exported names. */
#include <stdio.h>
#include <string.h>

#include "nccl_host.h"

/* Entry points the host backend does not implement: a clear ncclInvalidUsage, never a silent
 * success (listed in docs/host-backend.md#entry-points-it-does-not-implement). Their shells refuse
 * with HOST_REFUSE(), which also records the shell's own name (__func__) in the host_refused
 * section; ncclHostRefusedEntryPoints joins that section into the list `python -m nccl doctor`
 * prints apart from symbols a library lacks. So the refusing shells are the list: there is no
 * other copy to keep in step. */
#define HOST_REFUSE()                                                                                          \
    __extension__({                                                                                            \
        static const char *const host_refused_name __attribute__((used, section("host_refused"))) = __func__; \
        host_refuse(host_refused_name);                                                                        \
    })

/* The bounds of the host_refused section, defined by the linker. */
extern const char *const __start_host_refused[], *const __stop_host_refused[];

ncclResult_t host_refuse(const char *fn)
{
    return host_fail(ncclInvalidUsage, "%s is not supported by the host backend (libnccl-host %s)", fn,
                     HOST_LIB_VERSION);
}

/* The refused names, space-separated, joined once (about 30 bytes a name). */
static char host_refused_text[1024];
static pthread_once_t host_refused_once = PTHREAD_ONCE_INIT;

static void host_refused_join(void)
{
    size_t used = 0;
    for (const char *const *name = __start_host_refused; name < __stop_host_refused; name++) {
        int n = snprintf(host_refused_text + used, sizeof host_refused_text - used, "%s%s", used ? " " : "", *name);
        if (n < 0 || (size_t)n >= sizeof host_refused_text - used)
            break; /* never cut a name in half: stop at the last whole one */
        used += (size_t)n;
    }
    host_refused_text[used] = '\0';
}

const char *ncclHostRefusedEntryPoints(void)
{
    pthread_once(&host_refused_once, host_refused_join);
    return host_refused_text;
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
    o.has_op = host_kinds[kind].reduces;
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
    (void)comm; /* process-global, as in NCCL 2.30 (docs/host-backend.md#errors-and-logging) */
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
    return host_comm_get_unique_id(comm, uniqueId);
}

ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                          ncclConfig_t *config)
{
    ncclResult_t rc = host_grow(comm, nRanks, uniqueId, rank, newcomm, config);
    host_group_record(rc);
    return rc;
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
    return host_win_register(comm, buff, size, win, winFlags);
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    return host_win_deregister(comm, win);
}

ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr)
{
    return host_win_user_ptr(comm, win, outUserPtr);
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

/* An AllReduce over many ranks runs as a ReduceScatter and an AllGather in one group
 * (docs/host-backend.md#allreduce-over-many-ranks): each rank then reduces its own 1/n of the data
 * instead of all of it, so the ranks together read the data about 3 times instead of n + 1. The
 * reduction order is the same (ranks 0..n-1 for every element), and so is every result bit. The
 * elements that do not divide by n follow as an AllReduce of their own. Left to the plain call:
 * small counts (twice the steps, for no gain), few ranks, and whatever the plain call refuses
 * (NULL or partially overlapping buffers, a bad communicator or datatype), so it names it. */
#define HOST_AR_SPLIT_MIN_RANKS 4
#define HOST_AR_SPLIT_MIN_BYTES ((size_t)256 << 10)

static int allreduce_split(const void *send, const void *recv, size_t count, ncclDataType_t dt, ncclComm_t comm,
                           int *n, int *me)
{
    size_t es = host_type_size(dt), bytes = count * es;
    const unsigned char *s = send, *r = recv;
    if (es == 0 || s == NULL || r == NULL || bytes < HOST_AR_SPLIT_MIN_BYTES || (s != r && s < r + bytes && r < s + bytes))
        return 0;
    if (ncclCommCount(comm, n) != ncclSuccess || ncclCommUserRank(comm, me) != ncclSuccess)
        return 0;
    return *n >= HOST_AR_SPLIT_MIN_RANKS && count / (size_t)*n > 0;
}

static ncclResult_t allreduce_in_two(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t dt,
                                     ncclRedOp_t op, ncclComm_t comm, int n, int me)
{
    size_t es = host_type_size(dt), block = count / (size_t)n, whole = block * (size_t)n;
    const unsigned char *s = sendbuff;
    unsigned char *r = recvbuff, *mine = r + (size_t)me * block * es;
    ncclResult_t rc = ncclGroupStart(), end;
    if (HOST_FAILED(rc))
        return rc;
    rc = coll(HOST_K_REDUCESCATTER, "ncclAllReduce", s, mine, block, dt, (int)op, -1, NULL, comm);
    if (!HOST_FAILED(rc))
        rc = coll(HOST_K_ALLGATHER, "ncclAllReduce", mine, r, block, dt, -1, -1, NULL, comm);
    if (!HOST_FAILED(rc) && whole < count)
        rc = coll(HOST_K_ALLREDUCE, "ncclAllReduce", s + whole * es, r + whole * es, count - whole, dt, (int)op, -1,
                  NULL, comm);
    end = ncclGroupEnd();
    return HOST_FAILED(rc) ? rc : end;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    int n, me;
    (void)stream;
    if (allreduce_split(sendbuff, recvbuff, count, datatype, comm, &n, &me))
        return allreduce_in_two(sendbuff, recvbuff, count, datatype, op, comm, n, me);
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
    (void)stream;
    return host_put_signal(localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, flags, comm);
}

ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return host_signal(peer, sigIdx, ctx, flags, comm);
}

ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream)
{
    (void)stream;
    return host_wait_signal(nDesc, signalDescs, comm);
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

/* ------------------------------------------------------------------------------------------ */
/* nccl*Config collectives (2.31): the config is checked, then the collective runs as the plain  */
/* one (config.c says which fields matter on the CPU). A bad config inside a group fails the     */
/* group, as a bad argument of the plain call does.                                              */
/* ------------------------------------------------------------------------------------------ */

static ncclResult_t coll_config(const ncclCollConfig_t *config, const char *fn)
{
    ncclResult_t rc = host_coll_config_check(config, fn);
    if (rc != ncclSuccess)
        host_group_record(rc);
    return rc;
}

ncclResult_t ncclAllReduceConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
    (void)stream;
    ncclResult_t rc;
    if (HOST_FAILED(rc = coll_config(config, "ncclAllReduceConfig")))
        return rc;
    return coll(HOST_K_ALLREDUCE, "ncclAllReduceConfig", sendbuff, recvbuff, count, datatype, (int)op, -1, NULL, comm);
}

ncclResult_t ncclBroadcastConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                 int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
    (void)stream;
    ncclResult_t rc;
    if (HOST_FAILED(rc = coll_config(config, "ncclBroadcastConfig")))
        return rc;
    return coll(HOST_K_BROADCAST, "ncclBroadcastConfig", sendbuff, recvbuff, count, datatype, -1, root, NULL, comm);
}

ncclResult_t ncclReduceConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                              const ncclCollConfig_t *config)
{
    (void)stream;
    ncclResult_t rc;
    if (HOST_FAILED(rc = coll_config(config, "ncclReduceConfig")))
        return rc;
    return coll(HOST_K_REDUCE, "ncclReduceConfig", sendbuff, recvbuff, count, datatype, (int)op, root, NULL, comm);
}

ncclResult_t ncclAllGatherConfig(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
    (void)stream;
    ncclResult_t rc;
    if (HOST_FAILED(rc = coll_config(config, "ncclAllGatherConfig")))
        return rc;
    return coll(HOST_K_ALLGATHER, "ncclAllGatherConfig", sendbuff, recvbuff, sendcount, datatype, -1, -1, NULL, comm);
}

ncclResult_t ncclReduceScatterConfig(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                     const ncclCollConfig_t *config)
{
    (void)stream;
    ncclResult_t rc;
    if (HOST_FAILED(rc = coll_config(config, "ncclReduceScatterConfig")))
        return rc;
    return coll(HOST_K_REDUCESCATTER, "ncclReduceScatterConfig", sendbuff, recvbuff, recvcount, datatype, (int)op, -1,
                NULL, comm);
}

ncclResult_t ncclAlltoAllConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
    (void)stream;
    ncclResult_t rc;
    if (HOST_FAILED(rc = coll_config(config, "ncclAlltoAllConfig")))
        return rc;
    return coll(HOST_K_ALLTOALL, "ncclAlltoAllConfig", sendbuff, recvbuff, count, datatype, -1, -1, NULL, comm);
}

ncclResult_t ncclGatherConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
    (void)stream;
    ncclResult_t rc;
    if (HOST_FAILED(rc = coll_config(config, "ncclGatherConfig")))
        return rc;
    return coll(HOST_K_GATHER, "ncclGatherConfig", sendbuff, recvbuff, count, datatype, -1, root, NULL, comm);
}

ncclResult_t ncclScatterConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
    (void)stream;
    ncclResult_t rc;
    if (HOST_FAILED(rc = coll_config(config, "ncclScatterConfig")))
        return rc;
    return coll(HOST_K_SCATTER, "ncclScatterConfig", sendbuff, recvbuff, count, datatype, -1, root, NULL, comm);
}

/* ------------------------------------------------------------------------------------------ */
/* Encryption and parameters                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* NCCL encrypts its TCP sockets with TLS; the host backend's data never leaves shared memory and
 * its bootstrap sockets are loopback-only unless NCCL_HOST_ALLOW_NONLOOPBACK, so plaintext (NONE)
 * is what it does and a pre-shared key is refused rather than silently ignored. */
ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t *config)
{
    int mode = ncclEncryptionModeNone;
    ncclResult_t rc;
    if (HOST_FAILED(rc = host_encryption_check(config, &mode)))
        return rc;
    if (mode == ncclEncryptionModePsk)
        return host_fail(ncclInvalidUsage, "ncclSetEncryption: PSK encryption is not supported by the host backend "
                         "(libnccl-host %s): its data moves through shared memory, not sockets", HOST_LIB_VERSION);
    return ncclSuccess;
}

ncclResult_t ncclParamBind(ncclParamHandle_t *out, const char *key)
{
    return host_param_bind(out, key);
}

/* The typed reads: an integer parameter, range-checked into the caller's type. */
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t *out)
{
    int64_t v = 0;
    ncclResult_t rc = host_param_get_int(h, INT8_MIN, INT8_MAX, out == NULL ? NULL : &v, "ncclParamGetI8");
    if (rc == ncclSuccess)
        *out = (int8_t)v;
    return rc;
}

ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t *out)
{
    int64_t v = 0;
    ncclResult_t rc = host_param_get_int(h, INT16_MIN, INT16_MAX, out == NULL ? NULL : &v, "ncclParamGetI16");
    if (rc == ncclSuccess)
        *out = (int16_t)v;
    return rc;
}

ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t *out)
{
    int64_t v = 0;
    ncclResult_t rc = host_param_get_int(h, INT32_MIN, INT32_MAX, out == NULL ? NULL : &v, "ncclParamGetI32");
    if (rc == ncclSuccess)
        *out = (int32_t)v;
    return rc;
}

ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t *out)
{
    int64_t v = 0;
    ncclResult_t rc = host_param_get_int(h, INT64_MIN, INT64_MAX, out == NULL ? NULL : &v, "ncclParamGetI64");
    if (rc == ncclSuccess)
        *out = (int64_t)v;
    return rc;
}

ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t *out)
{
    int64_t v = 0;
    ncclResult_t rc = host_param_get_int(h, 0, UINT8_MAX, out == NULL ? NULL : &v, "ncclParamGetU8");
    if (rc == ncclSuccess)
        *out = (uint8_t)v;
    return rc;
}

ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t *out)
{
    int64_t v = 0;
    ncclResult_t rc = host_param_get_int(h, 0, UINT16_MAX, out == NULL ? NULL : &v, "ncclParamGetU16");
    if (rc == ncclSuccess)
        *out = (uint16_t)v;
    return rc;
}

ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t *out)
{
    int64_t v = 0;
    ncclResult_t rc = host_param_get_int(h, 0, UINT32_MAX, out == NULL ? NULL : &v, "ncclParamGetU32");
    if (rc == ncclSuccess)
        *out = (uint32_t)v;
    return rc;
}

ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t *out)
{
    int64_t v = 0;
    ncclResult_t rc = host_param_get_int(h, 0, UINT64_MAX, out == NULL ? NULL : &v, "ncclParamGetU64");
    if (rc == ncclSuccess)
        *out = (uint64_t)v;
    return rc;
}

ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char **out)
{
    return host_param_get_str(h, out);
}

ncclResult_t ncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len)
{
    return host_param_get_raw(h, out, maxLen, len);
}

ncclResult_t ncclParamGetParameter(const char *key, const char **value, int *valueLen)
{
    return host_param_get_by_key(key, value, valueLen);
}

ncclResult_t ncclParamGetAllParameterKeys(const char ***table, int *tableLen)
{
    return host_param_keys(table, tableLen);
}

void ncclParamDumpAll(void)
{
    host_param_dump();
}

/* ------------------------------------------------------------------------------------------ */
/* The device API's host entry points (nccl_device/host.h). No device code runs here, so nothing */
/* can use a device communicator, a symmetric-memory pointer, a CFT logical endpoint or a device */
/* resource: those refuse. Plain host arithmetic is implemented: the world, LSA and rail teams  */
/* (every rank of the host backend runs on this one machine, so the LSA team is the world and a */
/* rail has one rank), the rank conversions between them, and ncclLLA2ACalcSlots.               */
/* ------------------------------------------------------------------------------------------ */

static const ncclTeam_t no_team = {0, 0, 0};

/* The communicator's size and rank, or -1 with the last-error text set. */
static int world_of(ncclComm_t comm, const char *fn, int *nranks, int *rank)
{
    if (host_comm_query(comm, 0, nranks, fn) != ncclSuccess || host_comm_query(comm, 2, rank, fn) != ncclSuccess)
        return -1;
    return 0;
}

ncclTeam_t ncclTeamWorld(ncclComm_t comm)
{
    int n, r;
    if (world_of(comm, "ncclTeamWorld", &n, &r) < 0)
        return no_team;
    return (ncclTeam_t){n, r, 1};
}

ncclTeam_t ncclTeamLsa(ncclComm_t comm)
{
    int n, r;
    if (world_of(comm, "ncclTeamLsa", &n, &r) < 0)
        return no_team;
    return (ncclTeam_t){n, r, 1};
}

/* The outer factor of the world by the LSA size: one rank per rail. */
ncclTeam_t ncclTeamRail(ncclComm_t comm)
{
    int n, r;
    if (world_of(comm, "ncclTeamRail", &n, &r) < 0)
        return no_team;
    return (ncclTeam_t){1, 0, n};
}

/* Team rank -> world rank: this rank's world rank, moved by the team stride. */
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank)
{
    int n, r;
    if (world_of(comm, "ncclTeamRankToWorld", &n, &r) < 0)
        return -1;
    return r + (rank - team.rank) * team.stride;
}

/* The LSA team is the world, so LSA ranks are world ranks. */
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank)
{
    int n, r;
    if (world_of(comm, "ncclTeamRankToLsa", &n, &r) < 0)
        return -1;
    return r + (rank - team.rank) * team.stride;
}

ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode)
{
    (void)comm, (void)mode;
    (void)HOST_REFUSE();
    return no_team;
}

ncclTeam_t ncclTeamCftMultimem(ncclComm_t comm)
{
    (void)comm;
    (void)HOST_REFUSE();
    return no_team;
}

/* Slots of 8 bytes for maxElts elements of up to maxEltSize bytes each. */
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize)
{
    return maxElts * ((maxEltSize + 7) / 8);
}

ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t *outHandle,
                                             ncclDevResourceRequirements_t *outReq)
{
    (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
    return HOST_REFUSE();
}

ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq)
{
    (void)comm, (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
    return HOST_REFUSE();
}

ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
                                        ncclDevResourceRequirements_t *outReq)
{
    (void)nBlocks, (void)nSlots, (void)outHandle, (void)outReq;
    return HOST_REFUSE();
}

ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t *reqs, ncclDevComm_t *outDevComm)
{
    (void)comm, (void)reqs, (void)outDevComm;
    return HOST_REFUSE();
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t *devComm)
{
    (void)comm, (void)devComm;
    return HOST_REFUSE();
}

ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr)
{
    (void)window, (void)offset, (void)outPtr;
    return HOST_REFUSE();
}

ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset, ncclMultimemHandle_t multimem,
                                          void **outPtr)
{
    (void)window, (void)offset, (void)multimem, (void)outPtr;
    return HOST_REFUSE();
}

ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void **outPtr)
{
    /* One LSA team, the world: an LSA rank is a rank. */
    return host_win_peer_ptr(window, offset, lsaRank, outPtr, "ncclGetLsaDevicePointer");
}

ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void **outPtr)
{
    return host_win_peer_ptr(window, offset, peer, outPtr, "ncclGetPeerDevicePointer");
}

ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId_t *leId, size_t *leOffset)
{
    (void)window, (void)offset, (void)leId, (void)leOffset;
    return HOST_REFUSE();
}

ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam,
                                    ncclCftLeId_t *leId, size_t *leOffset)
{
    (void)window, (void)offset, (void)peerCft, (void)cftTeam, (void)leId, (void)leOffset;
    return HOST_REFUSE();
}

ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld, ncclCftLeId_t *leId,
                                     size_t *leOffset)
{
    (void)window, (void)offset, (void)peerWorld, (void)leId, (void)leOffset;
    return HOST_REFUSE();
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
