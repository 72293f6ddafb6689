"""The bindings against Debian's real RCCL builds, without a GPU: what the library is, which entry
points resolve, its error texts, the AlltoAll spellings, the RCCL-only collectives, Communicator
construction and the doctor's report. Device work cannot succeed here; every call that reaches
RCCL must come back as a clean error from RCCL itself."""

import json

import pytest
from api_tables import C_TO_PY, NOT_WRAPPED
from rccl_calls import snippet

from nccl import _ext
from nccl._ext import _version_text as version_text
from nccl._enums import Result

ROWS = _ext._abi_symbols()  # (name, since, rccl_only); reading the table loads no library
# RCCL's two spellings of the all-to-all pair, the newer one first.
SPELLINGS = {"ncclAlltoAll": "ncclAllToAll", "ncclAlltoAllv": "ncclAllToAllv"}


def served(rccl):
    """{row: exported by the library}, straight from nm -D."""
    exports = rccl.exports()
    return {name: name in exports for name, _, _ in ROWS}


def missing_rows(rccl):
    """Rows the library does not serve: not exported, and no other spelling of it exported."""
    have = served(rccl)
    partner = {**SPELLINGS, **{old: new for new, old in SPELLINGS.items()}}
    return [(name, since, rccl_only) for name, since, rccl_only in ROWS
            if not have[name] and not (name in partner and have[partner[name]])]


def test_version_flavour_and_path(rccl):
    out = rccl.json("""
        import json, nccl.bindings.nccl as n
        print(json.dumps([n.get_version(), n.get_library_flavour(), n.get_library_path(), n.get_load_attempts()]))
    """)
    version, flavour, path, attempts = out
    assert version == rccl.version_code
    if rccl.pinned:
        assert version_text(version) == {"trixie": "2.13.4", "experimental": "2.27.7"}[rccl.suite]
    assert flavour == "rccl"
    assert path == rccl.library
    assert attempts == [[rccl.soname_path, None]]


def test_the_pinned_builds_are_what_the_tests_expect(rccl):
    """Facts of the two builds the rest of the file leans on (an independent look at the exports)."""
    if not rccl.pinned:
        pytest.skip(f"{rccl.suite} is a substituted build ({rccl.manifest['note']})")
    exports = rccl.exports()
    assert {"ncclAllToAll", "ncclAllToAllv", "ncclGather", "ncclScatter", "ncclCommInitRank"} <= exports
    assert not {"ncclAlltoAll", "ncclAlltoAllv", "ncclCommRevoke"} & exports
    if rccl.suite == "trixie":
        assert not {"ncclCommInitRankConfig", "ncclCommInitRankScalable", "ncclAllReduceWithBias"} & exports
    else:
        assert {"ncclCommInitRankConfig", "ncclCommInitRankScalable", "ncclAllReduceWithBias"} <= exports


def test_every_abi_row_resolves_exactly_as_the_library_exports(rccl):
    out = rccl.json("""
        import json
        import nccl.bindings.nccl as n
        from nccl import _ext
        n.get_version()
        print(json.dumps({name: bool(address) for name, address in _ext._abi_resolved().items()}))
    """)
    assert out == served(rccl)


def test_what_the_library_lacks_raises_function_not_found(rccl):
    # rows without a Python wrapper yet (NOT_WRAPPED) are covered by the resolution test above
    lacking = {name: (since, rccl_only) for name, since, rccl_only in missing_rows(rccl) if name not in NOT_WRAPPED}
    assert lacking  # neither build has the 2.29 rows
    out = rccl.json(snippet("""
        wanted = json.loads(sys.argv[1])
        print(json.dumps({name: outcome(function(py), args_for(function(py), comm=fake_comm))
                          for name, py in wanted.items()}))
    """), args=[json.dumps({name: C_TO_PY[name] for name in lacking})])
    where = f"{rccl.library} (rccl {rccl.rccl_version})"
    expected = {}
    for name, (since, rccl_only) in lacking.items():
        if rccl_only:
            message = f"function {name} is not found in the loaded RCCL library ({rccl.library}: rccl {rccl.rccl_version})"
        else:
            message = f"function {name} is not found in {where}; it requires NCCL >= {version_text(since)}"
        expected[name] = ["FunctionNotFoundError", message]
    assert out == expected


def test_alltoall_entry_points_resolve_through_rccls_spelling(rccl):
    """ncclAlltoAll/ncclAlltoAllv are absent from both builds; the wrappers use ncclAllToAll and
    ncclAllToAllv, which the loader resolved from the library."""
    have = served(rccl)
    out = rccl.json(snippet("""
        resolved = _ext._abi_resolved()
        exported = {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                    for name in ("ncclAllToAll", "ncclAllToAllv")}
        print(json.dumps({"resolved": {k: resolved[k] for k in ("ncclAlltoAll", "ncclAlltoAllv",
                                                                   "ncclAllToAll", "ncclAllToAllv")},
                          "exported": exported}))
    """))
    for new, old in SPELLINGS.items():
        if not have[new]:
            assert have[old], f"{rccl} has neither {new} nor {old}"
            assert out["resolved"][new] == 0
            assert out["resolved"][old] == out["exported"][old] != 0


def test_all_to_all_v_and_all_reduce_with_bias_reach_rccl(rccl):
    """The RCCL-only collectives get to RCCL's own argument checks. The communicator is 256 MiB of
    zeroes: RCCL 2.27's comm check reads it and refuses it as corrupted (had our comm landed in
    another parameter, RCCL would see the null stream there and say 'comm argument is NULL');
    RCCL 2.13 takes it, reads 0 ranks, and fails at the HIP device it names."""
    if not rccl.pinned:
        pytest.skip(f"the answers below are those of the pinned builds ({rccl.manifest['note']})")
    out = rccl.json(snippet("""
        x = np.ones(8, np.float32)
        counts = np.ones(1, np.uintp).ctypes.data
        p = x.ctypes.data
        res = {}
        for name, fn, args in (
                ("all_to_all_v", rx.all_to_all_v, (p, counts, scratch, p + 16, counts, scratch, 7, fake_comm, 0)),
                ("all_reduce_with_bias", rx.all_reduce_with_bias, (p, p + 16, 1, 7, 0, fake_comm, 0, p + 32))):
            try:
                fn(*args)
                res[name] = ["ok"]
            except n.NCCLError as e:
                res[name] = [type(e).__name__, e.status, e.last_error, last_error()]
            except Exception as e:
                res[name] = [type(e).__name__, str(e)]
        print(json.dumps(res))
    """))
    if rccl.suite == "experimental":
        refused = ["NCCLInvalidArgument", 4, "Error: corrupted comm object detected",
                   "Error: corrupted comm object detected"]
        assert out == {"all_to_all_v": refused, "all_reduce_with_bias": refused}
    else:
        assert out["all_to_all_v"] == ["NCCLUnhandledCudaError", 1, "HIP failure 'invalid device ordinal'",
                                       "HIP failure 'invalid device ordinal'"]
        assert out["all_reduce_with_bias"] == [
            "FunctionNotFoundError",
            f"function ncclAllReduceWithBias is not found in the loaded RCCL library ({rccl.library}: rccl 2.13.4)"]


def worded(text):
    """RCCL's status text as NCCLError words it: HIP where RCCL says cuda."""
    return text.replace("cuda", "HIP")


def without_hint(text):
    """The text less RCCL's "(run with NCCL_DEBUG=INFO|WARN for details)": left out when the last error follows."""
    for level in ("INFO", "WARN"):
        text = text.removesuffix(f" (run with NCCL_DEBUG={level} for details)")
    return text


def test_error_strings_are_rccls_and_the_messages_say_hip(rccl):
    out = rccl.json(snippet("""
        res = {}
        for status in range(0, 10):
            raw = lib.ncclGetErrorString(status).decode()
            res[status] = [raw, n.get_error_string(status), str(n.NCCLError(status)),
                           str(n.NCCLError(status, "from RCCL"))]
        print(json.dumps(res))
    """))
    for status, (raw, ours, message, with_last) in out.items():
        status = int(status)
        name = Result(status).name if status in Result._value2member_map_ else "Unknown"
        assert ours == raw
        assert message == f"{name} ({status}): {worded(raw)}"
        assert with_last == f"{without_hint(message)}\n  library's last error: from RCCL"
    assert "cuda" in out["1"][0] and "HIP" in out["1"][2]


def test_a_failed_call_carries_rccls_last_error_labelled(rccl):
    out = rccl.json(snippet("""
        import nccl.core as nc
        try:
            nc.Communicator.init(1, 0, nc.UniqueId.from_bytes(bytes(128)))
        except n.NCCLError as e:
            print(json.dumps([type(e).__name__, e.status, str(e), e.last_error, last_error(),
                              lib.ncclGetErrorString(e.status).decode()]))
    """))
    cls, status, message, last, direct, raw = out
    assert (cls, status) == ("NCCLUnhandledCudaError", 1)
    assert last and last == direct
    assert message == f"UnhandledCudaError (1): {without_hint(worded(raw))}\n  library's last error: {last}"


INIT = """
import nccl.core as nc
ids = [nc.UniqueId.from_bytes(bytes([seed]) + bytes(127)) for seed in range(1, 1 + int(sys.argv[1]))]
config = nc.NCCLConfig(blocking=True) if sys.argv[2] == "config" else None
try:
    nc.Communicator.init(1, 0, ids if len(ids) > 1 else ids[0], config=config)
    res = ["ok"]
except n.NCCLError as e:
    res = [type(e).__name__, e.status]
except Exception as e:
    res = [type(e).__name__, str(e)]
print(json.dumps(res))
"""


@pytest.mark.parametrize("nids, config", [(1, "none"), (1, "config"), (2, "none")])
def test_communicator_init_reaches_the_library(rccl, nids, config):
    """Without a GPU, RCCL fails the construction with a HIP error: what matters is that the call
    got there, through the newest constructor the library has (RCCL 2.13 has only
    ncclCommInitRank), or names the constructor a request needs and its first release."""
    out = rccl.json(snippet(INIT), args=[str(nids), config])
    exports = rccl.exports()
    if "ncclCommInitRankScalable" in exports:
        assert out == ["NCCLUnhandledCudaError", 1]
    elif nids > 1:
        assert out == ["FunctionNotFoundError", f"function ncclCommInitRankScalable is not found in {rccl.library} "
                                                f"(rccl {rccl.rccl_version}); it requires NCCL >= 2.23.4"]
    elif config == "config" and "ncclCommInitRankConfig" not in exports:
        assert out == ["FunctionNotFoundError", f"function ncclCommInitRankConfig is not found in {rccl.library} "
                                                f"(rccl {rccl.rccl_version}); it requires NCCL >= 2.14.3"]
    else:
        assert out == ["NCCLUnhandledCudaError", 1]


def section(text, title):
    lines = text.splitlines()
    i = lines.index(title)
    body = []
    for ln in lines[i + 2:]:
        if ln == "":
            break
        body.append(ln)
    return body


def test_doctor_reports_the_library_and_its_gaps(rccl):
    proc = rccl.run("import runpy, sys; sys.argv = ['nccl', 'doctor']; runpy.run_module('nccl', run_name='__main__')")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    lib = section(text, "Library")
    assert lib[:3] == [f"version      : {rccl.rccl_version}", f"path         : {rccl.library}", "flavour      : rccl"]
    body = section(text, "Missing ABI symbols")
    missing = missing_rows(rccl)
    assert body[0] == (f"{len(missing)} entry point(s) absent from {rccl.library}; calling them raises "
                       "FunctionNotFoundError:")
    listed = [ln.split() for ln in body[1:1 + len(missing)]]
    assert listed == [[name, "RCCL-only"] if rccl_only else [name, "NCCL", ">=", version_text(since)]
                      for name, since, rccl_only in missing]
    have = served(rccl)
    aliased = [[new, "by", old] for new, old in SPELLINGS.items() if not have[new] and have[old]]
    tail = body[1 + len(missing):]
    assert aliased  # both builds spell the all-to-all pair the older way
    assert tail[0] == "served under the library's older spelling (the wrappers fall back to it):"
    assert [ln.split() for ln in tail[1:]] == aliased
