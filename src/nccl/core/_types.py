"""The enums and constants of nccl.core (docs/compatibility.md#names-and-types). Loads no library.

The C core reads ``NcclDataType`` from here (src/ext/module/lazy.c), so its module path is a contract.

The values come from nccl._enums, which tools/gen_surface.py writes from src/include/nccl_abi.h
(the one place each value is written); the member names here are nccl.core's own spellings (upper
case, with nccl4py 0.3.1's camel-case ones as aliases).
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Any

import numpy as _np
from numpy.typing import DTypeLike

from nccl import _enums, _ext
from nccl._errors import NcclInvalid

__all__ = [
    "NcclDataType", "NcclRedOp", "NcclGinType", "NcclGinConnectionType", "NcclCommMemStat",
    "CTAPolicy", "CommShrinkFlag", "CommSuspendFlag", "WindowFlag", "NcclHostCftMode", "NcclCftTeamMode",
    "NcclCftCap", "NcclNvlsHostMode",
    "INT8", "CHAR", "UINT8", "INT32", "INT", "UINT32", "INT64", "UINT64", "FLOAT16", "HALF",
    "FLOAT32", "FLOAT", "FLOAT64", "DOUBLE", "BFLOAT16", "FLOAT8E4M3", "FLOAT8E5M2",
    "SUM", "PROD", "MAX", "MIN", "AVG",
]

# The C table of element types (src/ext/buffer/buffer_dtypes.c, from tools/nccl_surface.py's DTYPES):
# (value, numpy name, numpy kind, itemsize, short name, alias) rows, the datatypes first, each naming
# its numpy dtype. Names with no kind ("") are told apart by name alone; they come from ml_dtypes.
_BY_NAME = {name: value for value, name, kind, *_ in _ext._numpy_dtypes if not kind}
_BY_KIND = {(kind, size): value for value, _, kind, size, *_ in _ext._numpy_dtypes if kind}
_ITEMSIZE = {value: size for value, _, _, size, *_ in _ext._numpy_dtypes}
_NUMPY_NAMES = {value: name for value, name, *_, alias in _ext._numpy_dtypes if not alias}


class NcclDataType(IntEnum):
    """An NCCL datatype. ``NcclDataType(x)`` also accepts anything ``numpy.dtype()`` does."""

    INT8 = _enums.DataType.Int8.value
    CHAR = _enums.DataType.Char.value
    UINT8 = _enums.DataType.Uint8.value
    INT32 = _enums.DataType.Int32.value
    INT = _enums.DataType.Int.value
    UINT32 = _enums.DataType.Uint32.value
    INT64 = _enums.DataType.Int64.value
    UINT64 = _enums.DataType.Uint64.value
    FLOAT16 = _enums.DataType.Float16.value
    HALF = _enums.DataType.Half.value
    FLOAT32 = _enums.DataType.Float32.value
    FLOAT = _enums.DataType.Float.value
    FLOAT64 = _enums.DataType.Float64.value
    DOUBLE = _enums.DataType.Double.value
    BFLOAT16 = _enums.DataType.Bfloat16.value
    FLOAT8E4M3 = _enums.DataType.Float8e4m3.value
    FLOAT8E5M2 = _enums.DataType.Float8e5m2.value

    @classmethod
    def _missing_(cls, value: object) -> NcclDataType | None:
        # Plain ints outside the table stay a ValueError (the standard IntEnum one).
        if isinstance(value, int):
            return None
        try:
            dtype = _np.dtype(value)
        except (TypeError, ValueError):
            return None
        return cls.from_numpy_dtype(dtype)

    @classmethod
    def from_numpy_dtype(cls, dtype: DTypeLike) -> NcclDataType:
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
    def itemsize(self) -> int:
        """The element size in bytes."""
        return _ITEMSIZE[self.value]

    @property
    def numpy_dtype(self) -> _np.dtype[Any]:
        """The numpy dtype; bfloat16 and the fp8 formats need the ml_dtypes package."""
        name = _NUMPY_NAMES[self.value]
        if name not in _BY_NAME:
            return _np.dtype(name)
        try:
            import ml_dtypes
        except ImportError:
            raise NcclInvalid(f"Cannot create numpy dtype '{name}': ml-dtypes package is not installed. "
                              "Install it with: pip install ml-dtypes") from None
        return _np.dtype(getattr(ml_dtypes, name))

    def __str__(self) -> str:
        # Member names on every Python version (docs/compatibility.md#exceptions-and-messages).
        return self.name

    def __format__(self, spec: str) -> str:
        # Numeric format specs ("d", "x", "03d", ...) still format the value.
        if spec and spec[-1] in "bcdoxXneEfFgG%":
            return format(self.value, spec)
        return format(self.name, spec)


class NcclRedOp(IntEnum):
    """The built-in reduction operators (ncclRedOp_t); SUM ... AVG are also module constants."""

    SUM = _enums.RedOp.Sum.value
    PROD = _enums.RedOp.Prod.value
    MAX = _enums.RedOp.Max.value
    MIN = _enums.RedOp.Min.value
    AVG = _enums.RedOp.Avg.value


class NcclGinType(IntEnum):
    """The GPU-initiated networking implementation (Communicator.gin_type)."""

    NONE = _enums.GinType.NONE.value
    PROXY = _enums.GinType.PROXY.value
    GDAKI = _enums.GinType.GDAKI.value
    GPI = _enums.GinType.GPI.value
    EFA_GDA = _enums.GinType.EFA_GDA.value


class NcclGinConnectionType(IntEnum):
    """Which peers a device communicator connects over GIN (NCCLDevCommRequirements)."""

    NONE = _enums.GinConnectionType.NONE.value
    FULL = _enums.GinConnectionType.FULL.value
    RAIL = _enums.GinConnectionType.RAIL.value
    CUSTOM_STRIDE = _enums.GinConnectionType.CUSTOM_STRIDE.value


class NcclCommMemStat(IntEnum):
    """The memory statistics of Communicator.get_mem_stat (ncclCommMemStat_t)."""

    GPU_MEM_SUSPEND = _enums.CommMemStat.GpuMemSuspend.value
    GPU_MEM_SUSPENDED = _enums.CommMemStat.GpuMemSuspended.value
    GPU_MEM_PERSIST = _enums.CommMemStat.GpuMemPersist.value
    GPU_MEM_TOTAL = _enums.CommMemStat.GpuMemTotal.value
    GpuMemSuspend = GPU_MEM_SUSPEND
    GpuMemSuspended = GPU_MEM_SUSPENDED
    GpuMemPersist = GPU_MEM_PERSIST
    GpuMemTotal = GPU_MEM_TOTAL


class CTAPolicy(IntFlag):
    """NCCLConfig.cta_policy and NCCLCollConfig.cta_policy bits (NCCL_CTA_POLICY_*)."""

    DEFAULT = _enums.NCCL_CTA_POLICY_DEFAULT
    EFFICIENCY = _enums.NCCL_CTA_POLICY_EFFICIENCY
    ZERO = _enums.NCCL_CTA_POLICY_ZERO
    Default = DEFAULT
    Efficiency = EFFICIENCY
    Zero = ZERO


class CommShrinkFlag(IntEnum):
    """Communicator.shrink(flag=...): DEFAULT waits for outstanding work, ABORT aborts it first."""

    DEFAULT = _enums.NCCL_SHRINK_DEFAULT
    ABORT = _enums.NCCL_SHRINK_ABORT
    Default = DEFAULT
    Abort = ABORT


class CommSuspendFlag(IntFlag):
    """Communicator.suspend(flags=...): MEM releases the communicator's dynamic GPU memory."""

    MEM = _enums.NCCL_SUSPEND_MEM
    Mem = MEM


class WindowFlag(IntFlag):
    """Communicator.register_window(flags=...) bits (NCCL_WIN_*)."""

    DEFAULT = _enums.NCCL_WIN_DEFAULT
    COLL_SYMMETRIC = _enums.NCCL_WIN_COLL_SYMMETRIC
    STRICT_ORDERING = _enums.NCCL_WIN_STRICT_ORDERING
    GIN_ONLY = _enums._NCCL_WIN_GIN_ONLY  # not in nccl.bindings (nccl4py 0.6.0's bindings name none)
    CFT_COUNTED = _enums._NCCL_WIN_CFT_COUNTED
    Default = DEFAULT
    CollSymmetric = COLL_SYMMETRIC
    StrictOrdering = STRICT_ORDERING


class NcclHostCftMode(IntEnum):
    """NCCLConfig.host_cft_mode (ncclHostCftMode_t, 2.31)."""

    DEFAULT = _enums.HostCftMode.Default.value  # NCCL_CONFIG_UNDEF_INT: the library decides
    ENABLE = _enums.HostCftMode.Enable.value
    DISABLE = _enums.HostCftMode.Disable.value
    FALLBACK = _enums.HostCftMode.Fallback.value


class NcclCftTeamMode(IntEnum):
    """Communicator.team_cft(mode) (ncclCftTeamMode_t, 2.31)."""

    FLAT = _enums.CftTeamMode.FLAT.value
    HIER_MULTIMEM = _enums.CftTeamMode.HIER_MULTIMEM.value
    HIER_LSA = _enums.CftTeamMode.HIER_LSA.value


class NcclCftCap(IntFlag):
    """NCCLDevCommRequirements.cft_caps bits (ncclCftCap_t, 2.31)."""

    NONE = _enums.CftCap.NONE.value
    CFT = _enums.CftCap.CFT.value
    MULTIMEM = _enums.CftCap.MULTIMEM.value


class NcclNvlsHostMode(IntFlag):
    """NCCLConfig.nvls_host_mode bits (ncclNvlsHostMode_t, 2.32)."""

    ENABLE = _enums.NvlsHostMode.Enable.value
    DISABLE_TRANSPORT = _enums.NvlsHostMode.DisableTransport.value
    DISABLE_SYMMETRIC_MULTIMEM = _enums.NvlsHostMode.DisableSymmetricMultimem.value
    DISABLE = _enums.NvlsHostMode.Disable.value


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
