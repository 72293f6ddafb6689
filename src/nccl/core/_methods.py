"""The parts of nccl._ext's C types that compose and configure rather than carry a call's cost or
safety, written here over the bindings (nccl.bindings.nccl). nccl.core's import hands them to the
C types (nccl._ext._register(RegisteredWindowHandle=WINDOW_METHODS, ...)), so C never looks Python
up by name; the library calls, their argument conversion and the objects' lifetime stay in C.

Also the helpers the C code calls: ``ml_dtype``.
"""

from __future__ import annotations

from typing import Any

from nccl.bindings import nccl as _b
from nccl.core._team import CftLeInfo


def ml_dtype(name: str) -> Any:
    """The ml_dtypes type of that name (bfloat16, float8_e4m3fn, float8_e5m2), importing the optional
    ml_dtypes package on first use; ImportError when it is not installed (Communicator.create_pre_mul_sum
    turns that into NcclInvalid)."""
    import ml_dtypes

    return getattr(ml_dtypes, name)


# ---- RegisteredWindowHandle's multimem pointer and logical-endpoint queries (nccl4py 0.5.0) ----
# get_multimem_device_pointer (ncclGetMultimemDevicePointer, 2.29.2) and get_multimem_le_info,
# get_peer_le_info, get_cft_le_info (ncclGet*DeviceLeInfo, 2.31.2). Offsets are in bytes, as the C
# calls take them; `self._window` is the open window (RuntimeError once closed or while pending).


def _multimem(fname: str, multimem: object) -> Any:
    """A bindings MultimemHandle for a MultimemHandle view (anything with mc_base_pointer) or a
    bindings MultimemHandle itself; never an address, which the binding would read through."""
    if isinstance(multimem, _b.MultimemHandle):
        return multimem
    try:
        base = multimem.mc_base_pointer  # type: ignore[attr-defined]
    except AttributeError:
        raise TypeError(f"{fname}: multimem must be a MultimemHandle, got {type(multimem).__name__}") from None
    mm = _b.MultimemHandle()
    mm.mc_base_ptr = base
    return mm


def _cft_team(fname: str, team: object) -> Any:
    """A bindings Team for an NCCLTeam (anything with n_ranks, rank and stride) or a bindings Team."""
    if isinstance(team, _b.Team):
        return team
    t = _b.Team()
    try:
        t.n_ranks, t.rank, t.stride = team.n_ranks, team.rank, team.stride  # type: ignore[attr-defined]
    except AttributeError:
        raise TypeError(f"{fname}: cft_team must be an NCCLTeam, got {type(team).__name__}") from None
    return t


def get_multimem_device_pointer(self: Any, multimem: Any, offset: int = 0) -> int | None:
    """ncclGetMultimemDevicePointer: the multicast address of this window at a byte offset, for a
    MultimemHandle (DevCommResource.multimem_handle(team)); None when NCCL returns NULL."""
    mm = _multimem("get_multimem_device_pointer", multimem)
    pointer: int = _b.get_multimem_device_pointer(self._window, offset, mm)
    return pointer or None


def get_multimem_le_info(self: Any, offset: int = 0) -> CftLeInfo:
    """ncclGetMultimemDeviceLeInfo: the CftLeInfo of this window's multicast mapping at a byte offset."""
    return CftLeInfo(*_b.get_multimem_device_le_info(self._window, offset))


def get_peer_le_info(self: Any, peer: int, offset: int = 0) -> CftLeInfo:
    """ncclGetPeerDeviceLeInfo: the CftLeInfo of world rank peer's window at a byte offset."""
    return CftLeInfo(*_b.get_peer_device_le_info(self._window, offset, peer))


def get_cft_le_info(self: Any, peer_cft: int, cft_team: Any, offset: int = 0) -> CftLeInfo:
    """ncclGetCftDeviceLeInfo: the CftLeInfo of member peer_cft of cft_team (Communicator.team_cft) at a
    byte offset of this window."""
    team = _cft_team("get_cft_le_info", cft_team)
    return CftLeInfo(*_b.get_cft_device_le_info(self._window, offset, peer_cft, team))


def _methods(owner: str, *functions: Any) -> dict[str, Any]:
    """{name: function} for a C type's dict, each named as that type's method."""
    for f in functions:
        f.__qualname__ = f"{owner}.{f.__name__}"
        f.__module__ = "nccl.core.resources" if owner != "Communicator" else "nccl.core.communicator"
    return {f.__name__: f for f in functions}


WINDOW_METHODS = _methods("RegisteredWindowHandle", get_multimem_device_pointer, get_multimem_le_info,
                          get_peer_le_info, get_cft_le_info)
