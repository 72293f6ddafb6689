"""``cuda.core.Stream`` over the HIP runtime."""

from dataclasses import dataclass
from typing import Optional

from . import _runtime
from ._args import non_negative_arg
from .typing import IsStreamT, IsStreamType  # noqa: F401  (served from cuda.core._stream)

__all__ = ["Stream", "StreamOptions", "default_stream"]

_CLOSED = object()  # stored in Stream._owner once the stream is closed


@dataclass
class StreamOptions:
    """Options of ``Device.create_stream``: a non-blocking stream by default."""

    nonblocking: bool = True
    priority: Optional[int] = None


def _options(cls, options):
    """None, an instance of cls, or a dict of its fields (as cuda.core accepts)."""
    if options is None:
        return cls()
    if isinstance(options, cls):
        return options
    if isinstance(options, dict):
        return cls(**options)
    raise TypeError(f"options must be {cls.__name__}, a dict or None, got {type(options).__name__}")


def _handle_from_protocol(obj):
    try:
        info = obj.__cuda_stream__
    except AttributeError:
        raise TypeError(f"{type(obj).__name__} object does not have a '__cuda_stream__' attribute") from None
    if callable(info):
        info = info()
    try:
        length = len(info)
    except TypeError:
        length = None
    if length != 2:
        got = length if length is not None else type(info).__name__
        raise RuntimeError(f"obj.__cuda_stream__ must return a sequence with 2 elements, got {got}")
    if info[0] != 0:
        raise RuntimeError(f"protocol version of __cuda_stream__ must be 0, got {info[0]}")
    return non_negative_arg(info[1], "the __cuda_stream__ handle")


def _stream_handle(stream):
    """The handle behind a ``stream=`` argument: a Stream, an object with ``__cuda_stream__``
    or an int."""
    if isinstance(stream, Stream):
        return stream.handle
    if stream is None:
        raise ValueError("stream must be provided (a Stream, an object with __cuda_stream__ or an int handle)")
    if hasattr(stream, "__cuda_stream__"):
        return _handle_from_protocol(stream)
    return non_negative_arg(stream, "stream")


class Stream:
    """A HIP stream. Made by ``Device.create_stream()`` or borrowed with ``Stream.from_handle()``.

    ``close()`` destroys streams the shim created and forgets borrowed ones; either way the
    Stream is unusable afterwards. It is idempotent and also runs when the Stream is collected.
    """

    __slots__ = ("_handle", "_owner", "_builtin", "_device_id")

    def __new__(cls, *args, **kwargs):
        raise RuntimeError(
            "Stream objects cannot be instantiated directly. Please use Device APIs (create_stream) "
            "or other Stream APIs (from_handle)."
        )

    @classmethod
    def _make(cls, handle, owner, builtin, device_id):
        self = object.__new__(cls)
        self._handle = handle
        self._owner = owner
        self._builtin = builtin
        self._device_id = device_id
        return self

    @classmethod
    def _init(cls, obj=None, options=None, device_id=None):
        if obj is not None and options is not None:
            raise ValueError("obj and options cannot be both specified")
        if obj is not None:
            return cls._make(_handle_from_protocol(obj), obj, False, device_id)
        options = _options(StreamOptions, options)
        hip = _runtime.hip()
        flags = hip.hipStreamNonBlocking if options.nonblocking else hip.hipStreamDefault
        if device_id is None:
            device_id = hip.get_device()
        handle = hip.stream_create(flags, options.priority, device_id)
        return cls._make(handle, None, True, device_id)

    @classmethod
    def from_handle(cls, handle):
        """Wrap an existing stream handle without taking ownership."""
        return cls._make(non_negative_arg(handle, "handle"), None, False, None)

    def _live_handle(self):
        if self._owner is _CLOSED:
            raise RuntimeError("the stream is closed (HIP shim)")
        return self._handle

    @property
    def handle(self):
        """The hipStream_t as an int (0 is the default stream)."""
        return self._live_handle()

    def __cuda_stream__(self):
        return (0, self._live_handle())

    @property
    def device(self):
        """The stream's device (the current device for borrowed streams)."""
        from ._device import Device

        return Device(self._device_id)

    def sync(self):
        """Block until all work queued on the stream is done (hipStreamSynchronize)."""
        _runtime.hip().stream_synchronize(self._live_handle())

    def record(self, event=None, options=None):
        """Record ``event`` (a new Event made with ``options`` when None) on this stream and
        return it."""
        from ._event import Event

        handle = self._live_handle()
        if event is None:
            event = Event._init(options=options, device_id=self._device_id)
        elif not isinstance(event, Event):
            raise TypeError(f"event must be an Event or None, got {type(event).__name__}")
        _runtime.hip().event_record(event.handle, handle)
        return event

    def wait(self, event_or_stream):
        """Make later work on this stream wait for an Event, or for everything queued so far on
        another stream. Does not block the host."""
        from ._event import Event

        handle = self._live_handle()
        hip = _runtime.hip()
        if isinstance(event_or_stream, Event):
            hip.stream_wait_event(handle, event_or_stream.handle, 0)
            return
        if isinstance(event_or_stream, Stream):
            other = event_or_stream
        elif hasattr(event_or_stream, "__cuda_stream__"):
            other = Stream._init(obj=event_or_stream)
        else:
            raise TypeError(f"wait() takes an Event or a Stream, got {type(event_or_stream).__name__}")
        event = other.record()
        try:
            hip.stream_wait_event(handle, event.handle, 0)
        finally:
            event.close()  # legal once the wait is queued

    def close(self):
        """Destroy the stream if the shim created it; forget it otherwise. Idempotent; errors
        from hipStreamDestroy are ignored."""
        owner = getattr(self, "_owner", _CLOSED)
        if owner is _CLOSED or self is _DEFAULT:
            return
        handle, builtin = self._handle, self._builtin
        self._handle = 0
        self._owner = _CLOSED
        self._builtin = False
        if builtin and handle:
            try:
                _runtime.hip().stream_destroy(handle)
            except Exception:
                pass

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return self._handle == other._handle and (self._owner is _CLOSED) == (other._owner is _CLOSED)

    def __hash__(self):
        return hash(("nccl._hip_compat.Stream", self._handle))

    def __repr__(self):
        closed = " closed" if self._owner is _CLOSED else ""
        return f"<Stream handle={self._handle:#x}{closed} (HIP shim)>"


_DEFAULT = Stream._make(0, None, False, None)


def default_stream():
    """The default (null) stream, handle 0: one object for the whole process."""
    return _DEFAULT
