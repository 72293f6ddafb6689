/* Types and constants of the NCCL 2.30 / RCCL C ABI, written from their documented values.
 *
 * Everything that calls or implements an NCCL entry point includes this header instead of nccl.h,
 * so neither the extension nor the host backend needs a CUDA or ROCm SDK to build. Layouts are the
 * x86_64 ones of NCCL 2.30.7. tests/rccl/test_rccl_header.py compiles this header and abi.h against
 * RCCL's rccl.h (2.27.7): every value, layout and signature RCCL declares matches, except that RCCL
 * has no ncclTimeout (its ncclNumResults is 8) and its ncclConfig_t ends at nvlsCTAs.
 * The function signatures themselves live in abi.h, the one table of entry points. */
#ifndef NCCL4PY_NCCL_ABI_H
#define NCCL4PY_NCCL_ABI_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's version code: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 on. */
#define NCCL_ABI_VERSION_CODE(X, Y, Z) \
    (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_ABI_API_VERSION NCCL_ABI_VERSION_CODE(2, 30, 7) /* the level we stamp structs with */

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
/* cudaStream_t and hipStream_t are both opaque pointers; one typedef serves both flavours. */
typedef struct CUstream_st *cudaStream_t;
typedef cudaStream_t hipStream_t;

#define NCCL_COMM_NULL NULL
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclTimeout = 8,
    ncclNumResults = 9
} ncclResult_t;

typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclHalf = 6,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5, /* the first value handed out by ncclRedOpCreatePreMulSum */
    ncclMaxRedOp = 0x7fffffff /* keeps the enum 4 bytes wide */
} ncclRedOp_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

typedef enum {
    ncclStatGpuMemSuspend = 0,
    ncclStatGpuMemSuspended = 1,
    ncclStatGpuMemPersist = 2,
    ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;

typedef enum { ncclGinTypeNone = 0, ncclGinTypeProxy = 2, ncclGinTypeGdaki = 3 } ncclGinType_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_API_MAGIC 0xcafebeefu
#define NCCL_SIM_INFO_MAGIC 0x74685283u
#define NCCL_UNDEF_FLOAT -1.0f
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_SHRINK_DEFAULT 0
#define NCCL_SHRINK_ABORT 1
#define NCCL_REVOKE_DEFAULT 0
#define NCCL_SUSPEND_MEM 1
#define NCCL_WIN_DEFAULT 0
#define NCCL_WIN_COLL_SYMMETRIC 1
#define NCCL_WIN_STRICT_ORDERING 2
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096
#define NCCL_CTA_POLICY_DEFAULT 0
#define NCCL_CTA_POLICY_EFFICIENCY 1
#define NCCL_CTA_POLICY_ZERO 2

/* ncclConfig_t, 2.30.7 field order (96 bytes). Libraries read it by its size and version fields,
 * so a caller stamping an older version keeps working against a newer library and vice versa. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
    int graphUsageMode;
    int numRmaCtx;
    int maxP2pPeers;
    int graphStreamOrdering;
} ncclConfig_t;

typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

/* bool fields are one byte; ncclGinType_t is an int. 56 bytes on x86_64. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int rank;
    int nRanks;
    int cudaDev;
    int nvmlDev;
    uint8_t deviceApiSupport;
    uint8_t multimemSupport;
    int ginType;
    int nLsaTeams;
    uint8_t hostRmaSupport;
    int railedGinType;
} ncclCommProperties_t;

typedef struct {
    int opCnt;
    int peer;
    int sigIdx;
    int ctx;
} ncclWaitSignalDesc_t;

/* The device-communicator structs are only passed through by the host API; their layouts differ
 * between NVIDIA and RCCL builds, so they stay opaque here. */
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevComm ncclDevComm_t;

#ifdef __cplusplus
}
#endif
#endif
