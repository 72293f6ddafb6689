"""NCCLConfig, NCCLDevCommRequirements and WaitSignalDesc (API.md sections 5.7 and 5.8).

The C core reads ``NCCLConfig`` (through ``_lowpp``) and ``WaitSignalDesc`` from here
(src/ext/lazy.c), so the module path and those names are a contract. The C structs are rebuilt
from the current field values every time, so mutating a config after construction takes effect.
"""

import threading
import warnings
from dataclasses import dataclass, fields

from nccl.core._types import CTAPolicy, NcclGinConnectionType

__all__ = ["NCCLConfig", "NCCLDevCommRequirements", "WaitSignalDesc"]

_BOOL, _INT, _STR = "bool", "int", "str"


def _check_field(owner, name, kind, value, extra=()):
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


# field: (kind, min NCCL version code, extra accepted types)
_CONFIG_FIELDS = {
    "blocking": (_BOOL, 21403, ()),
    "cga_cluster_size": (_INT, 21701, ()),
    "min_ctas": (_INT, 21701, ()),
    "max_ctas": (_INT, 21701, ()),
    "net_name": (_STR, 21701, ()),
    "split_share": (_BOOL, 21801, ()),
    "traffic_class": (_INT, 22602, ()),
    "comm_name": (_STR, 22703, ()),
    "collnet_enable": (_BOOL, 22703, ()),
    "cta_policy": (_INT, 22703, (CTAPolicy,)),
    "shrink_share": (_BOOL, 22703, ()),
    "nvls_ctas": (_INT, 22703, ()),
    "n_channels_per_net_peer": (_INT, 22803, ()),
    "nvlink_centric_sched": (_BOOL, 22803, ()),
    "graph_usage_mode": (_INT, 22902, ()),
    "num_rma_ctx": (_INT, 22902, ()),
    "max_p2p_peers": (_INT, 23000, ()),
    "graph_stream_ordering": (_INT, 23005, ()),
}

_warned_lock = threading.Lock()
_warned = set()  # (field, library version code) already warned about in this process


def _warn_too_new(owner, names, stacklevel):
    """The one-time RuntimeWarning of API.md section 5.7 for each set field (name, min version
    code) that the loaded library predates."""
    from nccl import _ext
    from nccl.bindings import nccl as _b

    code = int(_b.get_version())
    late = []
    with _warned_lock:
        for name, need in names:
            if code < need and (owner, name, code) not in _warned:
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

    blocking: "bool | None" = None
    cga_cluster_size: "int | None" = None
    min_ctas: "int | None" = None
    max_ctas: "int | None" = None
    net_name: "str | None" = None
    split_share: "bool | None" = None
    traffic_class: "int | None" = None
    comm_name: "str | None" = None
    collnet_enable: "bool | None" = None
    cta_policy: "CTAPolicy | int | None" = None
    shrink_share: "bool | None" = None
    nvls_ctas: "int | None" = None
    n_channels_per_net_peer: "int | None" = None
    nvlink_centric_sched: "bool | None" = None
    graph_usage_mode: "int | None" = None
    num_rma_ctx: "int | None" = None
    max_p2p_peers: "int | None" = None
    graph_stream_ordering: "int | None" = None

    def __post_init__(self):
        for name, (kind, _, extra) in _CONFIG_FIELDS.items():
            _check_field("NCCLConfig", name, kind, getattr(self, name), extra)

    @property
    def _lowpp(self):
        """A fresh ``nccl.bindings.nccl.Config`` built from the current values; unset fields keep
        the initializer's INT_MIN / NULL. Warns once per field the loaded library predates."""
        from nccl.bindings import nccl as _b

        cfg = _b.Config()
        used = []
        for name, (kind, need, extra) in _CONFIG_FIELDS.items():
            value = getattr(self, name)
            if value is None:
                continue
            _check_field("NCCLConfig", name, kind, value, extra)
            setattr(cfg, name, value if kind == _STR else int(value))
            used.append((name, need))
        if used:
            _warn_too_new("NCCLConfig", used, stacklevel=3)
        return cfg


_REQ_FIELDS = {
    "lsa_multimem": (_BOOL, ()),
    "barrier_count": (_INT, ()),
    "lsa_barrier_count": (_INT, ()),
    "rail_gin_barrier_count": (_INT, ()),
    "lsa_ll_a2a_block_count": (_INT, ()),
    "lsa_ll_a2a_slot_count": (_INT, ()),
    "gin_force_enable": (_BOOL, ()),
    "gin_context_count": (_INT, ()),
    "gin_signal_count": (_INT, ()),
    "gin_counter_count": (_INT, ()),
    "gin_connection_type": (_INT, (NcclGinConnectionType,)),
    "gin_exclusive_contexts": (_BOOL, ()),
    "gin_queue_depth": (_INT, ()),
    "world_gin_barrier_count": (_INT, ()),
    "gin_strong_signals_required": (_BOOL, ()),
    "gin_va_signals_required": (_BOOL, ()),
}


@dataclass(kw_only=True)
class NCCLDevCommRequirements:
    """Device-communicator requirements (ncclDevCommRequirements_t). ``None`` keeps the
    initializer's value. The device API itself is out of scope (API.md section 1.1)."""

    lsa_multimem: "bool | None" = None
    barrier_count: "int | None" = None
    lsa_barrier_count: "int | None" = None
    rail_gin_barrier_count: "int | None" = None
    lsa_ll_a2a_block_count: "int | None" = None
    lsa_ll_a2a_slot_count: "int | None" = None
    gin_force_enable: "bool | None" = None
    gin_context_count: "int | None" = None
    gin_signal_count: "int | None" = None
    gin_counter_count: "int | None" = None
    gin_connection_type: "NcclGinConnectionType | int | None" = None
    gin_exclusive_contexts: "bool | None" = None
    gin_queue_depth: "int | None" = None
    world_gin_barrier_count: "int | None" = None
    gin_strong_signals_required: "bool | None" = None
    gin_va_signals_required: "bool | None" = None

    def __post_init__(self):
        for name, (kind, extra) in _REQ_FIELDS.items():
            _check_field("NCCLDevCommRequirements", name, kind, getattr(self, name), extra)

    def _set_fields(self):
        """{C-side snake_case name: int} of the fields that are set (checked again), for the
        ncclDevCommRequirements_t a device communicator would be built from. The bindings have no
        DevCommRequirements wrapper yet, and create_dev_comm is not implemented (API.md 1.1)."""
        out = {}
        for name, (kind, extra) in _REQ_FIELDS.items():
            value = getattr(self, name)
            if value is not None:
                _check_field("NCCLDevCommRequirements", name, kind, value, extra)
                out[name] = int(value)
        return out


@dataclass(frozen=True)
class WaitSignalDesc:
    """One ncclWaitSignalDesc_t {opCnt, peer, sigIdx, ctx}: wait for ``op_count`` signals from
    ``peer``. ``signal_index`` and ``context`` must currently be 0 (NCCL checks)."""

    peer: int
    op_count: int = 1
    signal_index: int = 0
    context: int = 0


assert [f.name for f in fields(NCCLConfig)] == list(_CONFIG_FIELDS)
assert [f.name for f in fields(NCCLDevCommRequirements)] == list(_REQ_FIELDS)
