"""Groups (docs/compatibility.md#groups), against the stub NCCL in a child interpreter."""

import dataclasses

import pytest

from nccl.core import GroupSimInfo


def test_group_sim_info_frozen():
    info = GroupSimInfo(estimated_time=1.5)
    assert info.estimated_time == 1.5 and [f.name for f in dataclasses.fields(GroupSimInfo)] == ["estimated_time"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.estimated_time = 2.0


def test_start_end_call_the_library(stub_python):
    r = stub_python("nccl").run("""
from nccl.core import group_start, group_end
group_start()
r1 = group_end()
result = (r1, [c[0] for c in stub.calls()])
""")
    assert r == (None, ["ncclGroupStart", "ncclGroupEnd"])


def test_simulate(stub_python):
    r = stub_python("nccl").run("""
from nccl.core import group_start, group_end
group_start()
info = group_end(simulate=True)
result = (type(info).__name__, info.estimated_time, [c[0] for c in stub.calls()])
""")
    assert r == ("GroupSimInfo", 2.5, ["ncclGroupStart", "ncclGroupSimulateEnd"])


def test_simulate_is_keyword_only():
    from nccl.core import group_end

    with pytest.raises(TypeError):
        group_end(True)


def test_context_manager_ends_on_exception(stub_python):
    r = stub_python("nccl").run("""
from nccl.core import group
try:
    with group():
        raise KeyError("boom")
except KeyError:
    pass
with group():
    pass
result = [c[0] for c in stub.calls()]
""")
    assert r == ["ncclGroupStart", "ncclGroupEnd", "ncclGroupStart", "ncclGroupEnd"]


def test_failing_end_raises(stub_python):
    r = stub_python("nccl").run("""
from nccl.core import group
stub.script("ncclGroupEnd", 5, 1)
try:
    with group():
        pass
    result = None
except Exception as exc:
    result = (type(exc).__name__, exc.status)
""")
    assert r == ("NCCLInvalidUsage", 5)


def test_group_depth_per_thread(stub_python):
    r = stub_python("nccl").run("""
import threading
from nccl import _ext
from nccl.core import group, group_start, group_end
seen = [_ext._group_depth()]
with group():
    seen.append(_ext._group_depth())
    with group():
        seen.append(_ext._group_depth())
        other = []
        t = threading.Thread(target=lambda: other.append(_ext._group_depth()))
        t.start(); t.join()
    seen.append(_ext._group_depth())
seen.append(_ext._group_depth())
b.group_start(); seen.append(_ext._group_depth()); b.group_end(); seen.append(_ext._group_depth())
stub.script("ncclGroupEnd", 5, 1)
group_start()
try:
    group_end()
except Exception:
    pass
seen.append(_ext._group_depth())
result = (seen, other)
""")
    assert r == ([0, 1, 2, 1, 0, 1, 0, 0], [0])
