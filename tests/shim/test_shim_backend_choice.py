"""Which runtime backs the cuda.core shim, and that a Buffer's answers never change under it
(docs/architecture.md#what-backs-the-shim), with a HIP runtime present (the stub, 2 devices).

The rule: NCCL_LIBRARY=host chooses the host backend at the shim's first call, whatever was
imported before; otherwise the first device call of nccl.core chooses by the loaded library's
flavour. A memory resource keeps the runtime that made it, so a Buffer reports the memory it holds
and is freed by the runtime that allocated it, even if the backend changes afterwards.

Each case runs in a fresh interpreter: the backend is process-global."""

import json

import artefacts

PROBE = """
import json, ctypes, os
import nccl, cuda.core
stub = ctypes.CDLL(os.environ["NCCL4PY_HIP_LIBRARY"])
stub.stubHipLive.restype = stub.stubHipCalls.restype = ctypes.c_long
stub.stubHipCalls.argtypes = [ctypes.c_char_p]
from nccl._hip_compat.cuda_core_shim import _runtime

def answers(buf):
    return [buf.is_device_accessible, buf.is_host_accessible, buf.__dlpack_device__()[0]]

out = {}
early = cuda.core.Buffer.allocate(64)
out["early"] = answers(early)
import nccl.core.cuda
out["early_after_import"] = answers(early)
out["backend_after_import"] = type(_runtime.hip()).__name__
nccl.core.cuda.get_num_devices()  # nccl.core's first device call: the flavour's choice, if not made
out["backend"] = type(_runtime.hip()).__name__
out["early_after_choice"] = answers(early)
late = cuda.core.Buffer.allocate(64)
out["late"] = answers(late)
live = stub.stubHipLive(0)
early.close()
out["hip_allocs_freed_by_early_close"] = live - stub.stubHipLive(0)
late.close()
out["hip_mallocs"] = stub.stubHipCalls(b"hipMalloc")
print(json.dumps(out))
"""

DEVICE = [True, False, 10]  # kDLROCM
HOST = [False, True, 1]  # kDLCPU


def probe(run_python, library):
    r = run_python(PROBE, env={"NCCL_LIBRARY": library, "NCCL4PY_CUDA_CORE_SHIM": "1"})
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_nccl_library_host_is_the_host_backend_from_the_first_call(run_python):
    """Before: a Buffer allocated before `import nccl.core.cuda` came from hipMalloc and reported
    device memory, then host memory once that import switched the backend under it."""
    out = probe(run_python, "host")
    assert out["early"] == out["early_after_import"] == out["early_after_choice"] == out["late"] == HOST, out
    assert out["backend_after_import"] == out["backend"] == "HostBackend"
    assert out["hip_mallocs"] == 0 and out["hip_allocs_freed_by_early_close"] == 0


def test_a_buffer_keeps_the_runtime_that_allocated_it(run_python):
    """The host library named by path: its flavour is known only once it is loaded, at nccl.core's
    first device call, and the backend changes then. The early Buffer still reports device memory
    and goes back to hipFree; later ones are host memory."""
    out = probe(run_python, str(artefacts.installed_host_library()))
    assert out["early"] == out["early_after_import"] == out["early_after_choice"] == DEVICE, out
    assert out["backend_after_import"] == "module" and out["backend"] == "HostBackend"
    assert out["late"] == HOST
    assert out["hip_mallocs"] == 1 and out["hip_allocs_freed_by_early_close"] == 1
