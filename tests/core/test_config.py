"""NCCLConfig, NCCLDevCommRequirements and WaitSignalDesc (docs/compatibility.md#configuration).

Construction and type checks run here (no library). ``_lowpp`` looks up the loaded library's
version, so it runs in child interpreters: the host backend for the round trip, the stub NCCL
2.27.3 variant for the too-new-field warning.
"""

import dataclasses

import pytest

from nccl.core import CTAPolicy, NCCLConfig, NCCLDevCommRequirements, NcclGinConnectionType, WaitSignalDesc

CONFIG_FIELDS = {
    "blocking": "bool", "cga_cluster_size": "int", "min_ctas": "int", "max_ctas": "int", "net_name": "str",
    "split_share": "bool", "traffic_class": "int", "comm_name": "str", "collnet_enable": "bool",
    "cta_policy": "int", "shrink_share": "bool", "nvls_ctas": "int", "n_channels_per_net_peer": "int",
    "nvlink_centric_sched": "bool", "graph_usage_mode": "int", "num_rma_ctx": "int", "max_p2p_peers": "int",
    "graph_stream_ordering": "int", "launch_order_implicit": "bool", "num_rma_sig": "int",
    "rma_eager_init": "bool", "host_cft_mode": "int", "nvls_host_mode": "int",
}
REQ_FIELDS = {
    "lsa_multimem": "bool", "barrier_count": "int", "lsa_barrier_count": "int", "rail_gin_barrier_count": "int",
    "lsa_ll_a2a_block_count": "int", "lsa_ll_a2a_slot_count": "int", "gin_force_enable": "bool",
    "gin_context_count": "int", "gin_signal_count": "int", "gin_counter_count": "int",
    "gin_connection_type": "int", "gin_exclusive_contexts": "bool", "gin_queue_depth": "int",
    "gin_traffic_class": "int", "world_gin_barrier_count": "int", "gin_strong_signals_required": "bool",
    "gin_va_signals_required": "bool", "gin_custom_stride": "int", "gin_type": "int", "cft_caps": "int",
    "cft_barrier_count": "int",
}


def test_config_fields_in_order_all_none():
    assert [f.name for f in dataclasses.fields(NCCLConfig)] == list(CONFIG_FIELDS)
    cfg = NCCLConfig()
    assert all(getattr(cfg, name) is None for name in CONFIG_FIELDS)


def test_config_is_keyword_only():
    with pytest.raises(TypeError):
        NCCLConfig(True)


@pytest.mark.parametrize("cls,table", [(NCCLConfig, CONFIG_FIELDS), (NCCLDevCommRequirements, REQ_FIELDS)])
def test_type_checks(cls, table):
    owner = cls.__name__
    for name, kind in table.items():
        if kind == "bool":
            cls(**{name: True}), cls(**{name: 0})
            bad, expected = "yes", "bool"
        elif kind == "int":
            cls(**{name: 3})
            bad = 1.5
            expected = {"cta_policy": "int or CTAPolicy",
                        "gin_connection_type": "int or NcclGinConnectionType",
                        "host_cft_mode": "int or NcclHostCftMode", "nvls_host_mode": "int or NcclNvlsHostMode",
                        "gin_type": "int or NcclGinType", "cft_caps": "int or NcclCftCap"}.get(name, "int")
            with pytest.raises(TypeError) as ei:
                cls(**{name: True})
            assert str(ei.value) == f"{owner}.{name} must be {expected}, got bool"
        else:
            cls(**{name: "x"})
            bad, expected = 5, "str"
        with pytest.raises(TypeError) as ei:
            cls(**{name: bad})
        assert str(ei.value) == f"{owner}.{name} must be {expected}, got {type(bad).__name__}"


def test_enum_valued_fields():
    assert NCCLConfig(cta_policy=CTAPolicy.ZERO).cta_policy is CTAPolicy.ZERO
    req = NCCLDevCommRequirements(gin_connection_type=NcclGinConnectionType.RAIL)
    assert req.gin_connection_type is NcclGinConnectionType.RAIL
    assert req._set_fields() == {"gin_connection_type": 2}


def test_dev_comm_requirements_fields():
    assert [f.name for f in dataclasses.fields(NCCLDevCommRequirements)] == list(REQ_FIELDS) + ["teams", "resources"]
    assert NCCLDevCommRequirements()._set_fields() == {}
    with pytest.raises(TypeError):
        NCCLDevCommRequirements(1)


@pytest.mark.parametrize("name", ["barrier_count", "lsa_barrier_count", "gin_context_count", "cft_barrier_count",
                                  "lsa_ll_a2a_slot_count", "gin_custom_stride"])
def test_requirement_counts_must_not_be_negative(name):
    from nccl.core import NcclInvalid

    with pytest.raises(NcclInvalid) as ei:
        NCCLDevCommRequirements(**{name: -1})
    assert str(ei.value) == f"NCCLDevCommRequirements.{name} must not be negative, got -1"


def test_requirement_lists_are_checked():
    from nccl.core import LsaBarrierRequirement, NCCLTeam, NcclInvalid, TeamRequirement

    team = NCCLTeam(2, 0, 1)
    req = NCCLDevCommRequirements(teams=(TeamRequirement(team, multimem=True),),
                                  resources=(LsaBarrierRequirement(team, 2),))
    assert req.teams[0].team == team
    with pytest.raises(TypeError) as ei:
        NCCLDevCommRequirements(teams=(team,))
    assert str(ei.value) == "NCCLDevCommRequirements.teams[0] must be a TeamRequirement, got NCCLTeam"
    with pytest.raises(TypeError) as ei:
        NCCLDevCommRequirements(resources=(3,))
    assert str(ei.value) == ("NCCLDevCommRequirements.resources[0] must be an LsaBarrierRequirement, "
                             "GinBarrierRequirement or LLA2ARequirement, got int")
    with pytest.raises(NcclInvalid) as ei:
        LsaBarrierRequirement(team, -2)
    assert str(ei.value) == "LsaBarrierRequirement.n_barriers must not be negative, got -2"


def test_wait_signal_desc():
    d = WaitSignalDesc(3)
    assert (d.peer, d.op_count, d.signal_index, d.context) == (3, 1, 0, 0)
    assert WaitSignalDesc(1, 2, 0, 0) == WaitSignalDesc(peer=1, op_count=2)
    assert [f.name for f in dataclasses.fields(WaitSignalDesc)] == ["peer", "op_count", "signal_index", "context"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.peer = 4
    assert hash(d) == hash(WaitSignalDesc(3))


ROUND_TRIP = """
import warnings
from nccl.core import NCCLConfig, CTAPolicy
values = dict(blocking=False, cga_cluster_size=2, min_ctas=3, max_ctas=5, net_name="Socket", split_share=True,
              traffic_class=7, comm_name="ring-a", collnet_enable=True, cta_policy=CTAPolicy.ZERO,
              shrink_share=True, nvls_ctas=9, n_channels_per_net_peer=4, nvlink_centric_sched=True,
              graph_usage_mode=1, num_rma_ctx=2, max_p2p_peers=6, graph_stream_ordering=0)
names = [n for n in values] + ["size_", "magic", "version"]
with warnings.catch_warnings():
    warnings.simplefilter("error")
    full = NCCLConfig(**values)._lowpp
    empty = NCCLConfig()._lowpp
    mutated = NCCLConfig(min_ctas=1)
    first = mutated._lowpp
    mutated.min_ctas = 16
    second = mutated._lowpp
result = dict(
    type=type(full).__module__ + "." + type(full).__name__,
    full={n: getattr(full, n) for n in names},
    empty={n: getattr(empty, n) for n in names},
    fresh=full is not NCCLConfig(**values)._lowpp,
    mutated=(first.min_ctas, second.min_ctas),
)
"""


def test_lowpp_round_trip_host(fresh_python):
    r = fresh_python(ROUND_TRIP, env={"NCCL_LIBRARY": "host"})
    assert r["type"] == "nccl.bindings.nccl.Config"
    full = r["full"]
    assert full == {"blocking": 0, "cga_cluster_size": 2, "min_ctas": 3, "max_ctas": 5, "net_name": "Socket",
                    "split_share": 1, "traffic_class": 7, "comm_name": "ring-a", "collnet_enable": 1,
                    "cta_policy": 2, "shrink_share": 1, "nvls_ctas": 9, "n_channels_per_net_peer": 4,
                    "nvlink_centric_sched": 1, "graph_usage_mode": 1, "num_rma_ctx": 2, "max_p2p_peers": 6,
                    "graph_stream_ordering": 0, "size_": 120, "magic": 0xCAFEBEEF, "version": 23203}
    empty = r["empty"]
    for name, value in empty.items():
        if name in ("net_name", "comm_name"):
            assert value == "", name
        elif name not in ("size_", "magic", "version"):
            assert value == -2147483648, name
    assert r["fresh"] is True
    assert r["mutated"] == (1, 16)


TOO_NEW = """
import warnings
from nccl.core import NCCLConfig
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    NCCLConfig(blocking=True, comm_name="x", graph_usage_mode=1, graph_stream_ordering=1)._lowpp
    NCCLConfig(graph_usage_mode=2)._lowpp          # already warned: silent
    cfg = NCCLConfig(graph_usage_mode=2)._lowpp
result = dict(warnings=[(c.category.__name__, str(c.message)) for c in w], value=cfg.graph_usage_mode,
              version=b.get_version())
"""


def test_too_new_fields_warn_once(stub_libs, fresh_python):
    r = fresh_python(TOO_NEW, variant="nccl_2_27")
    assert r["version"] == 22703
    assert r["warnings"] == [
        ("RuntimeWarning", "NCCLConfig.graph_usage_mode requires NCCL >= 2.29.2; the loaded nccl 2.27.3 ignores it"),
        ("RuntimeWarning",
         "NCCLConfig.graph_stream_ordering requires NCCL >= 2.30.5; the loaded nccl 2.27.3 ignores it"),
    ]
    assert r["value"] == 2  # still sent; NCCL ignores what it does not know


def test_no_warning_on_current_library(stub_libs, fresh_python):
    r = fresh_python(TOO_NEW, variant="nccl")
    assert r["warnings"] == []
