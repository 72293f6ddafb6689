/* Types and constants of the NCCL 2.32 / RCCL C ABI, written from their documented values.
 *
 * Everything that calls or implements an NCCL entry point includes this header instead of nccl.h,
 * so neither the extension nor the host backend needs a CUDA or ROCm SDK to build. Layouts are the
 * x86_64 ones of NCCL 2.32.3 (nccl.h and nccl_device/host.h); the _Static_asserts at the end pin
 * sizes and the offsets that moved between releases, and tests/test_abi_real_nccl.py compares
 * every field offset with the header of the nvidia-nccl-cu12 wheel.
 *
 * Versioned structs: every struct that starts with size/magic/version only ever grows at its end,
 * so a 2.32 struct is a valid prefix-extended struct for an older library:
 *   - ncclConfig_t, ncclCollConfig_t: the library copies min(size, its own size) bytes and resets
 *     the fields newer than `version`, so stamping the newest version is always safe;
 *   - ncclCommProperties_t, ncclDevCommRequirements_t, ncclDevComm: the library refuses a
 *     `version` above its own (ncclInvalidUsage) and fills or reads the fields of that version
 *     only; callers lower `version` to the loaded library's (nx_struct_fit_library in the
 *     extension), and fields the library did not fill keep their initializer values.
 *
 * tests/rccl/test_rccl_header.py compiles this header and abi.h against RCCL's rccl.h (2.27.7):
 * every value, layout and signature RCCL declares matches, except that RCCL has no ncclTimeout
 * (its ncclNumResults is 8) and its ncclConfig_t ends at nvlsCTAs.
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
#define NCCL_ABI_API_VERSION NCCL_ABI_VERSION_CODE(2, 32, 3) /* the level we stamp structs with */

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
/* cudaStream_t and hipStream_t are both opaque pointers; one typedef serves both flavours. */
typedef struct CUstream_st *cudaStream_t;
typedef cudaStream_t hipStream_t;
/* cudaEvent_t likewise (ncclCollConfig_t.launchCompletionEvent). */
typedef struct CUevent_st *cudaEvent_t;

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

/* GIN (GPU-initiated networking) transports; 1 is intentionally unused. */
typedef enum {
    ncclGinTypeNone = 0,
    ncclGinTypeProxy = 2,
    ncclGinTypeGdaki = 3,
    ncclGinTypeGpi = 4,
    ncclGinTypeEfaGda = 5,
    ncclGinMaxTypes = 6
} ncclGinType_t;

typedef enum {
    ncclGinConnectionNone = 0,
    ncclGinConnectionFull = 1,
    ncclGinConnectionRail = 2,
    ncclGinConnectionCustomStride = 3
} ncclGinConnectionType_t;

typedef enum { ncclGinSignalInc = 0, ncclGinSignalAdd = 1 } ncclGinSignalOp_t;

typedef enum { ncclCftTeamFlat = 0, ncclCftTeamHierMultimem = 1, ncclCftTeamHierLsa = 2 } ncclCftTeamMode_t;

/* Bits of ncclDevCommRequirements_t.cftCaps. */
typedef enum { ncclCftNone = 0, ncclCft = 1, ncclCftMultimem = 2 } ncclCftCap_t;

/* ncclConfig_t.hostCftMode (2.31) and .nvlsHostMode (2.32, a bit set). */
typedef enum {
    ncclHostCftDefault = INT_MIN,
    ncclHostCftEnable = 1,
    ncclHostCftDisable = 2,
    ncclHostCftFallback = 3
} ncclHostCftMode_t;

typedef enum {
    ncclNvlsHostModeDefault = INT_MIN,
    ncclNvlsHostModeEnable = 0,
    ncclNvlsHostModeDisableTransport = 1,
    ncclNvlsHostModeDisableSymmetricMultimem = 2,
    ncclNvlsHostModeDisable = INT_MAX
} ncclNvlsHostMode_t;

typedef enum { ncclEncryptionModeNone = 0, ncclEncryptionModePsk = 1 } ncclEncryptionMode_t;

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
#define NCCL_WIN_GIN_ONLY 4
#define NCCL_WIN_CFT_COUNTED 8
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096
#define NCCL_CTA_POLICY_DEFAULT 0
#define NCCL_CTA_POLICY_EFFICIENCY 1
#define NCCL_CTA_POLICY_ZERO 2

/* ncclConfig_t, 2.32.3 field order (120 bytes). Libraries read it by its size and version fields,
 * so a caller stamping an older version keeps working against a newer library and vice versa.
 * Added after 2.27 (RCCL 2.27's layout ends at nvlsCTAs): nChannelsPerNetPeer and
 * nvlinkCentricSched 2.28; graphUsageMode, numRmaCtx 2.29; maxP2pPeers 2.30; graphStreamOrdering
 * 2.30.5; launchOrderImplicit, numRmaSig, rmaEagerInit, hostCftMode 2.31; nvlsHostMode 2.32. */
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
    int launchOrderImplicit;
    int numRmaSig;
    int rmaEagerInit;
    int hostCftMode;  /* ncclHostCftMode_t */
    int nvlsHostMode; /* ncclNvlsHostMode_t bits */
} ncclConfig_t;

/* One vendor option of a ncclCollConfig_t (2.31): a non-circular list through next. NVIDIA's
 * library ignores every option; vendors pick a vendorId below 2^24. 24 bytes. */
typedef struct ncclConfigExt {
    struct ncclConfigExt *next;
    struct {
        int vendorId;
        int optionId;
    } key;
    union {
        int i;
        const char *s;
        void *raw;
    } val;
} ncclConfigExt_t;

/* Per-call configuration of the nccl*Config collectives (2.31; 64 bytes, 72 from 2.32 with
 * launchCompletionEvent). The library requires size >= 64 and copies min(size, its own size). */
#define NCCL_COLL_CONFIG_MIN_SIZE 64
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    ncclConfigExt_t *ext;
    int minCTAs;
    int maxCTAs;
    int nvlsCTAs;
    int cgaClusterSize;
    const char *algSelection; /* NULL or "": automatic */
    int forceAlgSelection;    /* 1 (the initializer's): an unsatisfiable selection is an error */
    int CTAPolicy;
    uint64_t userProfilerTag;
    cudaEvent_t launchCompletionEvent; /* 2.32 */
} ncclCollConfig_t;

/* ncclSetEncryption's argument (2.32): TLS with a pre-shared key for NCCL's TCP sockets. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int mode; /* ncclEncryptionMode_t */
    const char *psk;
} ncclEncryptionConfig_t;

/* The handle-based parameter API (2.30.4): an opaque handle owned by the library. */
typedef struct ncclParamHandle *ncclParamHandle_t;

typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

/* The device API's host-side types (nccl_device/host.h, core.h). C bool is one byte: uint8_t
 * here. Handles are small structs passed by value. */
#define NCCL_GIN_MAX_CONNECTIONS 4
#define NCCL_GIN_SUPPORT_SLOTS 64
typedef uint32_t ncclDevResourceHandle_t;
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;
typedef uint32_t ncclCftLeId_t; /* a CFT logical endpoint id */

typedef struct {
    int nRanks;
    int rank;
    int stride;
} ncclTeam_t;

typedef struct {
    void *mcBasePtr;
} ncclMultimemHandle_t;

typedef struct {
    ncclDevResourceHandle_t bufHandle;
    int nBarriers;
} ncclLsaBarrierHandle_t;

typedef struct {
    ncclGinSignal_t signal0;
    ncclDevResourceHandle_t unused;
} ncclGinBarrierHandle_t;

typedef struct {
    ncclDevResourceHandle_t bufHandle;
    int nBarriers;
} ncclCftBarrierHandle_t;

typedef struct {
    ncclDevResourceHandle_t bufHandle;
    uint32_t nSlots;
} ncclLLA2AHandle_t;

/* A list of device resources a ncclDevCommCreate must allocate; the out* targets are written by
 * it. 56 bytes. */
typedef struct ncclDevResourceRequirements {
    struct ncclDevResourceRequirements *next;
    size_t bufferSize;
    size_t bufferAlign;
    ncclDevResourceHandle_t *outBufferHandle;
    int ginSignalCount;
    int ginCounterCount;
    ncclGinSignal_t *outGinSignalStart;
    ncclGinCounter_t *outGinCounterStart;
} ncclDevResourceRequirements_t;

typedef struct ncclTeamRequirements {
    struct ncclTeamRequirements *next;
    ncclTeam_t team;
    uint8_t multimem;
    ncclMultimemHandle_t *outMultimemHandle;
} ncclTeamRequirements_t;

/* 2.32 layout, 120 bytes. Added: ginConnectionType, ginExclusiveContexts, ginQueueDepth 2.29.7;
 * ginTrafficClass .. ginVaSignalsRequired 2.30; ginCustomStride .. cftBarrierCount 2.31. */
typedef struct ncclDevCommRequirements {
    size_t size;
    unsigned int magic;
    unsigned int version;
    ncclDevResourceRequirements_t *resourceRequirementsList;
    ncclTeamRequirements_t *teamRequirementsList;
    uint8_t lsaMultimem;
    int barrierCount;
    int lsaBarrierCount;
    int railGinBarrierCount;
    int lsaLLA2ABlockCount;
    int lsaLLA2ASlotCount;
    uint8_t ginForceEnable;
    int ginContextCount;
    int ginSignalCount;
    int ginCounterCount;
    int ginConnectionType; /* ncclGinConnectionType_t */
    uint8_t ginExclusiveContexts;
    int ginQueueDepth;
    int ginTrafficClass;
    int worldGinBarrierCount;
    uint8_t ginStrongSignalsRequired;
    uint8_t ginVaSignalsRequired;
    int ginCustomStride;
    int ginType; /* ncclGinType_t */
    uint8_t useRuntimeVersion;
    int cftCaps; /* ncclCftCap_t bits */
    int cftBarrierCount;
} ncclDevCommRequirements_t;

/* ncclCommQueryProperties' answer, 2.32 layout (152 bytes; 56 up to 2.30, 144 in 2.31). */
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
    int ginType; /* ncclGinType_t */
    int nLsaTeams;
    uint8_t hostRmaSupport;
    int railedGinType;
    uint64_t commHash;                      /* 2.31 */
    int ginMinStride;                       /* 2.31 */
    int ginConnectionType;                  /* 2.31, ncclGinConnectionType_t */
    uint8_t ginSupport[NCCL_GIN_SUPPORT_SLOTS]; /* 2.31: [t] is 1 when GIN type t is available */
    size_t devCommRuntimeVersionSize;       /* 2.31 */
    uint8_t cftSupport;                     /* 2.32 */
    uint8_t cftMulticastSupport;            /* 2.32 */
    uint8_t cftCountedSupport;              /* 2.32 */
} ncclCommProperties_t;

/* The addressing subset of a window kept inline in ncclDevComm. 16 bytes. */
typedef struct {
    char *lsaFlatBase;
    uint32_t stride4G;
    uint32_t mcOffset4K;
} ncclResourceWindowVidmem_t;

/* The device communicator ncclDevCommCreate fills (2.32: 248 bytes). Its first two words are the
 * library's own versioning; the rest is read by device code. */
typedef struct ncclDevComm {
    unsigned int magic;
    unsigned int version;
    int rank;
    int nRanks;
    uint32_t nRanks_rcp32;
    int lsaRank;
    int lsaSize;
    uint32_t lsaSize_rcp32;
    void *windowTable;
    ncclWindow_t resourceWindow;
    ncclResourceWindowVidmem_t resourceWindow_inlined;
    ncclGinBarrierHandle_t hybridDenseGinBarrier;
    ncclMultimemHandle_t lsaMultimem;
    ncclLsaBarrierHandle_t lsaBarrier;
    ncclGinBarrierHandle_t railGinBarrier;
    uint8_t ginConnectionCount;
    uint8_t backendIndex;
    uint8_t ginNetDeviceTypes[NCCL_GIN_MAX_CONNECTIONS];
    void *ginHandles[NCCL_GIN_MAX_CONNECTIONS];
    int ginSignalCount;
    int ginCounterCount;
    uint64_t *ginSignalShadows;
    uint32_t ginContextCount;
    int ginConnectionStride;
    int ginContextStride;
    uint8_t ginStrongLegacySignals;
    uint32_t *abortFlag;
    ncclLsaBarrierHandle_t hybridLsaBarrier;
    ncclGinBarrierHandle_t hybridRailGinBarrier;
    ncclGinBarrierHandle_t worldGinBarrier;
    uint32_t ginConnectionStride_rcp32;
    int cftRank;
    int cftSize;
    int cftMultimemRank;
    int cftMultimemSize;
    uint32_t cftMultimemSize_rcp32;
    ncclCftLeId_t ucLeId;
    ncclCftLeId_t mcLeId;
    ncclCftBarrierHandle_t cftBarrier;
    ncclCftBarrierHandle_t cftMultimemBarrier;
} ncclDevComm_t;

typedef struct {
    int opCnt;
    int peer;
    int sigIdx;
    int ctx;
} ncclWaitSignalDesc_t;

/* x86_64 sizes and the offsets that changed between releases (append-only growth). */
#define NCCL_ABI_LAYOUT(type, size) _Static_assert(sizeof(type) == (size), #type " is not " #size " bytes");
#define NCCL_ABI_AT(type, field, off) \
    _Static_assert(offsetof(type, field) == (off), #type "." #field " is not at " #off);
NCCL_ABI_LAYOUT(ncclUniqueId, 128)
NCCL_ABI_LAYOUT(ncclConfig_t, 120)
NCCL_ABI_AT(ncclConfig_t, commName, 48)
NCCL_ABI_AT(ncclConfig_t, graphStreamOrdering, 92)
NCCL_ABI_AT(ncclConfig_t, nvlsHostMode, 112)
NCCL_ABI_LAYOUT(ncclConfigExt_t, 24)
NCCL_ABI_AT(ncclConfigExt_t, val, 16)
NCCL_ABI_LAYOUT(ncclCollConfig_t, 72)
NCCL_ABI_AT(ncclCollConfig_t, algSelection, 40)
NCCL_ABI_AT(ncclCollConfig_t, userProfilerTag, 56)
NCCL_ABI_AT(ncclCollConfig_t, launchCompletionEvent, NCCL_COLL_CONFIG_MIN_SIZE)
NCCL_ABI_LAYOUT(ncclEncryptionConfig_t, 32)
NCCL_ABI_AT(ncclEncryptionConfig_t, psk, 24)
NCCL_ABI_LAYOUT(ncclSimInfo_t, 24)
NCCL_ABI_LAYOUT(ncclWaitSignalDesc_t, 16)
NCCL_ABI_LAYOUT(ncclCommProperties_t, 152)
NCCL_ABI_AT(ncclCommProperties_t, ginType, 36)
NCCL_ABI_AT(ncclCommProperties_t, railedGinType, 48)
NCCL_ABI_AT(ncclCommProperties_t, commHash, 56)
NCCL_ABI_AT(ncclCommProperties_t, ginSupport, 72)
NCCL_ABI_AT(ncclCommProperties_t, devCommRuntimeVersionSize, 136)
NCCL_ABI_AT(ncclCommProperties_t, cftCountedSupport, 146)
NCCL_ABI_LAYOUT(ncclTeam_t, 12)
NCCL_ABI_LAYOUT(ncclMultimemHandle_t, 8)
NCCL_ABI_LAYOUT(ncclLsaBarrierHandle_t, 8)
NCCL_ABI_LAYOUT(ncclGinBarrierHandle_t, 8)
NCCL_ABI_LAYOUT(ncclCftBarrierHandle_t, 8)
NCCL_ABI_LAYOUT(ncclLLA2AHandle_t, 8)
NCCL_ABI_LAYOUT(ncclDevResourceRequirements_t, 56)
NCCL_ABI_LAYOUT(ncclTeamRequirements_t, 32)
NCCL_ABI_AT(ncclTeamRequirements_t, multimem, 20)
NCCL_ABI_LAYOUT(ncclDevCommRequirements_t, 120)
NCCL_ABI_AT(ncclDevCommRequirements_t, ginConnectionType, 72)
NCCL_ABI_AT(ncclDevCommRequirements_t, ginVaSignalsRequired, 93)
NCCL_ABI_AT(ncclDevCommRequirements_t, cftBarrierCount, 112)
NCCL_ABI_LAYOUT(ncclResourceWindowVidmem_t, 16)
NCCL_ABI_LAYOUT(ncclDevComm_t, 248)
NCCL_ABI_AT(ncclDevComm_t, resourceWindow_inlined, 48)
NCCL_ABI_AT(ncclDevComm_t, ginHandles, 104)
NCCL_ABI_AT(ncclDevComm_t, abortFlag, 168)
NCCL_ABI_AT(ncclDevComm_t, cftMultimemBarrier, 240)
#undef NCCL_ABI_LAYOUT
#undef NCCL_ABI_AT

#ifdef __cplusplus
}
#endif
#endif
