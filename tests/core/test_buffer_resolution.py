"""nx_resolve_buffer through nccl._ext.NcclBuffer (docs/architecture.md#buffer-resolution).

The pytest process never loads a library: _buffer_probe.py runs in a child interpreter per
flavour (the host backend, and the stub NCCL, which reports itself as NCCL so host memory is
refused), resolves every case once and sends back {case: outcome}; each test reads its cases.
"""

import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import children
pytest.importorskip("numpy")
pytest.importorskip("ml_dtypes")

PROBE = Path(__file__).with_name("_buffer_probe.py")

# what a layout error says to do
FIX = ": pass a contiguous copy, numpy.ascontiguousarray(x) or x.contiguous() for a torch tensor"


def run_probe(library, **env):
    child = children.environment(NCCL_LIBRARY=library, **env)
    proc = subprocess.run([sys.executable, str(PROBE)], env=child, capture_output=True, timeout=300,
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return pickle.loads(proc.stdout)


@pytest.fixture(scope="module")
def host():
    return run_probe("host")


@pytest.fixture(scope="module")
def gpu(stub_libs):
    return run_probe(stub_libs["nccl"], PROBE_NO_TORCH="1")


def ok(out, key):
    outcome = out[key]
    assert outcome[0] == "ok", f"{key}: {outcome}"
    return outcome[1]


def err(out, key):
    outcome = out[key]
    assert outcome[0] == "err", f"{key}: expected an error, got {outcome}"
    assert outcome[1] == "NcclInvalid", outcome
    return outcome[2]


NUMPY_DTYPES = dict(int8=("INT8", 0), uint8=("UINT8", 1), int32=("INT32", 2), uint32=("UINT32", 3),
                    int64=("INT64", 4), uint64=("UINT64", 5), float16=("FLOAT16", 6), float32=("FLOAT32", 7),
                    float64=("FLOAT64", 8), bfloat16=("BFLOAT16", 9), float8_e4m3fn=("FLOAT8E4M3", 10),
                    float8_e5m2=("FLOAT8E5M2", 11), bool=("UINT8", 1))
ITEMSIZE = dict(INT8=1, UINT8=1, INT32=4, UINT32=4, INT64=8, UINT64=8, FLOAT16=2, FLOAT32=4, FLOAT64=8,
                BFLOAT16=2, FLOAT8E4M3=1, FLOAT8E5M2=1)


@pytest.mark.parametrize("npname", list(NUMPY_DTYPES))
def test_numpy_dtypes(host, npname):
    v = ok(host, "np:" + npname)
    name, code = NUMPY_DTYPES[npname]
    assert v["dtype"] == name
    if v["dtype_int"] is not None:  # nccl.core._types present
        assert v["dtype_int"] == code
    assert v["ptr"] == v["expect_ptr"]
    assert v["count"] == v["expect_count"]
    assert v["nbytes"] == v["count"] * ITEMSIZE[name]
    assert v["device"] == -1 and v["readonly"] is False


@pytest.mark.parametrize("npname,kind,itemsize", [("complex64", "c", 8), ("int16", "i", 2),
                                                  ("float8_e4m3fnuz", "V", 1), ("float8_e5m2fnuz", "V", 1)])
def test_numpy_unsupported_dtypes(host, npname, kind, itemsize):
    assert err(host, "np:" + npname) == (f"buffer: Unsupported data type: numpy dtype {npname} (kind={kind}, "
                                         f"itemsize={itemsize}, name={npname}) has no NCCL equivalent")


def test_numpy_byteswapped_rejected(host):
    assert err(host, "np:>f4").startswith("buffer: Unsupported data type: numpy dtype >f4 (kind=f, itemsize=4")


def test_numpy_layouts(host):
    f = ok(host, "np:fortran")
    assert (f["ptr"], f["count"], f["dtype"]) == (f["expect_ptr"], 12, "FLOAT32")
    assert err(host, "np:noncontig") == "buffer must be C- or F-contiguous; got shape (4, 3), strides (6, 2) (elements)" + FIX
    assert err(host, "np:slice1d") == "buffer must be C- or F-contiguous; got shape (4,), strides (3,) (elements)" + FIX
    z = ok(host, "np:0d")
    assert (z["ptr"], z["count"], z["nbytes"]) == (z["expect_ptr"], 1, 4)
    e = ok(host, "np:empty")
    assert (e["ptr"], e["count"], e["nbytes"]) == (e["expect_ptr"], 0, 0)
    o = ok(host, "np:offset")
    assert (o["ptr"], o["count"]) == (o["expect_ptr"], 2)
    assert ok(host, "np:readonly")["readonly"] is True


def test_buffer_protocol(host):
    b = ok(host, "bytearray")
    assert (b["ptr"], b["count"], b["dtype"], b["device"], b["readonly"]) == (b["expect_ptr"], 10, "UINT8", -1, False)
    assert ok(host, "bytes")["readonly"] is True
    assert ok(host, "bytes")["count"] == 4
    d = ok(host, "memoryview:d")
    assert (d["count"], d["dtype"], d["nbytes"]) == (2, "FLOAT64", 16)
    assert err(host, "memoryview:noncontig") == ("buffer must be C- or F-contiguous; got shape (8,), strides (2,) "
                                                 "(elements)" + FIX)
    assert err(host, "memoryview:h") == ("buffer: Unsupported data type: buffer format 'h' (itemsize=2) has no "
                                         "NCCL equivalent")


def test_unsupported_type(host):
    assert err(host, "unsupported") == (
        "buffer: unsupported buffer type object; expected a cuda.core Buffer, a DLPack or __cuda_array_interface__ "
        "object, a torch.Tensor or a cupy.ndarray")


def test_stream_argument_is_validated(host):
    """A bool stream is nccl4py 0.6.0's TypeError, for a buffer's stream= as for a collective's."""
    assert host["stream-arg"] == ("err", "TypeError", "stream must not be a bool")


DL_OK = {
    "dl:versioned": ("FLOAT32", 6, -1, False), "dl:legacy": ("FLOAT32", 4, -1, False),
    "dl:legacy_only": ("FLOAT32", 4, -1, False), "dl:readonly": ("FLOAT32", 4, -1, True),
    "dl:offset": ("FLOAT32", 4, -1, False), "dl:cuda1": ("FLOAT32", 3, 1, False),
    "dl:rocm2": ("FLOAT32", 3, 2, False), "dl:cudahost": ("FLOAT32", 3, -1, False),
    "dl:managed": ("FLOAT32", 3, -1, False), "dl:bool": ("UINT8", 3, -1, False),
    "dl:bf16": ("BFLOAT16", 3, -1, False), "dl:e4m3fn": ("FLOAT8E4M3", 3, -1, False),
    "dl:e5m2": ("FLOAT8E5M2", 3, -1, False), "dl:fortran": ("FLOAT32", 6, -1, False),
    "dl:0d": ("FLOAT32", 1, -1, False),
}
DL_ERR = {
    "dl:vulkan": "buffer: DLPack device type 7 is not supported",
    "dl:lanes": "buffer: DLPack dtype with lanes=4 is not supported (NCCL has no vector types)",
    "dl:int16": "buffer: Unsupported data type: DLPack dtype (code=0, bits=16) has no NCCL equivalent",
    "dl:complex": "buffer: Unsupported data type: DLPack dtype (code=5, bits=64) has no NCCL equivalent",
    "dl:e4m3fnuz": "buffer: Unsupported data type: DLPack dtype (code=11, bits=8) has no NCCL equivalent",
    "dl:noncontig": "buffer must be C- or F-contiguous; got shape (2, 3), strides (6, 2) (elements)" + FIX,
    "dl:major2": "buffer: DLPack version 2.0 is not supported (need 1.x)",
}


@pytest.mark.parametrize("key", list(DL_OK))
def test_dlpack(host, key):
    v = ok(host, key)
    assert (v["dtype"], v["count"], v["device"], v["readonly"]) == DL_OK[key]
    assert v["ptr"] == v["expect_ptr"]
    assert host[key + ":deleted"] == 1  # the deleter ran exactly once
    assert host[key + ":live"] == 0


@pytest.mark.parametrize("key", list(DL_ERR))
def test_dlpack_errors(host, key):
    assert err(host, key) == DL_ERR[key]
    # consumed or not, the tensor is freed exactly once (by us, or by the capsule's destructor)
    assert host[key + ":deleted"] == 1
    assert host[key + ":live"] == 0


def test_dlpack_call_arguments(host):
    # versioned first; stream=-1 for device memory, None for kDLCPU (the array API requires it)
    assert host["dl:cuda1:calls"] == [dict(stream=-1, max_version=(1, 0))]
    assert host["dl:versioned:calls"] == [dict(stream=None, max_version=(1, 0))]
    # a producer without max_version: TypeError, then the legacy call
    assert host["dl:legacy_only:calls"] == [dict(stream=None)]


def test_cuda_array_interface_host_flavour(host):
    v = ok(host, "cai")
    assert (v["ptr"], v["count"], v["dtype"], v["device"], v["readonly"]) == (0x10000, 8, "FLOAT32", 0, False)
    assert ok(host, "cai:readonly")["readonly"] is True
    assert ok(host, "cai:fortran")["count"] == 8
    assert ok(host, "cai:bool")["dtype"] == "UINT8"
    assert err(host, "cai:v2") == "buffer: __cuda_array_interface__ version 2 is not supported (need 3 or later)"
    assert err(host, "cai:mask") == "buffer: a __cuda_array_interface__ with a mask is not supported"
    assert err(host, "cai:strided") == ("buffer must be C- or F-contiguous; got shape (4, 2), strides (4, 1) "
                                        "(elements)" + FIX)
    assert err(host, "cai:c16") == ("buffer: Unsupported data type: numpy dtype <c16 (kind=c, itemsize=16, "
                                    "name=<c16) has no NCCL equivalent")


def test_cuda_core_buffer_shim(host):
    assert "ccbuf:error" not in host, host.get("ccbuf:error")
    h = ok(host, "ccbuf:host")
    assert (h["ptr"], h["count"], h["dtype"], h["device"]) == (0x2000, 64, "INT8", -1)
    d = ok(host, "ccbuf:device")
    assert (d["ptr"], d["count"], d["dtype"], d["device"]) == (0x3000, 32, "INT8", 3)


TORCH_DTYPES = dict(float16="FLOAT16", float32="FLOAT32", float64="FLOAT64", bfloat16="BFLOAT16", int8="INT8",
                    int32="INT32", int64="INT64", uint8="UINT8", bool="UINT8", float8_e4m3fn="FLOAT8E4M3",
                    float8_e5m2="FLOAT8E5M2", uint32="UINT32", uint64="UINT64")


def test_torch_cpu(host):
    if not host["torch"]:
        pytest.skip("torch is not installed")
    for name, ours in TORCH_DTYPES.items():
        v = ok(host, "torch:" + name)
        assert (v["dtype"], v["ptr"], v["count"], v["device"]) == (ours, v["expect_ptr"], v["expect_count"], -1)
    for name in ("complex64", "int16"):
        assert err(host, "torch:" + name) == (
            f"buffer: Unsupported torch dtype torch.{name} has no NCCL equivalent. NCCL does not support complex, "
            "int16, or quantized types.")
    f = ok(host, "torch:fortran")
    assert (f["ptr"], f["count"]) == (f["expect_ptr"], 12)
    assert err(host, "torch:noncontig") == ("buffer must be C- or F-contiguous; got shape (4, 2), strides (4, 2) "
                                            "(elements)" + FIX)
    assert err(host, "torch:meta") == "buffer: torch tensor on device meta is not supported"
    assert host["ref:torch"] == 0


def test_refcounts_unchanged(host):
    for key in ("ref:numpy", "ref:numpy_err", "ref:bytearray", "ref:dlpack", "ref:dlpack_err", "ref:cai"):
        assert host[key] == 0, key
    assert host["ref:live_tensors"] == 0


# ---- a GPU flavour (the stub NCCL): host memory is refused, device memory keeps its ordinal ----

HOST_REFUSED = "buffer is in host memory; NCCL needs device memory or device-accessible host memory"


def test_gpu_flavour_refuses_host_memory(gpu):
    assert err(gpu, "np:float32") == HOST_REFUSED
    assert err(gpu, "dl:versioned") == HOST_REFUSED
    assert gpu["dl:versioned:deleted"] == 1
    assert err(gpu, "ccbuf:host") == HOST_REFUSED
    # the buffer protocol is a host-flavour rule only
    assert err(gpu, "bytearray").startswith("buffer: unsupported buffer type bytearray;")
    # the dtype is still checked first
    assert err(gpu, "np:complex64").startswith("buffer: Unsupported data type: numpy dtype complex64")


def test_gpu_flavour_device_memory(gpu):
    v = ok(gpu, "dl:cuda1")
    assert (v["device"], v["ptr"], v["count"]) == (1, v["expect_ptr"], 3)
    assert ok(gpu, "dl:rocm2")["device"] == 2
    # device-accessible host memory keeps the producer's device id on a GPU flavour
    assert ok(gpu, "dl:cudahost")["device"] == 0
    assert ok(gpu, "ccbuf:device")["device"] == 3


def test_gpu_flavour_cai_needs_the_driver(gpu):
    # no libcuda.so.1 here, or a fake pointer it does not know: NcclInvalid either way
    msg = err(gpu, "cai")
    assert msg.startswith("buffer: cannot find the device of")
    assert "cuPointerGetAttribute" in msg


def test_frameworks_are_never_imported(fresh_python):
    """Resolution looks torch, cupy and cuda.core up in sys.modules only."""
    result = fresh_python(r"""
import sys
import numpy as np
from nccl import _ext
from nccl._errors import NcclInvalid
had_cuda_core = "cuda.core" in sys.modules
_ext.NcclBuffer(np.zeros(3))
_ext.NcclBuffer(bytearray(4))
for bad in (object(), np.zeros(3, np.complex64)):
    try:
        _ext.NcclBuffer(bad)
    except NcclInvalid:
        pass
result = ("torch" in sys.modules, "cupy" in sys.modules, had_cuda_core == ("cuda.core" in sys.modules))
""", env={"NCCL_LIBRARY": "host"})
    assert result == (False, False, True)
