"""nccl.core: the Pythonic API over NCCL/RCCL (API.md section 5).

Importing it loads no library. ``Communicator``, buffer and stream resolution and the resources
are C (``nccl._ext``); the enums, options, groups, unique ids, versions, memory and interop
helpers are here. ``nccl.core.cupy`` and ``nccl.core.torch`` are imported on first access.
"""

import nccl  # registers the cuda.core shim where needed, before anything imports cuda.core
from nccl._errors import NcclInvalid
from nccl.core._types import (
    AVG, BFLOAT16, CHAR, DOUBLE, FLOAT, FLOAT8E4M3, FLOAT8E5M2, FLOAT16, FLOAT32, FLOAT64, HALF, INT,
    INT8, INT32, INT64, MAX, MIN, PROD, SUM, UINT8, UINT32, UINT64, CommShrinkFlag, CommSuspendFlag,
    CTAPolicy, NcclCommMemStat, NcclDataType, NcclGinConnectionType, NcclGinType, NcclRedOp,
    WindowFlag,
)
from nccl.core.typing import NcclBufferSpec, NcclDeviceSpec, NcclScalarSpec, NcclStreamSpec
from nccl.core.communicator import Communicator, NCCLConfig, NCCLDevCommRequirements, WaitSignalDesc
from nccl.core.resources import CustomRedOp, DevCommResource, RegisteredBufferHandle, RegisteredWindowHandle
from nccl.core.group import GroupSimInfo, group, group_end, group_start
from nccl.core.utils import Version, UniqueId, get_error_string, get_lib_path, get_lib_version, get_unique_id, get_version
from nccl.core.memory import mem_alloc, mem_free

del nccl

__all__ = [
    # Types and specs
    "NcclDataType", "NcclRedOp", "NcclGinType", "NcclGinConnectionType", "NcclCommMemStat",
    "NcclBufferSpec", "NcclScalarSpec", "NcclDeviceSpec", "NcclStreamSpec",
    # Exceptions
    "NcclInvalid",
    # Data type constants
    "INT8", "CHAR", "UINT8", "INT32", "INT", "UINT32", "INT64", "UINT64", "FLOAT16", "HALF",
    "FLOAT32", "FLOAT", "FLOAT64", "DOUBLE", "BFLOAT16", "FLOAT8E4M3", "FLOAT8E5M2",
    # Reduction op constants
    "SUM", "PROD", "MAX", "MIN", "AVG",
    # Constants and enums
    "CTAPolicy", "CommShrinkFlag", "CommSuspendFlag", "WindowFlag",
    # Communicator
    "NCCLConfig", "WaitSignalDesc", "NCCLDevCommRequirements", "Communicator",
    # Resources
    "RegisteredBufferHandle", "RegisteredWindowHandle", "CustomRedOp", "DevCommResource",
    # Group
    "group", "group_start", "group_end", "GroupSimInfo",
    # Utilities
    "Version", "get_version", "get_lib_version", "get_lib_path", "UniqueId", "get_unique_id",
    "get_error_string",
    # Memory
    "mem_alloc", "mem_free",
]

_INTEROP = ("cupy", "torch")


def __getattr__(name):
    if name in _INTEROP:
        import importlib

        module = importlib.import_module(f"nccl.core.interop.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'nccl.core' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_INTEROP))
