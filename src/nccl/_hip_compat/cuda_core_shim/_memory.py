"""``cuda.core.Buffer`` and ``cuda.core.MemoryResource`` over the HIP runtime."""

import abc
import operator
import threading
import warnings
import weakref

from nccl import _ext

from . import _dlpack, _runtime
from ._args import index_arg, non_negative_arg
from .typing import DevicePointerT, DevicePointerType  # noqa: F401  (served from cuda.core._memory)

__all__ = ["Buffer", "MemoryResource"]

_kDLCPU = int(_dlpack.DLDeviceType.kCPU)
_kDLROCM = int(_dlpack.DLDeviceType.kROCM)
_kDLROCMHost = int(_dlpack.DLDeviceType.kROCMHost)


def _positive_size(size):
    size = index_arg(size, "size")
    if size <= 0:
        raise ValueError(f"size must be positive, got {size}")
    return size


def _release(mr, ptr, size):
    """The collector's free of a Buffer nobody closed. It must not raise (Python would print
    "Exception ignored"): a resource that refuses (ncclMemFree of memory a window still covers,
    docs/host-backend.md#memory-and-registration) keeps the memory until exit, and says so as a
    ResourceWarning, as an unclosed file does."""
    try:
        mr.deallocate(ptr, size, None)
    except Exception as exc:
        warnings.warn(f"a Buffer of {size} bytes at {ptr:#x} was collected but its memory could not be "
                      f"freed, so it is kept until exit: {exc}", ResourceWarning, stacklevel=1)


class _BufferState:
    """What a Buffer's finalizer needs, kept apart from the Buffer so the finalizer does not
    keep the Buffer alive."""

    __slots__ = ("ptr", "size", "mr", "finalizer", "closed")

    def __init__(self, owner, ptr, size, mr):
        self.ptr = ptr
        self.size = size
        self.mr = mr
        self.closed = False
        self.finalizer = None
        if mr is not None:
            self.finalizer = weakref.finalize(owner, _release, mr, ptr, size)
            # At interpreter exit the runtime may already be going away; the OS reclaims.
            self.finalizer.atexit = False

    def close(self, stream, owner):
        if self.closed:
            return
        if _ext._converting_arguments():
            # A callback of a Communicator call on this thread (a property, __index__, ...): that
            # call may hold this memory's address already (docs/architecture.md#buffer-lifetime).
            raise BufferError("Buffer.close() was called while a Communicator call on this thread is converting its "
                              "arguments (from one of its callbacks); the call may use this memory: close the Buffer "
                              "after the call returns")
        ptr, size, finalizer = self.ptr, self.size, self.finalizer
        if finalizer is not None and finalizer.detach() is not None:
            try:
                self.mr.deallocate(ptr, size, stream)
            except BaseException:
                # A resource that refuses (ncclMemFree of memory a window still covers) leaves the
                # Buffer open and owning its memory, as cuda.core's Buffer.close does.
                self.finalizer = weakref.finalize(owner, _release, self.mr, ptr, size)
                self.finalizer.atexit = False
                raise
        self.closed = True
        self.ptr = 0
        self.size = 0
        self.finalizer = None


class Buffer:
    """A span of memory owned by a MemoryResource, or borrowed (``from_handle`` with no ``mr``).

    ``close()`` hands the memory back to the resource once; garbage collection does the same.
    After ``close()`` the handle and size read 0 and the Buffer can no longer be exported.
    """

    __slots__ = ("__weakref__", "_mnff")

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("Buffer objects cannot be instantiated directly. Please use MemoryResource APIs.")

    @classmethod
    def _init(cls, ptr, size, mr=None):
        self = object.__new__(cls)
        self._mnff = _BufferState(self, ptr, size, mr)
        return self

    @classmethod
    def from_handle(cls, ptr, size, mr=None):
        """Wrap ``size`` bytes at ``ptr``. With ``mr=None`` the memory is borrowed and
        ``close()`` frees nothing; otherwise ``mr.deallocate`` frees it."""
        return cls._init(non_negative_arg(ptr, "ptr"), _positive_size(size), mr)

    @classmethod
    def allocate(cls, size, stream=None):
        """Allocate ``size`` bytes on the current device from its default resource."""
        return _default_resource(_runtime.hip().get_device()).allocate(size, stream)

    def close(self, stream=None):
        """Return the memory to its resource. Idempotent. If the resource raises, the Buffer stays
        open."""
        self._mnff.close(stream, self)

    @property
    def handle(self):
        """The pointer as an int (0 once closed)."""
        return self._mnff.ptr

    @property
    def size(self):
        """The size in bytes (0 once closed)."""
        return self._mnff.size

    @property
    def memory_resource(self):
        """The MemoryResource that allocated the buffer (None for a borrowed pointer)."""
        return self._mnff.mr

    @property
    def is_device_accessible(self):
        """True if a device can access the memory (a borrowed pointer is assumed device memory)."""
        mr = self._mnff.mr
        return True if mr is None else bool(mr.is_device_accessible)

    @property
    def is_host_accessible(self):
        """True if the host can access the memory (host-backend memory, pinned host memory)."""
        mr = self._mnff.mr
        return False if mr is None else bool(mr.is_host_accessible)

    @property
    def device_id(self):
        """The device the memory belongs to (the current device for a borrowed pointer)."""
        mr = self._mnff.mr
        return _runtime.hip().get_device() if mr is None else mr.device_id

    def _open_state(self, error=RuntimeError):
        state = self._mnff
        if state.closed:
            raise error("the buffer is closed (HIP shim)")
        return state

    def __dlpack_device__(self):
        self._open_state(BufferError)
        device, host = self.is_device_accessible, self.is_host_accessible
        if device and not host:
            return (_kDLROCM, self.device_id)
        if device and host:
            return (_kDLROCMHost, 0)
        if host:
            return (_kDLCPU, 0)
        raise BufferError("the buffer is neither device- nor host-accessible; it cannot be exported")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the buffer as a 1-D int8 DLPack tensor of ``size`` elements. The capsule keeps
        the Buffer alive until the consumer releases it. No copy is ever made."""
        state = self._open_state(BufferError)
        if copy:
            raise BufferError("copy=True is not supported")
        device = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != device:
            raise BufferError("dl_device override is not supported")
        versioned = False
        if max_version is not None:
            try:
                major, minor = max_version
                versioned = (operator.index(major), operator.index(minor)) >= (1, 0)
            except (TypeError, ValueError):
                raise BufferError(f"max_version must be a (major, minor) tuple, got {max_version!r}") from None
        from .. import _hip

        return _hip.dlpack_export(self, state.ptr, state.size, device[0], device[1], versioned, False)

    def copy_to(self, dst=None, *, stream):
        """Copy this buffer into ``dst`` (a new buffer from the same resource when None),
        ordered on ``stream``; returns ``dst``."""
        from ._stream import _stream_handle

        state = self._open_state()
        handle = _stream_handle(stream)
        if dst is None:
            if state.mr is None:
                raise ValueError("a borrowed buffer has no memory resource to allocate dst from")
            dst = state.mr.allocate(state.size, stream)
        target = dst._open_state()
        if target.size != state.size:
            raise ValueError(f"buffer sizes mismatch between src and dst (sizes are: src={state.size}, dst={target.size})")
        hip = _runtime.hip()
        hip.memcpy_async(target.ptr, state.ptr, state.size, hip.hipMemcpyDefault, handle)
        return dst

    def copy_from(self, src, *, stream):
        """Copy ``src`` (a Buffer of the same size) into this buffer, ordered on ``stream``."""
        from ._stream import _stream_handle

        state = self._open_state()
        handle = _stream_handle(stream)
        source = src._open_state()
        if source.size != state.size:
            raise ValueError(f"buffer sizes mismatch between src and dst (sizes are: src={source.size}, dst={state.size})")
        hip = _runtime.hip()
        hip.memcpy_async(state.ptr, source.ptr, state.size, hip.hipMemcpyDefault, handle)

    def fill(self, value, *, stream):
        """Set every byte to ``value`` (0-255), ordered on ``stream`` (hipMemsetAsync)."""
        from ._stream import _stream_handle

        state = self._open_state()
        handle = _stream_handle(stream)
        value = index_arg(value, "value")
        if not 0 <= value <= 255:
            raise ValueError(f"value must be a byte (0-255), got {value}")
        _runtime.hip().memset_async(state.ptr, value, state.size, handle)

    def __repr__(self):
        state = self._mnff
        if state.closed:
            return "<Buffer closed (HIP shim)>"
        return f"<Buffer ptr={state.ptr:#x} size={state.size} (HIP shim)>"


class MemoryResource(abc.ABC):
    """Allocates and frees Buffers. Subclasses implement every abstract member."""

    __slots__ = ("_handle",)

    @abc.abstractmethod
    def __init__(self, *args, **kwargs): ...

    @abc.abstractmethod
    def allocate(self, size, stream=None):
        """Return a Buffer of ``size`` bytes."""

    @abc.abstractmethod
    def deallocate(self, ptr, size, stream=None):
        """Free what ``allocate`` returned."""

    @property
    @abc.abstractmethod
    def is_device_accessible(self):
        """True if the device can access the memory."""

    @property
    @abc.abstractmethod
    def is_host_accessible(self):
        """True if the host can access the memory."""

    @property
    @abc.abstractmethod
    def device_id(self):
        """The device the memory belongs to."""


class _HipMallocResource(MemoryResource):
    """Device memory from hipMalloc/hipFree on one device (the current one when None). With the
    host-flavour backend it is host memory, and reports itself host-only.

    The resource keeps the runtime that was current when it was made: its Buffers report the
    accessibility of the memory they hold, and are freed by the runtime that allocated them, even
    if the shim's backend changes later (docs/architecture.md#what-backs-the-shim)."""

    __slots__ = ("_device_id", "_hip")

    def __init__(self, device_id=None):
        from ._device import Device

        self._handle = None
        self._hip = _runtime.hip()
        self._device_id = Device(device_id).device_id

    def allocate(self, size, stream=None):
        size = _positive_size(size)
        ptr = self._hip.malloc(size, self._device_id)
        return Buffer._init(ptr, size, self)

    def deallocate(self, ptr, size, stream=None):
        ptr = non_negative_arg(ptr, "ptr")
        if ptr == 0:
            return
        self._hip.free(ptr)

    @property
    def is_device_accessible(self):
        return not _runtime.host_memory(self._hip)

    @property
    def is_host_accessible(self):
        return _runtime.host_memory(self._hip)

    @property
    def device_id(self):
        return self._device_id

    def __repr__(self):
        return f"<_HipMallocResource device_id={self._device_id} (HIP shim)>"


_resources_lock = threading.Lock()
_resources = {}


def _default_resource(device_id):
    resource = _resources.get(device_id)
    if resource is None:
        created = _HipMallocResource(device_id)
        with _resources_lock:
            resource = _resources.setdefault(device_id, created)
    return resource
