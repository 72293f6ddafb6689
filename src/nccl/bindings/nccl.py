"""nccl.bindings.nccl: one function per NCCL host C function, 1:1 (upstream nccl4py's names and
argument conventions: ints for pointers, Comm/Window handle objects or ints for communicators and
windows, PointerBox or handle_ptr addresses for 0.3.1-form out-parameters, buffers or addresses for
unique ids). The functions are C (nccl._ext); nothing here runs per call.

Importing this module loads no library: the first call that needs one does.

Not wrapped: NCCL 2.30's handle-based parameter reads (_NOT_WRAPPED below, from abi.h), which no
nccl4py release names; param_get_parameter reads any parameter by key instead.
"""

import numpy as _np

from nccl import _ext
from nccl._launch import check_one_rank as _check_one_rank
from nccl._enums import (  # noqa: F401
    CftCap,
    CftTeamMode,
    CommMemStat,
    DataType,
    EncryptionMode,
    GinConnectionType,
    GinSignalOp,
    GinType,
    HostCftMode,
    NCCL_API_MAGIC,
    NCCL_CONFIG_UNDEF_INT,
    NCCL_CTA_POLICY_DEFAULT,
    NCCL_CTA_POLICY_EFFICIENCY,
    NCCL_CTA_POLICY_ZERO,
    NCCL_REVOKE_DEFAULT,
    NCCL_SHRINK_ABORT,
    NCCL_SHRINK_DEFAULT,
    NCCL_SPLIT_NOCOLOR,
    NCCL_SUSPEND_MEM,
    NCCL_UNIQUE_ID_BYTES,
    NCCL_WIN_COLL_SYMMETRIC,
    NCCL_WIN_DEFAULT,
    NCCL_WIN_REQUIRED_ALIGNMENT,
    NCCL_WIN_STRICT_ORDERING,
    NvlsHostMode,
    RedOp,
    RedOp_dummy,
    RedOpDummy,
    Result,
    ScalarResidence,
)
from nccl._errors import (  # noqa: F401
    FunctionNotFoundError,
    HostBackendWarning,
    NCCLError,
    NCCLInternalError,
    NCCLInvalidArgument,
    NCCLInvalidUsage,
    NCCLNullHandleError,
    NCCLRemoteError,
    NCCLSystemError,
    NCCLTimeout,
    NCCLUnhandledCudaError,
    NotSupportedError,
)

# Every binding's name comes from the extension's method tables (src/ext/bindings/<section>.gen.c,
# generated from tools/nccl_surface.py, where it is written once); the loader's functions and
# check_status are the module's own additions.
_FUNCTIONS = _ext._NCCL_BINDINGS + ("get_library_path", "get_library_flavour", "get_load_attempts", "check_status")
_STRUCTS = (
    "UniqueId", "Config", "SimInfo", "WaitSignalDesc", "CommProperties", "CollConfig", "ConfigExt",
    "EncryptionConfig", "Team", "MultimemHandle", "LsaBarrierHandle", "GinBarrierHandle", "CftBarrierHandle",
    "LLA2AHandle", "ResourceWindowVidmem", "DevResourceRequirements", "TeamRequirements", "DevCommRequirements",
    "DevComm", "PointerBox",
)
_HANDLES = ("Comm", "Window")

globals().update({name: getattr(_ext, name) for name in _FUNCTIONS + _STRUCTS + _HANDLES})

# The NCCL header version these bindings implement (upstream: the headers they were generated
# from), decoded from the version code the extension stamps structs with.
__version__ = _ext._version_text(_ext._ABI_VERSION)

# nccl4py 0.3.1's spellings of names 0.5.0 renamed (RedOp_dummy is imported above).
ResourceWindow_vidmem = ResourceWindowVidmem  # noqa: F821 (set by the update above)
lla2a_calc_slots = ll_a2a_calc_slots  # noqa: F821

# ABI rows with no wrapper here: no nccl4py release names them. Their one list is abi.h's
# NCCL_ABI_NOT_WRAPPED, which the extension publishes; `python -m nccl doctor` lists them and
# docs/compatibility.md says why.
_NOT_WRAPPED = _ext._NOT_WRAPPED


def _make_dtypes():
    # The offsets come from the C struct definitions (nccl_abi.h) through the extension, so the
    # NumPy view can never drift from what the library reads. A field whose type names another
    # class is that class's dtype, nested.
    layouts = _ext._struct_layouts()
    made = {}

    def build(cls_name):
        if cls_name not in made:
            dtype_name, size, fields = layouts[cls_name]
            names, formats, offsets = [], [], []
            for field, offset, code, count in fields:
                fmt = build(code) if code in layouts else code
                names.append(field)
                formats.append((fmt, (count,)) if count != 1 else fmt)
                offsets.append(offset)
            made[cls_name] = (dtype_name, _np.dtype({"names": names, "formats": formats, "offsets": offsets,
                                                     "itemsize": size}))
        return made[cls_name][1]

    for cls_name in layouts:
        build(cls_name)
    _ext._register_numpy(_np.ndarray, {cls: dt for cls, (_, dt) in made.items()})
    return {dtype_name: dt for dtype_name, dt in made.values()}


globals().update(_make_dtypes())
# The creation functions run check_one_rank on a 1-rank communicator; numpy serves the scalar of
# create_pre_mul_sum. nccl.core registers both too: either import is enough.
_ext._register(check_one_rank=_check_one_rank, numpy=_np)

__all__ = sorted(
    [name for name in globals() if not name.startswith("_") and name != "annotations"]
)
