"""ncclCommGetUniqueId and ncclCommGrow of libnccl-host through ctypes, in one process: one
thread driving every rank inside a group, and a nonblocking parent (the multi-process cases are
tests/multirank/test_grow.py)."""

import textwrap
from pathlib import Path

import pytest

import children
import nccl

LIB = Path(nccl.__file__).resolve().parent / "_lib" / "libnccl-host.so"
pytestmark = [pytest.mark.skipif(not LIB.exists(), reason="the installed package has no libnccl-host.so"),
              pytest.mark.timeout(120)]

PRELUDE = f"""
import ctypes, json, time
import numpy as np
L = ctypes.CDLL({str(LIB)!r})
L.ncclGetLastError.restype = ctypes.c_char_p
P = ctypes.c_void_p
class UID(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]
def last():
    return L.ncclGetLastError(None).decode()
def comms(n):
    c = (P * n)()
    assert L.ncclCommInitAll(c, n, None) == 0, last()
    return [P(x) for x in c]
def allreduce_all(cs):
    n = len(cs)
    send = [np.full(5, r + 1, np.float32) for r in range(n)]
    recv = [np.zeros(5, np.float32) for r in range(n)]
    assert L.ncclGroupStart() == 0
    for r in range(n):
        assert L.ncclAllReduce(P(send[r].ctypes.data), P(recv[r].ctypes.data), ctypes.c_size_t(5), 7, 0, cs[r],
                               None) == 0, last()
    assert L.ncclGroupEnd() == 0, last()
    return [x.tolist() for x in recv]
def size_rank(c):
    n, r = ctypes.c_int(), ctypes.c_int()
    assert L.ncclCommCount(c, ctypes.byref(n)) == 0 and L.ncclCommUserRank(c, ctypes.byref(r)) == 0
    return [n.value, r.value]
"""


def result(code, **env):
    e = children.environment(drop=(), drop_prefix="NCCL", **{"NCCL_HOST_TIMEOUT": "20", **env})
    proc = children.run_python(PRELUDE + textwrap.dedent(code) + "\nprint(json.dumps(result))\n", env=e, timeout=100)
    return children.last_json(proc)


def test_grow_in_a_group_driven_by_one_thread():
    """Two existing ranks and two new ones, all grown inside one group by one thread."""
    r = result("""
        c = comms(2)
        uid = UID()
        assert L.ncclCommGetUniqueId(c[1], ctypes.byref(uid)) == 0, last()
        new = [P() for _ in range(4)]
        assert L.ncclGroupStart() == 0
        assert L.ncclCommGrow(c[0], 4, None, -1, ctypes.byref(new[0]), None) == 0, last()
        assert L.ncclCommGrow(c[1], 4, ctypes.byref(uid), -1, ctypes.byref(new[1]), None) == 0, last()
        for k in (2, 3):
            assert L.ncclCommGrow(None, 4, ctypes.byref(uid), k, ctypes.byref(new[k]), None) == 0, last()
        assert L.ncclGroupEnd() == 0, last()
        result = [[size_rank(x) for x in new], allreduce_all(new), allreduce_all(c)]
        for x in new + c:
            assert L.ncclCommDestroy(x) == 0
    """)
    assert r[0] == [[4, 0], [4, 1], [4, 2], [4, 3]]
    assert r[1] == [[10.0] * 5] * 4
    assert r[2] == [[3.0] * 5] * 2  # the parent still works


def test_grow_with_a_nonblocking_parent():
    """Nonblocking parents (and a nonblocking new rank): every grow returns ncclInProgress at
    once, so one thread drives all three; newcomm is written once the grow is done."""
    r = result("""
        import nccl.bindings.nccl as b  # ncclConfig_t as NCCL_CONFIG_INITIALIZER makes it
        conf = b.Config()
        conf.blocking = 0
        def settle(cs):
            states, deadline = [], time.monotonic() + 30
            for x in cs:
                s = ctypes.c_int(7)
                while s.value == 7 and time.monotonic() < deadline:
                    assert L.ncclCommGetAsyncError(x, ctypes.byref(s)) == 0
                    time.sleep(0.001)
                states.append(s.value)
            return states
        id0 = UID()
        assert L.ncclGetUniqueId(ctypes.byref(id0)) == 0
        c = [P(), P()]
        assert L.ncclGroupStart() == 0
        for k in (0, 1):
            assert L.ncclCommInitRankConfig(ctypes.byref(c[k]), 2, id0, k, P(conf.ptr)) == 0, last()
        assert L.ncclGroupEnd() == 7
        assert settle(c) == [0, 0]
        uid = UID()
        assert L.ncclCommGetUniqueId(c[0], ctypes.byref(uid)) == 0, last()
        new = [P() for _ in range(3)]
        rcs = [L.ncclCommGrow(c[0], 3, ctypes.byref(uid), -1, ctypes.byref(new[0]), None),
               L.ncclCommGrow(c[1], 3, None, -1, ctypes.byref(new[1]), None),
               L.ncclCommGrow(None, 3, ctypes.byref(uid), 2, ctypes.byref(new[2]), P(conf.ptr))]
        early = [bool(x.value) for x in new]
        parents = settle(c)
        result = [rcs, early, parents, settle(new), [size_rank(x) for x in new]]
        for x in new + c:
            L.ncclCommDestroy(x)
    """)
    assert r[0] == [7, 7, 7]  # ncclInProgress
    assert r[1][2] is True  # a new rank has its handle at once, as a nonblocking init
    assert r[2:4] == [[0, 0], [0, 0, 0]]
    assert r[4] == [[3, 0], [3, 1], [3, 2]]
