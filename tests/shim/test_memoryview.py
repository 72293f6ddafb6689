"""StridedMemoryView, args_viewable_as_strided_memory and the DLPack consumer path."""

import ctypes
import gc
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest

from nccl._hip_compat.cuda_core_shim import Device, StridedMemoryView, args_viewable_as_strided_memory
from nccl._hip_compat.cuda_core_shim._memoryview import _StridedMemoryViewProxy

# The DLPack layout of the crafted producers: the buffer tests' own ctypes declaration, written from
# the DLPack specification independently of src/include/dlpack_abi.h, which the consumer reads.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from _buffer_probe import DLManagedTensor, DLManagedTensorVersioned  # noqa: E402

ATTRIBUTES = ("ptr", "shape", "strides", "dtype", "device_id", "is_device_accessible", "readonly", "exporting_obj")


@pytest.fixture(autouse=True)
def _loaded(hip):
    hip.set_device(0)


def test_shim_buffer_view():
    b = Device(0).allocate(1024)
    view = StridedMemoryView(b, stream_ptr=-1)
    assert view.shape == (1024,) and view.ptr == b.handle and view.is_device_accessible
    assert (view.strides, view.dtype, view.device_id, view.readonly) == (None, np.int8, 0, False)
    assert view.exporting_obj is b
    assert all(hasattr(view, name) for name in ATTRIBUTES)
    weakref.ref(view)
    b1 = Device(1).allocate(64)
    assert StridedMemoryView(b1, stream_ptr=0).device_id == 1


def test_numpy_host_array():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    view = StridedMemoryView(a, stream_ptr=-1)
    assert (view.ptr, view.shape, view.strides) == (a.ctypes.data, (3, 2), (4, 2))
    assert (view.dtype, view.device_id, view.is_device_accessible) == (np.float32, -1, False)
    assert view.exporting_obj is a and view.readonly is False
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    assert StridedMemoryView(frozen, stream_ptr=-1).readonly is True


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                   "float16", "float32", "float64", "complex64", "complex128", "bool"])
def test_dtypes(dtype):
    assert StridedMemoryView(np.zeros(3, dtype=dtype), stream_ptr=-1).dtype == np.dtype(dtype)


def test_stream_none_is_ambiguous():
    with pytest.raises(BufferError, match=r"^stream=None is ambiguous with view\(\)$"):
        StridedMemoryView(np.zeros(2))
    with pytest.raises(BufferError, match=r"^stream=None is ambiguous with view\(\)$"):
        StridedMemoryView(Device(0).allocate(8))


def test_no_protocol():
    with pytest.raises(RuntimeError) as info:
        StridedMemoryView([1, 2, 3], stream_ptr=-1)
    assert str(info.value) == (
        "the input object does not support any data exchange protocol "
        "(__dlpack__ / __dlpack_device__ or __cuda_array_interface__)"
    )


def test_empty_view():
    view = StridedMemoryView()
    assert (view.ptr, view.shape, view.exporting_obj) == (0, (), None)


class _Crafted:
    """A DLPack producer made with ctypes: any dtype and device, and a deleter that counts."""

    def __init__(self, code=2, bits=32, lanes=1, device_type=1, device_id=0, versioned=True, readonly=False):
        self.deleted = 0
        self.device = (device_type, device_id)
        self.data = (ctypes.c_byte * 64)()
        self.shape = (ctypes.c_int64 * 1)(4)
        cls = DLManagedTensorVersioned if versioned else DLManagedTensor
        self.managed = cls()
        t = self.managed.dl_tensor
        t.data = ctypes.addressof(self.data)
        t.device.device_type, t.device.device_id = device_type, device_id
        t.ndim = 1
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, lanes
        t.shape = self.shape
        if versioned:
            self.managed.version.major = 1
            self.managed.flags = 1 if readonly else 0
        deleter_type = dict(cls._fields_)["deleter"]

        def deleter(_):
            self.deleted += 1

        self.deleter = deleter_type(deleter)
        self.managed.deleter = self.deleter
        self.name = b"dltensor_versioned" if versioned else b"dltensor"

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), self.name, None)


class _OldProducer(_Crafted):
    def __dlpack__(self, stream=None):  # no max_version: the consumer falls back
        return super().__dlpack__(stream)


def test_consumer_calls_the_deleter_once():
    for versioned in (True, False):
        producer = _Crafted(versioned=versioned, readonly=True)
        view = StridedMemoryView(producer, stream_ptr=-1)
        assert view.readonly is versioned and view.dtype == np.float32 and view.shape == (4,)
        assert producer.deleted == 0
        del view
        gc.collect()
        assert producer.deleted == 1
    old = _OldProducer(versioned=False)
    StridedMemoryView(old, stream_ptr=-1)
    gc.collect()
    assert old.deleted == 1


def test_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert StridedMemoryView(_Crafted(code=4, bits=16), stream_ptr=-1).dtype == ml_dtypes.bfloat16


def test_bfloat16_without_ml_dtypes(run_python):
    run_python("""
        import sys
        sys.modules["ml_dtypes"] = None
        sys.path.insert(0, %r)
        from test_memoryview import _Crafted
        from nccl._hip_compat.cuda_core_shim import StridedMemoryView
        try:
            StridedMemoryView(_Crafted(code=4, bits=16), stream_ptr=-1)
        except NotImplementedError as e:
            assert str(e) == "bfloat16 dtype requires the optional `ml-dtypes` package", e
        else:
            raise AssertionError("no error")
    """ % str(__import__("pathlib").Path(__file__).parent))


@pytest.mark.parametrize("kwargs, exc, message", [
    ({"lanes": 4}, NotImplementedError, "lanes=4"),
    ({"code": 2, "bits": 8}, TypeError, r"unsupported DLPack dtype \(code=2, bits=8\)"),
    ({"code": 3, "bits": 64}, TypeError, "unsupported DLPack dtype"),
    ({"device_type": 4}, BufferError, "^DLPack device_type=4 is not supported by the HIP shim$"),
    ({"device_type": 1, "device_id": 3}, BufferError, "kCPU device must have id 0"),
])
def test_unsupported_tensors(kwargs, exc, message):
    producer = _Crafted(**kwargs)
    with pytest.raises(exc, match=message):
        StridedMemoryView(producer, stream_ptr=-1)
    gc.collect()
    assert producer.deleted == 0  # never consumed: the producer still owns it (no destructor here)


def test_malformed_tensor_is_refused_unconsumed():
    producer = _Crafted()
    producer.managed.dl_tensor.shape = None  # ndim=1 with no shape
    with pytest.raises(BufferError, match=r"^DLPack tensor with ndim=1 is malformed$"):
        StridedMemoryView(producer, stream_ptr=-1)
    gc.collect()
    assert producer.deleted == 0


@pytest.mark.parametrize("device_type, accessible, device_id", [(2, True, 0), (3, True, 0), (13, True, 0),
                                                               (10, True, 0), (11, True, 0), (1, False, -1)])
def test_device_types(device_type, accessible, device_id):
    view = StridedMemoryView(_Crafted(device_type=device_type), stream_ptr=-1)
    assert (view.is_device_accessible, view.device_id) == (accessible, device_id)


def test_used_capsule_is_rejected():
    from nccl._hip_compat.cuda_core_shim._dlpack import parse_capsule
    from nccl._hip_compat import _hip

    buffer = Device(0).allocate(8)
    capsule = buffer.__dlpack__()
    versioned, address = _hip.capsule_consume(capsule)  # now "used_dltensor"; the test owns it
    try:
        assert versioned is False and '"used_dltensor"' in repr(capsule)
        with pytest.raises(BufferError, match="already been consumed"):
            parse_capsule(capsule)
        with pytest.raises(BufferError, match="already been consumed"):
            _hip.capsule_consume(capsule)
    finally:
        _hip.dlpack_release(address, versioned)
    refs = sys.getrefcount(buffer)
    del capsule  # consumed: its destructor must not run the deleter a second time
    assert sys.getrefcount(buffer) == refs


class _CAI:
    def __init__(self, ptr, version=3, typestr="<f4", shape=(4,), strides=None, mask=None, readonly=False):
        self.__cuda_array_interface__ = {"version": version, "data": (ptr, readonly), "typestr": typestr,
                                         "shape": shape, "strides": strides, "mask": mask}


def test_cuda_array_interface(hip):
    b = Device(1).allocate(64)
    view = StridedMemoryView(_CAI(b.handle, strides=(8,), readonly=True), stream_ptr=0)
    assert (view.ptr, view.shape, view.strides, view.dtype) == (b.handle, (4,), (2,), np.float32)
    assert (view.device_id, view.is_device_accessible, view.readonly) == (1, True, True)
    assert StridedMemoryView(_CAI(0, shape=(0,)), stream_ptr=-1).device_id == 0


@pytest.mark.parametrize("kwargs, stream, message", [
    ({"version": 2}, -1, "version 2 is not supported"),
    ({"mask": object()}, -1, "mask"),
    ({}, None, r"stream=None is ambiguous with view\(\)"),
    ({"strides": (6,)}, -1, "stride 6 is not a multiple of the item size 4"),
])
def test_cuda_array_interface_rejected(kwargs, stream, message):
    with pytest.raises(BufferError, match=message):
        StridedMemoryView(_CAI(0x1000, **kwargs), stream_ptr=stream)


def test_decorator_wraps_positional_arguments_only():
    seen = {}

    @args_viewable_as_strided_memory((0,))
    def f(x, y, *, key=None):
        """doc"""
        seen.update(x=x, y=y, key=key)
        return x.view(-1)

    a, y, key = np.zeros(3), np.ones(2), np.ones(1)
    view = f(a, y, key=key)
    assert isinstance(seen["x"], _StridedMemoryViewProxy) and seen["x"].obj is a and seen["x"].has_dlpack
    assert seen["y"] is y and seen["key"] is key
    assert isinstance(view, StridedMemoryView) and view.exporting_obj is a
    assert f.__name__ == "f" and f.__doc__ == "doc"


def test_view_refcounts_unchanged_over_loops():
    a = np.zeros(8)
    before = sys.getrefcount(a)
    for _ in range(1000):
        StridedMemoryView(a, stream_ptr=-1)
    gc.collect()
    assert sys.getrefcount(a) == before
