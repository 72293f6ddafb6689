"""Communicator.init on libraries of three generations (tests/loader/mini_nccl.c, MINI_INIT): the
newest constructor the library has is called, and one it lacks is named with the release that
introduced it. Each mini constructor fails with its own status and leaves a last-error text that
records its arguments, so the NCCLError says which one ran and with what."""

import pytest

INIT = """
import json
import nccl.core as nc
from nccl.bindings import nccl as b
ids = [nc.UniqueId.from_bytes(bytes([seed]) + bytes(127)) for seed in {seeds}]
config = {config}
try:
    nc.Communicator.init(3, 2, ids if len(ids) > 1 else ids[0], config=config)
except b.NCCLError as e:
    out = {{"error": type(e).__name__, "status": e.status, "last": e.last_error}}
except b.FunctionNotFoundError as e:
    out = {{"error": type(e).__name__, "message": str(e)}}
print(json.dumps(out))
"""


def run_init(run_py, lib, seeds=(7,), config="None"):
    return run_py(INIT.format(seeds=list(seeds), config=config), {"NCCL_LIBRARY": lib})


@pytest.mark.parametrize("variant, called, status", [
    ("init_2_13", "ncclCommInitRank", 5),
    ("init_2_22", "ncclCommInitRankConfig", 4),
    ("init_2_23", "ncclCommInitRankScalable", 6),
])
def test_one_id_without_config_uses_the_newest_constructor(mini_libs, run_py, variant, called, status):
    out = run_init(run_py, mini_libs[variant])
    assert out == {"error": type_for(status), "status": status,
                   "last": f"{called} nranks=3 rank=2 id=7 config=0"}


@pytest.mark.parametrize("variant, called, status", [
    ("init_2_22", "ncclCommInitRankConfig", 4),
    ("init_2_23", "ncclCommInitRankScalable", 6),
])
def test_a_config_goes_to_a_constructor_that_takes_it(mini_libs, run_py, variant, called, status):
    out = run_init(run_py, mini_libs[variant], config="nc.NCCLConfig(blocking=True)")
    assert out["status"] == status and out["last"] == f"{called} nranks=3 rank=2 id=7 config=1"


def test_a_config_on_a_library_without_ncclcomminitrankconfig(mini_libs, run_py):
    out = run_init(run_py, mini_libs["init_2_13"], config="nc.NCCLConfig(blocking=True)")
    assert out == {"error": "FunctionNotFoundError",
                   "message": f"function ncclCommInitRankConfig is not found in {mini_libs['init_2_13']} "
                              "(nccl 2.13.4); it requires NCCL >= 2.14.3"}


@pytest.mark.parametrize("variant, version", [("init_2_13", "2.13.4"), ("init_2_22", "2.22.3")])
def test_several_ids_need_the_scalable_constructor(mini_libs, run_py, variant, version):
    out = run_init(run_py, mini_libs[variant], seeds=(7, 8))
    assert out == {"error": "FunctionNotFoundError",
                   "message": f"function ncclCommInitRankScalable is not found in {mini_libs[variant]} "
                              f"(nccl {version}); it requires NCCL >= 2.23.4"}


def test_several_ids_reach_the_scalable_constructor(mini_libs, run_py):
    out = run_init(run_py, mini_libs["init_2_23"], seeds=(7, 8))
    assert out["last"] == "ncclCommInitRankScalable nranks=3 rank=2 id=7 config=0"


def type_for(status):
    return {4: "NCCLInvalidArgument", 5: "NCCLInvalidUsage", 6: "NCCLRemoteError"}[status]
