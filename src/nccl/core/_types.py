"""The enums and constants of nccl.core (docs/compatibility.md#names-and-types). Pure Python; loads nothing.

The C core reads ``NcclDataType`` from here (src/ext/lazy.c), so its module path is a contract.
"""

from enum import IntEnum, IntFlag

import numpy as _np

from nccl._errors import NcclInvalid

__all__ = [
    "NcclDataType", "NcclRedOp", "NcclGinType", "NcclGinConnectionType", "NcclCommMemStat",
    "CTAPolicy", "CommShrinkFlag", "CommSuspendFlag", "WindowFlag", "NcclHostCftMode", "NcclCftTeamMode",
    "NcclCftCap", "NcclNvlsHostMode",
    "INT8", "CHAR", "UINT8", "INT32", "INT", "UINT32", "INT64", "UINT64", "FLOAT16", "HALF",
    "FLOAT32", "FLOAT", "FLOAT64", "DOUBLE", "BFLOAT16", "FLOAT8E4M3", "FLOAT8E5M2",
    "SUM", "PROD", "MAX", "MIN", "AVG",
]

# numpy dtype names that (kind, itemsize) cannot tell apart; they come from ml_dtypes.
_BY_NAME = {"bfloat16": 9, "float8_e4m3fn": 10, "float8_e5m2": 11}
_BY_KIND = {("f", 2): 6, ("f", 4): 7, ("f", 8): 8, ("i", 1): 0, ("i", 4): 2, ("i", 8): 4,
            ("u", 1): 1, ("u", 4): 3, ("u", 8): 5, ("b", 1): 1}
_ITEMSIZE = (1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1)
_NUMPY_NAMES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
                "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2")


class NcclDataType(IntEnum):
    """An NCCL datatype. ``NcclDataType(x)`` also accepts anything ``numpy.dtype()`` does."""

    INT8 = 0
    CHAR = 0
    UINT8 = 1
    INT32 = 2
    INT = 2
    UINT32 = 3
    INT64 = 4
    UINT64 = 5
    FLOAT16 = 6
    HALF = 6
    FLOAT32 = 7
    FLOAT = 7
    FLOAT64 = 8
    DOUBLE = 8
    BFLOAT16 = 9
    FLOAT8E4M3 = 10
    FLOAT8E5M2 = 11

    @classmethod
    def _missing_(cls, value):
        # Plain ints outside the table stay a ValueError (the standard IntEnum one).
        if isinstance(value, int):
            return None
        try:
            dtype = _np.dtype(value)
        except (TypeError, ValueError):
            return None
        return cls.from_numpy_dtype(dtype)

    @classmethod
    def from_numpy_dtype(cls, dtype):
        """The member for a numpy dtype: by name (bfloat16, fp8), then by (kind, itemsize).
        numpy bool maps to UINT8."""
        dtype = _np.dtype(dtype)
        code = _BY_NAME.get(dtype.name)
        if code is None:
            code = _BY_KIND.get((dtype.kind, dtype.itemsize))
        if code is None:
            raise NcclInvalid(
                f"Unsupported data type: numpy dtype {dtype} (kind={dtype.kind}, itemsize={dtype.itemsize}, "
                f"name={dtype.name}) has no NCCL equivalent")
        return cls(code)

    @property
    def itemsize(self):
        """The element size in bytes."""
        return _ITEMSIZE[self.value]

    @property
    def numpy_dtype(self):
        """The numpy dtype; bfloat16 and the fp8 formats need the ml_dtypes package."""
        name = _NUMPY_NAMES[self.value]
        if self.value < 9:
            return _np.dtype(name)
        try:
            import ml_dtypes
        except ImportError:
            raise NcclInvalid(f"Cannot create numpy dtype '{name}': ml-dtypes package is not installed. "
                              "Install it with: pip install ml-dtypes") from None
        return _np.dtype(getattr(ml_dtypes, name))

    def __str__(self):
        # Member names on every Python version (docs/compatibility.md#exceptions-and-messages).
        return self.name

    def __format__(self, spec):
        # Numeric format specs ("d", "x", "03d", ...) still format the value.
        if spec and spec[-1] in "bcdoxXneEfFgG%":
            return format(self.value, spec)
        return format(self.name, spec)


class NcclRedOp(IntEnum):
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    AVG = 4


class NcclGinType(IntEnum):
    NONE = 0
    PROXY = 2
    GDAKI = 3
    GPI = 4
    EFA_GDA = 5


class NcclGinConnectionType(IntEnum):
    NONE = 0
    FULL = 1
    RAIL = 2
    CUSTOM_STRIDE = 3


class NcclCommMemStat(IntEnum):
    GPU_MEM_SUSPEND = 0
    GPU_MEM_SUSPENDED = 1
    GPU_MEM_PERSIST = 2
    GPU_MEM_TOTAL = 3
    GpuMemSuspend = 0
    GpuMemSuspended = 1
    GpuMemPersist = 2
    GpuMemTotal = 3


class CTAPolicy(IntFlag):
    DEFAULT = 0
    EFFICIENCY = 1
    ZERO = 2
    Default = 0
    Efficiency = 1
    Zero = 2


class CommShrinkFlag(IntEnum):
    DEFAULT = 0
    ABORT = 1
    Default = 0
    Abort = 1


class CommSuspendFlag(IntFlag):
    MEM = 1
    Mem = 1


class WindowFlag(IntFlag):
    DEFAULT = 0
    COLL_SYMMETRIC = 1
    STRICT_ORDERING = 2
    GIN_ONLY = 4
    CFT_COUNTED = 8
    Default = 0
    CollSymmetric = 1
    StrictOrdering = 2


class NcclHostCftMode(IntEnum):
    """NCCLConfig.host_cft_mode (ncclHostCftMode_t, 2.31)."""

    DEFAULT = -2147483648  # NCCL_CONFIG_UNDEF_INT: the library decides
    ENABLE = 1
    DISABLE = 2
    FALLBACK = 3


class NcclCftTeamMode(IntEnum):
    """Communicator.team_cft(mode) (ncclCftTeamMode_t, 2.31)."""

    FLAT = 0
    HIER_MULTIMEM = 1
    HIER_LSA = 2


class NcclCftCap(IntFlag):
    """NCCLDevCommRequirements.cft_caps bits (ncclCftCap_t, 2.31)."""

    NONE = 0
    CFT = 1
    MULTIMEM = 2


class NcclNvlsHostMode(IntFlag):
    """NCCLConfig.nvls_host_mode bits (ncclNvlsHostMode_t, 2.32)."""

    ENABLE = 0
    DISABLE_TRANSPORT = 1
    DISABLE_SYMMETRIC_MULTIMEM = 2
    DISABLE = 2147483647


INT8 = NcclDataType.INT8
CHAR = NcclDataType.CHAR
UINT8 = NcclDataType.UINT8
INT32 = NcclDataType.INT32
INT = NcclDataType.INT
UINT32 = NcclDataType.UINT32
INT64 = NcclDataType.INT64
UINT64 = NcclDataType.UINT64
FLOAT16 = NcclDataType.FLOAT16
HALF = NcclDataType.HALF
FLOAT32 = NcclDataType.FLOAT32
FLOAT = NcclDataType.FLOAT
FLOAT64 = NcclDataType.FLOAT64
DOUBLE = NcclDataType.DOUBLE
BFLOAT16 = NcclDataType.BFLOAT16
FLOAT8E4M3 = NcclDataType.FLOAT8E4M3
FLOAT8E5M2 = NcclDataType.FLOAT8E5M2

SUM = NcclRedOp.SUM
PROD = NcclRedOp.PROD
MAX = NcclRedOp.MAX
MIN = NcclRedOp.MIN
AVG = NcclRedOp.AVG
