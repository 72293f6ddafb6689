"""Failures of the binding layer: every result code as its NCCLError subclass (status, message,
the library's last-error text, pickling), check_status, construction without a library, and the
missing-symbol and load-failure exceptions (docs/architecture.md#loading-the-library, docs/architecture.md#errors,
docs/compatibility.md#missing-symbols, docs/compatibility.md#rccl-only-collectives).

Library-backed checks run in child interpreters against the stub NCCL; the expected texts are the
stub's documented ones (stub_nccl.c) or those of docs/architecture.md#errors.
"""

import os

import re

import pytest
from api_tables import (API_MIN_VERSION, ARITY, BUILTIN_ERROR_TEXT, C_TO_PY, ERROR_CLASSES, NOT_WRAPPED,
                        RESULT_NAMES, UNKNOWN_ERROR_TEXT, version_code)

from nccl import _ext

COMM = 0x7F00_0000_C000
CODES = [1, 2, 3, 4, 5, 6, 8, 9, 42, -1]


def stub_text(code):
    """The stub's ncclGetErrorString."""
    return f"stub: error string for result {code}" if 0 <= code < 16 else "stub: error string for an unknown result"


def expected_class(code):
    return ERROR_CLASSES.get(code, "NCCLError")


def without_debug_hint(text):
    return re.sub(r" \(run with NCCL_DEBUG=(INFO|WARN) for details\)$", "", text)


def expected_name(code):
    return RESULT_NAMES.get(code, "Unknown")


@pytest.fixture(scope="module")
def failures(stub_python):
    """Each code of CODES returned once by ncclAllReduce, with a last-error text set."""
    return stub_python("nccl").run(f"""
        import pickle
        out = {{}}
        for code in {CODES!r}:
            stub.reset()
            stub.set_last_error(f"stub last error for {{code}}")
            stub.script("ncclAllReduce", code, 1)
            try:
                b.all_reduce(1, 2, 3, 7, 0, {COMM}, 5)
                out[code] = None
                continue
            except b.NCCLError as exc:
                err = exc
            calls = stub.calls()
            again = pickle.loads(pickle.dumps(err))
            out[code] = dict(
                cls=type(err).__name__, mro=[c.__name__ for c in type(err).__mro__], status=err.status,
                last_error=err.last_error, text=str(err), args=err.args, calls=calls,
                is_base=isinstance(err, b.NCCLError), module=type(err).__module__,
                pickled=(type(again).__name__, again.status, again.last_error, str(again)),
                after=catch(b.all_reduce, 1, 2, 3, 7, 0, {COMM}, 5))
        result = out
    """)


@pytest.mark.parametrize("code", CODES)
def test_status_maps_to_its_exception(failures, code):
    r = failures[code]
    assert r is not None, "the scripted status was not raised"
    assert r["cls"] == expected_class(code) and r["is_base"] and r["module"] == "nccl._errors"
    assert r["mro"][r["mro"].index("NCCLError"):] == ["NCCLError", "Exception", "BaseException", "object"]
    assert r["status"] == code
    # the text's "(run with NCCL_DEBUG=... for details)" goes when the details follow
    first = f"{expected_name(code)} ({code}): {without_debug_hint(stub_text(code))}"
    assert r["text"] == f"{first}\n  library's last error: stub last error for {code}"
    assert r["last_error"] == f"stub last error for {code}"
    # The text comes from the loaded library; the last error from ncclGetLastError(the call's comm).
    assert r["calls"] == [("ncclAllReduce", (1, 2, 3, 7, 0, COMM, 5)), ("ncclGetLastError", (COMM,)),
                          ("ncclGetErrorString", (code & 0xFFFFFFFF,))]
    assert r["pickled"] == (r["cls"], code, r["last_error"], r["text"])
    assert r["after"] == ("ok", None)  # scripted once: the next call succeeds


def test_last_error_comes_from_the_failing_calls_communicator(stub_python):
    r = stub_python("nccl").run(f"""
        ID = bytes(128)
        out = {{}}
        for sym, call in (("ncclAllReduce", lambda: b.all_reduce(1, 2, 3, 7, 0, {COMM}, 5)),
                          ("ncclCommSplit", lambda: b.comm_split({COMM}, 0, 0, b.PointerBox().address, 0)),
                          ("ncclCommCount", lambda: b.comm_count({COMM})),
                          ("ncclMemAlloc", lambda: b.mem_alloc(64)),
                          ("ncclCommInitRank", lambda: b.comm_init_rank(2, ID, 0)),
                          ("ncclGroupEnd", b.group_end),
                          ("ncclGetUniqueId", b.get_unique_id),
                          ("ncclCommQueryProperties", lambda: b.comm_query_properties({COMM}))):
            stub.reset()
            stub.script(sym, 5, 1)
            res = catch(call)
            out[sym] = (res[0], [args for name, args in stub.calls() if name == "ncclGetLastError"])
        stub.reset()
        stub.script("ncclAllReduce", 3, 1)
        try:
            b.all_reduce(1, 2, 3, 7, 0, {COMM}, 5)
        except b.NCCLError as exc:
            out["empty"] = (str(exc), exc.last_error)
        result = out
    """)
    with_comm = ("ncclAllReduce", "ncclCommSplit", "ncclCommCount", "ncclCommQueryProperties")
    for sym, (exc, last_error_calls) in r.items():
        if sym == "empty":
            continue
        assert exc == "NCCLInvalidUsage", sym
        assert last_error_calls == [(COMM if sym in with_comm else 0,)], sym
    # No last-error text: one line, last_error "".
    assert r["empty"] == (f"InternalError (3): {stub_text(3)}", "")


def test_constructed_errors_with_a_library_loaded(stub_python):
    r = stub_python("nccl").run("""
        import pickle

        import sys, types

        class OnlyStatus(b.NCCLError):
            def __init__(self, status):
                super().__init__(status)

        sys.modules["user_errors"] = types.ModuleType("user_errors")  # somewhere pickle can find it
        OnlyStatus.__module__ = "user_errors"
        sys.modules["user_errors"].OnlyStatus = OnlyStatus

        out = {}
        e = b.NCCLError(4)
        out["base"] = (type(e).__name__, e.status, str(e), e.last_error)
        e = b.NCCLError(8, "why it failed")
        out["with text"] = (type(e).__name__, str(e), e.last_error)
        e = b.NCCLInvalidUsage(5)
        out["subclass"] = (type(e).__name__, str(e))
        e = b.NCCLError(77)
        out["unknown"] = (type(e).__name__, e.status, str(e))
        e = OnlyStatus(6)
        e.last_error = "late"
        again = pickle.loads(pickle.dumps(e))
        out["user subclass"] = (type(again).__name__, again.status, again.last_error)
        e = b.NCCLError(2, "text")
        again = pickle.loads(pickle.dumps(e, protocol=0))
        out["protocol 0"] = (type(again).__name__, again.status, again.last_error, str(again))
        out["raises"] = catch(lambda: (_ for _ in ()).throw(b.NCCLError(1)))
        result = out
    """)
    assert r["base"] == ("NCCLInvalidArgument", 4, f"InvalidArgument (4): {stub_text(4)}", "")
    assert r["with text"] == ("NCCLTimeout", f"Timeout (8): {stub_text(8)}\n  library's last error: why it failed", "why it failed")
    assert r["subclass"] == ("NCCLInvalidUsage", f"InvalidUsage (5): {stub_text(5)}")
    assert r["unknown"] == ("NCCLError", 77, f"Unknown (77): {stub_text(77)}")
    assert r["user subclass"] == ("OnlyStatus", 6, "late")
    assert r["protocol 0"] == ("NCCLSystemError", 2, "text", f"SystemError (2): {stub_text(2)}\n  library's last error: text")
    assert r["raises"][0] == "NCCLUnhandledCudaError"


def test_errors_without_a_library_never_load_one(fresh_python, stub_libs):
    """Constructing, formatting, unpickling and check_status use the built-in texts and map no
    library, even with NCCL_LIBRARY naming a loadable one."""
    r = fresh_python("""
        import os, pickle
        import nccl._ext
        import nccl.bindings.nccl as nb

        def forbidden(*a, **k):
            raise AssertionError("get_library_path was called")

        nccl._ext.get_library_path = nb.get_library_path = forbidden
        out = {}
        for code in list(range(-1, 13)) + [42, 2**31 - 1]:
            e = nb.NCCLError(code, "some text" if code % 2 else "")
            again = pickle.loads(pickle.dumps(e))
            out[code] = (type(e).__name__, e.status, str(e), type(again).__name__, str(again), again.last_error)
        checks = {code: catch(nb.check_status, code) for code in (0, 1, 4, 7, 8, 99)}
        maps = open("/proc/self/maps").read()
        result = (out, checks, nccl._ext._mapped_libraries(), os.environ["NCCL_LIBRARY"] in maps,
                  any("libnccl" in line or "librccl" in line for line in maps.splitlines()))
    """, variant="nccl")
    out, checks, mapped, stub_mapped, any_mapped = r
    assert mapped == [] and not stub_mapped and not any_mapped
    for code, (cls, status, text, cls2, text2, last) in out.items():
        body = BUILTIN_ERROR_TEXT.get(code, UNKNOWN_ERROR_TEXT)
        first = f"{expected_name(code)} ({code}): {without_debug_hint(body) if code % 2 else body}"
        expected = f"{first}\n  library's last error: some text" if code % 2 else first
        assert (cls, status, text) == (ERROR_CLASSES.get(code, "NCCLError"), code, expected), code
        assert (cls2, text2, last) == (cls, expected, "some text" if code % 2 else ""), code
    assert checks[0] == ("ok", None) and checks[7] == ("ok", None)
    assert checks[1][0] == "NCCLUnhandledCudaError" and checks[1][1] == f"UnhandledCudaError (1): {BUILTIN_ERROR_TEXT[1]}"
    assert checks[4][0] == "NCCLInvalidArgument" and checks[8][0] == "NCCLTimeout"
    assert checks[99][:2] == ("NCCLError", f"Unknown (99): {UNKNOWN_ERROR_TEXT}")


def test_check_status(stub_python):
    r = stub_python("nccl").run("""
        import numpy as np
        out = {code: catch(b.check_status, code) for code in range(-2, 12)}
        for code in range(-2, 12):
            try:
                b.check_status(code)
            except b.NCCLError as exc:
                out[code] = out[code] + (exc.status, exc.last_error)
        out["numpy"] = catch(b.check_status, np.int64(4))
        out["bool"] = catch(b.check_status, False)
        out["str"] = catch(b.check_status, "4")
        out["float"] = catch(b.check_status, 4.0)
        out["None"] = catch(b.check_status, None)
        out["huge"] = catch(b.check_status, 2**40)
        out["calls"] = [name for name, _ in stub.calls()]
        result = out
    """)
    for code in range(-2, 12):
        if code in (0, 7):
            assert r[code] == ("ok", None)
            continue
        exc, msg, mro, status, last = r[code]
        assert exc == ERROR_CLASSES.get(code, "NCCLError") and "NCCLError" in mro, code
        assert msg == f"{expected_name(code)} ({code}): {stub_text(code)}" and status == code and last == "", code
    assert r["numpy"][0] == "NCCLInvalidArgument" and r["bool"] == ("ok", None)
    assert r["str"][0] == r["float"][0] == r["None"][0] == "TypeError"
    assert r["huge"][0] == "OverflowError"
    assert "ncclGetLastError" not in r["calls"]  # check_status has no call to ask about


def test_exception_classes():
    import nccl.bindings.nccl as b
    from nccl.bindings._internal import utils
    assert b.FunctionNotFoundError is utils.FunctionNotFoundError
    assert b.NotSupportedError is utils.NotSupportedError and b.HostBackendWarning is utils.HostBackendWarning
    assert b.FunctionNotFoundError.__mro__[:5] == (b.FunctionNotFoundError, NotImplementedError, RuntimeError,
                                                   Exception, BaseException)
    assert b.NotSupportedError.__mro__[1:3] == (RuntimeError, Exception)
    assert issubclass(b.HostBackendWarning, RuntimeWarning)
    for code, name in ERROR_CLASSES.items():
        cls = getattr(b, name)
        assert issubclass(cls, b.NCCLError) and cls is not b.NCCLError
        assert type(b.NCCLError(code)) is cls


# ---- missing symbols ----

# Every row a 2.27 library lacks; the ones with a Python wrapper are called, the others
# (NOT_WRAPPED, on purpose) are checked through the function-pointer table.
OLD_ABSENT_ROWS = sorted(sym for sym, v in API_MIN_VERSION.items() if version_code(v) >= version_code("2.28.0"))
OLD_ABSENT = sorted(set(OLD_ABSENT_ROWS) - NOT_WRAPPED)
WRAPPED = sorted(set(API_MIN_VERSION) - NOT_WRAPPED)


@pytest.fixture(scope="module")
def old_library(stub_python, stub_libs):
    calls = {sym: (C_TO_PY[sym], ARITY[C_TO_PY[sym]]) for sym in WRAPPED}
    r = stub_python("nccl_2_27").run(f"""
        from nccl.bindings._internal import nccl as internal
        out = {{}}
        for sym, (fn, n) in {calls!r}.items():
            res = catch(getattr(b, fn), *[0] * n)
            out[sym] = res[:2] if res[0] == "FunctionNotFoundError" else (res[0],)
        # Symbol check before any argument is converted: nonsense arguments of the right count.
        nonsense = {{sym: catch(getattr(b, fn), *["x"] * n)[0] for sym, (fn, n) in {calls!r}.items()
                    if sym in {OLD_ABSENT!r}}}
        result = (out, nonsense, internal._inspect_function_pointers(), b.get_library_path(),
                  b.get_library_flavour(), b.get_version(), stub.calls())
    """)
    return r + (os.path.realpath(stub_libs["nccl_2_27"]),)


def test_old_library_lacks_exactly_the_2_28_rows(old_library):
    out, nonsense, ptrs, path, flavour, version, calls, real = old_library
    assert sorted(k[2:] for k, v in ptrs.items() if v == 0) == OLD_ABSENT_ROWS
    assert (path, flavour, version) == (real, "nccl", 22703)


@pytest.mark.parametrize("sym", OLD_ABSENT)
def test_missing_symbol_message(old_library, sym):
    out, nonsense, *_, real = old_library
    assert out[sym] == ("FunctionNotFoundError",
                        f"function {sym} is not found in {real} (nccl 2.27.3); it requires NCCL >= "
                        f"{API_MIN_VERSION[sym]}")
    assert nonsense[sym] == "FunctionNotFoundError"


def test_present_symbols_still_work(old_library):
    out, *_ = old_library
    present = sorted(set(WRAPPED) - set(OLD_ABSENT))
    assert all(out[sym][0] != "FunctionNotFoundError" for sym in present)
    # Functions fine with zero arguments succeed outright; those taking a communicator refuse the
    # null one before the call (destroy and abort too, though NCCL makes them no-ops).
    assert out["ncclGroupStart"] == ("ok",)
    for sym in ("ncclAllReduce", "ncclCommShrink", "ncclBcast", "ncclCommDestroy", "ncclCommAbort", "ncclCommFinalize"):
        assert out[sym] == ("NCCLNullHandleError",), sym


def test_rccl_fork_loader_stub_cases(stub_python):
    """The RCCL fork's test_loader_stubs.py, against a library without the 2.28+ symbols."""
    r = stub_python("nccl_2_27").run("""
        import nccl, nccl.bindings
        result = (nccl.get_version().nccl_ep,
                  catch(nccl.bindings.comm_grow, 0, 0, 0, 0, 0),
                  catch(nccl.bindings.comm_revoke, 0, 0),
                  catch(nccl.bindings.put_signal, *[0] * 11),
                  catch(nccl.bindings.wait_signal, 0, 0, 0, 0),
                  stub.calls())
    """)
    ep, grow, revoke, put, wait, calls = r
    assert ep is None
    for res, sym in ((grow, "ncclCommGrow"), (revoke, "ncclCommRevoke"), (put, "ncclPutSignal"),
                     (wait, "ncclWaitSignal")):
        assert res[0] == "FunctionNotFoundError" and "NotImplementedError" in res[2]
        assert res[1].startswith(f"function {sym} is not found")
    assert [name for name, _ in calls if name != "ncclGetVersion"] == []


def test_rocm_extensions_on_nccl(stub_python):
    r = stub_python("nccl").run("""
        # all_to_all_v with null addresses everywhere but the communicator (index 7)
        result = (catch(rx.all_reduce_with_bias, *[0] * 8), catch(rx.all_to_all_v, *[0] * 7, 1, 0),
                  catch(rx.all_to_all_v, 0, [1], [0], 0, [1], [0], 0, 0, 0),
                  catch(rx.all_reduce_with_bias, *["x"] * 8), b.get_library_flavour(), stub.calls())
    """)
    bias, a2av, a2av_lists, bias_nonsense, flavour, calls = r
    assert flavour == "nccl"
    assert bias[0] == "FunctionNotFoundError" and "NotImplementedError" in bias[2]
    assert bias[1].startswith("function ncclAllReduceWithBias is not found in the loaded RCCL library")
    for res in (a2av, a2av_lists):
        assert res[0] == "FunctionNotFoundError"
        assert res[1].startswith("function ncclAlltoAllv is not found in the loaded RCCL library "
                                 "(also tried the deprecated ncclAllToAllv)")
    assert bias_nonsense[0] == "FunctionNotFoundError"
    assert calls == []  # not even ncclCommCount


def test_rocm_extensions_on_an_older_rccl(stub_python):
    r = stub_python("rccl_legacy").run("""
        # all_to_all_v with null addresses everywhere but the communicator (index 7)
        result = (catch(rx.all_reduce_with_bias, *[0] * 8), catch(rx.all_to_all_v, *[0] * 7, 1, 0),
                  b.get_library_flavour(), stub.calls())
    """)
    bias, a2av, flavour, calls = r
    assert flavour == "rccl"
    assert bias[0] == "FunctionNotFoundError"
    assert bias[1].startswith("function ncclAllReduceWithBias is not found in the loaded RCCL library")
    assert a2av == ("ok", None) and [name for name, _ in calls] == ["ncclAllToAllv"]


# ---- load failures ----

def test_not_an_nccl_library(fresh_python, stub_libs):
    """A candidate without ncclGetVersion is a failed attempt; the explicit request does not fall
    back, and a corrected environment is tried afresh (a failed load is not cached)."""
    r = fresh_python(f"""
        import os
        import nccl.bindings.nccl as nb
        first = catch(nb.get_version)
        try:
            nb.all_reduce(1, 2, 3, 7, 0, 4, 5)
        except nb.NotSupportedError as exc:
            attempts = exc.attempts
        grow = catch(nb.comm_grow, "x", "y", "z", 0, 0)
        os.environ["NCCL_LIBRARY"] = {str(stub_libs["nccl"])!r}
        result = (first, attempts, grow, nb.get_version(), nb.get_library_path())
    """, variant="not_nccl")
    first, attempts, grow, version, path = r
    bad = str(stub_libs["not_nccl"])
    assert first[0] == "NotSupportedError" and "RuntimeError" in first[2]
    assert first[1].startswith("Could not load RCCL or NCCL library. Tried:\n")
    assert f"  {bad}: " in first[1] and "not an NCCL/RCCL library" in first[1]
    assert first[1].endswith("Set NCCL_LIBRARY to a path or SONAME, or to 'host' for the bundled host backend.")
    assert len(attempts) == 1 and attempts[0][0] == bad and "not an NCCL/RCCL library" in attempts[0][1]
    assert grow[0] == "NotSupportedError"  # loading comes before the symbol and the arguments
    assert version == 23203 and path == os.path.realpath(stub_libs["nccl"])


def test_not_supported_error_pickles_with_its_attempts():
    import pickle

    import nccl.bindings.nccl as b
    err = b.NotSupportedError._from_attempts((("/x/libnccl.so.2", "not found"), ("librccl.so", "not found")))
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is b.NotSupportedError and again.attempts == err.attempts and str(again) == str(err)
    assert str(err).splitlines()[1:3] == ["  /x/libnccl.so.2: not found", "  librccl.so: not found"]


def test_exceptions_built_in_c_are_the_python_classes():
    import nccl._errors as errors
    import nccl.bindings.nccl as b
    assert b.NCCLError is errors.NCCLError
    assert _ext.check_status is b.check_status
