"""The enums of nccl.bindings.nccl (NCCL 2.32.3 values, nccl4py 0.6.0 names; the older ones are
identical in RCCL)."""

from enum import IntEnum


class Result(IntEnum):
    """ncclResult_t: the status every NCCL call returns."""

    Success = 0
    UnhandledCudaError = 1
    SystemError = 2
    InternalError = 3
    InvalidArgument = 4
    InvalidUsage = 5
    RemoteError = 6
    InProgress = 7
    Timeout = 8
    NumResults = 9


class DataType(IntEnum):
    """ncclDataType_t: the element type of a buffer."""

    Int8 = 0
    Char = 0
    Uint8 = 1
    Int32 = 2
    Int = 2
    Uint32 = 3
    Int64 = 4
    Uint64 = 5
    Float16 = 6
    Half = 6
    Float32 = 7
    Float = 7
    Float64 = 8
    Double = 8
    Bfloat16 = 9
    Float8e4m3 = 10
    Float8e5m2 = 11
    NumTypes = 12


class RedOp(IntEnum):
    """ncclRedOp_t: the reduction operators; a PreMulSum operator made by red_op_create_pre_mul_sum has a value of its own."""

    Sum = 0
    Prod = 1
    Max = 2
    Min = 3
    Avg = 4
    NumOps = 5
    MaxRedOp = 2147483647


class RedOpDummy(IntEnum):
    """ncclRedOp_dummy_t: the count of the built-in operators (NCCL's header keeps it for ABI stability)."""

    NumOps_dummy = 5


RedOp_dummy = RedOpDummy  # nccl4py 0.3.1's spelling


class ScalarResidence(IntEnum):
    """ncclScalarResidence_t: where the scalar of red_op_create_pre_mul_sum lives."""

    Device = 0
    HostImmediate = 1


class CommMemStat(IntEnum):
    """ncclCommMemStat_t: the memory statistic comm_mem_stats reports."""

    GpuMemSuspend = 0
    GpuMemSuspended = 1
    GpuMemPersist = 2
    GpuMemTotal = 3


class GinType(IntEnum):
    """ncclGinType_t: the GPU-initiated networking implementation of a communicator."""

    NONE = 0
    PROXY = 2
    GDAKI = 3
    GPI = 4
    EFA_GDA = 5
    GIN_MAX_TYPES = 6


class GinConnectionType(IntEnum):
    """ncclGinConnectionType_t: which peers a device communicator connects over GIN."""

    NONE = 0
    FULL = 1
    RAIL = 2
    CUSTOM_STRIDE = 3


class GinSignalOp(IntEnum):
    """ncclGinSignalOp_t: how a GIN signal is updated."""

    Inc = 0
    Add = 1


class CftTeamMode(IntEnum):
    """ncclCftTeamMode_t: the layout of team_cft."""

    FLAT = 0
    HIER_MULTIMEM = 1
    HIER_LSA = 2


class CftCap(IntEnum):
    """ncclCftCap_t: capability bits of the CFT device API."""

    NONE = 0
    CFT = 1
    MULTIMEM = 2


class HostCftMode(IntEnum):
    """ncclHostCftMode_t: Config.host_cft_mode."""

    Default = -2147483648
    Enable = 1
    Disable = 2
    Fallback = 3


class NvlsHostMode(IntEnum):
    """ncclNvlsHostMode_t: Config.nvls_host_mode."""

    Default = -2147483648
    Enable = 0
    DisableTransport = 1
    DisableSymmetricMultimem = 2
    Disable = 2147483647


class EncryptionMode(IntEnum):
    """ncclEncryptionMode_t: EncryptionConfig.mode."""

    NONE = 0
    PSK = 1


# C constants that have no Python enum.
NCCL_WIN_DEFAULT = 0
NCCL_WIN_COLL_SYMMETRIC = 1
NCCL_WIN_STRICT_ORDERING = 2
NCCL_WIN_REQUIRED_ALIGNMENT = 4096
NCCL_CTA_POLICY_DEFAULT = 0
NCCL_CTA_POLICY_EFFICIENCY = 1
NCCL_CTA_POLICY_ZERO = 2
NCCL_SHRINK_DEFAULT = 0
NCCL_SHRINK_ABORT = 1
NCCL_REVOKE_DEFAULT = 0
NCCL_SUSPEND_MEM = 1
NCCL_SPLIT_NOCOLOR = -1
NCCL_CONFIG_UNDEF_INT = -2147483648
NCCL_API_MAGIC = 0xCAFEBEEF
NCCL_UNIQUE_ID_BYTES = 128
