"""nccl.core memory (docs/compatibility.md#memory) on the host backend, where cuda.core is the shim over
the host backend's virtual devices and ncclMemAlloc returns host memory."""

SNIPPET = """
import threading
import cuda.core
from nccl._hip_compat.cuda_core_shim import _runtime
import nccl.core as core
from nccl.core.memory import NcclMemoryResource, get_memory_resource
from nccl.core.cuda import get_device_id

before = get_device_id()
buf = core.mem_alloc(1000, device=3)
after = get_device_id()
mr = buf.memory_resource
buf2 = core.mem_alloc(64, device=cuda.core.Device(1))
buf3 = core.mem_alloc(32)
other = []
t = threading.Thread(target=lambda: other.append(get_memory_resource(3)))
t.start(); t.join()
dl = buf.__dlpack_device__()
import numpy as np
arr = np.from_dlpack(buf)
arr[:] = 7
calls_ok = arr.sum() == 7000
core.mem_free(buf)
closed = buf.handle
core.mem_free(buf)  # idempotent
result = dict(
    buffer_type=type(buf).__module__, is_buffer=isinstance(buf, cuda.core.Buffer),
    mr_type=type(mr).__name__, is_mr=isinstance(mr, cuda.core.MemoryResource), mr_device=mr.device_id,
    flags=(mr.is_device_accessible, mr.is_host_accessible), buf_flags=(buf2.is_device_accessible, buf2.is_host_accessible),
    devices=(buf2.device_id, buf3.device_id), before=before, after=after, dl=dl, calls_ok=bool(calls_ok),
    cached=get_memory_resource(3) is mr, other_thread=other[0] is not mr and other[0].device_id == 3,
    closed=closed, size=buf2.size, repr=repr(mr), host=_runtime.host_memory(),
)
"""


def test_mem_alloc_host_backend(fresh_python):
    r = fresh_python(SNIPPET, env={"NCCL_LIBRARY": "host"})
    assert r["is_buffer"] and r["buffer_type"].startswith("nccl._hip_compat.cuda_core_shim")
    assert r["mr_type"] == "NcclMemoryResource" and r["is_mr"] and r["mr_device"] == 3
    assert r["flags"] == (False, True) and r["buf_flags"] == (False, True)  # host flavour: host memory
    assert r["devices"] == (1, 0)
    assert r["before"] == r["after"] == 0  # the device was switched for the call only
    assert r["dl"] == (1, 0)  # kDLCPU
    assert r["calls_ok"] and r["cached"] and r["other_thread"]
    assert r["closed"] == 0 and r["size"] == 64
    assert r["repr"] == "<NcclMemoryResource device_id=3>" and r["host"] is True


def test_mem_alloc_calls_the_library(stub_python):
    r = stub_python("nccl").run("""
from nccl.core.memory import NcclMemoryResource
mr = NcclMemoryResource(0)
stub.set_out("ncclMemAlloc", 0x10000)
buf = mr.allocate(256)
h = buf.handle
buf.close()
result = (h, [c[0] for c in stub.calls()], (mr.is_device_accessible, mr.is_host_accessible))
""")
    assert r[0] == 0x10000
    assert r[1] == ["ncclMemAlloc", "ncclMemFree"]
    assert r[2] == (True, False)


def test_mem_alloc_failure_raises_nccl_error(stub_python):
    r = stub_python("nccl").run("""
from nccl.core.memory import NcclMemoryResource
stub.script("ncclMemAlloc", 2, 1)
result = catch(NcclMemoryResource(0).allocate, 16)
""")
    assert r[0] == "NCCLSystemError" and "NCCLError" in r[2]
