"""``cuda.core.utils.StridedMemoryView`` and ``args_viewable_as_strided_memory``."""

import functools
import operator
import weakref

from nccl import _ext

from . import _dlpack, _runtime

__all__ = ["StridedMemoryView", "args_viewable_as_strided_memory"]

_T = _dlpack.DLDeviceType
_DEVICE_ACCESSIBLE = _dlpack.DEVICE_ACCESSIBLE
_C = _dlpack.DLDataTypeCode
_WIDTHS = {
    _C.kDLInt: ("int", (8, 16, 32, 64)),
    _C.kDLUInt: ("uint", (8, 16, 32, 64)),
    _C.kDLFloat: ("float", (16, 32, 64)),
    _C.kDLComplex: ("complex", (64, 128)),
}


def _numpy_dtype(dl_dtype):
    import numpy as np

    code, bits, lanes = dl_dtype.code, dl_dtype.bits, dl_dtype.lanes
    if lanes != 1:
        raise NotImplementedError(f"vector DLPack dtypes are not supported (lanes={lanes})")
    if code in _WIDTHS:
        prefix, widths = _WIDTHS[code]
        if bits in widths:
            return np.dtype(f"{prefix}{bits}")
    elif code == _C.kDLBool and bits == 8:
        return np.dtype(np.bool_)
    elif code == _C.kDLBfloat and bits == 16:
        try:
            import ml_dtypes
        except ImportError:
            raise NotImplementedError("bfloat16 dtype requires the optional `ml-dtypes` package") from None
        return np.dtype(ml_dtypes.bfloat16)
    raise TypeError(f"unsupported DLPack dtype (code={code}, bits={bits})")


class StridedMemoryView:
    """A view of an array-like object's memory through DLPack (preferred) or the CUDA Array
    Interface. ``strides`` are in elements, None for C-contiguous data; ``device_id`` is -1 for
    host memory. ``stream_ptr`` is the consumer's stream, -1 for no synchronisation."""

    __slots__ = {
        "ptr": "The address of the first element (int).",
        "shape": "The shape, a tuple of ints.",
        "strides": "The strides in elements, or None for C-contiguous data.",
        "dtype": "The element type, a numpy dtype.",
        "device_id": "The device the memory is on, -1 for host memory.",
        "is_device_accessible": "True if the memory is on a device (DLPack/CAI device memory).",
        "readonly": "True if the exporter marked the data read-only.",
        "exporting_obj": "The object the view was made from (kept alive by the view).",
        "__weakref__": None,
    }

    def __init__(self, obj=None, stream_ptr=None):
        self.ptr = 0
        self.shape = ()
        self.strides = None
        self.dtype = None
        self.device_id = -1
        self.is_device_accessible = False
        self.readonly = False
        self.exporting_obj = None
        if obj is None:
            return
        protocol = _ext._array_protocol(obj)  # the buffer resolver's choice (src/ext/buffer/buffer.c)
        if protocol == "dlpack":
            self._from_dlpack(obj, stream_ptr)
        elif protocol == "__cuda_array_interface__":
            self._from_cai(obj, stream_ptr)
        else:
            raise RuntimeError(
                "the input object does not support any data exchange protocol "
                "(__dlpack__ / __dlpack_device__ or __cuda_array_interface__)"
            )

    def _from_dlpack(self, obj, stream_ptr):
        if stream_ptr is None:
            raise BufferError("stream=None is ambiguous with view()")
        device_type, device_id = obj.__dlpack_device__()
        device_type = int(device_type)
        if device_type == _T.kCPU:
            if device_id != 0:
                raise BufferError(f"a DLPack kCPU device must have id 0, got {device_id}")
            stream = None  # producers of host memory take no stream
        elif device_type in _DEVICE_ACCESSIBLE:
            stream = int(stream_ptr)
        else:
            raise BufferError(f"DLPack device_type={device_type} is not supported by the HIP shim")
        capsule = _ext._dlpack_capsule(obj, stream)  # max_version=(1, 0), else the pre-1.0 call
        tensor, readonly, _ = _dlpack.parse_capsule(capsule)
        tensor_type = int(tensor.device.device_type)
        if tensor_type != _T.kCPU and tensor_type not in _DEVICE_ACCESSIBLE:
            raise BufferError(f"DLPack device_type={tensor_type} is not supported by the HIP shim")
        dtype = _numpy_dtype(tensor.dtype)
        shape = tensor.shape
        strides = tensor.strides
        ptr = tensor.data + tensor.byte_offset
        # Everything is read; now take ownership. An error above left the capsule unconsumed,
        # so its destructor releases the producer.
        from .. import _hip

        versioned, address = _hip.capsule_consume(capsule)
        finalizer = weakref.finalize(self, _hip.dlpack_release, address, versioned)
        finalizer.atexit = False
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        if tensor_type == _T.kCPU:
            self.device_id = -1
            self.is_device_accessible = False
        else:
            self.device_id = int(tensor.device.device_id)
            self.is_device_accessible = True
        self.readonly = readonly
        self.exporting_obj = obj

    def _from_cai(self, obj, stream_ptr):
        import numpy as np

        cai = obj.__cuda_array_interface__
        version = cai.get("version", 0)
        if version < 3:
            raise BufferError(f"__cuda_array_interface__ version {version} is not supported (need >= 3)")
        if cai.get("mask") is not None:
            raise BufferError("__cuda_array_interface__ with a mask is not supported")
        if stream_ptr is None:
            raise BufferError("stream=None is ambiguous with view()")
        ptr, readonly = cai["data"]
        ptr = operator.index(ptr)
        dtype = np.dtype(cai["typestr"])
        shape = tuple(int(n) for n in cai["shape"])
        byte_strides = cai.get("strides")
        strides = None
        if byte_strides is not None:
            strides = []
            for s in byte_strides:
                if s % dtype.itemsize:
                    raise BufferError(f"stride {s} is not a multiple of the item size {dtype.itemsize}")
                strides.append(s // dtype.itemsize)
            strides = tuple(strides)
        if ptr:
            device_id = _runtime.hip().pointer_get_attributes(ptr)[1]
        else:
            device_id = _runtime.hip().get_device()
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.device_id = int(device_id)
        self.is_device_accessible = True
        self.readonly = bool(readonly)
        self.exporting_obj = obj

    def __repr__(self):
        return (
            f"StridedMemoryView(ptr={self.ptr:#x}, shape={self.shape}, strides={self.strides}, "
            f"dtype={self.dtype}, device_id={self.device_id}, is_device_accessible={self.is_device_accessible}, "
            f"readonly={self.readonly}, exporting_obj={type(self.exporting_obj).__name__})"
        )


class _StridedMemoryViewProxy:
    """What ``args_viewable_as_strided_memory`` passes instead of the argument: call
    ``.view(stream_ptr)`` to get the StridedMemoryView."""

    __slots__ = ("obj", "has_dlpack")

    def __init__(self, obj):
        self.obj = obj
        self.has_dlpack = _ext._array_protocol(obj) == "dlpack"

    def view(self, stream_ptr=None):
        return StridedMemoryView(self.obj, stream_ptr)


def args_viewable_as_strided_memory(arg_indices):
    """Decorator: the positional arguments at ``arg_indices`` arrive wrapped in a proxy whose
    ``.view(stream_ptr)`` returns a StridedMemoryView. Keyword arguments pass through."""
    indices = tuple(arg_indices)

    def decorator(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            args = list(args)
            for index in indices:
                args[index] = _StridedMemoryViewProxy(args[index])
            return func(*args, **kwargs)

        return wrapped

    return decorator
