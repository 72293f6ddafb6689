"""Bad input raises TypeError/ValueError/OverflowError naming the argument, before any library
call; a library lacking newer symbols raises FunctionNotFoundError naming the symbol."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import nccl.bindings.nccl as b
from nccl.bindings import rocm_extensions as rx

P, C = 0x7F00_0000_1000, 0x5555_0000

BAD = [
    (lambda: b.all_reduce(P, P, -1, 7, 0, C, 0), OverflowError, r"all_reduce\(\) argument 'count' must be non-negative, got -1"),
    (lambda: b.all_reduce(P, P, 2**64, 7, 0, C, 0), OverflowError, r"all_reduce\(\) argument 'count' is out of range"),
    (lambda: b.all_reduce(P, P, 1, 12, 0, C, 0), ValueError, r"all_reduce\(\) argument 'datatype' must be a DataType value in \[0, 11\], got 12"),
    (lambda: b.all_reduce(P, P, 1, 7, -1, C, 0), ValueError, r"all_reduce\(\) argument 'op' must be a RedOp value"),
    (lambda: b.all_reduce("x", P, 1, 7, 0, C, 0), TypeError, r"all_reduce\(\) argument 'sendbuff' must be an int, not str"),
    (lambda: b.all_reduce(1.5, P, 1, 7, 0, C, 0), TypeError, r"argument 'sendbuff' must be an int, not float"),
    (lambda: b.all_reduce(P, P, 1, 7, 0, C), TypeError, r"all_reduce\(\) takes exactly 7 arguments \(6 given\)"),
    (lambda: b.send(P, 1, 7, 2**31, C, 0), OverflowError, r"send\(\) argument 'peer' does not fit in a C int"),
    (lambda: b.comm_init_rank(1, 2, 3, 4, 5), TypeError, r"comm_init_rank\(\) takes 4 arguments \(0.3 form\) or 3 arguments \(0.2 form\), 5 given"),
    (lambda: b.comm_init_rank(0, 2, bytes(127), 0), ValueError, r"argument 'comm_id': buf must be either a Python int"),
    (lambda: b.comm_init_rank(0, 2, "id", 0), ValueError, r"argument 'comm_id': buf must be either a Python int"),
    (lambda: b.comm_init_rank(0, 2, 0, 0), ValueError, r"argument 'comm_id' must not be a null pointer"),
    (lambda: b.comm_init_rank_scalable(0, 2, 0, 2, bytes(128), 0), ValueError, r"argument 'comm_ids': buf must be either"),
    (lambda: b.comm_init_rank_scalable(0, 2, 0, 0, bytes(128), 0), ValueError, r"argument 'n_id' must be at least 1"),
    (lambda: b.comm_shrink(C, [1], 2, 0, 0, 0), ValueError, r"argument 'exclude_ranks_list' has 1 entries, fewer than the count 2"),
    (lambda: b.comm_init_all(-1, None), ValueError, r"argument 'ndev' must be non-negative"),
    (lambda: b.comm_init_all(2, ["a", "b"]), TypeError, r"argument 'devlist' must be an int"),
    (lambda: b.red_op_create_pre_mul_sum(P, 7, 2, C), ValueError, r"argument 'residence' must be a ScalarResidence value in \[0, 1\], got 2"),
    (lambda: b.comm_mem_stats(C, 4), ValueError, r"argument 'stat' must be a CommMemStat value in \[0, 3\], got 4"),
    (lambda: b.wait_signal(-1, P, C, 0), ValueError, r"argument 'n_desc' must be non-negative"),
    (lambda: b.wait_signal(2, bytes(16), C, 0), ValueError, r"argument 'signal_descs': buf must be either"),
    (lambda: b.put_signal(P, 1, 7, 0, P, 0, 0, 0, -1, C, 0), OverflowError, r"argument 'flags' does not fit in a C unsigned int"),
    (lambda: rx.all_to_all_v(P, [1, 2, 3], [0], P, [1, 2, 3], [0, 1, 2], 7, C, 0), ValueError, r"^sdispls must have nranks=3 entries, got 1$"),
]


@pytest.mark.parametrize("call,exc,pattern", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input_is_rejected_before_the_library(fresh, call, exc, pattern):
    before = fresh.calls
    with pytest.raises(exc, match=pattern):
        call()
    # Nothing reaches the library, except that all_to_all_v asks the communicator's size
    # (ncclCommCount) to check its arrays against.
    expected = ["ncclCommCount"] if pattern.startswith("^sdispls") else []
    assert fresh.calls - before == len(expected)
    if expected:
        assert fresh.last()[0] == "ncclCommCount"


OLD = """
import json
import nccl.bindings as nb
from nccl.bindings._internal import nccl as internal
out = {}
cases = {
    "comm_grow": lambda: nb.comm_grow(0, 0, 0, 0, 0),
    "comm_revoke": lambda: nb.comm_revoke(0, 0),
    "put_signal": lambda: nb.put_signal(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    "wait_signal": lambda: nb.wait_signal(0, 0, 0, 0),
    "all_to_all_v": lambda: nb.all_to_all_v(0, 0, 0, 0, 0, 0, 0, 0, 0),
    "all_reduce_with_bias": lambda: nb.all_reduce_with_bias(0, 0, 0, 0, 0, 0, 0, 0),
}
for name, call in cases.items():
    try:
        call()
        out[name] = None
    except NotImplementedError as e:
        out[name] = [type(e).__name__, str(e), isinstance(e, RuntimeError)]
out["shrink_ptr"] = internal._inspect_function_pointer("__ncclCommShrink") != 0
out["grow_ptr"] = internal._inspect_function_pointer("__ncclCommGrow")
try:
    internal._inspect_function_pointer("__nope")
except KeyError:
    out["keyerror"] = True
print(json.dumps(out))
"""


def test_an_older_library_raises_function_not_found(stub_paths):
    env = dict(os.environ, NCCL_LIBRARY=str(stub_paths["old"]))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(OLD)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    path = str(stub_paths["old"])
    expect = {
        "comm_grow": f"function ncclCommGrow is not found in {path} (nccl 2.30.7); it requires NCCL >= 2.29.2",
        "comm_revoke": f"function ncclCommRevoke is not found in {path} (nccl 2.30.7); it requires NCCL >= 2.28.7",
        "put_signal": f"function ncclPutSignal is not found in {path} (nccl 2.30.7); it requires NCCL >= 2.29.2",
        "wait_signal": f"function ncclWaitSignal is not found in {path} (nccl 2.30.7); it requires NCCL >= 2.29.2",
        "all_to_all_v": "function ncclAlltoAllv is not found in the loaded RCCL library (also tried the deprecated "
                        f"ncclAllToAllv) ({path}: nccl 2.30.7)",
        "all_reduce_with_bias": f"function ncclAllReduceWithBias is not found in the loaded RCCL library ({path}: nccl 2.30.7)",
    }
    for name, message in expect.items():
        assert out[name] == ["FunctionNotFoundError", message, True], name
    assert out["shrink_ptr"] is True and out["grow_ptr"] == 0 and out["keyerror"] is True
