"""Run inside a child interpreter (never imported by pytest): resolves many objects with
nccl._ext.NcclBuffer / get_stream_ptr and prints a pickled {case: outcome} dict on stdout.

An outcome is ("ok", value) or ("err", exception class name, message). Expected values are
computed here independently of the extension (numpy's ctypes.data, size, ...), next to the
observed ones, so the test compares the two.
"""

import ctypes
import gc
import os
import pickle
import sys

import numpy as np

from nccl import _ext

B = _ext.NcclBuffer
OUT = {}


def probe(key, fn):
    try:
        OUT[key] = ("ok", fn())
    except Exception as e:  # noqa: BLE001 - every outcome is data here
        OUT[key] = ("err", type(e).__name__, str(e))


def view(b):
    """What a resolved buffer says, without the dtype enum (nccl.core._types may be absent):
    the dtype name comes from repr."""
    name = repr(b).split("dtype=")[1].split()[0]
    try:
        dt = int(b.dtype)
    except Exception:  # noqa: BLE001 - nccl.core._types not there yet
        dt = None
    return dict(ptr=b.ptr, count=b.count, dtype=name, dtype_int=dt, device=b.device_id, nbytes=b.nbytes,
                readonly=b.readonly)


# ---- a ctypes DLPack producer ----
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, CAPSULE_DESTRUCTOR]
PyCapsule_IsValid = ctypes.pythonapi.PyCapsule_IsValid
PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = ctypes.c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

DELETED = []  # addresses of managed tensors whose deleter ran
LIVE = {}  # address -> (managed struct, shape, strides) kept alive until the deleter runs


@DELETER
def _deleter(addr):
    DELETED.append(addr)
    LIVE.pop(addr, None)


def _make_destructor(name):
    @CAPSULE_DESTRUCTOR
    def destructor(cap):
        # Unconsumed (still named `name`): the producer frees the tensor, as the protocol says.
        if PyCapsule_IsValid(cap, name):
            _deleter(PyCapsule_GetPointer(cap, name))
    return destructor


DESTRUCTORS = {n: _make_destructor(n) for n in (b"dltensor", b"dltensor_versioned")}


class Producer:
    """A DLPack exporter of `nbytes` bytes of host memory described as the caller says."""

    def __init__(self, shape, code=2, bits=32, lanes=1, device=(1, 0), strides=None, versioned=True, legacy_only=False,
                 readonly=False, byte_offset=0, major=1):
        n = 1
        for s in shape:
            n *= s
        self.mem = (ctypes.c_uint8 * max(1, n * max(1, bits // 8) * lanes + byte_offset))()
        self.__dict__.update(shape=shape, code=code, bits=bits, lanes=lanes, device=device, strides=strides,
                             versioned=versioned, readonly=readonly, byte_offset=byte_offset, major=major)
        self.calls = []
        if legacy_only:
            self.__dlpack__ = self._legacy_dlpack

    @property
    def ptr(self):
        return ctypes.addressof(self.mem)

    def __dlpack_device__(self):
        return self.device

    def _fill(self, t, shape, strides):
        t.data = self.ptr
        t.device = DLDevice(*self.device)
        t.ndim = len(self.shape)
        t.dtype = DLDataType(self.code, self.bits, self.lanes)
        t.shape = shape
        t.strides = strides
        t.byte_offset = self.byte_offset

    def _capsule(self, versioned):
        shape = (ctypes.c_int64 * max(1, len(self.shape)))(*self.shape)
        strides = (ctypes.cast((ctypes.c_int64 * len(self.strides))(*self.strides), ctypes.POINTER(ctypes.c_int64))
                   if self.strides is not None else ctypes.POINTER(ctypes.c_int64)())
        if versioned:
            m = DLManagedTensorVersioned()
            m.version = DLPackVersion(self.major, 0)
            m.flags = 1 if self.readonly else 0
            name = b"dltensor_versioned"
        else:
            m = DLManagedTensor()
            name = b"dltensor"
        self._fill(m.dl_tensor, shape, strides)
        m.deleter = _deleter
        addr = ctypes.addressof(m)
        LIVE[addr] = (m, shape, strides)
        return PyCapsule_New(addr, name, DESTRUCTORS[name])

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append(dict(stream=stream, max_version=max_version))
        return self._capsule(self.versioned and max_version is not None and max_version >= (1, 0))

    def _legacy_dlpack(self, stream=None):
        self.calls.append(dict(stream=stream))
        return self._capsule(False)


class CAI:
    def __init__(self, ptr, shape, typestr="<f4", strides=None, version=3, readonly=False, mask=None):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, data=(ptr, readonly), version=version,
                                             strides=strides)
        if mask is not None:
            self.__cuda_array_interface__["mask"] = mask


def dl_case(key, *args, **kwargs):
    p = Producer(*args, **kwargs)
    before = len(DELETED)
    probe(key, lambda: dict(view(B(p)), expect_ptr=p.ptr + p.byte_offset))
    gc.collect()
    OUT[key + ":deleted"] = len(DELETED) - before
    OUT[key + ":calls"] = p.calls
    OUT[key + ":live"] = len(LIVE)


def refcount_loop(obj, n=10_000):
    before = sys.getrefcount(obj)
    for _ in range(n):
        try:
            B(obj)
        except Exception:  # noqa: BLE001 - the error paths count too
            pass
    return sys.getrefcount(obj) - before


def main():
    import ml_dtypes

    OUT["flavour"] = _ext.get_library_flavour() if hasattr(_ext, "get_library_flavour") else None
    # numpy: every supported dtype
    dtypes = dict(int8="INT8", uint8="UINT8", int32="INT32", uint32="UINT32", int64="INT64", uint64="UINT64",
                  float16="FLOAT16", float32="FLOAT32", float64="FLOAT64", bool="UINT8")
    for npname, ours in dtypes.items():
        a = np.zeros(7, dtype=npname)
        probe("np:" + npname, lambda a=a: dict(view(B(a)), expect_ptr=a.ctypes.data, expect_count=a.size,
                                               expect_nbytes=a.nbytes))
    for npname in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        a = np.zeros(5, dtype=getattr(ml_dtypes, npname))
        probe("np:" + npname, lambda a=a: dict(view(B(a)), expect_ptr=a.ctypes.data, expect_count=a.size))
    for npname in ("complex64", "int16", "float128" if hasattr(np, "float128") else "complex128", ">f4"):
        probe("np:" + npname, lambda n=npname: view(B(np.zeros(3, dtype=n))))
    f = np.asfortranarray(np.zeros((3, 4), np.float32))
    probe("np:fortran", lambda: dict(view(B(f)), expect_ptr=f.ctypes.data))
    nc = np.zeros((4, 6), np.float64)[:, ::2]
    probe("np:noncontig", lambda: view(B(nc)))
    probe("np:slice1d", lambda: view(B(np.arange(10, dtype=np.int32)[::3])))
    z = np.array(2.5, dtype=np.float32)
    probe("np:0d", lambda: dict(view(B(z)), expect_ptr=z.ctypes.data))
    e = np.zeros((0, 3), np.float32)
    probe("np:empty", lambda: dict(view(B(e)), expect_ptr=e.ctypes.data))
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    probe("np:readonly", lambda: view(B(ro)))
    col = np.zeros((5, 1), np.float32)[1:3]
    probe("np:offset", lambda: dict(view(B(col)), expect_ptr=col.ctypes.data))
    # the buffer protocol
    ba = bytearray(10)
    probe("bytearray", lambda: dict(view(B(ba)), expect_ptr=ctypes.addressof((ctypes.c_char * 10).from_buffer(ba))))
    probe("bytes", lambda: view(B(b"abcd")))
    probe("memoryview:d", lambda: view(B(memoryview(bytearray(16)).cast("d"))))
    probe("memoryview:noncontig", lambda: view(B(memoryview(bytearray(16))[::2])))
    probe("memoryview:h", lambda: view(B(memoryview(bytearray(16)).cast("h"))))
    probe("unsupported", lambda: view(B(object())))
    probe("stream-arg", lambda: view(B(np.zeros(2), stream=True)))
    # DLPack
    dl_case("dl:versioned", (2, 3))
    dl_case("dl:legacy", (4,), versioned=False)
    dl_case("dl:legacy_only", (4,), legacy_only=True)
    dl_case("dl:readonly", (4,), readonly=True)
    dl_case("dl:offset", (4,), byte_offset=8)
    dl_case("dl:cuda1", (3,), device=(2, 1))
    dl_case("dl:rocm2", (3,), device=(10, 2))
    dl_case("dl:cudahost", (3,), device=(3, 0))
    dl_case("dl:managed", (3,), device=(13, 0))
    dl_case("dl:vulkan", (3,), device=(7, 0))
    dl_case("dl:lanes", (3,), lanes=4)
    dl_case("dl:int16", (3,), code=0, bits=16)
    dl_case("dl:complex", (3,), code=5, bits=64)
    dl_case("dl:bool", (3,), code=6, bits=8)
    dl_case("dl:bf16", (3,), code=4, bits=16)
    dl_case("dl:e4m3fn", (3,), code=10, bits=8)
    dl_case("dl:e5m2", (3,), code=12, bits=8)
    dl_case("dl:e4m3fnuz", (3,), code=11, bits=8)
    dl_case("dl:fortran", (2, 3), strides=(1, 2))
    dl_case("dl:noncontig", (2, 3), strides=(6, 2))
    dl_case("dl:major2", (3,), major=2)
    dl_case("dl:0d", ())
    # __cuda_array_interface__
    probe("cai", lambda: view(B(CAI(0x10000, (4, 2)))))
    probe("cai:readonly", lambda: view(B(CAI(0x10000, (4,), readonly=True))))
    probe("cai:v2", lambda: view(B(CAI(0x10000, (4,), version=2))))
    probe("cai:mask", lambda: view(B(CAI(0x10000, (4,), mask=object()))))
    probe("cai:strided", lambda: view(B(CAI(0x10000, (4, 2), strides=(16, 4)))))
    probe("cai:fortran", lambda: view(B(CAI(0x10000, (4, 2), strides=(4, 16)))))
    probe("cai:c16", lambda: view(B(CAI(0x10000, (4,), typestr="<c16"))))
    probe("cai:bool", lambda: view(B(CAI(0x10000, (4,), typestr="|b1"))))
    # torch, when installed
    try:
        import torch
    except ImportError:
        torch = None
    OUT["torch"] = torch is not None
    if torch is not None:
        tdt = dict(float16="FLOAT16", float32="FLOAT32", float64="FLOAT64", bfloat16="BFLOAT16", int8="INT8",
                   int32="INT32", int64="INT64", uint8="UINT8", bool="UINT8", float8_e4m3fn="FLOAT8E4M3",
                   float8_e5m2="FLOAT8E5M2", uint32="UINT32", uint64="UINT64")
        for name in tdt:
            t = torch.zeros(6, dtype=getattr(torch, name))
            probe("torch:" + name, lambda t=t: dict(view(B(t)), expect_ptr=t.data_ptr(), expect_count=t.numel()))
        for name in ("complex64", "int16"):
            probe("torch:" + name, lambda n=name: view(B(torch.zeros(2, dtype=getattr(torch, n)))))
        tf = torch.zeros(3, 4).t()
        probe("torch:fortran", lambda: dict(view(B(tf)), expect_ptr=tf.data_ptr()))
        probe("torch:noncontig", lambda: view(B(torch.zeros(4, 4)[:, ::2])))
        tm = torch.zeros(3, device="meta")
        probe("torch:meta", lambda: view(B(tm)))
        OUT["ref:torch"] = refcount_loop(torch.zeros(4))
    # reference counts over 10^4 resolutions, success and error paths
    OUT["ref:numpy"] = refcount_loop(np.zeros(4, np.float32))
    OUT["ref:numpy_err"] = refcount_loop(nc)
    OUT["ref:bytearray"] = refcount_loop(bytearray(8))
    OUT["ref:dlpack"] = refcount_loop(Producer((4,)))
    OUT["ref:dlpack_err"] = refcount_loop(Producer((4,), lanes=2))
    OUT["ref:cai"] = refcount_loop(CAI(0x10000, (4,)))
    OUT["ref:live_tensors"] = (gc.collect(), len(LIVE))[1]
    # cuda.core Buffer through the shim's classes (pure Python; from_handle loads nothing)
    try:
        from nccl._hip_compat.cuda_core_shim import _memory

        class HostMR(_memory.MemoryResource):
            def __init__(self):
                pass

            def allocate(self, size, stream=None):
                raise NotImplementedError

            def deallocate(self, ptr, size, stream=None):
                pass

            is_device_accessible = False
            is_host_accessible = True
            device_id = 0

        class DevMR(HostMR):
            is_device_accessible = True
            is_host_accessible = False
            device_id = 3

        hb = _memory.Buffer.from_handle(0x2000, 64, HostMR())
        db = _memory.Buffer.from_handle(0x3000, 32, DevMR())
        probe("ccbuf:host", lambda: view(B(hb)))
        probe("ccbuf:device", lambda: view(B(db)))
    except Exception as e:  # noqa: BLE001
        OUT["ccbuf:error"] = repr(e)
    OUT["torch_imported_by_us"] = "torch" in sys.modules and torch is None
    OUT["cupy_imported"] = "cupy" in sys.modules


if __name__ == "__main__":
    if os.environ.get("PROBE_NO_TORCH") == "1":
        sys.modules["torch"] = None  # make `import torch` fail: the numpy-only run
    main()
    sys.stdout.buffer.write(pickle.dumps(OUT))
