"""``cuda.core.Event`` over the HIP runtime."""

from dataclasses import dataclass

from . import _runtime
from ._args import index_arg

__all__ = ["Event", "EventOptions"]


@dataclass
class EventOptions:
    """Options of ``Stream.record`` / ``Device.create_event``. Timing is off by default."""

    enable_timing: bool = False


class Event:
    """A HIP event. Made by ``Stream.record()`` or ``Device.create_event()``, or borrowed with
    ``Event.from_handle()``. ``end - start`` is the elapsed time in milliseconds."""

    __slots__ = ("_handle", "_builtin", "_timing", "_device_id")

    def __new__(cls, *args, **kwargs):
        raise RuntimeError(
            "Event objects cannot be instantiated directly. Please use Stream APIs (record) "
            "or Device APIs (create_event)."
        )

    @classmethod
    def _make(cls, handle, builtin, timing, device_id):
        self = object.__new__(cls)
        self._handle = handle
        self._builtin = builtin
        self._timing = timing
        self._device_id = device_id
        return self

    @classmethod
    def _init(cls, options=None, device_id=None):
        from ._stream import _options

        options = _options(EventOptions, options)
        hip = _runtime.hip()
        timing = bool(options.enable_timing)
        flags = hip.hipEventDefault if timing else hip.hipEventDisableTiming
        if device_id is None:
            device_id = hip.get_device()
        handle = hip.event_create(flags, device_id)
        return cls._make(handle, True, timing, device_id)

    @classmethod
    def from_handle(cls, handle):
        """Wrap an existing hipEvent_t without taking ownership."""
        value = index_arg(handle, "handle")
        if value <= 0:
            raise ValueError(f"an event handle must be a positive int, got {value}")
        return cls._make(value, False, None, None)

    def _live_handle(self):
        if not self._handle:
            raise RuntimeError("the event is closed (HIP shim)")
        return self._handle

    @property
    def handle(self):
        """The hipEvent_t as an int; 0 once an event the shim created is closed. A borrowed
        event (``from_handle``) keeps its handle: closing it destroys nothing (as in the RCCL
        fork's shim; docs/compatibility.md#the-cudacore-shims-events)."""
        return self._handle

    @property
    def device(self):
        """The Device the event was recorded on."""
        from ._device import Device

        return Device(self._device_id)

    @property
    def is_timing_disabled(self):
        """True if the event was created without timing (None when borrowed: unknown)."""
        return None if self._timing is None else not self._timing

    @property
    def is_done(self):
        """True once the work recorded before the event has completed (hipEventQuery)."""
        return _runtime.hip().event_query(self._live_handle())

    def sync(self):
        """Block until the event has completed (hipEventSynchronize)."""
        _runtime.hip().event_synchronize(self._live_handle())

    def __sub__(self, other):
        """Milliseconds from ``other`` to ``self``; both need ``EventOptions(enable_timing=True)``."""
        if not isinstance(other, Event):
            return NotImplemented
        if self._timing is False or other._timing is False:
            raise RuntimeError("elapsed time needs two events created with EventOptions(enable_timing=True)")
        return _runtime.hip().event_elapsed_time(other._live_handle(), self._live_handle())

    def close(self):
        """Destroy the event if the shim created it; then its handle reads 0 and it cannot be
        used. A borrowed event owns nothing, so closing it changes nothing: it keeps its handle
        and stays usable. Idempotent; errors from hipEventDestroy are ignored."""
        handle = getattr(self, "_handle", 0)
        if not handle or not self._builtin:
            return
        self._handle = 0
        self._builtin = False
        try:
            _runtime.hip().event_destroy(handle)
        except Exception:
            pass

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __eq__(self, other):
        if not isinstance(other, Event):
            return NotImplemented
        return self._handle == other._handle

    def __hash__(self):
        return hash(("nccl._hip_compat.Event", self._handle))

    def __repr__(self):
        return f"<Event handle={self._handle:#x} (HIP shim)>"
