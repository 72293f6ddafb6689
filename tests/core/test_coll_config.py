"""nccl4py 0.6.0's per-call config (config= of the eight collectives), properties and teams, against
the scriptable stub library (tests/stubs): which entry point a call reaches, what the library is
given, the rule for libraries without the ncclXxxConfig entry points, and bad input refused before
any library call. Results against numpy on the host backend: tests/multirank/test_core_config.py."""

import pytest

from tests.core.test_error_paths import DEVICE_BUFFER

CALLS = DEVICE_BUFFER + """
import ctypes
from nccl.bindings import nccl as b
comm = nc.Communicator(0x1234)
stub.set_out("ncclCommCount", 2)
stub.set_out("ncclCommUserRank", 0)
x, y, big = OnDevice(4), OnDevice(4), OnDevice(8)
calls = {
    "allreduce": lambda **kw: comm.allreduce(x, y, nc.SUM, **kw),
    "reduce": lambda **kw: comm.reduce(x, y, nc.SUM, 0, **kw),
    "broadcast": lambda **kw: comm.broadcast(x, y, 0, **kw),
    "allgather": lambda **kw: comm.allgather(x, big, **kw),
    "gather": lambda **kw: comm.gather(x, big, 0, **kw),
    "reduce_scatter": lambda **kw: comm.reduce_scatter(big, x, nc.SUM, **kw),
    "alltoall": lambda **kw: comm.alltoall(x, y, **kw),
    "scatter": lambda **kw: comm.scatter(big, x, 0, **kw),
}
def reached(fn, **kw):
    stub.reset()
    stub.set_out("ncclCommCuDevice", 0)
    stub.set_out("ncclCommCount", 2)
    stub.set_out("ncclCommUserRank", 0)
    out = catch(fn, **kw)
    return None if out[0] == "ok" else out[:2], [n for n, _ in stub.calls() if n not in ("ncclCommCuDevice", "ncclCommCount",
                                                                            "ncclCommUserRank")]
"""

# The wrapped handles are the stub's fakes and are never destroyed: drop them (and the closures
# that hold them) here, so that their ResourceWarning cannot land in a later test's
# catch_warnings block when a collection finally runs there.
FORGET = """
_keep = {"result", "stub", "catch", "nc", "gc", "sys", "warnings"}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ResourceWarning)
    for _name in [n for n in globals() if not n.startswith("_") and n not in _keep]:
        globals()[_name] = None
    gc.collect()
"""

ENTRY = {"allreduce": "ncclAllReduce", "reduce": "ncclReduce", "broadcast": "ncclBroadcast",
         "allgather": "ncclAllGather", "gather": "ncclGather", "reduce_scatter": "ncclReduceScatter",
         "alltoall": "ncclAlltoAll", "scatter": "ncclScatter"}


def test_config_reaches_the_config_entry_points(stub_python):
    r = stub_python("nccl").run(CALLS + """
cfg = nc.NCCLCollConfig(min_ctas=2, alg_selection="ring", user_profiler_tag=2**64 - 1,
                        vendor_options=(nc.VendorOption(7, 1, int_value=5), nc.VendorOption(7, 2, str_value="x")))
result = {name: [reached(fn), reached(fn, config=None), reached(fn, config=nc.NCCLCollConfig()),
                 reached(fn, config=cfg), reached(fn, config=b.CollConfig())]
          for name, fn in calls.items()}
""" + FORGET)
    for name, (plain, none, default, full, lowpp) in r.items():
        assert plain == none == (None, [ENTRY[name]]), name
        assert default == full == lowpp == (None, [ENTRY[name] + "Config"]), name


def test_default_config_on_a_library_without_the_entry_points(stub_python):
    """NCCL 2.29 has no ncclXxxConfig: a default config runs the plain call; any other config is
    FunctionNotFoundError naming the entry point, never silently dropped."""
    r = stub_python("nccl_2_29").run(CALLS + """
result = {name: [reached(fn, config=nc.NCCLCollConfig()), reached(fn, config=nc.NCCLCollConfig(min_ctas=1)),
                 reached(fn, config=nc.NCCLCollConfig(vendor_options=(nc.VendorOption(1, 1, int_value=1),)))]
          for name, fn in calls.items()}
""" + FORGET)
    for name, (default, changed, vendor) in r.items():
        assert default == (None, [ENTRY[name]]), name
        for outcome in (changed, vendor):
            assert outcome[0][0] == "FunctionNotFoundError", (name, outcome)
            assert ENTRY[name] + "Config" in outcome[0][1], (name, outcome)
            assert outcome[1] == [], name


@pytest.mark.parametrize("bad,message", [
    ("1", "allreduce: config must be an NCCLCollConfig or None, got int"),
    ("nc.NCCLConfig()", "allreduce: config must be an NCCLCollConfig or None, got NCCLConfig"),
    ("'ring'", "allreduce: config must be an NCCLCollConfig or None, got str"),
])
def test_wrong_config_type_is_refused_before_any_library_call(stub_python, bad, message):
    r = stub_python("nccl").run(CALLS + f"""
stub.reset()
out = catch(comm.allreduce, x, y, nc.SUM, config={bad})
result = out[:2], [n for n, _ in stub.calls()]
""" + FORGET)
    assert r == (("TypeError", message), [])


def test_config_fields_are_checked():
    import nccl.core as nc

    with pytest.raises(TypeError) as ei:
        nc.NCCLCollConfig(min_ctas="2")
    assert str(ei.value) == "NCCLCollConfig.min_ctas must be int, got str"
    with pytest.raises(TypeError) as ei:
        nc.NCCLCollConfig(vendor_options=(3,))
    assert str(ei.value) == "NCCLCollConfig.vendor_options[0] must be a VendorOption, got int"
    with pytest.raises(ValueError) as ei:
        nc.VendorOption(1, 2)
    assert str(ei.value) == "VendorOption takes exactly one of int_value, str_value and raw_value, got 0"
    with pytest.raises(TypeError):
        nc.NCCLCollConfig(1)  # keyword-only, as upstream


def test_config_refcounts(stub_python):
    r = stub_python("nccl").run(CALLS + """
cfg = nc.NCCLCollConfig(min_ctas=2, alg_selection="".join(["ri", "ng"]),
                        vendor_options=(nc.VendorOption(7, 2, str_value="".join("v")),) * 6)
bad = nc.NCCLConfig()
comm.allreduce(x, y, nc.SUM, config=cfg)  # warm: lazy imports and caches
catch(comm.allreduce, x, y, nc.SUM, config=bad)
before = [sys.getrefcount(o) for o in (cfg, cfg.alg_selection, cfg.vendor_options, x, y, bad)]
for _ in range(2000):
    comm.allreduce(x, y, nc.SUM, config=cfg)
    comm.reduce(x, y, nc.SUM, 0, config=cfg)
    catch(comm.allreduce, x, y, nc.SUM, config=bad)
result = [sys.getrefcount(o) for o in (cfg, cfg.alg_selection, cfg.vendor_options, x, y, bad)], before
""" + FORGET)
    after, before = r
    assert after == before


def test_properties_against_the_library(stub_python):
    """Every field of ncclCommProperties_t as the stub fills it, and None for what a 2.29 library
    does not know (its struct version respected)."""
    code = DEVICE_BUFFER + """
import dataclasses
comm = nc.Communicator(0x1234)
p = comm.properties
result = {k: (v if not hasattr(v, "name") else [type(v).__name__, v.name]) for k, v in dataclasses.asdict(p).items()}
result["available_gin_types"] = None if p.available_gin_types is None else [t.name for t in p.available_gin_types]
result["same_as_getters"] = [p.cuda_dev == comm.cuda_dev, p.nvml_dev == comm.nvml_dev, p.gin_type == comm.gin_type]
"""
    new = stub_python("nccl").run(code + FORGET)
    assert new == {
        "rank": 3, "n_ranks": 8, "cuda_dev": 5, "nvml_dev": 9, "device_api_support": True, "multimem_support": False,
        "gin_type": ["NcclGinType", "PROXY"], "n_lsa_teams": 42, "host_rma_support": True,
        "railed_gin_type": ["NcclGinType", "GDAKI"], "comm_hash": 0x1234567890ABCDEF, "gin_min_stride": 2,
        "gin_connection_type": ["NcclGinConnectionType", "RAIL"], "available_gin_types": ["NONE", "PROXY", "GDAKI"],
        "dev_comm_runtime_version_size": 248, "cft_support": True, "cft_multicast_support": False,
        "cft_counted_support": True, "same_as_getters": [True, True, True]}
    old = stub_python("nccl_2_29").run(code + FORGET)
    assert old["n_lsa_teams"] == 42 and old["cuda_dev"] == 5
    for name in ("comm_hash", "gin_min_stride", "gin_connection_type", "available_gin_types",
                 "dev_comm_runtime_version_size", "cft_support", "cft_multicast_support", "cft_counted_support"):
        assert old[name] is None, name


def test_null_communicator_and_teams(stub_python):
    r = stub_python("nccl").run(DEVICE_BUFFER + """
null = nc.Communicator(None)
out = {"null_ptr": null.ptr, "null_valid": null.is_valid, "zero": nc.Communicator(0).ptr, "default": nc.Communicator().ptr}
for name in ("properties", "team_world", "team_lsa", "team_rail", "team_cft_multimem"):
    out[name] = catch(getattr, null, name)[:2]
out["team_cft"] = catch(null.team_cft)[:2]
comm = nc.Communicator(0x1234)
other = nc.Communicator(0x5678)
team = nc.NCCLTeam(4, 1, 2)
foreign = catch(comm.team_rank_to_world, other.team_world, 0)
stub.reset()
out["foreign"] = foreign[:2] if foreign else None
out["not_a_team"] = catch(comm.team_rank_to_world, (4, 1, 2), 0)[:2]
out["out_of_range"] = catch(comm.team_rank_to_world, team, 4)[:2]
out["calls_after_bad_input"] = [n for n, _ in stub.calls()]
out["equal_by_value"] = comm.team_world == nc.NCCLTeam(comm.team_world.n_ranks, comm.team_world.rank,
                                                        comm.team_world.stride)
result = out
""" + FORGET)
    assert r["null_ptr"] == r["zero"] == r["default"] == 0 and r["null_valid"] is False
    for name in ("properties", "team_world", "team_lsa", "team_rail", "team_cft_multimem"):
        assert r[name] == ("NCCLNullHandleError", f"Cannot get {name}: Communicator not initialized"), name
    assert r["team_cft"] == ("NCCLNullHandleError", "Cannot team_cft: Communicator not initialized")
    assert r["foreign"] == ("NcclInvalid", "team_rank_to_world: team belongs to another communicator")
    assert r["not_a_team"] == ("TypeError", "team_rank_to_world: team must be an NCCLTeam, got tuple")
    assert r["out_of_range"] == ("NcclInvalid",
                                 "team_rank_to_world: team_rank=4 is out of range for a team of 4 ranks")
    assert r["calls_after_bad_input"] == []
    assert r["equal_by_value"] is True


def test_create_dev_comm_through_the_library(stub_python):
    """create_dev_comm builds the requirements (scalar fields, teams, barrier requirements), calls
    ncclDevCommCreate, tracks the DevCommResource and destroys it on close; bad requirements are
    refused before any library call; references are given back."""
    r = stub_python("nccl").run(DEVICE_BUFFER + """
comm = nc.Communicator(0x1234)
team = nc.NCCLTeam(2, 0, 1)
reqs = nc.NCCLDevCommRequirements(barrier_count=2, gin_context_count=1,
                                  teams=(nc.TeamRequirement(team, multimem=True),),
                                  resources=(nc.LsaBarrierRequirement(team, 2), nc.GinBarrierRequirement(team, 1)))
stub.reset()
before = sys.getrefcount(reqs), sys.getrefcount(team)
dev = comm.create_dev_comm(reqs)
made = [n for n, _ in stub.calls() if n != "ncclGetVersion"]  # the too-new-field check asks it
info = (type(dev).__name__, dev.is_valid, dev.ptr != 0, type(dev.dev_comm).__name__,
        [type(h).__name__ for h in dev.resource_handles], type(dev.multimem_handle(team)).__name__)
missing = catch(dev.multimem_handle, nc.NCCLTeam(4, 0, 1))[:2]
stub.reset()
dev.close()
closed = [n for n, _ in stub.calls()], dev.is_valid
del dev
gc.collect()
after = sys.getrefcount(reqs), sys.getrefcount(team)
stub.reset()
bad = [catch(comm.create_dev_comm, 3)[:2], catch(comm.create_dev_comm, nc.NCCLConfig())[:2]]
result = made, info, missing, closed, before == after, bad, [n for n, _ in stub.calls()]
""" + FORGET)
    made, info, missing, closed, refs_ok, bad, calls_after_bad = r
    assert made == ["ncclLsaBarrierCreateRequirement", "ncclGinBarrierCreateRequirement", "ncclDevCommCreate"]
    assert info == ("DevCommResource", True, True, "DevComm", ["LsaBarrierHandle", "GinBarrierHandle"],
                    "MultimemHandle")
    assert missing[0] == "NcclInvalid" and "was not among the requirements' teams" in missing[1]
    assert closed == (["ncclDevCommDestroy"], False)
    assert refs_ok
    assert bad == [("TypeError", "create_dev_comm: requirements must be an NCCLDevCommRequirements or None, got int"),
                   ("TypeError", "create_dev_comm: requirements must be an NCCLDevCommRequirements or None, "
                                 "got NCCLConfig")]
    assert calls_after_bad == []


def test_window_le_info_and_multimem_pointer(stub_python):
    """RegisteredWindowHandle's 0.5.0 queries reach their entry points with the window, offset,
    peer and team given, and return CftLeInfo / an address."""
    r = stub_python("nccl").run(DEVICE_BUFFER + """
from nccl.bindings import nccl as b
comm = nc.Communicator(0x1234)
stub.set_out("ncclCommWindowRegister", 0xABC0)
win = comm.register_window(OnDevice(1024))
stub.reset()
out = [type(win.get_multimem_le_info(8)).__name__, type(win.get_peer_le_info(1, offset=16)).__name__,
       type(win.get_cft_le_info(1, nc.NCCLTeam(2, 0, 1))).__name__,
       catch(win.get_cft_le_info, 1, (2, 0, 1))[:2],
       catch(win.get_multimem_device_pointer, 5)[:2]]
calls = [(c.name, c.args[:3]) for c in stub.calls(with_blobs=True)]
win.close()
result = out, calls
""" + FORGET)
    out, calls = r
    assert out[:3] == ["CftLeInfo", "CftLeInfo", "CftLeInfo"]
    assert out[3] == ("TypeError", "get_cft_le_info: cft_team must be an NCCLTeam, got tuple")
    assert out[4] == ("TypeError", "get_multimem_device_pointer: multimem must be a MultimemHandle, got int")
    assert [c[0] for c in calls] == ["ncclGetMultimemDeviceLeInfo", "ncclGetPeerDeviceLeInfo", "ncclGetCftDeviceLeInfo"]
    assert tuple(calls[0][1][:2]) == (0xABC0, 8) and tuple(calls[1][1][:3]) == (0xABC0, 16, 1)


def test_changes_after_use_are_honoured(stub_python):
    """The struct built from a config is reused only while its fields are unchanged (see
    src/ext/core/coll_config.c): on NCCL 2.29 a default config runs the plain call and any other is
    refused, so every assignment after a use shows in which of the two happens."""
    r = stub_python("nccl_2_29").run(CALLS + """
import copy, pickle
fn = calls["allreduce"]
cfg = nc.NCCLCollConfig()
out = [reached(fn, config=cfg), reached(fn, config=cfg)]
cfg.min_ctas = 1
out.append(reached(fn, config=cfg))
cfg.min_ctas = None
out.append(reached(fn, config=cfg))
cfg.alg_selection = "".join(["ri", "ng"])
out.append(reached(fn, config=cfg))
del cfg.alg_selection  # the class default (None) shows again
out.append(reached(fn, config=cfg))
cfg.alg_selection = None
cfg.min_ctas = "2"  # assigned, so unchecked until used: the same error as a config never used
fresh = nc.NCCLCollConfig()
fresh.min_ctas = "2"
out += [reached(fn, config=cfg), reached(fn, config=fresh)]
vendor = []
listed = nc.NCCLCollConfig(vendor_options=vendor)
out.append(reached(fn, config=listed))
vendor.append(nc.VendorOption(1, 1, int_value=1))  # a list can change in place
out.append(reached(fn, config=listed))
cfg.min_ctas = 3
used = [copy.copy(cfg), copy.deepcopy(cfg), pickle.loads(pickle.dumps(cfg))]
result = out, [(c == cfg, "_nx_coll_config" in vars(c)) for c in used]
""" + FORGET)
    out, copies = r
    plain = (None, ["ncclAllReduce"])
    assert out[0] == out[1] == out[3] == out[5] == plain
    for i in (2, 4, 9):
        assert out[i][0][0] == "FunctionNotFoundError" and out[i][1] == [], (i, out[i])
    assert out[6] == out[7] and out[6][0][0] == "TypeError" and "min_ctas" in out[6][0][1], out[6]
    assert out[6][1] == []
    assert out[8] == plain
    assert copies == [(True, False)] * 3


def test_every_field_reaches_the_struct(stub_python):
    """Each field of NCCLCollConfig, set alone, makes the config a non-default one (src/ext/
    coll_config.c's field table covers the dataclass): on NCCL 2.29 it is refused, where the
    default config runs the plain call. A field the table missed would run the plain call."""
    r = stub_python("nccl_2_29").run(CALLS + """
import dataclasses
fn = calls["allreduce"]
sample = {"min_ctas": 1, "max_ctas": 1, "nvls_ctas": 1, "cga_cluster_size": 1, "alg_selection": "ring",
          "force_alg_selection": False, "cta_policy": 1, "user_profiler_tag": 0, "launch_completion_event": 1,
          "vendor_options": (nc.VendorOption(1, 1, int_value=1),)}
result = {f.name: reached(fn, config=nc.NCCLCollConfig(**{f.name: sample[f.name]}))
          for f in dataclasses.fields(nc.NCCLCollConfig)}
result["(none)"] = reached(fn, config=nc.NCCLCollConfig())
""" + FORGET)
    assert r.pop("(none)") == (None, ["ncclAllReduce"])
    assert len(r) == 10
    for name, out in r.items():
        assert out[0][0] == "FunctionNotFoundError" and out[1] == [], (name, out)
