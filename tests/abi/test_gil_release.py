"""The GIL is released around library calls: a call blocked inside the stub from a worker thread
must not stop the main thread from running Python, which is what releases it."""

import ctypes
import threading
import time

import pytest

import nccl.bindings.nccl as b

P, C = 0x7F00_0000_1000, 0x5555_0000


@pytest.mark.timeout(30)
@pytest.mark.parametrize("cname,call", [
    ("ncclAllReduce", lambda: b.all_reduce(P, P, 4, 7, 0, C, 0)),
    ("ncclGroupEnd", lambda: b.group_end()),
    ("ncclCommInitRank", lambda: b.comm_init_rank(b.PointerBox().address, 2, bytes(128), 0)),
])
def test_blocked_call_leaves_the_gil_free(fresh, cname, call):
    lib = fresh.lib
    lib.stub_block.argtypes = [ctypes.c_char_p]
    lib.stub_block(cname.encode())
    errors = []

    def worker():
        try:
            call()
        except Exception as exc:  # reported below
            errors.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    # Python bytecode runs here while the worker sits inside the library call.
    deadline = time.monotonic() + 4
    spins = 0
    while not lib.stub_entered() and time.monotonic() < deadline:
        spins += sum(range(100))
    assert lib.stub_entered(), "the call never reached the stub"
    lib.stub_release()
    t.join(10)
    assert not t.is_alive() and errors == []
    assert not lib.stub_timed_out(), "the stub had to time out: the main thread could not run"
