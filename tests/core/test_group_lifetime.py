"""Buffers passed inside a group live until the outermost group_end (issue 15, item 8).

Inside a group the library records pointers and the data moves at the outermost group_end (on
the host backend the work runs there). nccl.core keeps a reference to every buffer object a call
resolved while a group is open, and drops them after the outermost group_end; outside a group it
keeps nothing. Each test runs in a fresh interpreter on the host backend with a 1-rank
communicator (send/recv to self inside a group).
"""

import pytest

pytest.importorskip("numpy")

SETUP = """
import gc, sys
import numpy as np
import nccl.core as nccl
comm = nccl.Communicator.init(nranks=1, rank=0, unique_id=nccl.get_unique_id())
"""


def run(fresh_python, code):
    return fresh_python(SETUP + code, env={"NCCL_LIBRARY": "host", "NCCL_HOST_TIMEOUT": "20"})


@pytest.mark.timeout(120)
def test_temporary_sent_inside_a_group_is_read_at_group_end(fresh_python):
    """The send's buffer is a temporary nobody else holds; it is freed (and its memory reused by
    other arrays) before group_end unless nccl.core keeps it."""
    r = run(fresh_python, """
bad = 0
for trial in range(20):
    y = np.zeros(300, np.float64)
    with nccl.group():
        comm.send(np.arange(300, dtype=np.float64) + trial, 0)
        comm.recv(y, 0)
        junk = [np.full(300, -7.0) for _ in range(50)]  # reuses freed blocks of the same size
    bad += int(not np.array_equal(y, np.arange(300, dtype=np.float64) + trial))
comm.destroy()
result = bad
""")
    assert r == 0, f"{r} of 20 grouped sends of a temporary delivered something else"


@pytest.mark.timeout(120)
def test_references_held_until_the_outermost_group_end(fresh_python):
    r = run(fresh_python, """
x = np.arange(16, dtype=np.float32)
y = np.zeros(16, np.float32)
base = (sys.getrefcount(x), sys.getrefcount(y))
seen = {}
nccl.group_start()
nccl.group_start()
comm.send(x, 0)
comm.recv(y, 0)
seen["inside"] = (sys.getrefcount(x) - base[0], sys.getrefcount(y) - base[1])
nccl.group_end()
seen["inner end"] = (sys.getrefcount(x) - base[0], sys.getrefcount(y) - base[1])
nccl.group_end()
seen["outer end"] = (sys.getrefcount(x) - base[0], sys.getrefcount(y) - base[1])
seen["data"] = bool(np.array_equal(x, y))
# outside a group nothing is kept
comm.allreduce(x, y, nccl.SUM)
comm.allreduce(x, x, nccl.SUM)
seen["outside"] = (sys.getrefcount(x) - base[0], sys.getrefcount(y) - base[1])
# a group whose end fails still lets go of its buffers
nccl.group_start()
comm.send(x, 0)  # no matching receive to itself: group_end fails
try:
    nccl.group_end()
    seen["failed end"] = "no error"
except nccl.NcclInvalid as exc:
    seen["failed end"] = "raised"
except Exception as exc:
    seen["failed end"] = type(exc).__name__
seen["after failed end"] = sys.getrefcount(x) - base[0]
comm.abort()
result = seen
""")
    assert r["inside"] == (1, 1)
    assert r["inner end"] == (1, 1)
    assert r["outer end"] == (0, 0)
    assert r["data"] is True
    assert r["outside"] == (0, 0)
    assert r["after failed end"] == 0, r
