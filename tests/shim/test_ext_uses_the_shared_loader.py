"""nccl._ext finds the HIP runtime with the loader it shares with the shim (src/common/gpu_loader.c):
on an RCCL library, the device of a __cuda_array_interface__ pointer comes from
hipPointerGetAttributes of the runtime that loader finds: the ROCm 7 name libamdhip64.so.7 through
the dynamic loader's search, or only NCCL4PY_HIP_LIBRARY when it is set. Each case runs in a fresh
interpreter: the loaded runtime is process-wide."""

import shutil

CAI = """
import ctypes
from nccl import _ext

class CAI:
    def __init__(self, ptr):
        self.__cuda_array_interface__ = dict(shape=(4,), typestr="<f4", data=(ptr, False), version=3)

def resolve(ptr):
    try:
        return _ext.NcclBuffer(CAI(ptr)).device_id
    except Exception as e:
        return f"{type(e).__name__}: {e}"
"""


def test_cai_device_comes_from_libamdhip64_so_7(run_python, stub_path, stub_libs, tmp_path):
    lib = tmp_path / "rocm7"
    lib.mkdir()
    shutil.copy(stub_path, lib / "libamdhip64.so.7")
    result = run_python(CAI + """
first = resolve(0x1000)  # loads the runtime; the stub does not know this pointer
hip = ctypes.CDLL("libamdhip64.so.7")  # the mapping the loader made
assert hip.hipSetDevice(1) == 0
ptr = ctypes.c_void_p()
assert hip.hipMalloc(ctypes.byref(ptr), 64) == 0
print(resolve(ptr.value))
maps = [line.split()[-1] for line in open("/proc/self/maps") if "libamdhip64" in line]
print(sorted(set(maps)))
""", env={"NCCL_LIBRARY": str(stub_libs["rccl"]), "LD_LIBRARY_PATH": str(lib),
          "ROCM_PATH": str(tmp_path / "none"), "STUB_HIP_DEVICE_COUNT": "2"},
        unset=("NCCL4PY_HIP_LIBRARY", "HIP_PATH"))
    device, maps = result.stdout.splitlines()
    assert device == "1"
    assert maps == repr([str(lib / "libamdhip64.so.7")])


def test_cai_respects_an_explicit_hip_library(run_python, stub_path, stub_libs, tmp_path):
    """An explicit NCCL4PY_HIP_LIBRARY that does not load is not replaced by the .so.7 the
    dynamic loader could find."""
    lib = tmp_path / "rocm7"
    lib.mkdir()
    shutil.copy(stub_path, lib / "libamdhip64.so.7")
    result = run_python(CAI + """
print(resolve(0x1000))
print(any("libamdhip64" in line for line in open("/proc/self/maps")))
""", env={"NCCL_LIBRARY": str(stub_libs["rccl"]), "LD_LIBRARY_PATH": str(lib),
          "NCCL4PY_HIP_LIBRARY": str(tmp_path / "missing.so")}, unset=("HIP_PATH",))
    message, mapped = result.stdout.splitlines()
    missing = tmp_path / "missing.so"
    assert message == ("NcclInvalid: buffer: cannot find the device of a __cuda_array_interface__ pointer: the HIP "
                       f"runtime (libamdhip64) did not load; tried NCCL4PY_HIP_LIBRARY={missing}: not found: "
                       f"{missing}: cannot open shared object file: No such file or directory")
    assert mapped == "False"
