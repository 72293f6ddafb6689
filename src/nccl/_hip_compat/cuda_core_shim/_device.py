"""``cuda.core.Device`` over the HIP runtime."""

import threading

from . import _runtime
from ._args import index_arg

__all__ = ["Device"]

_tls = threading.local()


def _check_range(device_id):
    count = _runtime.device_count()
    if not 0 <= device_id < count:
        raise ValueError(f"device_id {device_id} is out of range; HIP reports {count} device(s)")


def _current_device_id():
    if _runtime.device_count() == 0:
        # The current device defaults to 0; with no device that is out of range too.
        _check_range(0)
    return _runtime.hip().get_device()


class Device:
    """A HIP device. ``Device(None)`` is the calling thread's current device.

    Instances are cached per thread: ``Device(0) is Device(0)`` on one thread. Creating one does
    not change the current device; ``set_current()`` does.
    """

    __slots__ = ("_id",)

    def __new__(cls, device_id=None):
        cache = _tls.__dict__.get("devices")
        if cache is None:
            cache = _tls.devices = {}
        if device_id is None:
            device_id = _current_device_id()
        elif type(device_id) is not int:
            device_id = index_arg(device_id, "device_id", "an int or None")
        device = cache.get(device_id)
        if device is None:
            _check_range(device_id)
            device = object.__new__(cls)
            device._id = device_id
            cache[device_id] = device
        return device

    def __reduce__(self):
        return (Device, (self._id,))

    @property
    def device_id(self):
        """The device ordinal (int)."""
        return self._id

    def set_current(self):
        """Make this the calling thread's current device (hipSetDevice)."""
        _runtime.hip().set_device(self._id)

    @property
    def default_stream(self):
        """The default (null) stream, handle 0."""
        from ._stream import default_stream

        return default_stream()

    def create_stream(self, obj=None, options=None):
        """A new stream on this device (the current device is left as it was), or a Stream
        wrapping ``obj``'s ``__cuda_stream__``. ``options`` is a ``StreamOptions``."""
        from ._stream import Stream

        return Stream._init(obj=obj, options=options, device_id=self._id)

    def create_event(self, options=None):
        """A new event on this device; ``options`` is an ``EventOptions``."""
        from ._event import Event

        return Event._init(options=options, device_id=self._id)

    @property
    def memory_resource(self):
        """This device's default memory resource (hipMalloc/hipFree)."""
        from ._memory import _default_resource

        return _default_resource(self._id)

    def allocate(self, size, stream=None):
        """Allocate ``size`` bytes on this device; returns a Buffer."""
        return self.memory_resource.allocate(size, stream)

    def sync(self):
        """Block until all work on this device is done (hipDeviceSynchronize)."""
        _runtime.hip().device_synchronize(self._id)

    @property
    def pci_bus_id(self):
        """The PCI address, e.g. ``'0000:c1:00.0'`` (hipDeviceGetPCIBusId)."""
        return _runtime.hip().device_get_pci_bus_id(self._id)

    def __repr__(self):
        return f"<Device id={self._id} (HIP shim)>"

    def __eq__(self, other):
        if not isinstance(other, Device):
            return NotImplemented
        return self._id == other._id

    def __hash__(self):
        return hash(("nccl._hip_compat.Device", self._id))
