"""The per-thread group depth kept by the binding group calls (nccl.core's register_window reads
it): incremented by a successful group_start, decremented by every group_end and
group_simulate_end that reached the library, failed or not, and never below zero."""



def test_depth_follows_start_end_and_survives_failures(stub_python):
    r = stub_python("nccl").run("""
from nccl import _ext
seen = [_ext._group_depth()]
b.group_start(); b.group_start()
seen.append(_ext._group_depth())
b.group_end()
seen.append(_ext._group_depth())
stub.script("ncclGroupEnd", 5, 1)            # the outer end fails: the group is closed anyway
seen.append(catch(b.group_end)[0])
seen.append(_ext._group_depth())
stub.script("ncclGroupStart", 5, 1)          # a failed start opens nothing
seen.append(catch(b.group_start)[0])
seen.append(_ext._group_depth())
b.group_start()
b.group_simulate_end()
seen.append(_ext._group_depth())
b.group_end()                                 # unmatched: the library decides, the depth stays 0
seen.append(_ext._group_depth())
result = seen
""")
    assert r[:3] == [0, 2, 1]
    assert r[3] == "NCCLInvalidUsage" and r[4] == 0
    assert r[5] == "NCCLInvalidUsage" and r[6] == 0
    assert r[7:] == [0, 0]


def test_depth_is_per_thread(stub_python):
    r = stub_python("nccl").run("""
import threading
from nccl import _ext
b.group_start()
other = []
t = threading.Thread(target=lambda: other.append(_ext._group_depth()))
t.start(); t.join()
mine = _ext._group_depth()
b.group_end()
result = (mine, other[0], _ext._group_depth())
""")
    assert r == (1, 0, 0)
