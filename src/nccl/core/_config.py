"""NCCLConfig, NCCLCollConfig, VendorOption, NCCLDevCommRequirements and WaitSignalDesc
(docs/compatibility.md#configuration;
nccl4py 0.6.0's fields).

The C core reads ``NCCLConfig`` (through ``_lowpp``), ``NCCLCollConfig`` (its fields, in
src/ext/core/coll_config.c) and ``WaitSignalDesc`` from here (src/ext/module/lazy.c), so the module path and
those names are a contract. The C structs are rebuilt
from the current field values every time, so mutating a config after construction takes effect
(an NCCLCollConfig's struct is reused only while every field holds the same object as when it
was built: src/ext/core/coll_config.c).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from dataclasses import Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from nccl.core._types import (
    CTAPolicy, NcclCftCap, NcclGinConnectionType, NcclGinType, NcclHostCftMode, NcclNvlsHostMode,
)

if TYPE_CHECKING:
    from nccl.bindings import nccl as _b
    from nccl.core._team import GinBarrierRequirement, LLA2ARequirement, LsaBarrierRequirement, TeamRequirement
    from nccl.core.typing import NcclEventSpec

__all__ = ["NCCLConfig", "NCCLCollConfig", "VendorOption", "NCCLDevCommRequirements", "WaitSignalDesc"]

_BOOL, _INT, _STR = "bool", "int", "str"


def _check_field(owner: str, name: str, kind: str, value: object, extra: tuple[type, ...] = ()) -> None:
    if value is None:
        return
    if kind == _BOOL:
        ok = isinstance(value, int)  # bool is an int
    elif kind == _INT:
        ok = (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, extra)
    else:
        ok = isinstance(value, str)
    if not ok:
        expected = {_BOOL: "bool", _INT: "int", _STR: "str"}[kind]
        if extra:
            expected += " or " + " or ".join(t.__name__ for t in extra)
        raise TypeError(f"{owner}.{name} must be {expected}, got {type(value).__name__}")


def _opt(kind: str, need: int | None = None, extra: tuple[type, ...] = (), count: bool = False) -> Any:
    """An optional config field (default None) and its checks, kept on the dataclass field itself so
    the class is the one list of its fields: ``kind`` (_BOOL, _INT, _STR), ``need`` (the NCCL version
    code that brought it; None: no check), ``extra`` (further accepted types) and ``count`` (must
    not be negative)."""
    return field(default=None, metadata={"nccl4py": (kind, need, extra, count)})


def _checked_fields(cls: type) -> dict[str, tuple[str, int | None, tuple[type, ...], bool]]:
    """{name: (kind, need, extra, count)} of cls's _opt fields, in declaration order."""
    checked: tuple[Field[Any], ...] = fields(cls)
    return {f.name: f.metadata["nccl4py"] for f in checked if "nccl4py" in f.metadata}


_warned_lock = threading.Lock()
_warned: set[tuple[str, str, int]] = set()  # (field, library version code) already warned about in this process


def _warn_too_new(owner: str, names: Iterable[tuple[str, int | None]], stacklevel: int) -> None:
    """The one-time RuntimeWarning of docs/compatibility.md#configuration for each set field (name, min version
    code) that the loaded library predates."""
    from nccl import _ext
    from nccl.bindings import nccl as _b

    code = int(_b.get_version())
    late: list[tuple[str, int]] = []
    with _warned_lock:
        for name, need in names:
            if need is not None and code < need and (owner, name, code) not in _warned:
                _warned.add((owner, name, code))
                late.append((name, need))
    if not late:
        return
    try:
        flavour = _b.get_library_flavour()
    except Exception:  # noqa: BLE001 - the flavour only decorates the message
        flavour = "library"
    for name, need in late:
        warnings.warn(f"{owner}.{name} requires NCCL >= {_ext._version_text(need)}; the loaded "
                      f"{flavour} {_ext._version_text(code)} ignores it", RuntimeWarning, stacklevel=stacklevel)


@dataclass(kw_only=True)
class NCCLConfig:
    """Communicator options (ncclConfig_t). ``None`` keeps NCCL's default for that field."""

    blocking: "bool | None" = _opt(_BOOL, 21403)
    cga_cluster_size: "int | None" = _opt(_INT, 21701)
    min_ctas: "int | None" = _opt(_INT, 21701)
    max_ctas: "int | None" = _opt(_INT, 21701)
    net_name: "str | None" = _opt(_STR, 21701)
    split_share: "bool | None" = _opt(_BOOL, 21801)
    traffic_class: "int | None" = _opt(_INT, 22602)
    comm_name: "str | None" = _opt(_STR, 22703)
    collnet_enable: "bool | None" = _opt(_BOOL, 22703)
    cta_policy: "CTAPolicy | int | None" = _opt(_INT, 22703, (CTAPolicy,))
    shrink_share: "bool | None" = _opt(_BOOL, 22703)
    nvls_ctas: "int | None" = _opt(_INT, 22703)
    n_channels_per_net_peer: "int | None" = _opt(_INT, 22803)
    nvlink_centric_sched: "bool | None" = _opt(_BOOL, 22803)
    graph_usage_mode: "int | None" = _opt(_INT, 22902)
    num_rma_ctx: "int | None" = _opt(_INT, 22902)
    max_p2p_peers: "int | None" = _opt(_INT, 23000)
    graph_stream_ordering: "int | None" = _opt(_INT, 23005)
    launch_order_implicit: "bool | None" = _opt(_BOOL, 23100)
    num_rma_sig: "int | None" = _opt(_INT, 23100)
    rma_eager_init: "bool | None" = _opt(_BOOL, 23100)
    host_cft_mode: "NcclHostCftMode | int | None" = _opt(_INT, 23100, (NcclHostCftMode,))
    nvls_host_mode: "NcclNvlsHostMode | int | None" = _opt(_INT, 23200, (NcclNvlsHostMode,))

    def __post_init__(self) -> None:
        for name, (kind, _, extra, _) in _CONFIG_FIELDS.items():
            _check_field("NCCLConfig", name, kind, getattr(self, name), extra)

    @property
    def _lowpp(self) -> _b.Config:
        """A fresh ``nccl.bindings.nccl.Config`` built from the current values; unset fields keep
        the initializer's INT_MIN / NULL. Warns once per field the loaded library predates."""
        from nccl.bindings import nccl as _b

        cfg = _b.Config()
        used: list[tuple[str, int | None]] = []
        for name, (kind, need, extra, _) in _CONFIG_FIELDS.items():
            value = getattr(self, name)
            if value is None:
                continue
            _check_field("NCCLConfig", name, kind, value, extra)
            setattr(cfg, name, value if kind == _STR else int(value))
            used.append((name, need))
        if used:
            _warn_too_new("NCCLConfig", used, stacklevel=3)
        return cfg


_CONFIG_FIELDS = _checked_fields(NCCLConfig)




def _check_count(owner: str, name: str, value: int | None) -> None:
    if value is not None and int(value) < 0:
        from nccl._errors import NcclInvalid

        raise NcclInvalid(f"{owner}.{name} must not be negative, got {int(value)}")


@dataclass(kw_only=True)
class NCCLDevCommRequirements:
    """Device-communicator requirements (ncclDevCommRequirements_t). ``None`` keeps the
    initializer's value. The device API itself is out of scope (docs/compatibility.md#what-we-refuse)."""

    # ncclDevCommRequirements_t itself is 2.28.3 (ncclDevCommCreate); later fields carry their release.
    lsa_multimem: "bool | None" = _opt(_BOOL, 22803)
    barrier_count: "int | None" = _opt(_INT, 22803, count=True)
    lsa_barrier_count: "int | None" = _opt(_INT, 22803, count=True)
    rail_gin_barrier_count: "int | None" = _opt(_INT, 22803, count=True)
    lsa_ll_a2a_block_count: "int | None" = _opt(_INT, 22803, count=True)
    lsa_ll_a2a_slot_count: "int | None" = _opt(_INT, 22803, count=True)
    gin_force_enable: "bool | None" = _opt(_BOOL, 22803)
    gin_context_count: "int | None" = _opt(_INT, 22803, count=True)
    gin_signal_count: "int | None" = _opt(_INT, 22803, count=True)
    gin_counter_count: "int | None" = _opt(_INT, 22803, count=True)
    gin_connection_type: "NcclGinConnectionType | int | None" = _opt(_INT, 22900, (NcclGinConnectionType,))
    gin_exclusive_contexts: "bool | None" = _opt(_BOOL, 22900)
    gin_queue_depth: "int | None" = _opt(_INT, 22900, count=True)
    gin_traffic_class: "int | None" = _opt(_INT, 23000)
    world_gin_barrier_count: "int | None" = _opt(_INT, 23000, count=True)
    gin_strong_signals_required: "bool | None" = _opt(_BOOL, 23000)
    gin_va_signals_required: "bool | None" = _opt(_BOOL, 23000)
    gin_custom_stride: "int | None" = _opt(_INT, 23100, count=True)
    gin_type: "NcclGinType | int | None" = _opt(_INT, 23100, (NcclGinType,))
    cft_caps: "NcclCftCap | int | None" = _opt(_INT, 23100, (NcclCftCap,))
    cft_barrier_count: "int | None" = _opt(_INT, 23100, count=True)
    teams: "tuple[TeamRequirement, ...]" = ()
    resources: "tuple[LsaBarrierRequirement | GinBarrierRequirement | LLA2ARequirement, ...]" = ()

    def __post_init__(self) -> None:
        self._check()

    def _check(self) -> None:
        owner = "NCCLDevCommRequirements"
        for name, (kind, _, extra, count) in _REQ_FIELDS.items():
            value = getattr(self, name)
            _check_field(owner, name, kind, value, extra)
            if count:
                _check_count(owner, name, value)
        from nccl.core._team import TeamRequirement, _RESOURCE_REQUIREMENTS

        for i, t in enumerate(self.teams):
            if not isinstance(t, TeamRequirement):
                raise TypeError(f"{owner}.teams[{i}] must be a TeamRequirement, got {type(t).__name__}")
        for i, r in enumerate(self.resources):
            if not isinstance(r, _RESOURCE_REQUIREMENTS):
                raise TypeError(f"{owner}.resources[{i}] must be an LsaBarrierRequirement, "
                                f"GinBarrierRequirement or LLA2ARequirement, got {type(r).__name__}")

    def _set_fields(self, warn: bool = False) -> dict[str, int]:
        """{bindings DevCommRequirements field name: int} of the fields that are set (checked
        again; negative counts refused); with ``warn``, warns once per field the loaded library
        predates (create_dev_comm, where a library is loaded)."""
        self._check()
        out: dict[str, int] = {}
        used: list[tuple[str, int | None]] = []
        for name, (kind, need, extra, count) in _REQ_FIELDS.items():
            value = getattr(self, name)
            if value is not None:
                out[name] = int(value)
                used.append((name, need))
        if used and warn:
            _warn_too_new("NCCLDevCommRequirements", used, stacklevel=4)
        return out


_REQ_FIELDS = _checked_fields(NCCLDevCommRequirements)


@dataclass(frozen=True)
class WaitSignalDesc:
    """One ncclWaitSignalDesc_t {opCnt, peer, sigIdx, ctx}: wait for ``op_count`` signals from
    ``peer``. ``signal_index`` and ``context`` must currently be 0 (NCCL checks)."""

    peer: int
    op_count: int = 1
    signal_index: int = 0
    context: int = 0


@dataclass(frozen=True)
class VendorOption:
    """One vendor-specific option of a collective (an ncclConfigExt_t entry): ``vendor_id`` and
    ``option_id`` key it; exactly one of ``int_value``, ``str_value`` and ``raw_value`` (an address)
    carries its value. NVIDIA's library ignores every vendor option."""

    vendor_id: int
    option_id: int
    int_value: "int | None" = None
    str_value: "str | None" = None
    raw_value: "int | None" = None

    def __post_init__(self) -> None:
        for name in ("vendor_id", "option_id"):
            _check_field("VendorOption", name, _INT, getattr(self, name))
        _check_field("VendorOption", "int_value", _INT, self.int_value)
        _check_field("VendorOption", "str_value", _STR, self.str_value)
        _check_field("VendorOption", "raw_value", _INT, self.raw_value)
        given = sum(v is not None for v in (self.int_value, self.str_value, self.raw_value))
        if given != 1:
            raise ValueError("VendorOption takes exactly one of int_value, str_value and raw_value, "
                             f"got {given}")


@dataclass(kw_only=True)
class NCCLCollConfig:
    """Per-call options of a collective (ncclCollConfig_t), the ``config=`` of every collective
    method; it reaches the library's ncclXxxConfig entry point (NCCL 2.31 and later). ``None``
    keeps NCCL's default for that field; a config with every field ``None`` and no vendor options
    is the default config, which libraries without those entry points run as the plain call.
    ``launch_completion_event`` is an event handle (an int or a cuda.core Event, 2.32)."""

    min_ctas: "int | None" = _opt(_INT)
    max_ctas: "int | None" = _opt(_INT)
    nvls_ctas: "int | None" = _opt(_INT)
    cga_cluster_size: "int | None" = _opt(_INT)
    alg_selection: "str | None" = _opt(_STR)
    force_alg_selection: "bool | None" = _opt(_BOOL)
    cta_policy: "CTAPolicy | int | None" = _opt(_INT, extra=(CTAPolicy,))
    user_profiler_tag: "int | None" = _opt(_INT)
    launch_completion_event: "NcclEventSpec | None" = None
    vendor_options: "tuple[VendorOption, ...]" = ()

    def __getstate__(self) -> dict[str, Any]:
        # The C core keeps the struct it built from this config in __dict__ (src/ext/core/coll_config.c,
        # checked against the current field values at each use); a copy or a pickle leaves it out.
        state = dict(self.__dict__)
        state.pop("_nx_coll_config", None)
        return state

    def __post_init__(self) -> None:
        for name, (kind, _, extra, _) in _COLL_FIELDS.items():
            _check_field("NCCLCollConfig", name, kind, getattr(self, name), extra)
        for i, v in enumerate(self.vendor_options):
            if not isinstance(v, VendorOption):
                raise TypeError(f"NCCLCollConfig.vendor_options[{i}] must be a VendorOption, got {type(v).__name__}")


# The fields checked in __post_init__; launch_completion_event and vendor_options are checked where
# they are used (src/ext/core/coll_config.c, whose field table maps every field to ncclCollConfig_t).
_COLL_FIELDS = _checked_fields(NCCLCollConfig)
