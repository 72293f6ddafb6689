"""Null handles never reach RCCL. RCCL 2.27.7 dereferences a NULL communicator inside
ncclAllReduce, ncclAllToAll and ncclAllReduceWithBias (and 2.13.4 inside ncclAllToAll), so
every binding that takes a communicator or a window must refuse a null one with an
NCCLNullHandleError (a ValueError and an NCCLError(InvalidArgument)) naming the argument, before any
library call; a binding whose C function the library lacks raises
FunctionNotFoundError first, which calls nothing either.

The cases come from the bindings' own signatures: every parameter named comm (except
get_last_error's, where NULL asks for the library-wide text) or naming a window. Each case runs
in its own child under the prefix's loader, so a crash fails that case alone; the library's
last-error text, read before and after, shows that RCCL was not called (RCCL records a warning for
every null communicator it is handed)."""

import inspect

import pytest
from api_tables import C_TO_PY
from rccl_calls import decode, run_many, snippet

import nccl.bindings.nccl as bindings
import nccl.bindings.rocm_extensions as rocm_extensions

HANDLE_PARAMS = ("comm", "win", "window", "peer_win")
# get_last_error(NULL) is the library-wide last error, as in NCCL's own API.
NULL_ALLOWED = {("get_last_error", "comm")}


def _cases():
    cases = []
    for module, prefix in ((bindings, ""), (rocm_extensions, "rocm_extensions.")):
        for name in sorted(module.__all__):
            fn = getattr(module, name)
            if not callable(fn) or isinstance(fn, type):
                continue
            try:
                params = list(inspect.signature(fn).parameters)
            except (TypeError, ValueError):
                continue
            for p in params:
                if p in HANDLE_PARAMS and (name, p) not in NULL_ALLOWED:
                    cases.append((prefix + name, p))
    return cases


CASES = _cases()
PY_TO_C = {}
for _c, _py in C_TO_PY.items():
    PY_TO_C.setdefault(_py, []).append(_c)

CASE = """
qualified, null_arg = sys.argv[1], sys.argv[2]
fn = function(qualified)
given = {null_arg: 0}
if null_arg != "comm" and "comm" in inspect.signature(fn).parameters:
    given["comm"] = fake_comm  # a non-null communicator, so only the window is null
before = last_error()
res = outcome(fn, args_for(fn, **given))
print(json.dumps({"outcome": res, "before": before, "after": last_error()}))
"""


def test_the_cases_cover_the_comm_taking_bindings():
    names = {name for name, _ in CASES}
    assert {"all_reduce", "allto_all", "comm_destroy", "send", "rocm_extensions.all_reduce_with_bias",
            "rocm_extensions.all_to_all_v", "comm_window_deregister", "get_lsa_device_pointer"} <= names
    assert len(CASES) > 45


@pytest.fixture(scope="module")
def null_results(rccl):
    jobs = {case: (snippet(CASE), list(case)) for case in CASES}
    return rccl, run_many(rccl, jobs)


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_null_handle_is_refused_before_the_library(null_results, case):
    rccl, procs = null_results
    out = decode(procs[case], rccl)  # a crash inside RCCL fails here
    qualified, arg = case
    kind, message = out["outcome"]
    exports = rccl.exports()
    symbols = PY_TO_C[qualified]
    if not any(s in exports for s in symbols):
        assert kind == "FunctionNotFoundError", out
        assert message.startswith(f"function {symbols[0]} is not found"), out
    else:
        fname = qualified.rpartition(".")[2]
        if "slot address" in message:  # a 0 out-parameter slot (comm_init_rank's comm, a window's
            # slot): a bad address, not a null handle, so a plain ValueError (docs/compatibility.md)
            assert kind == "ValueError", out
        else:
            assert kind == "NCCLNullHandleError", out  # a ValueError and an NCCLError(InvalidArgument)
        assert f"{fname}() argument '{arg}'" in message and "null" in message.lower(), out
    assert out["after"] == out["before"], "the library was called (it recorded a new last error)"


CORE = """
import nccl.core as nc
x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
given = {"sendbuf": x, "recvbuf": y, "bias": x, "op": nc.SUM, "root": 0, "peer": 0, "sendcounts": [1],
         "sdispls": [0], "recvcounts": [1], "rdispls": [0], "scalar": 1.0, "stat": 0, "buffer": x,
         "local_buffer": x, "peer_window": None, "descs": [], "nranks": 1, "color": 0,
         "team": nc.NCCLTeam(1, 0, 1), "team_rank": 0}
c = nc.Communicator()
before = last_error()
res = {}
for name in sorted(m for m in dir(c) if not m.startswith("_")):
    if name in ("init", "initialize", "init_all", "from_env"):  # constructors, not uses of a handle
        continue
    try:
        method = getattr(c, name)
    except nc.NcclInvalid as e:
        res[name] = [type(e).__name__, str(e)]
        continue
    if not callable(method):
        continue
    try:
        params = [p for p in inspect.signature(method).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except ValueError:
        params = []
    res[name] = outcome(method, [given[p.name] for p in params])
print(json.dumps({"results": res, "before": before, "after": last_error()}))
"""


def test_an_uninitialized_core_communicator_never_reaches_rccl(rccl):
    out = rccl.json(snippet(CORE))
    teardown = {"abort", "destroy", "finalize", "close_all_resources"}
    for name, (kind, text) in out["results"].items():
        if name in teardown:
            assert (kind, text) == ("ok", "None"), name  # nothing to tear down
        elif name == "grow":  # Communicator().grow(...) is how a new rank joins: without rank=, a usage error
            assert kind == "NcclInvalid", (name, kind, text)
            assert "initialized" in text, (name, text)
        else:
            assert kind == "NCCLNullHandleError", (name, kind, text)  # an NcclInvalid
            assert "initialized" in text, (name, text)
    assert {"allreduce", "alltoall", "alltoallv", "allreduce_with_bias", "send", "nranks"} <= set(out["results"])
    assert out["after"] == out["before"]
