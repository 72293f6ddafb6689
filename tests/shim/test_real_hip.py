"""The shim against a real HIP runtime without a GPU: Debian's libamdhip64-5 (.ci/run installs
it; `apt-get install libamdhip64-5`). Skipped when it is not installed."""

import ctypes.util
import os

import pytest

_CANDIDATES = ["/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", "/usr/lib/x86_64-linux-gnu/libamdhip64.so.6",
               "/opt/rocm/lib/libamdhip64.so"]


def _real_runtime():
    for path in _CANDIDATES:
        if os.path.exists(path):
            return path
    name = ctypes.util.find_library("amdhip64")
    return name


REAL = _real_runtime()
pytestmark = pytest.mark.skipif(REAL is None, reason="no real HIP runtime (apt-get install libamdhip64-5)")


def _has_gpu():
    return os.path.exists("/dev/kfd")


@pytest.mark.skipif(_has_gpu(), reason="this host has a ROCm GPU; the no-device path cannot be checked")
@pytest.mark.parametrize("how", ["search", "override"])
def test_real_runtime_reports_no_device(run_python, how):
    env = {"NCCL4PY_HIP_LIBRARY": REAL} if how == "override" else {}
    unset = () if how == "override" else ("NCCL4PY_HIP_LIBRARY",)
    run_python("""
        import sys
        from nccl._hip_compat import register_cuda_core_shim, _hip
        assert register_cuda_core_shim(force=True)
        from cuda.core import Buffer, Device, Stream
        from cuda.core.system import get_num_devices
        assert not _hip.is_loaded()
        assert get_num_devices() == 0
        path = _hip.library_path()
        assert "libamdhip64" in path, path
        assert _hip.runtime_version() > 40000000
        assert _hip.get_error_name(100) == "hipErrorNoDevice"
        for call in (lambda: Device(0), lambda: Device()):
            try:
                call()
            except ValueError as e:
                assert str(e) == "device_id 0 is out of range; HIP reports 0 device(s)", str(e)
            else:
                raise AssertionError("a device without a GPU")
        # the table's every entry point is in the real library
        missing = [n for n, p in _hip.function_pointers().items() if p == 0]
        assert missing == [], missing
        # a failing HIP call is a HipError naming the function
        try:
            _hip.set_device(0)
        except _hip.HipError as e:
            assert str(e).startswith("hipSetDevice failed: "), str(e)
            assert e.function == "hipSetDevice" and e.code != 0
        else:
            raise AssertionError("hipSetDevice succeeded without a GPU")
        # nothing that needs no device is affected
        assert Stream.from_handle(0).handle == 0
        Buffer.from_handle(0x1000, 16).close()
        print(path)
    """, env=env, unset=unset)
