"""Argument marshalling of every nccl.bindings function, checked against what the stub NCCL
recorded on the C side: pointers keep all 64 bits, sizes are not narrowed, enums and flags arrive as
passed, unique ids by value, copied int and size_t arrays, out-parameters and the two return
conventions (0.3.1: the status, 0 or 7; 0.2.0 forms, chosen by argument count: the new handle).

The expected values come from docs/compatibility.md#functions-and-minimum-versions (names, parameter names,
argument counts, minimum versions)
and from the stub's documented behaviour, never from the code under test. The rows of the generated
wrappers with int-only parameters are made from the description the wrappers are generated from
(tools/nccl_surface.py: abi.h's argument order, a converter kind each) by the marshalling rules
alone. The calls run in child interpreters (the stub_python fixture); this process loads no
library.
"""

import struct
import sys
from pathlib import Path

import pytest
from api_tables import ALIASES, API_MIN_VERSION, C_TO_PY, DUAL_FORMS, LOADER_FUNCTIONS, NOT_WRAPPED, version_code

from nccl import _ext

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import nccl_surface  # noqa: E402
import surface_headers  # noqa: E402

MASK = (1 << 64) - 1


def u(v):
    """A C integer argument as the stub records it."""
    return v & MASK


ANY = "<any non-null pointer>"  # an out-parameter the binding owns: its address is not ours to know

# Pointer-like values, one per argument position, so that a swap or a truncation shows.
P = [0x7F00_0000_1000 + 0x1111 * k for k in range(12)]
HIGH = 0xFFFF_8000_0000_1230  # above 2**63: an address must keep its bits
NEG = -4096                   # a negative int is accepted as an intptr_t
SIZE = (1 << 40) + 3          # beyond 32 bits
SIZE2 = (1 << 33) + 5

# What the stub's output hooks write in the plain cases (stub.set_out) and its other settings.
OUTS = {
    "ncclMemAlloc": 0xDEAD_BEEF_0000,
    "ncclCommGetAsyncError": 4,
    "ncclCommCount": 6,
    "ncclCommCuDevice": 2,
    "ncclCommUserRank": 5,
    "ncclCommRegister": 0x4E6_0000,
    "ncclCommMemStats": 0xFFFF_FFFF_FFFF_FFF0,
    "ncclWinGetUserPtr": 0x5E5_0000,
    "ncclRedOpCreatePreMulSum": 23,
    "ncclGetLsaMultimemDevicePointer": 0xAAAA_0000,
    "ncclGetLsaDevicePointer": 0xBBBB_0000,
    "ncclGetPeerDevicePointer": 0xCCCC_0000,
    "ncclLLA2ACalcSlots": 77,
    "ncclGetMultimemDeviceLeInfo": 0x1234_0000_0042,  # le_id 0x42, le_offset 0x1234
    "ncclGetPeerDeviceLeInfo": 0xFFFF_FFFF_8000_0001,
}
VERSION = 22905
LAST_ERROR = "stub last error text"

# (module, function, [(upstream parameter name, value)], C symbol, recorded arguments, return)
# The generated wrappers whose parameters are all ints (every kind but structs and the hand-written
# ones): rows made from the description (tools/nccl_surface.py) by the marshalling rules alone, a
# value per parameter distinct within its call (generated_rows below).
PLAIN_KINDS = {"comm", "comm_or_null", "window", "addr", "size", "int", "uint", "dtype", "redop", "stream", "enum",
               "out"}


def sample_values(enums):
    """For each kind, a function of the parameter's position j in its call giving a value that no other
    parameter of the call has, and that shows a truncation or a swap."""
    ints = [3, -3, 7, 2, 5, -1, 9]
    return {
        "addr": lambda j, k: (HIGH, *P)[j % 13], "comm": lambda j, k: P[j % 12], "comm_or_null": lambda j, k: P[j % 12],
        "window": lambda j, k: P[(j + 6) % 12], "stream": lambda j, k: (NEG, *P)[(j + 3) % 13],
        "size": lambda j, k: (SIZE, SIZE2)[j % 2], "int": lambda j, k: ints[j % 7], "uint": lambda j, k: 0xFFFF_FFFF,
        "dtype": lambda j, k: 11 - j % 5, "redop": lambda j, k: 4,
        "enum": lambda j, k: max(v for _, v in enums[k.ctypes[0]]),
    }


def generated_rows():
    """(module, function, [(parameter, value)], C symbol, recorded arguments, return) of every generated
    wrapper with int-only parameters and a result the stub scripts (None, or an OUTS value)."""
    rows = surface_headers.read_abi()
    enums, _ = surface_headers.read_enums()
    sample = sample_values(enums)
    out = []
    for b in nccl_surface.BINDINGS:
        if b.hand or not all(k.name in PLAIN_KINDS for k in b.params) or b.result.name not in ("none", "out"):
            continue
        if b.result.name == "out" and b.entry not in OUTS:
            continue
        params, recorded = [], []
        for j, (p, k) in enumerate(zip(rows[b.entry].params, b.params)):
            value = ANY if k.name == "out" else sample[k.name](j, k)
            recorded.append(value)
            if value is not ANY:
                params.append((p.snake, value))
        out.append(("rx" if b.module == "rccl" else "b", b.name, params, b.entry, recorded,
                    OUTS[b.entry] if b.result.name == "out" else None))
    return out


# The others, written out: results from the stub's own behaviour (version, texts, pairs), no argument.
PLAIN = generated_rows() + [
    ("b", "get_version", [], "ncclGetVersion", [ANY], VERSION),
    ("b", "get_error_string", [("result", 5)], "ncclGetErrorString", [5], "stub: error string for result 5"),
    ("b", "get_last_error", [("comm", P[3])], "ncclGetLastError", [P[3]], LAST_ERROR),
    ("b", "wait_signal", [("n_desc", 0), ("signal_descs", 0), ("comm", P[6]), ("stream", P[7])],
     "ncclWaitSignal", [0, 0, P[6], P[7]], None),
    ("b", "group_start", [], "ncclGroupStart", [], None),
    ("b", "group_end", [], "ncclGroupEnd", [], None),
    ("b", "ll_a2a_calc_slots", [("max_elts", 1 << 20), ("max_elt_size", -8)], "ncclLLA2ACalcSlots",
     [1 << 20, u(-8)], 77),
    ("b", "get_multimem_device_le_info", [("window", P[3]), ("offset", SIZE)], "ncclGetMultimemDeviceLeInfo",
     [P[3], SIZE, ANY, ANY], (0x42, 0x1234)),
    ("b", "get_peer_device_le_info", [("window", P[4]), ("offset", 64), ("peer_world", -1)],
     "ncclGetPeerDeviceLeInfo", [P[4], 64, u(-1), ANY, ANY], (0x8000_0001, 0xFFFF_FFFF)),
    ("b", "param_get_parameter", [("key", "NCCL_PROTO")], "ncclParamGetParameter", [ANY, ANY, ANY],
     "stub-NCCL_PROTO"),
    ("b", "param_dump_all", [], "ncclParamDumpAll", [], None),
]

COVERED = {case[3] for case in PLAIN}


def covers(*symbols):
    """Marks a test as the marshalling check of these C symbols (see test_every_row_is_covered)."""
    COVERED.update(symbols)
    return lambda fn: fn


def matches(recorded, expected):
    """recorded == expected, where ANY stands for any non-null pointer."""
    return len(recorded) == len(expected) and all(
        (r != 0) if e is ANY else (r == u(e)) for r, e in zip(recorded, expected))


# ---- the ABI table against the independent lists ----

def test_every_row_has_a_wrapper():
    rows = {name for name, _, _ in _ext._abi_symbols()}
    assert rows == set(C_TO_PY), "abi.h rows without an entry here (or entries without a row)"
    import nccl.bindings.nccl as b
    import nccl.bindings.rocm_extensions as rx
    for c, py in C_TO_PY.items():
        module, _, name = py.rpartition(".")
        if c in NOT_WRAPPED:  # a wrapper that appears must take its row off the list
            assert not hasattr(rx if module else b, name), f"{py} exists: take {c} off NOT_WRAPPED"
            assert c in b._NOT_WRAPPED, c
        else:
            assert callable(getattr(rx if module else b, name)), py


def test_no_unlisted_functions():
    import nccl.bindings as nb
    import nccl.bindings.nccl as b
    import nccl.bindings.rocm_extensions as rx
    listed = {py for c, py in C_TO_PY.items() if "." not in py and c not in NOT_WRAPPED}
    public = {n for n in b.__all__ if callable(getattr(b, n)) and not isinstance(getattr(b, n), type)}
    assert public == listed | LOADER_FUNCTIONS | {"lla2a_calc_slots"}
    assert set(b._NOT_WRAPPED) == NOT_WRAPPED
    for old, new in ALIASES.items():
        assert getattr(b, old) is getattr(b, new) and old in b.__all__ and new in b.__all__, old
    assert set(rx.__all__) == {"all_reduce_with_bias", "all_to_all_v"}
    assert set(nb.__all__) == set(b.__all__) | {"all_reduce_with_bias", "all_to_all_v"}
    assert nb.all_to_all_v is rx.all_to_all_v and nb.all_reduce is b.all_reduce


def test_rows_are_the_nccl_ones_then_the_rccl_only_ones():
    """As many NCCL rows as the oracle dates, then RCCL's (the rows C_TO_PY names that it does not)."""
    rows = _ext._abi_symbols()
    rccl_only = set(C_TO_PY) - set(API_MIN_VERSION)
    assert [rccl for _, _, rccl in rows] == [False] * len(API_MIN_VERSION) + [True] * len(rccl_only)
    assert {name for name, _, rccl in rows if rccl} == rccl_only
    assert all(since == 0 for _, since, rccl in rows if rccl)


def test_minimum_versions_match_the_api_table():
    for name, since, rccl in _ext._abi_symbols():
        if not rccl:
            assert since == version_code(API_MIN_VERSION[name]), name


def test_every_row_is_covered():
    rows = {name for name, _, _ in _ext._abi_symbols()}
    assert rows - COVERED - NOT_WRAPPED == set(), "rows without a marshalling test"
    assert NOT_WRAPPED <= rows and not NOT_WRAPPED & COVERED


def test_inspect_function_pointers(stub_python):
    r = stub_python("nccl").run("""
        from nccl.bindings._internal import nccl as internal
        ptrs = internal._inspect_function_pointers()
        missing = catch(internal._inspect_function_pointer, "__ncclNoSuchThing")
        result = (ptrs, internal._inspect_function_pointer("__ncclCommShrink"), missing,
                  internal._inspect_loaded_library_path(), b.get_library_path())
    """)
    ptrs, shrink, missing, path, path2 = r
    nccl_rows = [name for name, _, rccl in _ext._abi_symbols() if not rccl]
    assert sorted(ptrs) == sorted("__" + n for n in nccl_rows) and len(ptrs) == len(API_MIN_VERSION)
    assert all(ptrs.values()) and shrink == ptrs["__ncclCommShrink"]
    assert missing[0] == "KeyError"
    assert path == path2 and path.endswith("/nccl/libnccl.so.2")


# ---- plain-integer calls: every argument recorded as passed, positionally and by keyword ----

@pytest.fixture(scope="module")
def plain_results(stub_python):
    cases = [(mod, fn, params, sym) for mod, fn, params, sym, _, _ in PLAIN]
    code = f"""
        cases = {cases!r}
        outs = {OUTS!r}

        def setup():
            stub.reset()
            for name, value in outs.items():
                stub.set_out(name, value)
            stub.set_version({VERSION})
            stub.set_last_error({LAST_ERROR!r})

        result = {{}}
        for mod, fn, params, sym in cases:
            f = getattr(b if mod == "b" else rx, fn)
            setup()
            pos = (catch(f, *[v for _, v in params]), stub.calls())
            setup()
            kw = (catch(f, **dict(params)), stub.calls())
            result[fn] = (pos, kw)
    """
    results = stub_python("nccl").run(code)
    rccl = stub_python("rccl").run(code)
    results.update({fn: rccl[fn] for mod, fn, *_ in PLAIN if mod == "rx"})
    return results


@pytest.mark.parametrize("case", PLAIN, ids=[c[1] for c in PLAIN])
@pytest.mark.parametrize("form", ["positional", "keywords"])
def test_plain_call(plain_results, case, form):
    _, fn, _, sym, expected_args, expected_ret = case
    (outcome, calls) = plain_results[fn][form == "keywords"]
    assert outcome == ("ok", expected_ret)
    assert [name for name, _ in calls] == [sym]
    assert matches(calls[0][1], expected_args), (calls[0][1], expected_args)


# ---- the same calls with Comm/Window objects where 0.3.1 took ints ----

HANDLE_KINDS = {"comm": "Comm", "win": "Window", "window": "Window", "peer_win": "Window"}


@pytest.fixture(scope="module")
def handle_results(stub_python):
    cases = [(mod, fn, params, sym) for mod, fn, params, sym, _, _ in PLAIN
             if any(name in HANDLE_KINDS for name, _ in params)]
    code = f"""
        cases = {cases!r}
        kinds = {HANDLE_KINDS!r}
        outs = {OUTS!r}

        def setup():
            stub.reset()
            for name, value in outs.items():
                stub.set_out(name, value)
            stub.set_version({VERSION})
            stub.set_last_error({LAST_ERROR!r})

        result = {{}}
        for mod, fn, params, sym in cases:
            f = getattr(b if mod == "b" else rx, fn)
            wrapped = [(n, getattr(b, kinds[n])(v) if n in kinds else v) for n, v in params]
            setup()
            pos = (catch(f, *[v for _, v in wrapped]), stub.calls())
            setup()
            kw = (catch(f, **dict(wrapped)), stub.calls())
            result[fn] = (pos, kw)
    """
    results = stub_python("nccl").run(code)
    rccl = stub_python("rccl").run(code)
    results.update({fn: rccl[fn] for mod, fn, *_ in PLAIN if mod == "rx"})
    return results


HANDLE_CASES = [c for c in PLAIN if any(name in HANDLE_KINDS for name, _ in c[2])]


def test_the_handle_cases_cover_the_handle_taking_functions():
    names = {c[1] for c in HANDLE_CASES}
    assert {"all_reduce", "comm_destroy", "put_signal", "get_peer_device_pointer", "win_get_user_ptr",
            "all_reduce_with_bias", "get_last_error"} <= names and len(names) >= 35


@pytest.mark.parametrize("case", HANDLE_CASES, ids=[c[1] for c in HANDLE_CASES])
@pytest.mark.parametrize("form", ["positional", "keywords"])
def test_plain_call_with_handle_objects(handle_results, case, form):
    """A Comm or Window where the int was: the library receives exactly what the int gave."""
    _, fn, _, sym, expected_args, expected_ret = case
    (outcome, calls) = handle_results[fn][form == "keywords"]
    assert outcome == ("ok", expected_ret)
    assert [name for name, _ in calls] == [sym]
    assert matches(calls[0][1], expected_args), (calls[0][1], expected_args)


# ---- unique ids, out-slots, structs and arrays ----

@covers("ncclGetUniqueId")
def test_get_unique_id(stub_python):
    r = stub_python("nccl").run("""
        stub.set_out("ncclGetUniqueId", 0x21)
        uid = b.get_unique_id()
        new = (type(uid) is b.UniqueId, bytes(uid), uid.ptr, stub.calls())
        stub.reset()
        stub.set_out("ncclGetUniqueId", 0x90)
        target = b.UniqueId()
        old = (b.get_unique_id(target.ptr), bytes(target), target.ptr, stub.calls())
        stub.reset()
        target2 = b.UniqueId()
        kw = (b.get_unique_id(unique_id=target2.ptr), bytes(target2), target2.ptr, stub.calls())
        result = (new, old, kw)
    """)
    (is_uid, data, ptr, calls), (ret, data2, ptr2, calls2), (ret3, data3, ptr3, calls3) = r
    pattern = lambda seed: bytes((seed + i) & 0xFF for i in range(128))  # noqa: E731
    assert is_uid and data == pattern(0x21) and calls == [("ncclGetUniqueId", (ptr,))]
    assert ret is None and data2 == pattern(0x90) and calls2 == [("ncclGetUniqueId", (ptr2,))]
    assert ret3 is None and data3 == pattern(0x5A) and calls3 == [("ncclGetUniqueId", (ptr3,))]


ID = bytes(range(7, 135))  # a unique id whose first 8 bytes are 07 08 .. 0e
ID_FIRST8 = int.from_bytes(ID[:8], "little")

INIT_RANK_SNIPPET = f"""
    import array, ctypes
    import numpy as np
    ID = {ID!r}
    stub.set_out("ncclCommInitRank", 0xC0DE_0001)
    uid = b.UniqueId.from_buffer(bytearray(ID))
    raw = ctypes.create_string_buffer(ID, 128)
    forms = {{
        "UniqueId": uid, "bytes": ID, "bytearray": bytearray(ID), "memoryview": memoryview(ID),
        "numpy": np.frombuffer(ID, dtype=np.int8), "numpy uint64": np.frombuffer(ID, dtype=np.uint64),
        "address": ctypes.addressof(raw),
    }}
    result = {{}}
    for label, cid in forms.items():
        stub.reset()
        stub.set_out("ncclCommInitRank", 0xC0DE_0001)
        box = b.PointerBox()
        ret = b.comm_init_rank(box.address, 4, cid, 2)
        result[label] = (ret, box.ptr, box.address, stub.calls(with_blobs=True))
    stub.reset()
    stub.set_out("ncclCommInitRank", 0xC0DE_0002)
    box = b.PointerBox()
    ret = b.comm_init_rank(comm=box.address, nranks=8, comm_id=ID, rank=7)
    result["keywords"] = (ret, box.ptr, box.address, stub.calls(with_blobs=True))
    stub.reset()
    stub.set_out("ncclCommInitRank", 0xC0DE_0003)
    result["0.2.0"] = (handle(b.comm_init_rank(3, ID, 1)), stub.calls(with_blobs=True))
    stub.reset()
    stub.set_out("ncclCommInitRank", 0xC0DE_0004)
    result["0.2.0 keywords"] = (handle(b.comm_init_rank(nranks=3, comm_id=uid, rank=0)), stub.calls(with_blobs=True))
    stub.reset()
    stub.set_out("ncclCommInitRank", 0xC0DE_0005)
    target = b.Comm()
    result["handle_ptr"] = (b.comm_init_rank(target.handle_ptr, 2, ID, 1), handle(target), stub.calls())
"""


@covers("ncclCommInitRank")
def test_comm_init_rank(stub_python):
    r = stub_python("nccl").run(INIT_RANK_SNIPPET)
    for label in ("UniqueId", "bytes", "bytearray", "memoryview", "numpy", "numpy uint64", "address"):
        ret, handle, slot, calls = r[label]
        assert (ret, handle) == (0, 0xC0DE_0001), label
        assert [(c.name, c.args) for c in calls] == [("ncclCommInitRank", (slot, 4, ID_FIRST8, 2))], label
        assert calls[0].blob == ID, label
    ret, handle, slot, calls = r["keywords"]
    assert (ret, handle) == (0, 0xC0DE_0002)
    assert [(c.name, c.args, c.blob) for c in calls] == [("ncclCommInitRank", (slot, 8, ID_FIRST8, 7), ID)]
    for label, value in (("0.2.0", 0xC0DE_0003), ("0.2.0 keywords", 0xC0DE_0004)):
        (tname, got, slot), calls = r[label]
        assert (tname, got) == ("Comm", value), label
        (call,) = calls
        # the library wrote into the returned object's own slot
        assert call.name == "ncclCommInitRank" and call.args[0] == slot and call.blob == ID, label
    # the 0.3.1 form given a Comm's handle_ptr fills that Comm
    ret, target, calls = r["handle_ptr"]
    assert ret == 0 and target[:2] == ("Comm", 0xC0DE_0005)
    assert calls == [("ncclCommInitRank", (target[2], 2, ID_FIRST8, 1))]
    assert r["0.2.0"][1][0].args[1:] == (3, ID_FIRST8, 1)
    assert r["0.2.0 keywords"][1][0].args[1:] == (3, ID_FIRST8, 0)


@covers("ncclCommInitRankConfig")
def test_comm_init_rank_config(stub_python):
    r = stub_python("nccl").run(f"""
        ID = {ID!r}
        cfg = b.Config()
        stub.set_out("ncclCommInitRankConfig", 0xC0F1_0001)
        box = b.PointerBox()
        new = (b.comm_init_rank_config(box.address, 16, ID, 15, cfg), box.ptr, box.address, cfg.ptr,
               stub.calls(with_blobs=True))
        stub.reset()
        box2 = b.PointerBox()
        kw = (b.comm_init_rank_config(comm=box2.address, nranks=2, comm_id=bytearray(ID), rank=1, config=0),
              box2.address, stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommInitRankConfig", 0xC0F1_0003)
        old = (handle(b.comm_init_rank_config(5, ID, 4, cfg.ptr)), stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommInitRankConfig", 0xC0F1_0004)
        oldkw = handle(b.comm_init_rank_config(nranks=5, comm_id=ID, rank=4, config=cfg))
        result = (new, kw, old, oldkw)
    """)
    (ret, handle, slot, cfg_ptr, calls), (kret, kslot, kcalls), (oret, ocalls), oldkw = r
    assert (ret, handle) == (0, 0xC0F1_0001)
    assert [(c.name, c.args, c.blob) for c in calls] == [
        ("ncclCommInitRankConfig", (slot, 16, ID_FIRST8, 15, cfg_ptr), ID)]
    assert kret == 0
    assert [(c.name, c.args) for c in kcalls] == [("ncclCommInitRankConfig", (kslot, 2, ID_FIRST8, 1, 0))]
    assert oret[:2] == ("Comm", 0xC0F1_0003) and oldkw[:2] == ("Comm", 0xC0F1_0004)
    (call,) = ocalls
    assert call.args[0] == oret[2] and call.args[1:] == (5, ID_FIRST8, 4, cfg_ptr) and call.blob == ID


@covers("ncclCommInitAll")
def test_comm_init_all(stub_python):
    r = stub_python("nccl").run("""
        import ctypes
        stub.set_out("ncclCommInitAll", 0xA11_0000)
        lst = b.comm_init_all(3, [4, 0, 2])
        lst_calls = stub.calls(with_blobs=True)
        stub.reset()
        stub.set_out("ncclCommInitAll", 0xA12_0000)
        none = ([handle(c) for c in b.comm_init_all(2, None)], stub.calls(with_blobs=True))
        stub.reset()
        devs = (ctypes.c_int * 2)(9, 8)
        addr = ([handle(c) for c in b.comm_init_all(ndev=2, devlist=ctypes.addressof(devs))],
                ctypes.addressof(devs), stub.calls(with_blobs=True))
        stub.reset()
        empty = (b.comm_init_all(0, []), stub.calls())
        stub.reset()
        stub.script("ncclCommInitAll", 4)
        failed = catch(b.comm_init_all, 2, None)[:2]
        result = (type(lst).__name__, [handle(c) for c in lst], lst_calls, none, addr, empty, failed)
    """)
    tname, handles, calls, none, addr, empty, failed = r
    assert tname == "list"
    assert [h[:2] for h in handles] == [("Comm", 0xA11_0000), ("Comm", 0xA11_0001), ("Comm", 0xA11_0002)]
    (call,) = calls
    assert call.name == "ncclCommInitAll" and call.args[0] != 0 and call.args[1] == 3 and call.args[2] != 0
    assert call.blob == struct.pack("3i", 4, 0, 2)
    assert [h[:2] for h in none[0]] == [("Comm", 0xA12_0000), ("Comm", 0xA12_0001)]
    assert [(c.name, c.args[1:], c.blob) for c in none[1]] == [("ncclCommInitAll", (2, 0), b"")]
    handles2, devs_addr, calls2 = addr
    assert [(c.name, c.args[1:], c.blob) for c in calls2] == [
        ("ncclCommInitAll", (2, devs_addr), struct.pack("2i", 9, 8))]
    assert empty == ([], [])  # no call for ndev == 0
    assert failed[0] == "NCCLInvalidArgument"


@covers("ncclCommSplit")
def test_comm_split(stub_python):
    r = stub_python("nccl").run(f"""
        stub.set_out("ncclCommSplit", 0x5B11_7000)
        box = b.PointerBox()
        new = (b.comm_split({P[0]}, -1, 3, box.address, {P[1]}), box.ptr, box.address, stub.calls())
        stub.reset()
        box2 = b.PointerBox()
        kw = (catch(b.comm_split, comm={P[2]}, color=5, key=-2, newcomm=box2, config=0), box2.address, box2.ptr,
              stub.calls())
        stub.reset()
        stub.set_out("ncclCommSplit", 0x5B11_7002)
        old = (handle(b.comm_split({P[3]}, 1, 0, {P[4]})), stub.calls())
        stub.reset()
        stub.set_out("ncclCommSplit", 0x5B11_7003)
        oldkw = handle(b.comm_split(comm={P[3]}, color=1, key=0, config={P[4]}))
        result = (new, kw, old, oldkw)
    """)
    (ret, handle, slot, calls), (kret, kslot, kptr, kcalls), (oret, ocalls), oldkw = r
    assert (ret, handle) == (0, 0x5B11_7000)
    assert calls == [("ncclCommSplit", (P[0], u(-1), 3, slot, P[1]))]
    # A PointerBox passed as newcomm is taken by __index__: its ptr (0), not its address; a null
    # slot address is refused before the call (the library would write through it).
    assert kret[:2] == ("ValueError", "comm_split() argument 'newcomm' must not be a null handle slot address")
    assert kptr == 0 and kcalls == []
    assert oret[:2] == ("Comm", 0x5B11_7002) and oldkw[:2] == ("Comm", 0x5B11_7003)
    (name, args), = ocalls
    assert name == "ncclCommSplit" and args == (P[3], 1, 0, oret[2], P[4])


@covers("ncclCommShrink")
def test_comm_shrink(stub_python):
    r = stub_python("nccl").run(f"""
        import ctypes
        stub.set_out("ncclCommShrink", 0x5A12_0000)
        box = b.PointerBox()
        new = (b.comm_shrink({P[0]}, [0, 2], 2, box.address, {P[1]}, 1), box.ptr, box.address,
               stub.calls(with_blobs=True))
        stub.reset()
        ranks = (ctypes.c_int * 3)(5, 6, 7)
        box2 = b.PointerBox()
        kw = (b.comm_shrink(comm={P[2]}, exclude_ranks_list=ctypes.addressof(ranks), exclude_ranks_count=3,
                            newcomm=box2.address, config=0, shrink_flags=0),
              ctypes.addressof(ranks), box2.address, stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommShrink", 0x5A12_0002)
        old = (handle(b.comm_shrink({P[3]}, (4,), 1, {P[4]}, 1)), stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommShrink", 0x5A12_0003)
        oldkw = handle(b.comm_shrink(comm={P[3]}, exclude_ranks_list=[1, 2, 3], exclude_ranks_count=2, config=0,
                                     shrink_flags=0))
        result = (new, kw, old, oldkw, stub.calls(with_blobs=True))
    """)
    (ret, handle, slot, calls), (kret, addr, kslot, kcalls), (oret, ocalls), oldkw, okcalls = r
    assert (ret, handle) == (0, 0x5A12_0000)
    (call,) = calls
    assert call.name == "ncclCommShrink" and call.args[0] == P[0] and call.args[1] != 0
    assert call.args[2:] == (2, slot, P[1], 1) and call.blob == struct.pack("2i", 0, 2)
    assert kret == 0
    assert [(c.name, c.args, c.blob) for c in kcalls] == [
        ("ncclCommShrink", (P[2], addr, 3, kslot, 0, 0), struct.pack("3i", 5, 6, 7))]
    assert oret[:2] == ("Comm", 0x5A12_0002) and oldkw[:2] == ("Comm", 0x5A12_0003)
    (call,) = ocalls
    assert call.args[2] == 1 and call.args[3] == oret[2] and call.args[4:] == (P[4], 1)
    assert call.blob == struct.pack("i", 4)
    (call,) = okcalls
    assert call.args[2] == 2 and call.blob == struct.pack("2i", 1, 2)  # count entries, not the whole list


@covers("ncclCommGetUniqueId")
def test_comm_get_unique_id(stub_python):
    r = stub_python("nccl").run(f"""
        stub.set_out("ncclCommGetUniqueId", 0x44)
        uid = b.comm_get_unique_id({P[0]})
        new = (type(uid).__name__, bytes(uid), uid.ptr, stub.calls())
        stub.reset()
        target = b.UniqueId()
        old = (b.comm_get_unique_id({P[1]}, target.ptr), bytes(target), target.ptr, stub.calls())
        stub.reset()
        target2 = b.UniqueId()
        kw = (b.comm_get_unique_id(comm={P[2]}, unique_id=target2.ptr), target2.ptr, stub.calls())
        result = (new, old, kw)
    """)
    (tname, data, ptr, calls), (oret, odata, optr, ocalls), (kret, kptr, kcalls) = r
    assert tname == "UniqueId" and data == bytes((0x44 + i) & 0xFF for i in range(128))
    assert calls == [("ncclCommGetUniqueId", (P[0], ptr))]
    assert oret is None and odata == bytes((0x3C + i) & 0xFF for i in range(128))
    assert ocalls == [("ncclCommGetUniqueId", (P[1], optr))]
    assert kret is None and kcalls == [("ncclCommGetUniqueId", (P[2], kptr))]


@covers("ncclCommGrow")
def test_comm_grow(stub_python):
    r = stub_python("nccl").run(f"""
        ID = {ID!r}
        uid = b.UniqueId.from_buffer(bytearray(ID))
        stub.set_out("ncclCommGrow", 0x6120_0000)
        box = b.PointerBox()
        new = (b.comm_grow({P[0]}, 6, uid.ptr, 5, box.address, {P[1]}), box.ptr, box.address, uid.ptr,
               stub.calls(with_blobs=True))
        stub.reset()
        box2 = b.PointerBox()
        kw = (b.comm_grow(comm=0, n_ranks=6, unique_id=0, rank=-1, newcomm=box2.address, config=0),
              box2.address, stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommGrow", 0x6120_0002)
        old = (handle(b.comm_grow({P[2]}, 4, uid, 3, {P[3]})), stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommGrow", 0x6120_0003)
        oldkw = handle(b.comm_grow(comm={P[2]}, n_ranks=4, unique_id=0, rank=3, config=0))
        result = (new, kw, old, oldkw)
    """)
    (ret, handle, slot, uid_ptr, calls), (kret, kslot, kcalls), (oret, ocalls), oldkw = r
    assert (ret, handle) == (0, 0x6120_0000)
    assert [(c.name, c.args, c.blob) for c in calls] == [
        ("ncclCommGrow", (P[0], 6, uid_ptr, 5, slot, P[1]), ID)]
    assert kret == 0 and [(c.name, c.args, c.blob) for c in kcalls] == [
        ("ncclCommGrow", (0, 6, 0, u(-1), kslot, 0), b"")]
    assert oret[:2] == ("Comm", 0x6120_0002) and oldkw[:2] == ("Comm", 0x6120_0003)
    (call,) = ocalls
    assert call.args[:4] == (P[2], 4, uid_ptr, 3) and call.args[4] == oret[2] and call.args[5] == P[3]
    assert call.blob == ID


@covers("ncclCommInitRankScalable")
def test_comm_init_rank_scalable(stub_python):
    ids = ID + bytes(range(200, 256)) + bytes(range(72))
    r = stub_python("nccl").run(f"""
        import ctypes
        import numpy as np
        IDS = {ids!r}
        stub.set_out("ncclCommInitRankScalable", 0x5CA1_0000)
        box = b.PointerBox()
        out = {{}}
        raw = ctypes.create_string_buffer(IDS, 256)
        two = np.frombuffer(IDS, dtype=b.unique_id_dtype)
        for label, obj in (("bytes", IDS), ("numpy ids", two), ("address", ctypes.addressof(raw))):
            stub.reset()
            stub.set_out("ncclCommInitRankScalable", 0x5CA1_0000)
            box = b.PointerBox()
            out[label] = (b.comm_init_rank_scalable(box.address, 9, 8, 2, obj, {P[0]}), box.ptr, box.address,
                          stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommInitRankScalable", 0x5CA1_0001)
        box = b.PointerBox()
        out["keywords"] = (b.comm_init_rank_scalable(newcomm=box.address, nranks=4, myrank=0, n_id=1,
                                                     comm_ids=IDS[:128], config=0),
                           box.ptr, box.address, stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommInitRankScalable", 0x5CA1_0002)
        out["0.2.0"] = (handle(b.comm_init_rank_scalable(3, 2, 1, IDS[128:], 0)), stub.calls(with_blobs=True))
        stub.reset()
        stub.set_out("ncclCommInitRankScalable", 0x5CA1_0003)
        out["0.2.0 keywords"] = (handle(b.comm_init_rank_scalable(nranks=3, myrank=2, n_id=2, comm_ids=IDS,
                                                                  config=0)),
                                 stub.calls(with_blobs=True))
        result = out
    """)
    for label in ("bytes", "numpy ids", "address"):
        ret, handle, slot, calls = r[label]
        assert (ret, handle) == (0, 0x5CA1_0000), label
        (call,) = calls
        assert call.name == "ncclCommInitRankScalable" and call.args[:4] == (slot, 9, 8, 2), label
        assert call.args[4] != 0 and call.args[5] == P[0] and call.blob == ids, label
    ret, handle, slot, calls = r["keywords"]
    assert (ret, handle) == (0, 0x5CA1_0001)
    assert calls[0].args[:4] == (slot, 4, 0, 1) and calls[0].args[5] == 0 and calls[0].blob == ids[:128]
    ret, calls = r["0.2.0"]
    assert ret[:2] == ("Comm", 0x5CA1_0002) and calls[0].args[:4] == (ret[2], 3, 2, 1) and calls[0].blob == ids[128:]
    ret, calls = r["0.2.0 keywords"]
    assert ret[:2] == ("Comm", 0x5CA1_0003) and calls[0].args[:4] == (ret[2], 3, 2, 2) and calls[0].blob == ids


@covers("ncclCommWindowRegister")
def test_comm_window_register(stub_python):
    r = stub_python("nccl").run(f"""
        stub.set_out("ncclCommWindowRegister", 0x3140_0000)
        box = b.PointerBox()
        new = (b.comm_window_register({P[0]}, {P[1]}, {SIZE}, box.address, 1), box.ptr, box.address, stub.calls())
        stub.reset()
        box2 = b.PointerBox()
        kw = (b.comm_window_register(comm={P[2]}, buff={HIGH}, size=4096, win=box2.address, win_flags=2),
              box2.address, stub.calls())
        stub.reset()
        stub.set_out("ncclCommWindowRegister", 0x3140_0002)
        old = (handle(b.comm_window_register({P[3]}, {P[4]}, {SIZE2}, 0)), stub.calls())
        stub.reset()
        stub.set_out("ncclCommWindowRegister", 0x3140_0003)
        oldkw = handle(b.comm_window_register(comm={P[3]}, buff={P[4]}, size={SIZE2}, win_flags=1))
        result = (new, kw, old, oldkw)
    """)
    (ret, handle, slot, calls), (kret, kslot, kcalls), (oret, ocalls), oldkw = r
    assert (ret, handle) == (0, 0x3140_0000)
    assert calls == [("ncclCommWindowRegister", (P[0], P[1], SIZE, slot, 1))]
    assert kret == 0 and kcalls == [("ncclCommWindowRegister", (P[2], HIGH, 4096, kslot, 2))]
    assert oret[:2] == ("Window", 0x3140_0002) and oldkw[:2] == ("Window", 0x3140_0003)
    (name, args), = ocalls
    assert args == (P[3], P[4], SIZE2, oret[2], 0)


@covers("ncclGroupSimulateEnd")
def test_group_simulate_end(stub_python):
    r = stub_python("nccl").run("""
        import struct
        stub.set_out("ncclGroupSimulateEnd", struct.unpack("<I", struct.pack("<f", 0.75))[0])
        info = b.group_simulate_end()
        new = (type(info).__name__, info.estimated_time, info.size_, info.magic, info.version, info.ptr,
               stub.calls(with_blobs=True))
        stub.reset()
        mine = b.SimInfo()
        old = (b.group_simulate_end(mine.ptr), mine.estimated_time, mine.ptr, stub.calls())
        stub.reset()
        mine2 = b.SimInfo()
        kw = (b.group_simulate_end(sim_info=mine2.ptr), mine2.estimated_time)
        result = (new, old, kw)
    """)
    (tname, est, size, magic, version, ptr, calls), (oret, oest, optr, ocalls), kw = r
    assert tname == "SimInfo" and est == 0.75 and (size, magic, version) == (24, 0x74685283, 23203)
    (call,) = calls
    assert (call.name, call.args) == ("ncclGroupSimulateEnd", (ptr,))
    # What the library saw before it wrote: the stamped header and estimatedTime = -1.0.
    assert call.blob == struct.pack("<QIIf4x", 24, 0x74685283, 23203, -1.0)
    assert oret is None and oest == 2.5 and ocalls == [("ncclGroupSimulateEnd", (optr,))]
    assert kw == (None, 2.5)


@covers("ncclCommQueryProperties")
def test_comm_query_properties(stub_python):
    fields = ("rank", "n_ranks", "cuda_dev", "nvml_dev", "device_api_support", "multimem_support", "gin_type",
              "n_lsa_teams", "host_rma_support", "railed_gin_type", "comm_hash", "gin_min_stride",
              "gin_connection_type", "dev_comm_runtime_version_size", "cft_support", "cft_multicast_support",
              "cft_counted_support")
    r = stub_python("nccl").run(f"""
        props = b.comm_query_properties({P[0]})
        new = (type(props).__name__, [getattr(props, f) for f in {fields!r}], props.size_, props.magic,
               props.version, props.ptr, stub.calls(with_blobs=True))
        stub.reset()
        mine = b.CommProperties()
        old = (b.comm_query_properties({P[1]}, mine.ptr), [getattr(mine, f) for f in {fields!r}], mine.ptr,
               stub.calls())
        stub.reset()
        mine2 = b.CommProperties()
        kw = (b.comm_query_properties(comm={P[2]}, props=mine2.ptr), mine2.rank, mine2.ptr, stub.calls())
        result = (new, old, kw)
    """)
    (tname, values, size, magic, version, ptr, calls), (oret, ovalues, optr, ocalls), (kret, krank, kptr, kcalls) = r
    # what the stub, reporting 2.32.3, writes (stub_nccl.c)
    expected = [3, 8, 5, 9, 1, 0, 2, 42, 1, 3, 0x1234567890ABCDEF, 2, 2, 248, 1, 0, 1]
    assert tname == "CommProperties" and values == expected and (size, magic, version) == (152, 0xCAFEBEEF, 23203)
    (call,) = calls
    assert (call.name, call.args) == ("ncclCommQueryProperties", (P[0], ptr))
    assert call.blob == struct.pack("<QII", 152, 0xCAFEBEEF, 23203)
    assert oret is None and ovalues == expected and ocalls == [("ncclCommQueryProperties", (P[1], optr))]
    assert (kret, krank) == (None, 3) and kcalls == [("ncclCommQueryProperties", (P[2], kptr))]


@covers("ncclWaitSignal")
def test_wait_signal(stub_python):
    descs = struct.pack("8i", 1, 2, 3, 4, 5, 6, 7, -8)
    r = stub_python("nccl").run(f"""
        import ctypes
        import numpy as np
        DESCS = {descs!r}
        one = b.WaitSignalDesc()
        one.op_cnt, one.peer, one.sig_idx, one.ctx = 11, 12, 13, 14
        raw = ctypes.create_string_buffer(DESCS, 32)
        out = {{}}
        for label, n, obj in (("bytes", 2, DESCS), ("numpy", 2, np.frombuffer(DESCS, dtype=b.wait_signal_desc_dtype)),
                              ("struct", 1, one), ("address", 2, ctypes.addressof(raw))):
            stub.reset()
            out[label] = (b.wait_signal(n, obj, {P[0]}, {P[1]}), stub.calls(with_blobs=True))
        stub.reset()
        out["keywords"] = (b.wait_signal(n_desc=1, signal_descs=DESCS[:16], comm={P[2]}, stream=0),
                           stub.calls(with_blobs=True))
        result = (out, ctypes.addressof(raw), bytes(one))
    """)
    out, raw_addr, one = r
    for label, n, blob in (("bytes", 2, descs), ("numpy", 2, descs), ("struct", 1, one), ("address", 2, descs)):
        ret, calls = out[label]
        (call,) = calls
        assert ret is None and call.name == "ncclWaitSignal", label
        assert call.args[0] == n and call.args[1] != 0 and call.args[2:] == (P[0], P[1]), label
        assert call.blob == blob, label
    assert out["address"][1][0].args[1] == raw_addr
    ret, (call,) = out["keywords"]
    assert call.args[0] == 1 and call.args[2:] == (P[2], 0) and call.blob == descs[:16]


ALLTOALLV_SNIPPET = f"""
    import array, ctypes
    import numpy as np
    stub.set_out("ncclCommCount", 3)
    sc, sd, rc, rd = [1, 2, 3], (0, 1, 3), np.array([4, 5, 6], dtype=np.uint64), array.array("Q", [7, 8, 9])
    out = {{}}
    out["mixed"] = (rx.all_to_all_v({P[0]}, sc, sd, {P[1]}, rc, rd, 7, {P[2]}, {P[3]}), stub.calls(with_blobs=True))
    stub.reset()
    stub.set_out("ncclCommCount", 3)
    arrays = [(ctypes.c_size_t * 3)(*v) for v in ((10, 11, 12), (13, 14, 15), (16, 17, 18), (19, 20, 21))]
    addrs = [ctypes.addressof(a) for a in arrays]
    out["addresses"] = (rx.all_to_all_v({P[4]}, addrs[0], addrs[1], {P[5]}, addrs[2], addrs[3], 9, {P[6]}, 0),
                        stub.calls(with_blobs=True), addrs)
    stub.reset()
    stub.set_out("ncclCommCount", 2)
    out["keywords"] = (rx.all_to_all_v(sendbuff=1, sendcounts=[1, 1], sdispls=[0, 1], recvbuff=2,
                                       recvcounts=[2, 2], rdispls=[0, 2], datatype=0, comm={P[7]}, stream=3),
                       stub.calls(with_blobs=True))
    result = out
"""


def _check_alltoallv(r, symbol):
    ret, calls = r["mixed"]
    assert ret is None
    assert [(c.name, c.args[0]) for c in calls] == [("ncclCommCount", P[2]), (symbol, P[0])]
    call = calls[1]
    assert call.args[1] and call.args[2] and call.args[4] and call.args[5]
    assert (call.args[3], call.args[6:]) == (P[1], (7, P[2], P[3]))
    assert call.blob == struct.pack("12Q", 1, 2, 3, 0, 1, 3, 4, 5, 6, 7, 8, 9)
    ret, calls, addrs = r["addresses"]
    # Every array an address: nothing to check them against, so no ncclCommCount call.
    assert [(c.name, c.args) for c in calls] == [
        (symbol, (P[4], addrs[0], addrs[1], P[5], addrs[2], addrs[3], 9, P[6], 0))]
    assert calls[0].blob == struct.pack("12Q", *range(10, 22))
    ret, calls = r["keywords"]
    assert [c.name for c in calls] == ["ncclCommCount", symbol]
    assert calls[1].args[0] == 1 and calls[1].args[3] == 2 and calls[1].args[6:] == (0, P[7], 3)
    assert calls[1].blob == struct.pack("8Q", 1, 1, 0, 1, 2, 2, 0, 2)


@covers("ncclAlltoAllv")
def test_all_to_all_v(stub_python):
    _check_alltoallv(stub_python("rccl").run(ALLTOALLV_SNIPPET), "ncclAlltoAllv")


@covers("ncclAllToAllv")
def test_all_to_all_v_falls_back_to_the_deprecated_spelling(stub_python):
    _check_alltoallv(stub_python("rccl_legacy").run(ALLTOALLV_SNIPPET), "ncclAllToAllv")


@covers("ncclAllToAll")
def test_allto_all_falls_back_to_rccl_spelling(stub_python):
    code = f"result = (b.get_library_flavour(), b.allto_all({P[0]}, {P[1]}, {SIZE}, 7, {P[2]}, {P[3]}), stub.calls())"
    flavour, ret, calls = stub_python("rccl_legacy").run(code)
    assert (flavour, ret) == ("rccl", None)
    assert calls == [("ncclAllToAll", (P[0], P[1], SIZE, 7, P[2], P[3]))]
    flavour, ret, calls = stub_python("rccl").run(code)
    assert calls == [("ncclAlltoAll", (P[0], P[1], SIZE, 7, P[2], P[3]))]


def test_index_objects_are_pointers(stub_python):
    """Anything with __index__ is an address: a PointerBox gives its ptr, a struct wrapper its
    storage, a NumPy integer its value."""
    r = stub_python("nccl").run("""
        import numpy as np
        box = b.PointerBox(0x1234_5678)
        cfg = b.Config()
        b.all_reduce(box, np.uint64(0xFFFF_0000_0000_0001), np.int32(5), np.int8(7), np.int64(2), cfg, True)
        result = (cfg.ptr, stub.calls())
    """)
    cfg_ptr, calls = r
    assert calls == [("ncclAllReduce", (0x1234_5678, 0xFFFF_0000_0000_0001, 5, 7, 2, cfg_ptr, 1))]


# ---- return conventions ----

CREATION_SNIPPET = """
    ID = bytes(128)
    box = b.PointerBox()
    calls = {
        "ncclCommInitRankConfig": lambda: b.comm_init_rank_config(box.address, 2, ID, 0, 0),
        "ncclCommInitRank": lambda: b.comm_init_rank(box.address, 2, ID, 0),
        "ncclCommSplit": lambda: b.comm_split(1, 0, 0, box.address, 0),
        "ncclCommShrink": lambda: b.comm_shrink(1, [], 0, box.address, 0, 0),
        "ncclCommGrow": lambda: b.comm_grow(1, 2, 0, 1, box.address, 0),
        "ncclCommInitRankScalable": lambda: b.comm_init_rank_scalable(box.address, 2, 0, 1, ID, 0),
        "ncclCommWindowRegister": lambda: b.comm_window_register(1, 2, 3, box.address, 0),
    }
    legacy = {
        "ncclCommInitRankConfig": lambda: b.comm_init_rank_config(2, ID, 0, 0),
        "ncclCommInitRank": lambda: b.comm_init_rank(2, ID, 0),
        "ncclCommSplit": lambda: b.comm_split(1, 0, 0, 0),
        "ncclCommShrink": lambda: b.comm_shrink(1, [], 0, 0, 0),
        "ncclCommGrow": lambda: b.comm_grow(1, 2, 0, 1, 0),
        "ncclCommInitRankScalable": lambda: b.comm_init_rank_scalable(2, 0, 1, ID, 0),
        "ncclCommWindowRegister": lambda: b.comm_window_register(1, 2, 3, 0),
    }
    result = {}
    for sym in calls:
        stub.reset()
        stub.set_out(sym, 0x7E57_0000)
        stub.script(sym, 7)
        box.ptr = 0
        new = (catch(calls[sym]), box.ptr)
        old = catch(legacy[sym])
        result[sym] = (new, (old[0], handle(old[1])), [name for name, _ in stub.calls()])
"""


def test_in_progress_is_returned_not_raised(stub_python):
    r = stub_python("nccl").run(CREATION_SNIPPET)
    assert len(r) == 7
    for sym, (new, old, names) in r.items():
        assert new == (("ok", 7), 0x7E57_0000), sym   # 0.3.1: the status; the slot is filled
        kind = "Window" if sym == "ncclCommWindowRegister" else "Comm"
        assert old[0] == "ok" and old[1][:2] == (kind, 0x7E57_0000), sym  # short form: the handle
        assert names == [sym, sym], sym              # no ncclGetLastError: nothing failed


def test_in_progress_from_other_functions(stub_python):
    r = stub_python("nccl").run("""
        out = {}
        for sym, call in (("ncclAllReduce", lambda: b.all_reduce(1, 2, 3, 7, 0, 4, 5)),
                          ("ncclGroupEnd", b.group_end),
                          ("ncclCommFinalize", lambda: b.comm_finalize(1)),
                          ("ncclCommCount", lambda: b.comm_count(1)),
                          ("ncclGetUniqueId", b.get_unique_id)):
            stub.reset()
            stub.script(sym, 7)
            res = catch(call)
            out[sym] = (res[0], None if res[0] != "ok" or not isinstance(res[1], (int, type(None))) else res[1],
                        [name for name, _ in stub.calls()])
        stub.reset()
        stub.set_out("ncclCommGetAsyncError", 7)
        out["async 7"] = b.comm_get_async_error(1)
        stub.set_out("ncclCommGetAsyncError", 5)
        out["async 5"] = b.comm_get_async_error(1)
        out["check_status"] = (b.check_status(0), b.check_status(7))
        result = out
    """)
    assert r["ncclAllReduce"] == ("ok", None, ["ncclAllReduce"])
    assert r["ncclGroupEnd"] == ("ok", None, ["ncclGroupEnd"])
    assert r["ncclCommFinalize"] == ("ok", None, ["ncclCommFinalize"])
    assert r["ncclCommCount"] == ("ok", 4, ["ncclCommCount"])
    assert r["ncclGetUniqueId"][0] == "ok" and r["ncclGetUniqueId"][2] == ["ncclGetUniqueId"]
    assert (r["async 7"], r["async 5"]) == (7, 5)   # the async state is returned, never raised
    assert r["check_status"] == (None, None)


# ---- argument counts ----

def test_dual_forms_reject_other_counts(stub_python):
    r = stub_python("nccl").run(f"""
        out = {{}}
        for name, (a, c) in {DUAL_FORMS!r}.items():
            bad = sorted({{max(a, c) + 1, 7}} | ({{min(a, c) - 1}} if min(a, c) > 0 else set()))
            out[name] = [(n, catch(getattr(b, name), *[0] * n)) for n in bad]
        result = (out, stub.calls())
    """)
    out, calls = r
    assert calls == []
    for name, (a, c) in DUAL_FORMS.items():
        for n, (exc, msg, _) in out[name]:
            assert exc == "TypeError", (name, n, msg)
            assert msg.startswith(f"{name}()") and f" {a} argument" in msg and f" {c} argument" in msg, msg
            assert f"{n} given" in msg, msg


def test_fixed_arity_functions_reject_other_counts(stub_python):
    arities = {fn: len(params) for mod, fn, params, *_ in PLAIN if mod == "b"}
    arities["comm_init_all"] = 2
    r = stub_python("nccl").run(f"""
        result = ({{name: [catch(getattr(b, name), *[0] * k) for k in (n - 1, n + 1) if k >= 0]
                   for name, n in {arities!r}.items()}}, stub.calls())
    """)
    out, calls = r
    assert calls == []
    for name, outcomes in out.items():
        for exc, msg, _ in outcomes:
            assert exc == "TypeError" and f"{name}() takes" in msg, (name, msg)


def test_keyword_errors(stub_python):
    r = stub_python("nccl").run("""
        result = (catch(b.all_reduce, 1, 2, 3, 7, 0, 4, strem=5),
                  catch(b.all_reduce, 1, 2, 3, 7, 0, 4, sendbuff=5),
                  catch(b.comm_query_properties, props=0),
                  catch(b.comm_grow, 0, 0, 0, 0, b.PointerBox().address, config=0),
                  stub.calls())
    """)
    unknown, duplicate, props_only, grow_mixed, calls = r
    assert unknown[0] == "TypeError" and "'strem'" in unknown[1]
    assert duplicate[0] == "TypeError" and "'sendbuff'" in duplicate[1]
    assert props_only[0] == "TypeError" and "'props'" in props_only[1]
    assert grow_mixed[0] == "ok"  # 6 arguments: the 0.3.1 form, newcomm by keyword
    assert [name for name, _ in calls] == ["ncclCommGrow"]


def test_no_argument_calls_from_c(stub_python):
    """A call with no arguments made from C (PyObject_CallNoArgs: a defaultdict factory, say) may
    come with no argument array at all; the 0-argument forms must still work."""
    r = stub_python("nccl").run("""
        import collections
        result = {f.__name__: type(collections.defaultdict(f)["key"]).__name__
                  for f in (b.get_unique_id, b.group_simulate_end, b.group_start, b.group_end, b.get_version)}
    """)
    assert r == {"get_unique_id": "UniqueId", "group_simulate_end": "SimInfo", "group_start": "NoneType",
                 "group_end": "NoneType", "get_version": "int"}


# ---- NCCL 2.28-2.32 entry points behind nccl4py 0.4.1-0.6.0's names ----

def team_code(n_ranks, rank, stride):
    """How the stub records an ncclTeam_t passed by value (and builds one from its `out`)."""
    return n_ranks | rank << 16 | stride << 32


@covers("ncclTeamWorld", "ncclTeamLsa", "ncclTeamRail", "ncclTeamCftMultimem", "ncclTeamCft",
        "ncclTeamRankToWorld", "ncclTeamRankToLsa")
def test_teams(stub_python):
    r = stub_python("nccl").run(f"""
        teams = {{}}
        for k, (fn, sym) in enumerate([(b.team_world, "ncclTeamWorld"), (b.team_lsa, "ncclTeamLsa"),
                                       (b.team_rail, "ncclTeamRail"),
                                       (b.team_cft_multimem, "ncclTeamCftMultimem")]):
            stub.reset()
            stub.set_out(sym, {team_code(8, 3, 1)} + k)
            t = fn({P[0]}) if k % 2 else fn(comm={P[0]})
            teams[fn.__name__] = (type(t).__name__, t.n_ranks, t.rank, t.stride, stub.calls())
        stub.reset()
        stub.set_out("ncclTeamCft", {team_code(4, 1, 2)})
        t = b.team_cft({P[1]}, b.CftTeamMode.HIER_LSA)
        cft = ((t.n_ranks, t.rank, t.stride), stub.calls())
        stub.reset()
        stub.set_out("ncclTeamRankToWorld", 11)
        stub.set_out("ncclTeamRankToLsa", -1)
        ranks = (b.team_rank_to_world({P[2]}, t, 3), b.team_rank_to_lsa(comm={P[3]}, team=t.ptr, rank=-2),
                 stub.calls())
        result = (teams, cft, ranks)
    """)
    teams, cft, ranks = r
    for k, (name, sym) in enumerate([("team_world", "ncclTeamWorld"), ("team_lsa", "ncclTeamLsa"),
                                     ("team_rail", "ncclTeamRail"), ("team_cft_multimem", "ncclTeamCftMultimem")]):
        assert teams[name] == ("Team", 8 + k, 3, 1, [(sym, (P[0],))]), name
    assert cft == ((4, 1, 2), [("ncclTeamCft", (P[1], 2))])
    code = team_code(4, 1, 2)
    assert ranks == (11, -1, [("ncclTeamRankToWorld", (P[2], code, 3)), ("ncclTeamRankToLsa", (P[3], code, u(-2)))])


@covers("ncclLsaBarrierCreateRequirement", "ncclGinBarrierCreateRequirement", "ncclLLA2ACreateRequirement")
def test_requirement_creators(stub_python):
    r = stub_python("nccl").run(f"""
        team = b.Team()
        team.n_ranks, team.rank, team.stride = 6, 5, 1
        h, req = b.LsaBarrierHandle(), b.DevResourceRequirements()
        stub.set_out("ncclLsaBarrierCreateRequirement", 0x77)
        lsa = (b.lsa_barrier_create_requirement(team, 6, h, req), h.buf_handle, h.n_barriers, req.buffer_size,
               stub.calls() == [("ncclLsaBarrierCreateRequirement", ({team_code(6, 5, 1)}, 6, h.ptr, req.ptr))])
        stub.reset()
        gh, greq = b.GinBarrierHandle(), b.DevResourceRequirements()
        stub.set_out("ncclGinBarrierCreateRequirement", 0x99)
        gin = (b.gin_barrier_create_requirement({P[0]}, team, 3, out_handle=gh, out_req=greq.ptr), gh.signal0,
               greq.buffer_size,
               stub.calls() == [("ncclGinBarrierCreateRequirement", ({P[0]}, {team_code(6, 5, 1)}, 3, gh.ptr,
                                                                     greq.ptr))])
        stub.reset()
        lh, lreq = b.LLA2AHandle(), b.DevResourceRequirements()
        stub.set_out("ncclLLA2ACreateRequirement", 0x55)
        ll = (b.ll_a2a_create_requirement(2, 9, lh.ptr, lreq), lh.buf_handle, lh.n_slots, lreq.buffer_size,
              stub.calls() == [("ncclLLA2ACreateRequirement", (2, 9, lh.ptr, lreq.ptr))])
        result = (lsa, gin, ll)
    """)
    lsa, gin, ll = r
    assert lsa == (None, 0x77, 6, 4096, True)
    assert gin == (None, 0x99, 4096, True)
    assert ll == (None, 0x55, 9, 4096, True)


@covers("ncclGetMultimemDevicePointer", "ncclGetCftDeviceLeInfo")
def test_multimem_pointer_and_cft_le_info(stub_python):
    r = stub_python("nccl").run(f"""
        mm = b.MultimemHandle()
        mm.mc_base_ptr = {HIGH}
        stub.set_out("ncclGetMultimemDevicePointer", 0xDD00_0000)
        stub.set_out("ncclGetCftDeviceLeInfo", (7 << 32) | 9)
        team = b.Team()
        team.n_ranks, team.rank, team.stride = 2, 1, 4
        result = (b.get_multimem_device_pointer({P[0]}, {SIZE}, mm),
                  b.get_multimem_device_pointer(window={P[1]}, offset=0, multimem=mm.ptr),
                  b.get_cft_device_le_info({P[2]}, 128, 1, team), stub.calls())
    """)
    p1, p2, le, calls = r
    assert (p1, p2, le) == (0xDD00_0000, 0xDD00_0000, (9, 7))
    assert [name for name, _ in calls] == ["ncclGetMultimemDevicePointer"] * 2 + ["ncclGetCftDeviceLeInfo"]
    assert matches(calls[0][1], [P[0], SIZE, HIGH, ANY]) and matches(calls[1][1], [P[1], 0, HIGH, ANY])
    assert matches(calls[2][1], [P[2], 128, 1, team_code(2, 1, 4), ANY, ANY])


@covers("ncclParamGetAllParameterKeys")
def test_param_get_all_keys(stub_python):
    r = stub_python("nccl").run("""
        result = (b.param_get_all_keys(), stub.calls())
    """)
    keys, calls = r
    # the stub's table is A, NULL, B, C and a key ending in the byte 0xff
    assert keys == ["NCCL_STUB_A", "NCCL_STUB_B", "NCCL_STUB_C", "NCCL_STUB_\ufffd"]
    assert [name for name, _ in calls] == ["ncclParamGetAllParameterKeys"]
    assert matches(calls[0][1], [ANY, ANY])


def test_param_get_parameter_passes_the_key(stub_python):
    r = stub_python("nccl").run("""
        result = (b.param_get_parameter("NCCL_ALGO\u00e9"), stub.calls(with_blobs=True))
    """)
    value, calls = r
    assert value == "stub-NCCL_ALGO\u00e9"
    assert calls[0].blob == "NCCL_ALGO\u00e9".encode() + b"\0"


@covers("ncclSetEncryption")
def test_set_encryption(stub_python):
    r = stub_python("nccl").run("""
        cfg = b.EncryptionConfig()
        cfg.mode = b.EncryptionMode.PSK
        cfg.psk = "secret"
        result = (b.set_encryption(cfg), b.set_encryption(config=cfg.ptr), bytes(cfg), cfg.ptr,
                  stub.calls(with_blobs=True))
    """)
    ret, ret2, data, ptr, calls = r
    assert (ret, ret2, len(data)) == (None, None, 32)
    assert [(c.name, c.args, c.blob) for c in calls] == [("ncclSetEncryption", (ptr,), data)] * 2


def test_config_collectives_take_a_coll_config(stub_python):
    r = stub_python("nccl").run(f"""
        cc = b.CollConfig()
        result = (b.all_reduce_config({P[0]}, {P[1]}, 4, 7, 0, {P[2]}, 0, cc),
                  b.broadcast_config({P[0]}, {P[1]}, 4, 7, 1, {P[2]}, 0, config=cc), cc.ptr, stub.calls())
    """)
    r1, r2, ptr, calls = r
    assert (r1, r2) == (None, None)
    assert calls == [("ncclAllReduceConfig", (P[0], P[1], 4, 7, 0, P[2], 0, ptr)),
                     ("ncclBroadcastConfig", (P[0], P[1], 4, 7, 1, P[2], 0, ptr))]


@covers("ncclDevCommCreate")
def test_dev_comm_create_both_forms(stub_python):
    r = stub_python("nccl").run(f"""
        reqs = b.DevCommRequirements()
        dev = b.dev_comm_create({P[8]}, reqs)
        new = (type(dev).__name__, dev.ptr, reqs.ptr, stub.calls())
        stub.reset()
        kw = (type(b.dev_comm_create(comm={P[8]}, reqs={P[9]})).__name__, stub.calls())
        stub.reset()
        old = (b.dev_comm_create({P[8]}, {P[9]}, {P[10]}), stub.calls())
        stub.reset()
        oldkw = (b.dev_comm_create(comm={P[8]}, reqs=reqs, out_dev_comm={P[11]}), reqs.ptr, stub.calls())
        stub.reset()
        stub.script("ncclDevCommCreate", 5)
        failed = (catch(b.dev_comm_create, {P[8]}, reqs)[0], catch(b.dev_comm_create, {P[8]}, reqs, {P[10]})[0])
        result = (new, kw, old, oldkw, failed)
    """)
    (tname, dev_ptr, reqs_ptr, calls), (kdev, kcalls), (oret, ocalls), (okret, oreqs, okcalls), failed = r
    assert tname == "DevComm" and calls == [("ncclDevCommCreate", (P[8], reqs_ptr, dev_ptr))]
    assert kdev == "DevComm" and kcalls[0][1][:2] == (P[8], P[9]) and kcalls[0][1][2] != 0
    assert (oret, ocalls) == (None, [("ncclDevCommCreate", (P[8], P[9], P[10]))])
    assert (okret, okcalls) == (None, [("ncclDevCommCreate", (P[8], oreqs, P[11]))])
    assert failed == ("NCCLInvalidUsage", "NCCLInvalidUsage")
