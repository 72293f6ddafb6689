"""nccl.core.params and dump_params against the scriptable stub library (tests/stubs): they read the
library through nccl.bindings.nccl's param_* functions (one reader for both layers), so a hole in
the library's key table, a key the library does not know and undecodable bytes come out the same
in both. The host backend's own parameters: tests/host/test_host_api.py."""

# The stub's key table is "NCCL_STUB_A", NULL, "NCCL_STUB_B", "NCCL_STUB_C" and "NCCL_STUB_\xff";
# its ncclParamGetParameter answers "stub-<key>".
KEYS = ["NCCL_STUB_A", "NCCL_STUB_B", "NCCL_STUB_C", "NCCL_STUB_\ufffd"]


def test_both_layers_leave_out_a_null_key(stub_python):
    r = stub_python("nccl").run("""
        import nccl.core as nc
        result = (b.param_get_all_keys(), list(nc.params), len(nc.params), sorted(dict(nc.params.items())),
                  [name for name, _ in stub.calls()])
    """)
    bindings_keys, core_keys, core_len, item_keys, calls = r
    assert bindings_keys == KEYS
    assert core_keys == KEYS
    assert core_len == 4
    assert item_keys == sorted(KEYS)
    assert set(calls) == {"ncclParamGetAllParameterKeys", "ncclParamGetParameter"}


def test_value_by_key_is_the_bindings_value(stub_python):
    r = stub_python("nccl").run("""
        import nccl.core as nc
        result = (nc.params["NCCL_ALGO"], b.param_get_parameter("NCCL_ALGO"), nc.params.get("NCCL_PROTO"),
                  stub.calls(with_blobs=True))
    """)
    core_value, bindings_value, got, calls = r
    assert core_value == bindings_value == "stub-NCCL_ALGO"
    assert got == "stub-NCCL_PROTO"
    assert [c.name for c in calls] == ["ncclParamGetParameter"] * 3
    assert calls[0].blob == b"NCCL_ALGO\0"


def test_unknown_key_is_a_key_error_in_core_and_invalid_argument_in_bindings(stub_python):
    r = stub_python("nccl").run("""
        import nccl.core as nc
        stub.script("ncclParamGetParameter", 4)  # ncclInvalidArgument, the library's answer to an unknown key
        result = (catch(lambda: nc.params["NCCL_NO_SUCH"]), nc.params.get("NCCL_NO_SUCH", "absent"),
                  "NCCL_NO_SUCH" in nc.params, catch(b.param_get_parameter, "NCCL_NO_SUCH"))
    """)
    core_missing, got, contained, bindings_missing = r
    assert core_missing[:2] == ("KeyError", "'NCCL_NO_SUCH'")
    assert got == "absent"
    assert contained is False
    assert bindings_missing[0] == "NCCLInvalidArgument"


def test_other_library_errors_are_not_hidden(stub_python):
    r = stub_python("nccl").run("""
        import nccl.core as nc
        stub.script("ncclParamGetParameter", 3)  # ncclInternalError
        result = catch(lambda: nc.params["NCCL_ALGO"])
    """)
    assert r[0] == "NCCLInternalError"


def test_key_must_be_str(stub_python):
    r = stub_python("nccl").run("""
        import nccl.core as nc
        result = (catch(lambda: nc.params[b"NCCL_ALGO"]), [name for name, _ in stub.calls()])
    """)
    refused, calls = r
    assert refused[:2] == ("TypeError", "params key must be str, got bytes")
    assert calls == []


def test_dump_params_asks_the_library(stub_python):
    r = stub_python("nccl").run("""
        import nccl.core as nc
        result = (nc.dump_params(), [name for name, _ in stub.calls()])
    """)
    assert r == (None, ["ncclParamDumpAll"])
