"""The parts of nccl._ext's C types that compose and configure rather than carry a call's cost or
safety, written here over the bindings (nccl.bindings.nccl): Communicator's teams, ``properties``
and ``create_dev_comm``, RegisteredWindowHandle's logical-endpoint queries. nccl.core's import hands them to
the C types (nccl._ext._register(Communicator=COMMUNICATOR_ATTRIBUTES, ...)), so C never looks
Python up by name; the library calls, their argument conversion and the objects' lifetime stay in C
(``Communicator._require(op)``: the handle, or NCCLNullHandleError; ``RegisteredWindowHandle._window``;
``Communicator._create_dev_comm``: ncclDevCommCreate and the DevCommResource it returns).

Also the helpers the C code calls: ``ml_dtype``.
"""

from __future__ import annotations

import operator
from typing import Any

from nccl import _ext
from nccl._errors import NcclInvalid
from nccl.bindings import nccl as _b
from nccl.core._config import NCCLDevCommRequirements
from nccl.core._team import (
    CftLeInfo, GinBarrierHandle, LLA2AHandle, LLA2ARequirement, LsaBarrierHandle, LsaBarrierRequirement,
    MultimemHandle, NCCLCommProperties, NCCLTeam,
)
from nccl.core._types import NcclCftTeamMode


def ml_dtype(name: str) -> Any:
    """The ml_dtypes type of that name (bfloat16, float8_e4m3fn, float8_e5m2), importing the optional
    ml_dtypes package on first use; ImportError when it is not installed (Communicator.create_pre_mul_sum
    turns that into NcclInvalid)."""
    import ml_dtypes

    return getattr(ml_dtypes, name)


# The methods below carry no annotations: their signatures print as the C methods' did (parameter
# names and defaults, as upstream's); the types are in the .pyi stubs.

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


def get_multimem_device_pointer(self, multimem, offset=0):  # type: ignore[no-untyped-def]
    """ncclGetMultimemDevicePointer: the multicast address of this window at a byte offset, for a
    MultimemHandle (DevCommResource.multimem_handle(team)); None when NCCL returns NULL."""
    mm = _multimem("get_multimem_device_pointer", multimem)
    return _b.get_multimem_device_pointer(self._window, offset, mm) or None


def get_multimem_le_info(self, offset=0):  # type: ignore[no-untyped-def]
    """ncclGetMultimemDeviceLeInfo: the CftLeInfo of this window's multicast mapping at a byte offset."""
    return CftLeInfo(*_b.get_multimem_device_le_info(self._window, offset))


def get_peer_le_info(self, peer, offset=0):  # type: ignore[no-untyped-def]
    """ncclGetPeerDeviceLeInfo: the CftLeInfo of world rank peer's window at a byte offset."""
    return CftLeInfo(*_b.get_peer_device_le_info(self._window, offset, peer))


def get_cft_le_info(self, peer_cft, cft_team, offset=0):  # type: ignore[no-untyped-def]
    """ncclGetCftDeviceLeInfo: the CftLeInfo of member peer_cft of cft_team (Communicator.team_cft) at a
    byte offset of this window."""
    team = _cft_team("get_cft_le_info", cft_team)
    return CftLeInfo(*_b.get_cft_device_le_info(self._window, offset, peer_cft, team))


# ---- Communicator's teams (nccl4py 0.4.1 to 0.6.0) and properties ----
# A team made here remembers its communicator's handle in `_origin` (not a field: equality is by
# value, as upstream), and a team from another communicator is refused before the library sees it.

_QUERY = " Raises NcclInvalid on a null communicator."


def _team_of(comm: int, t: Any) -> NCCLTeam:
    """The NCCLTeam of a bindings Team, stamped with the communicator it came from."""
    team = NCCLTeam(t.n_ranks, t.rank, t.stride)
    object.__setattr__(team, "_origin", comm)  # frozen dataclass; not a field
    return team


def _team_property(name: str, binding: Any, doc: str) -> property:
    op = f"get {name}"

    def get(self: Any) -> NCCLTeam:
        comm = self._require(op)
        return _team_of(comm, binding(comm))

    get.__name__, get.__qualname__ = name, f"Communicator.{name}"
    return property(get, doc=doc + _QUERY)


def _properties(self: Any) -> NCCLCommProperties:
    return NCCLCommProperties._from_lowpp(self._properties, _ext._library_info()[2])


def team_cft(self, mode=NcclCftTeamMode.FLAT):  # type: ignore[no-untyped-def]
    """The CFT NCCLTeam of this rank in the given NcclCftTeamMode (ncclTeamCft, NCCL 2.31)."""
    comm = self._require("team_cft")
    return _team_of(comm, _b.team_cft(comm, mode))


# Enum defaults are spelled with their module in the text signature, as the C methods' are, so that
# inspect can evaluate them.
team_cft.__text_signature__ = "($self, mode=nccl.core.NcclCftTeamMode.FLAT)"  # type: ignore[attr-defined]


def _team_arg(comm: int, fname: str, team: object) -> Any:
    """A bindings Team for a team argument: an NCCLTeam (made by this communicator, or by the caller)
    or a bindings Team struct."""
    if isinstance(team, _b.Team):
        return team
    if not isinstance(team, NCCLTeam):
        raise TypeError(f"{fname}: team must be an NCCLTeam, got {type(team).__name__}")
    origin = getattr(team, "_origin", None)  # None: a team the caller made, no origin to check
    if origin is not None and origin != comm:
        raise NcclInvalid(f"{fname}: team belongs to another communicator")
    return team._lowpp


def _rank_to(self: Any, fname: str, binding: Any, team: object, team_rank: int) -> int:
    comm = self._require(fname)
    t = _team_arg(comm, fname, team)
    rank = operator.index(team_rank)
    if not 0 <= rank < t.n_ranks:
        raise NcclInvalid(f"{fname}: team_rank={rank} is out of range for a team of {t.n_ranks} "
                          f"rank{'' if t.n_ranks == 1 else 's'}")
    result: int = binding(comm, t, rank)
    return result


def team_rank_to_world(self, team, team_rank):  # type: ignore[no-untyped-def]
    """The world rank of member team_rank of team (ncclTeamRankToWorld). team: an NCCLTeam of this
    communicator."""
    return _rank_to(self, "team_rank_to_world", _b.team_rank_to_world, team, team_rank)


def team_rank_to_lsa(self, team, team_rank):  # type: ignore[no-untyped-def]
    """The LSA rank of member team_rank of team (ncclTeamRankToLsa)."""
    return _rank_to(self, "team_rank_to_lsa", _b.team_rank_to_lsa, team, team_rank)


# ---- Communicator.create_dev_comm (nccl4py 0.4.1 to 0.6.0) ----
# The requirements are built here as bindings structs: the scalar fields, the team requirements and
# the resource requirements (made by the library's *CreateRequirement calls), each list linked
# through its `next` pointers. They are plain memory the library reads during ncclDevCommCreate, so
# the Python objects holding it stay referenced here until Communicator._create_dev_comm returns.


def _link(structs: list[Any]) -> int:
    """Links structs through their `next` fields (the last one's is NULL); the first one's address,
    or 0 for none."""
    for s, following in zip(structs, structs[1:] + [None]):
        s.next = following.ptr if following is not None else 0
    return structs[0].ptr if structs else 0


def _team_requirements(teams: Any) -> tuple[list[Any], tuple[tuple[NCCLTeam, MultimemHandle], ...]]:
    """The bindings TeamRequirements of each TeamRequirement, and (team, MultimemHandle) pairs whose
    handle is a view of the storage the library fills (outMultimemHandle)."""
    structs, pairs = [], []
    for tr in teams:
        low, mm = _b.TeamRequirements(), _b.MultimemHandle()
        t = low.team
        t.n_ranks, t.rank, t.stride = tr.team.n_ranks, tr.team.rank, tr.team.stride
        low.multimem = 1 if tr.multimem else 0
        low.out_multimem_handle = mm.ptr
        structs.append(low)
        pairs.append((tr.team, MultimemHandle(mm)))
    return structs, tuple(pairs)


def _resource_requirement(comm: int, r: Any) -> tuple[Any, Any]:
    """A bindings DevResourceRequirements for one resource requirement, from its *CreateRequirement
    call, and the view of the handle that call filled."""
    req = _b.DevResourceRequirements()
    if isinstance(r, LLA2ARequirement):
        lla2a = _b.LLA2AHandle()
        _b.ll_a2a_create_requirement(r.n_blocks, _b.ll_a2a_calc_slots(r.max_elements, r.max_element_size),
                                     lla2a, req)
        return req, LLA2AHandle(lla2a)
    if isinstance(r, LsaBarrierRequirement):
        lsa = _b.LsaBarrierHandle()
        _b.lsa_barrier_create_requirement(r.team._lowpp, r.n_barriers, lsa, req)
        return req, LsaBarrierHandle(lsa)
    gin = _b.GinBarrierHandle()
    _b.gin_barrier_create_requirement(comm, r.team._lowpp, r.n_barriers, gin, req)
    return req, GinBarrierHandle(gin)


def create_dev_comm(self, requirements=None):  # type: ignore[no-untyped-def]
    """A DevCommResource: a device communicator made by ncclDevCommCreate from requirements (an
    NCCLDevCommRequirements; None is the initializer's). Collective. The library's error when it
    refuses (the host backend does, by name); NcclInvalid on a null communicator."""
    comm = self._require("create_dev_comm")
    reqs = _b.DevCommRequirements()
    if requirements is None:
        return self._create_dev_comm(reqs, (), ())
    if not isinstance(requirements, NCCLDevCommRequirements):
        raise TypeError("create_dev_comm: requirements must be an NCCLDevCommRequirements or None, "
                        f"got {type(requirements).__name__}")
    for name, value in requirements._set_fields(True).items():
        setattr(reqs, name, value)
    teams, multimem = _team_requirements(requirements.teams)
    resources, handles = [], []
    for r in requirements.resources:
        req, handle = _resource_requirement(comm, r)
        resources.append(req)
        handles.append(handle)
    if teams:
        reqs.team_requirements_list = _link(teams)
    if resources:
        reqs.resource_requirements_list = _link(resources)
    return self._create_dev_comm(reqs, multimem, tuple(handles))  # teams, resources: alive until it returns


def _methods(owner: str, *functions: Any) -> dict[str, Any]:
    """{name: function} for a C type's dict, each named as that type's method."""
    for f in functions:
        f.__qualname__ = f"{owner}.{f.__name__}"
        f.__module__ = "nccl.core.resources" if owner != "Communicator" else "nccl.core.communicator"
    return {f.__name__: f for f in functions}


COMMUNICATOR_ATTRIBUTES = {
    **_methods("Communicator", team_cft, team_rank_to_world, team_rank_to_lsa, create_dev_comm),
    "properties": property(_properties, doc="Everything ncclCommQueryProperties reports, as an NCCLCommProperties "
                           "(fields the loaded library predates are None)." + _QUERY),
    "team_world": _team_property("team_world", _b.team_world, "The NCCLTeam of every rank (ncclTeamWorld)."),
    "team_lsa": _team_property("team_lsa", _b.team_lsa, "The NCCLTeam of this rank's LSA domain (ncclTeamLsa)."),
    "team_rail": _team_property("team_rail", _b.team_rail, "The NCCLTeam of this rank's rail (ncclTeamRail)."),
    "team_cft_multimem": _team_property("team_cft_multimem", _b.team_cft_multimem,
                                        "The CFT multimem NCCLTeam (ncclTeamCftMultimem, 2.31)."),
}


WINDOW_METHODS = _methods("RegisteredWindowHandle", get_multimem_device_pointer, get_multimem_le_info,
                          get_peer_le_info, get_cft_le_info)
