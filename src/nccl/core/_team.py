"""Teams, device-communicator requirements, handle views and communicator properties of nccl.core
(nccl4py 0.4.1 to 0.6.0): ``NCCLTeam``, ``TeamRequirement``, ``LsaBarrierRequirement``,
``GinBarrierRequirement``, ``LLA2ARequirement``, ``MultimemHandle``, ``LsaBarrierHandle``,
``GinBarrierHandle``, ``LLA2AHandle``, ``CftLeInfo`` and ``NCCLCommProperties``.

Communicator's teams and ``properties`` build them in nccl.core._methods; the C core builds the
handle views (src/ext/module/lazy.c). A team made by a Communicator remembers which one (its
``_origin``, the communicator handle, not a dataclass field), so that passing it to another
communicator is refused before any library call.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from nccl.bindings import nccl as _b
    from nccl.core._types import NcclGinConnectionType, NcclGinType

from nccl._errors import NcclInvalid

__all__ = ["NCCLTeam", "TeamRequirement", "LsaBarrierRequirement", "GinBarrierRequirement", "LLA2ARequirement",
           "MultimemHandle", "LsaBarrierHandle", "GinBarrierHandle", "LLA2AHandle", "CftLeInfo",
           "NCCLCommProperties"]


def _int(owner: str, name: str, value: object, *, count: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{name} must be int, got {type(value).__name__}")
    if count and value < 0:
        raise NcclInvalid(f"{owner}.{name} must not be negative, got {value}")


@dataclass(frozen=True)
class NCCLTeam:
    """A team of ranks (ncclTeam_t): ``n_ranks`` ranks, this rank's index ``rank`` in it, and the
    world-rank ``stride`` between members. Communicator.team_world/team_lsa/team_rail/team_cft
    give the library's teams."""

    n_ranks: int
    rank: int
    stride: int

    def __post_init__(self) -> None:
        for name in ("n_ranks", "rank", "stride"):
            _int("NCCLTeam", name, getattr(self, name))

    @property
    def _lowpp(self) -> _b.Team:
        """A fresh ``nccl.bindings.nccl.Team`` with these values."""
        from nccl.bindings import nccl as _b

        t = _b.Team()
        t.n_ranks, t.rank, t.stride = self.n_ranks, self.rank, self.stride
        return t


def _team(owner: str, team: object) -> None:
    if not isinstance(team, NCCLTeam):
        raise TypeError(f"{owner}.team must be an NCCLTeam, got {type(team).__name__}")


@dataclass(frozen=True)
class TeamRequirement:
    """A team a device communicator needs (ncclTeamRequirements_t); ``multimem`` asks for its
    multimem handle (DevCommResource.multimem_handle(team))."""

    team: NCCLTeam
    multimem: bool = False

    def __post_init__(self) -> None:
        _team("TeamRequirement", self.team)
        if not isinstance(self.multimem, int):
            raise TypeError(f"TeamRequirement.multimem must be bool, got {type(self.multimem).__name__}")


@dataclass(frozen=True)
class LsaBarrierRequirement:
    """``n_barriers`` LSA barriers over ``team`` (ncclLsaBarrierCreateRequirement)."""

    team: NCCLTeam
    n_barriers: int

    def __post_init__(self) -> None:
        _team("LsaBarrierRequirement", self.team)
        _int("LsaBarrierRequirement", "n_barriers", self.n_barriers, count=True)


@dataclass(frozen=True)
class GinBarrierRequirement:
    """``n_barriers`` GIN barriers over ``team`` (ncclGinBarrierCreateRequirement)."""

    team: NCCLTeam
    n_barriers: int

    def __post_init__(self) -> None:
        _team("GinBarrierRequirement", self.team)
        _int("GinBarrierRequirement", "n_barriers", self.n_barriers, count=True)


@dataclass(frozen=True)
class LLA2ARequirement:
    """An LL all-to-all resource of ``n_blocks`` blocks, ``max_elements`` elements of
    ``max_element_size`` bytes (ncclLLA2ACreateRequirement)."""

    n_blocks: int
    max_elements: int
    max_element_size: int

    def __post_init__(self) -> None:
        for name in ("n_blocks", "max_elements", "max_element_size"):
            _int("LLA2ARequirement", name, getattr(self, name), count=True)


_RESOURCE_REQUIREMENTS = (LsaBarrierRequirement, GinBarrierRequirement, LLA2ARequirement)


class _HandleView:
    """A read-only view of one device-API handle struct of nccl.bindings.nccl (the value the
    library wrote): the fields are properties; equal views have equal fields."""

    __slots__ = ("_lowpp",)
    _struct: ClassVar[str] = ""
    _fields: ClassVar[tuple[str, ...]] = ()
    _lowpp: Any  # the nccl.bindings.nccl struct wrapper named by _struct

    def __init__(self, lowpp: object = None, **values: int) -> None:
        from nccl.bindings import nccl as _b

        cls = getattr(_b, self._struct)
        if lowpp is None:
            lowpp = cls()
            for name, value in values.items():
                if name not in self._fields:
                    raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument '{name}'")
                setattr(lowpp, self._lowpp_name(name), value)
        elif values or not isinstance(lowpp, cls):
            raise TypeError(f"{type(self).__name__}() takes a nccl.bindings.nccl.{self._struct} or field keywords")
        object.__setattr__(self, "_lowpp", lowpp)

    @staticmethod
    def _lowpp_name(name: str) -> str:
        return {"mc_base_pointer": "mc_base_ptr"}.get(name, name)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


class MultimemHandle(_HandleView):
    """ncclMultimemHandle_t: the multicast base pointer of a team's multimem mapping."""

    __slots__ = ()
    _struct, _fields = "MultimemHandle", ("mc_base_pointer",)

    @property
    def mc_base_pointer(self) -> int:
        """The multicast base address (ncclMultimemHandle_t.mcBasePtr)."""
        return self._lowpp.mc_base_ptr


class LsaBarrierHandle(_HandleView):
    """ncclLsaBarrierHandle_t."""

    __slots__ = ()
    _struct, _fields = "LsaBarrierHandle", ("buf_handle", "n_barriers")

    @property
    def buf_handle(self) -> int:
        """The resource handle of the barriers' memory (ncclLsaBarrierHandle_t.bufHandle)."""
        return self._lowpp.buf_handle

    @property
    def n_barriers(self) -> int:
        """The barriers the handle holds (ncclLsaBarrierHandle_t.nBarriers)."""
        return self._lowpp.n_barriers


class GinBarrierHandle(_HandleView):
    """ncclGinBarrierHandle_t."""

    __slots__ = ()
    _struct, _fields = "GinBarrierHandle", ("signal0",)

    @property
    def signal0(self) -> int:
        """The first GIN signal the barrier uses (ncclGinBarrierHandle_t.signal0)."""
        return self._lowpp.signal0


class LLA2AHandle(_HandleView):
    """ncclLLA2AHandle_t."""

    __slots__ = ()
    _struct, _fields = "LLA2AHandle", ("buf_handle", "n_slots")

    @property
    def buf_handle(self) -> int:
        """The resource handle of the slots' memory (ncclLLA2AHandle_t.bufHandle)."""
        return self._lowpp.buf_handle

    @property
    def n_slots(self) -> int:
        """The slots of the all-to-all buffer (ncclLLA2AHandle_t.nSlots)."""
        return self._lowpp.n_slots


@dataclass(frozen=True)
class CftLeInfo:
    """A CFT logical endpoint of a window (ncclGet*LeInfo): its id and the offset within it."""

    le_id: int
    le_offset: int


@dataclass(frozen=True, kw_only=True)
class NCCLCommProperties:
    """What ncclCommQueryProperties reports (Communicator.properties). The fields after
    ``railed_gin_type`` are None when the loaded library predates them (2.31: ``comm_hash`` to
    ``dev_comm_runtime_version_size``; 2.32: the ``cft_*`` fields)."""

    rank: int
    n_ranks: int
    cuda_dev: int
    nvml_dev: int
    device_api_support: bool
    multimem_support: bool
    gin_type: NcclGinType | int
    n_lsa_teams: int
    host_rma_support: bool
    railed_gin_type: NcclGinType | int
    comm_hash: "int | None" = None
    gin_min_stride: "int | None" = None
    gin_connection_type: "NcclGinConnectionType | int | None" = None
    available_gin_types: "tuple[NcclGinType | int, ...] | None" = None
    dev_comm_runtime_version_size: "int | None" = None
    cft_support: "bool | None" = None
    cft_multicast_support: "bool | None" = None
    cft_counted_support: "bool | None" = None

    @classmethod
    def _from_lowpp(cls, p: _b.CommProperties, version: int) -> NCCLCommProperties:
        """From a filled nccl.bindings.nccl.CommProperties and the library's version code."""
        from nccl.core._types import NcclGinConnectionType, NcclGinType

        def gin(v: int) -> NcclGinType | int:
            try:
                return NcclGinType(v)
            except ValueError:
                return v

        values: dict[str, Any] = dict(rank=p.rank, n_ranks=p.n_ranks, cuda_dev=p.cuda_dev, nvml_dev=p.nvml_dev,
                      device_api_support=bool(p.device_api_support), multimem_support=bool(p.multimem_support),
                      gin_type=gin(p.gin_type), n_lsa_teams=p.n_lsa_teams,
                      host_rma_support=bool(p.host_rma_support), railed_gin_type=gin(p.railed_gin_type))
        if version >= 23100:
            try:
                conn: NcclGinConnectionType | int = NcclGinConnectionType(p.gin_connection_type)
            except ValueError:
                conn = p.gin_connection_type
            values.update(comm_hash=p.comm_hash, gin_min_stride=p.gin_min_stride, gin_connection_type=conn,
                          available_gin_types=tuple(gin(t) for t, ok in enumerate(p.gin_support) if ok),
                          dev_comm_runtime_version_size=p.dev_comm_runtime_version_size)
        if version >= 23200:
            values.update(cft_support=bool(p.cft_support), cft_multicast_support=bool(p.cft_multicast_support),
                          cft_counted_support=bool(p.cft_counted_support))
        return cls(**values)


assert [f.name for f in fields(NCCLTeam)] == ["n_ranks", "rank", "stride"]
