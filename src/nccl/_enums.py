"""The enums of nccl.bindings.nccl (NCCL 2.32.3 values, nccl4py 0.6.0 names; the older ones are
identical in RCCL)."""

from enum import IntEnum


class Result(IntEnum):
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
    Sum = 0
    Prod = 1
    Max = 2
    Min = 3
    Avg = 4
    NumOps = 5
    MaxRedOp = 2147483647


class RedOpDummy(IntEnum):
    NumOps_dummy = 5


RedOp_dummy = RedOpDummy  # nccl4py 0.3.1's spelling


class ScalarResidence(IntEnum):
    Device = 0
    HostImmediate = 1


class CommMemStat(IntEnum):
    GpuMemSuspend = 0
    GpuMemSuspended = 1
    GpuMemPersist = 2
    GpuMemTotal = 3


class GinType(IntEnum):
    NONE = 0
    PROXY = 2
    GDAKI = 3
    GPI = 4
    EFA_GDA = 5
    GIN_MAX_TYPES = 6


class GinConnectionType(IntEnum):
    NONE = 0
    FULL = 1
    RAIL = 2
    CUSTOM_STRIDE = 3


class GinSignalOp(IntEnum):
    Inc = 0
    Add = 1


class CftTeamMode(IntEnum):
    FLAT = 0
    HIER_MULTIMEM = 1
    HIER_LSA = 2


class CftCap(IntEnum):
    NONE = 0
    CFT = 1
    MULTIMEM = 2


class HostCftMode(IntEnum):
    Default = -2147483648
    Enable = 1
    Disable = 2
    Fallback = 3


class NvlsHostMode(IntEnum):
    Default = -2147483648
    Enable = 0
    DisableTransport = 1
    DisableSymmetricMultimem = 2
    Disable = 2147483647


class EncryptionMode(IntEnum):
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
