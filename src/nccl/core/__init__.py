"""nccl.core: the Pythonic API over NCCL/RCCL (docs/compatibility.md#ncclcore), with NVIDIA nccl4py 0.6.0's names
and signatures; nccl4py 0.2.0/0.3.1's and the RCCL fork's forms keep working beside them
(docs/compatibility.md).

Importing it loads no library. ``Communicator``, buffer and stream resolution and the resources
are C (``nccl._ext``); the enums, options, groups, unique ids, versions, memory and interop
helpers are here. ``nccl.core.cupy`` and ``nccl.core.torch`` are imported on first access.
"""

from types import ModuleType as _ModuleType

import nccl  # registers the cuda.core shim where needed, before anything imports cuda.core
from nccl._errors import NcclInvalid
from nccl.core._types import (
    AVG, BFLOAT16, CHAR, DOUBLE, FLOAT, FLOAT8E4M3, FLOAT8E5M2, FLOAT16, FLOAT32, FLOAT64, HALF, INT,
    INT8, INT32, INT64, MAX, MIN, PROD, SUM, UINT8, UINT32, UINT64, CommShrinkFlag, CommSuspendFlag,
    CTAPolicy, NcclCftCap, NcclCftTeamMode, NcclCommMemStat, NcclDataType, NcclGinConnectionType, NcclGinType,
    NcclHostCftMode, NcclNvlsHostMode, NcclRedOp, WindowFlag,
)
from nccl.core.typing import NcclBufferSpec, NcclDeviceSpec, NcclEventSpec, NcclScalarSpec, NcclStreamSpec
from nccl.core.communicator import (
    Communicator, NCCLCollConfig, NCCLConfig, NCCLDevCommRequirements, VendorOption, WaitSignalDesc,
)
from nccl.core._team import (
    CftLeInfo, GinBarrierHandle, GinBarrierRequirement, LLA2AHandle, LLA2ARequirement, LsaBarrierHandle,
    LsaBarrierRequirement, MultimemHandle, NCCLCommProperties, NCCLTeam, TeamRequirement,
)
from nccl.core.resources import CustomRedOp, DevCommResource, RegisteredBufferHandle, RegisteredWindowHandle
from nccl.core.group import GroupSimInfo, group, group_end, group_start
from nccl.core.utils import (
    LibraryInfo, Version, VersionInfo, UniqueId, get_error_string, get_lib_path, get_lib_version, get_unique_id,
    get_version, show_versions,
)
from nccl.core.params import dump_params, params
from nccl.core.memory import mem_alloc, mem_free
from nccl.core._recorder import dump_trace
from nccl._version import __version__
# Upstream's nccl.core has these submodules as attributes once it is imported (its __init__ imports
# from them); code written for it may reach them so (nccl.core.constants.X) without importing them.
from nccl.core import buffer, constants, cuda, team  # noqa: F401


def _register():
    """Hands nccl._ext the Python objects its C code uses, and the C types' attributes written in Python
    (Communicator.from_env, nccl.core._methods) (lazy.c)."""
    import numpy

    from nccl import _ext
    from nccl._enums import Result
    from nccl._launch import check_one_rank
    from nccl.core import _methods, communicator, cuda

    _ext._register(
        NcclDataType=NcclDataType, Result=Result, UniqueId=UniqueId, NCCLConfig=NCCLConfig,
        get_cuda_device=cuda.get_cuda_device, get_num_devices=cuda.get_num_devices,
        get_event_ptr=cuda.get_event_ptr, WaitSignalDesc=WaitSignalDesc, NcclGinType=NcclGinType,
        numpy=numpy, NCCLCollConfig=NCCLCollConfig, check_one_rank=check_one_rank, ml_dtype=_methods.ml_dtype,
        Communicator={"from_env": classmethod(communicator.from_env), **_methods.COMMUNICATOR_ATTRIBUTES},
        RegisteredWindowHandle=_methods.WINDOW_METHODS,
    )


_register()
del nccl, _register

__all__ = [
    "__version__",
    # Types and specs
    "NcclDataType", "NcclRedOp", "NcclGinType", "NcclGinConnectionType", "NcclCommMemStat",
    "NcclHostCftMode", "NcclCftTeamMode", "NcclCftCap", "NcclNvlsHostMode",
    "NcclBufferSpec", "NcclScalarSpec", "NcclDeviceSpec", "NcclStreamSpec", "NcclEventSpec",
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
    "NCCLConfig", "NCCLCollConfig", "VendorOption", "WaitSignalDesc", "NCCLDevCommRequirements",
    "NCCLCommProperties", "Communicator",
    # Teams, device-communicator requirements and handle views
    "NCCLTeam", "TeamRequirement", "LsaBarrierRequirement", "GinBarrierRequirement", "LLA2ARequirement",
    "MultimemHandle", "LsaBarrierHandle", "GinBarrierHandle", "LLA2AHandle", "CftLeInfo",
    # Resources
    "RegisteredBufferHandle", "RegisteredWindowHandle", "CustomRedOp", "DevCommResource",
    # Group
    "group", "group_start", "group_end", "GroupSimInfo",
    # Versions (0.6.0) and nccl4py 0.3.1's Version, get_lib_version, get_lib_path
    "LibraryInfo", "VersionInfo", "get_version", "show_versions", "Version", "get_lib_version", "get_lib_path",
    # Utilities
    "UniqueId", "get_unique_id", "get_error_string", "params", "dump_params",
    # Memory
    "mem_alloc", "mem_free",
    # The flight recorder (an addition, docs/api/trace.md)
    "dump_trace",
    # Interop modules, imported on first access
    "cupy", "torch",
]

_INTEROP = ("cupy", "torch")


def __getattr__(name: str) -> _ModuleType:
    if name in _INTEROP:
        import importlib

        module = importlib.import_module(f"nccl.core.interop.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'nccl.core' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_INTEROP))
