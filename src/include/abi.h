/* THE list of NCCL/RCCL host entry points nccl4py calls or the host backend implements.
 *
 * One X-macro row per C function:  X(name, return type, (parameters), (argument names), since)
 *   since: the NCCL version code of the first release whose header declares it (NCCL_ABI_V below);
 *          0 for RCCL-only entry points, which no NCCL release has.
 * Everything that touches symbols is expanded from these rows: the loader's function-pointer
 * struct and dlsym loop, the "not found" message, _inspect_function_pointers(), the prototypes
 * the host backend exports, and the test suite's stub libraries. Adding an entry point is one row.
 *
 * NCCL_ABI_NCCL: the 93 host functions of NCCL 2.32.3 (nccl.h and nccl_device/host.h). `since` is
 *   the first nvidia-nccl-cu12 release whose header declares the function. Left out on purpose:
 *   ncclResetDebugInit (deprecated, "not part of the NCCL API"); ncclCftBarrierCreateRequirement
 *   (declared by the 2.32.3 header, exported by no release yet); ncclGinOutboxCreateRequirement
 *   and ncclGinInboxA2ACreateRequirement (Windows-only in the 2.32 header).
 * NCCL_ABI_NOT_WRAPPED: the NCCL_ABI_NCCL rows that no nccl.bindings function wraps, on purpose
 *   (expanded inside NCCL_ABI_NCCL; _ext._NOT_WRAPPED publishes their names).
 * NCCL_ABI_RCCL: entry points only RCCL exports (and the host backend, which serves both). RCCL
 *   2.27's rccl.h adds exactly these; its mscclLoadAlgo/RunAlgo/UnloadAlgo are marked removed
 *   from the public API there and are not rows.
 */
#ifndef NCCL4PY_ABI_H
#define NCCL4PY_ABI_H

#include "nccl_abi.h"

#define NCCL_ABI_V(X, Y, Z) NCCL_ABI_VERSION_CODE(X, Y, Z)
/* "Present in every NCCL 2.x we support" */
#define NCCL_ABI_ALWAYS NCCL_ABI_V(2, 3, 0)

/* clang-format off */
/* Rows with no nccl.bindings function, on purpose: NCCL 2.30's handle-based parameter reads,
 * which no nccl4py release names (param_get_parameter reads any parameter by key instead). They
 * are NCCL_ABI_NCCL rows like the others (loaded, exported by the host backend, stubbed by the
 * tests); the extension publishes their names as _ext._NOT_WRAPPED, which nccl.bindings.nccl
 * exports and `python -m nccl doctor` lists (docs/compatibility.md says why). */
#define NCCL_ABI_NOT_WRAPPED(X) \
    X(ncclParamBind, ncclResult_t, (ncclParamHandle_t *out, const char *key), (out, key), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGet, ncclResult_t, (ncclParamHandle_t h, void *out, int maxLen, int *len), (h, out, maxLen, len), \
      NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetI8, ncclResult_t, (ncclParamHandle_t h, int8_t *out), (h, out), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetI16, ncclResult_t, (ncclParamHandle_t h, int16_t *out), (h, out), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetI32, ncclResult_t, (ncclParamHandle_t h, int32_t *out), (h, out), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetI64, ncclResult_t, (ncclParamHandle_t h, int64_t *out), (h, out), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetU8, ncclResult_t, (ncclParamHandle_t h, uint8_t *out), (h, out), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetU16, ncclResult_t, (ncclParamHandle_t h, uint16_t *out), (h, out), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetU32, ncclResult_t, (ncclParamHandle_t h, uint32_t *out), (h, out), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetU64, ncclResult_t, (ncclParamHandle_t h, uint64_t *out), (h, out), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetStr, ncclResult_t, (ncclParamHandle_t h, const char **out), (h, out), NCCL_ABI_V(2, 30, 4))

#define NCCL_ABI_NCCL(X) \
    X(ncclMemAlloc, ncclResult_t, (void **ptr, size_t size), (ptr, size), NCCL_ABI_V(2, 19, 1)) \
    X(ncclMemFree, ncclResult_t, (void *ptr), (ptr), NCCL_ABI_V(2, 19, 1)) \
    X(ncclGetVersion, ncclResult_t, (int *version), (version), NCCL_ABI_ALWAYS) \
    X(ncclGetUniqueId, ncclResult_t, (ncclUniqueId *uniqueId), (uniqueId), NCCL_ABI_ALWAYS) \
    X(ncclCommInitRankConfig, ncclResult_t, \
      (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config), \
      (comm, nranks, commId, rank, config), NCCL_ABI_V(2, 14, 3)) \
    X(ncclCommInitRank, ncclResult_t, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank), \
      (comm, nranks, commId, rank), NCCL_ABI_ALWAYS) \
    X(ncclCommInitAll, ncclResult_t, (ncclComm_t *comm, int ndev, const int *devlist), \
      (comm, ndev, devlist), NCCL_ABI_ALWAYS) \
    X(ncclCommFinalize, ncclResult_t, (ncclComm_t comm), (comm), NCCL_ABI_V(2, 14, 3)) \
    X(ncclCommDestroy, ncclResult_t, (ncclComm_t comm), (comm), NCCL_ABI_ALWAYS) \
    X(ncclCommAbort, ncclResult_t, (ncclComm_t comm), (comm), NCCL_ABI_V(2, 4, 2)) \
    X(ncclCommRevoke, ncclResult_t, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags), \
      NCCL_ABI_V(2, 28, 7)) \
    X(ncclCommSplit, ncclResult_t, \
      (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config), \
      (comm, color, key, newcomm, config), NCCL_ABI_V(2, 18, 1)) \
    X(ncclCommShrink, ncclResult_t, \
      (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm, \
       ncclConfig_t *config, int shrinkFlags), \
      (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags), NCCL_ABI_V(2, 27, 3)) \
    X(ncclCommGetUniqueId, ncclResult_t, (ncclComm_t comm, ncclUniqueId *uniqueId), (comm, uniqueId), \
      NCCL_ABI_V(2, 29, 2)) \
    X(ncclCommGrow, ncclResult_t, \
      (ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm, \
       ncclConfig_t *config), \
      (comm, nRanks, uniqueId, rank, newcomm, config), NCCL_ABI_V(2, 29, 2)) \
    X(ncclCommInitRankScalable, ncclResult_t, \
      (ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds, ncclConfig_t *config), \
      (newcomm, nranks, myrank, nId, commIds, config), NCCL_ABI_V(2, 23, 4)) \
    X(ncclGetErrorString, const char *, (ncclResult_t result), (result), NCCL_ABI_ALWAYS) \
    X(ncclGetLastError, const char *, (ncclComm_t comm), (comm), NCCL_ABI_V(2, 13, 4)) \
    X(ncclCommGetAsyncError, ncclResult_t, (ncclComm_t comm, ncclResult_t *asyncError), \
      (comm, asyncError), NCCL_ABI_V(2, 4, 2)) \
    X(ncclCommCount, ncclResult_t, (const ncclComm_t comm, int *count), (comm, count), NCCL_ABI_ALWAYS) \
    X(ncclCommCuDevice, ncclResult_t, (const ncclComm_t comm, int *device), (comm, device), \
      NCCL_ABI_ALWAYS) \
    X(ncclCommUserRank, ncclResult_t, (const ncclComm_t comm, int *rank), (comm, rank), NCCL_ABI_ALWAYS) \
    X(ncclCommRegister, ncclResult_t, (const ncclComm_t comm, void *buff, size_t size, void **handle), \
      (comm, buff, size, handle), NCCL_ABI_V(2, 19, 1)) \
    X(ncclCommDeregister, ncclResult_t, (const ncclComm_t comm, void *handle), (comm, handle), \
      NCCL_ABI_V(2, 19, 1)) \
    X(ncclCommSuspend, ncclResult_t, (ncclComm_t comm, int flags), (comm, flags), NCCL_ABI_V(2, 29, 7)) \
    X(ncclCommResume, ncclResult_t, (ncclComm_t comm), (comm), NCCL_ABI_V(2, 29, 7)) \
    X(ncclCommMemStats, ncclResult_t, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value), \
      (comm, stat, value), NCCL_ABI_V(2, 29, 7)) \
    X(ncclCommWindowRegister, ncclResult_t, \
      (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags), \
      (comm, buff, size, win, winFlags), NCCL_ABI_V(2, 27, 3)) \
    X(ncclCommWindowDeregister, ncclResult_t, (ncclComm_t comm, ncclWindow_t win), (comm, win), \
      NCCL_ABI_V(2, 27, 3)) \
    X(ncclWinGetUserPtr, ncclResult_t, (ncclComm_t comm, ncclWindow_t win, void **outUserPtr), \
      (comm, win, outUserPtr), NCCL_ABI_V(2, 29, 2)) \
    X(ncclRedOpCreatePreMulSum, ncclResult_t, \
      (ncclRedOp_t *op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, \
       ncclComm_t comm), \
      (op, scalar, datatype, residence, comm), NCCL_ABI_V(2, 11, 4)) \
    X(ncclRedOpDestroy, ncclResult_t, (ncclRedOp_t op, ncclComm_t comm), (op, comm), NCCL_ABI_V(2, 11, 4)) \
    X(ncclReduce, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, \
       int root, ncclComm_t comm, cudaStream_t stream), \
      (sendbuff, recvbuff, count, datatype, op, root, comm, stream), NCCL_ABI_ALWAYS) \
    X(ncclBcast, ncclResult_t, \
      (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), \
      (buff, count, datatype, root, comm, stream), NCCL_ABI_ALWAYS) \
    X(ncclBroadcast, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, \
       ncclComm_t comm, cudaStream_t stream), \
      (sendbuff, recvbuff, count, datatype, root, comm, stream), NCCL_ABI_ALWAYS) \
    X(ncclAllReduce, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, \
       ncclComm_t comm, cudaStream_t stream), \
      (sendbuff, recvbuff, count, datatype, op, comm, stream), NCCL_ABI_ALWAYS) \
    X(ncclReduceScatter, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, \
       ncclComm_t comm, cudaStream_t stream), \
      (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), NCCL_ABI_ALWAYS) \
    X(ncclAllGather, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, \
       cudaStream_t stream), \
      (sendbuff, recvbuff, sendcount, datatype, comm, stream), NCCL_ABI_ALWAYS) \
    X(ncclAlltoAll, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, \
       cudaStream_t stream), \
      (sendbuff, recvbuff, count, datatype, comm, stream), NCCL_ABI_V(2, 28, 3)) \
    X(ncclGather, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, \
       ncclComm_t comm, cudaStream_t stream), \
      (sendbuff, recvbuff, count, datatype, root, comm, stream), NCCL_ABI_V(2, 28, 3)) \
    X(ncclScatter, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, \
       ncclComm_t comm, cudaStream_t stream), \
      (sendbuff, recvbuff, count, datatype, root, comm, stream), NCCL_ABI_V(2, 28, 3)) \
    X(ncclSend, ncclResult_t, \
      (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, \
       cudaStream_t stream), \
      (sendbuff, count, datatype, peer, comm, stream), NCCL_ABI_V(2, 7, 3)) \
    X(ncclRecv, ncclResult_t, \
      (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, \
       cudaStream_t stream), \
      (recvbuff, count, datatype, peer, comm, stream), NCCL_ABI_V(2, 7, 3)) \
    X(ncclPutSignal, ncclResult_t, \
      (const void *localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin, \
       size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, \
       cudaStream_t stream), \
      (localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, flags, comm, stream), \
      NCCL_ABI_V(2, 29, 2)) \
    X(ncclSignal, ncclResult_t, \
      (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream), \
      (peer, sigIdx, ctx, flags, comm, stream), NCCL_ABI_V(2, 29, 2)) \
    X(ncclWaitSignal, ncclResult_t, \
      (int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream), \
      (nDesc, signalDescs, comm, stream), NCCL_ABI_V(2, 29, 2)) \
    X(ncclGroupStart, ncclResult_t, (void), (), NCCL_ABI_ALWAYS) \
    X(ncclGroupEnd, ncclResult_t, (void), (), NCCL_ABI_ALWAYS) \
    X(ncclGroupSimulateEnd, ncclResult_t, (ncclSimInfo_t *simInfo), (simInfo), NCCL_ABI_V(2, 22, 3)) \
    X(ncclCommQueryProperties, ncclResult_t, (ncclComm_t comm, ncclCommProperties_t *props), \
      (comm, props), NCCL_ABI_V(2, 29, 2)) \
    X(ncclDevCommCreate, ncclResult_t, \
      (ncclComm_t comm, const ncclDevCommRequirements_t *reqs, ncclDevComm_t *outDevComm), \
      (comm, reqs, outDevComm), NCCL_ABI_V(2, 28, 3)) \
    X(ncclDevCommDestroy, ncclResult_t, (ncclComm_t comm, const ncclDevComm_t *devComm), \
      (comm, devComm), NCCL_ABI_V(2, 28, 3)) \
    X(ncclGetLsaMultimemDevicePointer, ncclResult_t, (ncclWindow_t window, size_t offset, void **outPtr), \
      (window, offset, outPtr), NCCL_ABI_V(2, 29, 2)) \
    X(ncclGetLsaDevicePointer, ncclResult_t, \
      (ncclWindow_t window, size_t offset, int lsaRank, void **outPtr), (window, offset, lsaRank, outPtr), \
      NCCL_ABI_V(2, 29, 2)) \
    X(ncclGetPeerDevicePointer, ncclResult_t, \
      (ncclWindow_t window, size_t offset, int peer, void **outPtr), (window, offset, peer, outPtr), \
      NCCL_ABI_V(2, 29, 2)) \
    X(ncclGetMultimemDevicePointer, ncclResult_t, \
      (ncclWindow_t window, size_t offset, ncclMultimemHandle_t multimem, void **outPtr), \
      (window, offset, multimem, outPtr), NCCL_ABI_V(2, 29, 2)) \
    X(ncclGetMultimemDeviceLeInfo, ncclResult_t, \
      (ncclWindow_t window, size_t offset, ncclCftLeId_t *leId, size_t *leOffset), \
      (window, offset, leId, leOffset), NCCL_ABI_V(2, 31, 2)) \
    X(ncclGetCftDeviceLeInfo, ncclResult_t, \
      (ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam, ncclCftLeId_t *leId, \
       size_t *leOffset), \
      (window, offset, peerCft, cftTeam, leId, leOffset), NCCL_ABI_V(2, 31, 2)) \
    X(ncclGetPeerDeviceLeInfo, ncclResult_t, \
      (ncclWindow_t window, size_t offset, int peerWorld, ncclCftLeId_t *leId, size_t *leOffset), \
      (window, offset, peerWorld, leId, leOffset), NCCL_ABI_V(2, 31, 2)) \
    X(ncclTeamWorld, ncclTeam_t, (ncclComm_t comm), (comm), NCCL_ABI_V(2, 28, 3)) \
    X(ncclTeamLsa, ncclTeam_t, (ncclComm_t comm), (comm), NCCL_ABI_V(2, 28, 3)) \
    X(ncclTeamRail, ncclTeam_t, (ncclComm_t comm), (comm), NCCL_ABI_V(2, 28, 3)) \
    X(ncclTeamCft, ncclTeam_t, (ncclComm_t comm, ncclCftTeamMode_t mode), (comm, mode), NCCL_ABI_V(2, 31, 2)) \
    X(ncclTeamCftMultimem, ncclTeam_t, (ncclComm_t comm), (comm), NCCL_ABI_V(2, 31, 2)) \
    X(ncclTeamRankToWorld, int, (ncclComm_t comm, ncclTeam_t team, int rank), (comm, team, rank), \
      NCCL_ABI_V(2, 28, 3)) \
    X(ncclTeamRankToLsa, int, (ncclComm_t comm, ncclTeam_t team, int rank), (comm, team, rank), \
      NCCL_ABI_V(2, 28, 3)) \
    X(ncclLsaBarrierCreateRequirement, ncclResult_t, \
      (ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t *outHandle, ncclDevResourceRequirements_t *outReq), \
      (team, nBarriers, outHandle, outReq), NCCL_ABI_V(2, 28, 3)) \
    X(ncclGinBarrierCreateRequirement, ncclResult_t, \
      (ncclComm_t comm, ncclTeam_t team, int nBarriers, ncclGinBarrierHandle_t *outHandle, \
       ncclDevResourceRequirements_t *outReq), \
      (comm, team, nBarriers, outHandle, outReq), NCCL_ABI_V(2, 29, 2)) \
    X(ncclLLA2ACalcSlots, int, (int maxElts, int maxEltSize), (maxElts, maxEltSize), NCCL_ABI_V(2, 28, 3)) \
    X(ncclLLA2ACreateRequirement, ncclResult_t, \
      (int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle, ncclDevResourceRequirements_t *outReq), \
      (nBlocks, nSlots, outHandle, outReq), NCCL_ABI_V(2, 28, 3)) \
    X(ncclAllReduceConfig, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, \
       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config), \
      (sendbuff, recvbuff, count, datatype, op, comm, stream, config), NCCL_ABI_V(2, 31, 2)) \
    X(ncclBroadcastConfig, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, \
       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config), \
      (sendbuff, recvbuff, count, datatype, root, comm, stream, config), NCCL_ABI_V(2, 31, 2)) \
    X(ncclReduceConfig, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, \
       int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config), \
      (sendbuff, recvbuff, count, datatype, op, root, comm, stream, config), NCCL_ABI_V(2, 31, 2)) \
    X(ncclAllGatherConfig, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, \
       cudaStream_t stream, const ncclCollConfig_t *config), \
      (sendbuff, recvbuff, sendcount, datatype, comm, stream, config), NCCL_ABI_V(2, 31, 2)) \
    X(ncclReduceScatterConfig, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, \
       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config), \
      (sendbuff, recvbuff, recvcount, datatype, op, comm, stream, config), NCCL_ABI_V(2, 31, 2)) \
    X(ncclAlltoAllConfig, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, \
       cudaStream_t stream, const ncclCollConfig_t *config), \
      (sendbuff, recvbuff, count, datatype, comm, stream, config), NCCL_ABI_V(2, 31, 2)) \
    X(ncclGatherConfig, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, \
       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config), \
      (sendbuff, recvbuff, count, datatype, root, comm, stream, config), NCCL_ABI_V(2, 31, 2)) \
    X(ncclScatterConfig, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, \
       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config), \
      (sendbuff, recvbuff, count, datatype, root, comm, stream, config), NCCL_ABI_V(2, 31, 2)) \
    X(ncclSetEncryption, ncclResult_t, (const ncclEncryptionConfig_t *config), (config), NCCL_ABI_V(2, 32, 3)) \
    NCCL_ABI_NOT_WRAPPED(X) \
    X(ncclParamGetParameter, ncclResult_t, (const char *key, const char **value, int *valueLen), \
      (key, value, valueLen), NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamGetAllParameterKeys, ncclResult_t, (const char ***table, int *tableLen), (table, tableLen), \
      NCCL_ABI_V(2, 30, 4)) \
    X(ncclParamDumpAll, void, (void), (), NCCL_ABI_V(2, 30, 4))

#define NCCL_ABI_RCCL(X) \
    X(ncclAllReduceWithBias, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, \
       ncclComm_t comm, hipStream_t stream, const void *acc), \
      (sendbuff, recvbuff, count, datatype, op, comm, stream, acc), 0) \
    X(ncclAlltoAllv, ncclResult_t, \
      (const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff, \
       const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype, ncclComm_t comm, \
       hipStream_t stream), \
      (sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, comm, stream), 0) \
    X(ncclAllToAllv, ncclResult_t, \
      (const void *sendbuff, const size_t sendcounts[], const size_t sdispls[], void *recvbuff, \
       const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype, ncclComm_t comm, \
       hipStream_t stream), \
      (sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, comm, stream), 0) \
    X(ncclAllToAll, ncclResult_t, \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, \
       hipStream_t stream), \
      (sendbuff, recvbuff, count, datatype, comm, stream), 0)
/* clang-format on */

#define NCCL_ABI(X) NCCL_ABI_NCCL(X) NCCL_ABI_RCCL(X)

/* Two spellings of one entry point: X(name, older spelling). RCCL exported the all-to-all pair as
 * ncclAllToAll/ncclAllToAllv before NCCL 2.28 named its own ncclAlltoAll (and RCCL 2.28 followed
 * with ncclAlltoAllv). The loader fills `name`'s table slot from the older spelling when the
 * library lacks `name`, so a library with either serves the entry point and the wrappers call
 * `name` alone (doctor reports the fill). Same signatures, rows above. */
#define NCCL_ABI_ALIASES(X) \
    X(ncclAlltoAll, ncclAllToAll) \
    X(ncclAlltoAllv, ncclAllToAllv)

/* The host backend's own marker (never an NCCL name): `const char *ncclHostGetInfo(void)` returns
 * static text describing the backend. The loader's flavour detection looks it up by this name. */
#define NCCL_HOST_INFO_SYMBOL "ncclHostGetInfo"
/* And `const char *ncclHostRefusedEntryPoints(void)`: the rows it exports but refuses with
 * ncclInvalidUsage (no device API on the CPU), space-separated, for `python -m nccl doctor`. */
#define NCCL_HOST_REFUSED_SYMBOL "ncclHostRefusedEntryPoints"

#endif
