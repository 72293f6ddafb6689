"""Every shim class end to end over the stub HIP runtime (2 devices), in this process.

These use nccl._hip_compat.cuda_core_shim directly, without registering it as cuda.core.
"""

import gc
import pickle
import sys
import threading
import weakref

import numpy as np
import pytest

from nccl._hip_compat.cuda_core_shim import (
    Buffer,
    Device,
    Event,
    EventOptions,
    MemoryResource,
    Stream,
    StreamOptions,
    default_stream,
    get_num_devices,
)
from nccl._hip_compat.cuda_core_shim._memory import _HipMallocResource

ALLOC, STREAM, EVENT = 0, 1, 2


@pytest.fixture(autouse=True)
def _on_device_0(hip):
    hip.set_device(0)
    yield
    hip.set_device(0)


# ---------------------------------------------------------------- Device


def test_device_basics(hip):
    assert get_num_devices() == 2
    d0, d1 = Device(0), Device(1)
    assert d0.device_id == 0 and d1.device_id == 1
    assert Device(0) is d0 and Device(np.int64(1)) is d1
    assert Device() is d0  # the current device
    assert d0 != d1 and d0 == Device(0)
    assert hash(d1) == hash(("nccl._hip_compat.Device", 1))
    assert repr(d1) == "<Device id=1 (HIP shim)>"
    assert pickle.loads(pickle.dumps(d1)) is d1
    assert Device.__slots__ == ("_id",)


def test_device_cache_is_per_thread():
    seen = []
    t = threading.Thread(target=lambda: seen.append(Device(1)))
    t.start()
    t.join()
    assert seen[0] is not Device(1) and seen[0] == Device(1)


def test_device_set_current(hip):
    Device(1).set_current()
    assert hip.get_device() == 1
    assert Device() is Device(1)
    Device(0).set_current()
    assert hip.get_device() == 0


@pytest.mark.parametrize("bad", [2, 3, -1, 1 << 40])
def test_device_out_of_range(bad):
    with pytest.raises(ValueError) as info:
        Device(bad)
    assert str(info.value) == f"device_id {bad} is out of range; HIP reports 2 device(s)"


@pytest.mark.parametrize("bad", ["0", 1.0, True, object()])
def test_device_bad_type(bad):
    with pytest.raises(TypeError, match="device_id must be an int or None"):
        Device(bad)


def test_device_members(hip, stub):
    d1 = Device(1)
    assert d1.pci_bus_id == "0000:c2:00.0"
    assert d1.default_stream is default_stream()
    calls = stub.stubHipCalls(b"hipDeviceSynchronize")
    d1.sync()
    assert stub.stubHipCalls(b"hipDeviceSynchronize") == calls + 1
    assert hip.get_device() == 0
    b = d1.allocate(256)
    assert b.device_id == 1 and b.memory_resource is d1.memory_resource
    assert hip.pointer_get_attributes(b.handle)[1] == 1
    b.close()
    e = d1.create_event()
    assert e.device is d1
    e.close()


# ---------------------------------------------------------------- Stream


def test_stream_cannot_be_instantiated():
    with pytest.raises(RuntimeError) as info:
        Stream()
    assert str(info.value) == (
        "Stream objects cannot be instantiated directly. Please use Device APIs (create_stream) "
        "or other Stream APIs (from_handle)."
    )


def test_stream_from_handle():
    assert Stream.from_handle(0).handle == 0
    s = Stream.from_handle(0xDEADBEEF)
    assert s.__cuda_stream__() == (0, 0xDEADBEEF)
    assert Stream.from_handle(s.handle).handle == 0xDEADBEEF
    assert repr(s) == "<Stream handle=0xdeadbeef (HIP shim)>"
    assert s == Stream.from_handle(0xDEADBEEF) and hash(s) == hash(Stream.from_handle(0xDEADBEEF))
    with pytest.raises(ValueError, match="handle must be non-negative, got -1"):
        Stream.from_handle(-1)
    with pytest.raises(TypeError, match="handle must be an int, got str"):
        Stream.from_handle("0")


def test_create_stream_lifecycle(hip, stub):
    live = stub.stubHipLive(STREAM)
    s = Device(1).create_stream()
    assert hip.get_device() == 0  # create_stream does not switch devices
    assert s.device is Device(1) and s.handle != 0
    assert stub.stubHipLive(STREAM) == live + 1
    s.sync()
    s.close()
    assert stub.stubHipLive(STREAM) == live
    s.close()  # idempotent
    assert "closed" in repr(s)
    with pytest.raises(RuntimeError, match="the stream is closed"):
        s.handle
    with pytest.raises(RuntimeError, match="the stream is closed"):
        s.sync()
    with pytest.raises(RuntimeError, match="the stream is closed"):
        s.__cuda_stream__()


def test_stream_collected_is_destroyed(stub):
    live = stub.stubHipLive(STREAM)
    for _ in range(100):
        Device(0).create_stream()
    gc.collect()
    assert stub.stubHipLive(STREAM) == live


def test_stream_options(stub):
    flags = stub.stubHipCalls(b"hipStreamCreateWithFlags")
    priority = stub.stubHipCalls(b"hipStreamCreateWithPriority")
    Device(0).create_stream(options=StreamOptions(nonblocking=False)).close()
    assert stub.stubHipCalls(b"hipStreamCreateWithFlags") == flags + 1
    Device(0).create_stream(options=StreamOptions(priority=-1)).close()
    assert stub.stubHipCalls(b"hipStreamCreateWithPriority") == priority + 1
    assert StreamOptions() == StreamOptions(nonblocking=True, priority=None)
    Device(0).create_stream(options={"nonblocking": False}).close()
    assert stub.stubHipCalls(b"hipStreamCreateWithFlags") == flags + 2
    with pytest.raises(TypeError, match="options must be StreamOptions, a dict or None, got int"):
        Device(0).create_stream(options=1)
    e = Device(0).create_event({"enable_timing": True})
    assert e.is_timing_disabled is False
    e.close()
    with pytest.raises(TypeError, match="options must be EventOptions"):
        Device(0).create_event(options="fast")


def test_stream_bad_priority_is_a_hip_error(hip):
    with pytest.raises(hip.HipError, match=r"hipStreamCreateWithPriority failed: invalid argument \(1\)"):
        Device(0).create_stream(options=StreamOptions(priority=5))


class _Foreign:
    def __init__(self, info, callable_=True):
        self.info = info
        if callable_:
            self.__cuda_stream__ = lambda: self.info
        else:
            self.__cuda_stream__ = info


def test_stream_from_protocol(stub):
    live = stub.stubHipLive(STREAM)
    foreign = _Foreign((0, 0x1234))
    s = Device(0).create_stream(foreign)
    assert s.handle == 0x1234 and s._owner is foreign
    attr = Device(0).create_stream(_Foreign((0, 0x99), callable_=False))
    assert attr.handle == 0x99
    inner = Device(0).create_stream()
    assert Device(0).create_stream(inner).handle == inner.handle
    s.close()
    attr.close()
    inner.close()
    assert stub.stubHipLive(STREAM) == live  # borrowed streams were not destroyed


@pytest.mark.parametrize(
    "obj, exc, message",
    [
        (object(), TypeError, "object object does not have a '__cuda_stream__' attribute"),
        (_Foreign((0, 1, 2)), RuntimeError, "obj.__cuda_stream__ must return a sequence with 2 elements, got 3"),
        (_Foreign(5), RuntimeError, "obj.__cuda_stream__ must return a sequence with 2 elements, got int"),
        (_Foreign((1, 7)), RuntimeError, "protocol version of __cuda_stream__ must be 0, got 1"),
        (_Foreign((0, -7)), ValueError, "must be non-negative"),
    ],
)
def test_stream_bad_protocol(obj, exc, message):
    with pytest.raises(exc) as info:
        Device(0).create_stream(obj)
    assert message in str(info.value)


def test_stream_obj_and_options():
    with pytest.raises(ValueError, match="^obj and options cannot be both specified$"):
        Device(0).create_stream(_Foreign((0, 1)), StreamOptions())


def test_default_stream():
    s = default_stream()
    assert s is default_stream() and s.handle == 0 and s.__cuda_stream__() == (0, 0)
    s.close()  # never closes the process-wide default stream
    assert s.handle == 0
    s.sync()


def test_stream_record_and_wait(stub):
    s, t = Device(0).create_stream(), Device(1).create_stream()
    e = s.record()
    assert isinstance(e, Event) and e.is_done
    waits = stub.stubHipCalls(b"hipStreamWaitEvent")
    t.wait(e)
    t.wait(s)  # through a temporary event
    t.wait(_Foreign((0, 0)))
    assert stub.stubHipCalls(b"hipStreamWaitEvent") == waits + 3
    with pytest.raises(TypeError, match="wait\\(\\) takes an Event or a Stream, got int"):
        t.wait(5)
    with pytest.raises(TypeError, match="event must be an Event or None"):
        s.record(event=5)
    again = s.record(e)
    assert again is e
    e.close()
    s.close()
    t.close()


# ---------------------------------------------------------------- Event


def test_event_cannot_be_instantiated():
    with pytest.raises(RuntimeError, match="^Event objects cannot be instantiated directly"):
        Event()


def test_event_lifecycle(hip, stub):
    live = stub.stubHipLive(EVENT)
    s = Device(0).create_stream()
    timing = EventOptions(enable_timing=True)
    start = s.record(options=timing)
    end = s.record(options=timing)
    assert stub.stubHipLive(EVENT) == live + 2
    end.sync()
    assert end.is_done is True and end.is_timing_disabled is False
    elapsed = end - start
    assert isinstance(elapsed, float) and elapsed >= 0.0
    stub.stubHipSetEventsPending(1)
    try:
        assert end.is_done is False
    finally:
        stub.stubHipSetEventsPending(0)
    plain = s.record()
    assert plain.is_timing_disabled is True
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        plain - start
    assert repr(plain).startswith("<Event handle=0x") and repr(plain).endswith(" (HIP shim)>")
    for e in (start, end, plain):
        e.close()
        e.close()
    assert stub.stubHipLive(EVENT) == live
    with pytest.raises(RuntimeError, match="the event is closed"):
        start.sync()
    s.close()


def test_event_from_handle(hip, stub):
    owned = Device(0).create_event()
    borrowed = Event.from_handle(owned.handle)
    assert borrowed == owned and borrowed.is_timing_disabled is None
    live = stub.stubHipLive(EVENT)
    borrowed.close()
    assert stub.stubHipLive(EVENT) == live  # borrowed: not destroyed
    owned.close()
    assert stub.stubHipLive(EVENT) == live - 1
    with pytest.raises(ValueError, match="positive"):
        Event.from_handle(0)


def test_event_handle_is_0_once_closed(hip, stub):
    """As in the RCCL fork's shim: a closed Event the shim created reads handle 0 (no
    RuntimeError); using it for work still raises."""
    s = Device(0).create_stream()
    for event in (Device(0).create_event(), s.record()):
        assert event.handle > 0
        event.close()
        assert event.handle == 0
        event.close()
        assert event.handle == 0
        with pytest.raises(RuntimeError, match="the event is closed"):
            event.sync()
    s.close()


def test_closing_or_dropping_a_borrowed_event_leaves_the_handle_alive(hip, stub):
    owned = Device(0).create_event()
    h = owned.handle
    destroyed = stub.stubHipCalls(b"hipEventDestroy")
    borrowed = Event.from_handle(h)
    borrowed.close()
    assert borrowed.handle == h and owned.handle == h
    again = Event.from_handle(h)
    del again
    gc.collect()
    assert stub.stubHipCalls(b"hipEventDestroy") == destroyed  # neither close nor collection destroyed h
    owned.sync()  # h still a live event
    assert owned.is_done is True
    owned.close()
    assert stub.stubHipCalls(b"hipEventDestroy") == destroyed + 1 and owned.handle == 0


def test_from_handle_round_trip_is_not_owned(hip, stub):
    """As the RCCL fork's shim test of this name expects: an Event borrowed from a handle reports
    that handle, before and after close(), since closing it destroyed nothing; it stays usable,
    and only the owner's close destroys the event."""
    owned = Device(0).create_event()
    h = owned.handle
    destroyed = stub.stubHipCalls(b"hipEventDestroy")
    live = stub.stubHipLive(EVENT)
    borrowed = Event.from_handle(h)
    assert borrowed.handle == h and Event.from_handle(borrowed.handle) == owned
    borrowed.close()
    borrowed.close()
    assert borrowed.handle == h and borrowed == owned
    assert stub.stubHipCalls(b"hipEventDestroy") == destroyed and stub.stubHipLive(EVENT) == live
    borrowed.sync()
    assert borrowed.is_done is True
    owned.close()
    assert owned.handle == 0 and borrowed.handle == h  # the borrower cannot know; as with any foreign handle
    assert stub.stubHipCalls(b"hipEventDestroy") == destroyed + 1 and stub.stubHipLive(EVENT) == live - 1


def test_event_elapsed_before_record_is_a_hip_error(hip):
    a = Device(0).create_event(EventOptions(enable_timing=True))
    b = Device(0).create_event(EventOptions(enable_timing=True))
    with pytest.raises(hip.HipError, match="hipEventElapsedTime failed: device not ready"):
        b - a
    a.close()
    b.close()


# ---------------------------------------------------------------- Buffer and MemoryResource


def test_buffer_cannot_be_instantiated():
    with pytest.raises(RuntimeError) as info:
        Buffer()
    assert str(info.value) == "Buffer objects cannot be instantiated directly. Please use MemoryResource APIs."


def test_buffer_from_handle_borrows(stub):
    frees = stub.stubHipCalls(b"hipFree")
    b = Buffer.from_handle(ptr=0xBEEF, size=1024, mr=None)
    assert (b.handle, b.size, b.memory_resource) == (0xBEEF, 1024, None)
    assert (b.is_device_accessible, b.is_host_accessible, b.device_id) == (True, False, 0)
    assert b.__dlpack_device__() == (10, 0)
    b.close()
    b.close()
    assert stub.stubHipCalls(b"hipFree") == frees


def test_buffer_allocate_and_close(hip, stub):
    live = stub.stubHipLive(ALLOC)
    b = Buffer.allocate(1024)
    assert b.handle != 0 and b.size == 1024
    assert isinstance(b.memory_resource, _HipMallocResource) and b.memory_resource.device_id == 0
    assert (b.is_device_accessible, b.is_host_accessible) == (True, False)
    assert stub.stubHipLive(ALLOC) == live + 1
    assert repr(b) == f"<Buffer ptr={b.handle:#x} size=1024 (HIP shim)>"
    b.close()
    assert stub.stubHipLive(ALLOC) == live
    b.close()
    assert (b.handle, b.size, repr(b)) == (0, 0, "<Buffer closed (HIP shim)>")
    assert Buffer.__slots__ == ("__weakref__", "_mnff")


@pytest.mark.parametrize("size, exc, message", [
    (0, ValueError, "size must be positive, got 0"),
    (-4, ValueError, "size must be positive, got -4"),
    (1.5, TypeError, "size must be an int, got float"),
    (True, TypeError, "size must be an int, got bool"),
])
def test_bad_sizes(size, exc, message):
    for call in (Buffer.allocate, Device(0).allocate, _HipMallocResource(0).allocate,
                 lambda n: Buffer.from_handle(0x1000, n)):
        with pytest.raises(exc) as info:
            call(size)
        assert str(info.value) == message


def test_out_of_memory_is_a_hip_error(hip):
    with pytest.raises(hip.HipError, match=r"^hipMalloc failed: out of memory \(2\)$"):
        Buffer.allocate(1 << 40)


def test_memory_resource_is_abstract():
    assert MemoryResource.__slots__ == ("_handle",)
    with pytest.raises(TypeError):
        MemoryResource()

    class Partial(MemoryResource):
        def __init__(self):
            pass

    with pytest.raises(TypeError):
        Partial()


def test_hip_malloc_resource(stub):
    mr = _HipMallocResource(0)
    assert isinstance(mr, MemoryResource)
    assert (mr.is_device_accessible, mr.is_host_accessible, mr.device_id) == (True, False, 0)
    assert _HipMallocResource().device_id == 0
    frees = stub.stubHipCalls(b"hipFree")
    mr.deallocate(0, 0)
    assert stub.stubHipCalls(b"hipFree") == frees
    with pytest.raises(ValueError, match="out of range"):
        _HipMallocResource(2)


def test_no_leak_after_10k_allocate_close_cycles(stub):
    mr = Device(1).memory_resource
    live = stub.stubHipLive(ALLOC)
    refs = (sys.getrefcount(mr), sys.getrefcount(Device(1)))
    for _ in range(10_000):
        b = mr.allocate(64)
        b.close()
    del b
    for _ in range(10_000):
        Device(1).allocate(64)  # dropped: the finalizer frees it
    gc.collect()
    assert stub.stubHipLive(ALLOC) == live
    assert (sys.getrefcount(mr), sys.getrefcount(Device(1))) == refs


class _HostResource(MemoryResource):
    """Host-visible memory: stub allocations are host memory, so numpy can read them."""

    __slots__ = ("device", "host")

    def __init__(self, device=False, host=True):
        self.device, self.host = device, host

    def allocate(self, size, stream=None):
        from nccl._hip_compat import _hip

        return Buffer.from_handle(_hip.malloc(size), size, self)

    def deallocate(self, ptr, size, stream=None):
        from nccl._hip_compat import _hip

        _hip.free(ptr)

    @property
    def is_device_accessible(self):
        return self.device

    @property
    def is_host_accessible(self):
        return self.host

    @property
    def device_id(self):
        return 0


def test_dlpack_device_by_accessibility():
    assert Device(1).allocate(8).__dlpack_device__() == (10, 1)
    assert _HostResource(device=True, host=True).allocate(8).__dlpack_device__() == (11, 0)
    assert _HostResource().allocate(8).__dlpack_device__() == (1, 0)
    nowhere = _HostResource(device=False, host=False).allocate(8)
    with pytest.raises(BufferError, match="neither device- nor host-accessible"):
        nowhere.__dlpack_device__()
    with pytest.raises(BufferError, match="neither device- nor host-accessible"):
        nowhere.__dlpack__()


def test_copy_fill_and_numpy_round_trip(stub):
    live = stub.stubHipLive(ALLOC)
    s = Device(0).create_stream()
    device = Device(0).allocate(32)
    host = _HostResource().allocate(32)
    device.fill(7, stream=s)
    device.copy_to(host, stream=s)
    s.sync()
    array = np.from_dlpack(host)
    assert array.dtype == np.int8 and array.shape == (32,) and (array == 7).all()
    array[:] = np.arange(32, dtype=np.int8)  # the same memory
    device.copy_from(host, stream=s)
    copy = device.copy_to(stream=s)  # a new buffer from the same resource
    back = _HostResource().allocate(32)
    back.copy_from(copy, stream=s.handle)
    assert (np.from_dlpack(back) == np.arange(32)).all()
    with pytest.raises(ValueError, match="buffer sizes mismatch"):
        device.copy_to(_HostResource().allocate(16), stream=s)
    with pytest.raises(ValueError, match=r"value must be a byte \(0-255\), got 256"):
        device.fill(256, stream=s)
    with pytest.raises(ValueError, match="stream must be provided"):
        device.fill(1, stream=None)
    for b in (device, host, copy, back):
        b.close()
    with pytest.raises(RuntimeError, match="the buffer is closed"):
        device.fill(0, stream=s)
    s.close()
    del array
    gc.collect()
    assert stub.stubHipLive(ALLOC) == live


def test_dlpack_requests_we_cannot_honour():
    b = Device(0).allocate(16)
    with pytest.raises(BufferError, match="^copy=True is not supported$"):
        b.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="^dl_device override is not supported$"):
        b.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="max_version must be a"):
        b.__dlpack__(max_version="1.0")
    assert b.__dlpack__(dl_device=(10, 0), copy=False) is not None
    b.close()
    with pytest.raises(BufferError, match="the buffer is closed"):
        b.__dlpack__()
    with pytest.raises(BufferError, match="the buffer is closed"):
        b.__dlpack_device__()


def test_dlpack_capsules_and_parse_capsule():
    from nccl._hip_compat.cuda_core_shim._dlpack import DLDeviceType, parse_capsule

    b = Device(1).allocate(1024)
    plain = b.__dlpack__()
    versioned = b.__dlpack__(max_version=(1, 0))
    assert '"dltensor"' in repr(plain) and '"dltensor_versioned"' in repr(versioned)
    assert '"dltensor"' in repr(b.__dlpack__(max_version=(0, 8)))
    tensor, readonly, used = parse_capsule(versioned)
    assert tensor.device.device_type == 10 == DLDeviceType.kROCM and tensor.device.device_id == 1
    assert (tensor.ndim, tensor.shape[0], bool(tensor.strides), tensor.byte_offset) == (1, 1024, False, 0)
    assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (0, 8, 1)
    assert tensor.data == b.handle
    assert (readonly, used) == (False, "used_dltensor_versioned")
    assert parse_capsule(plain)[2] == "used_dltensor"
    with pytest.raises(BufferError, match="expected a DLPack capsule"):
        parse_capsule(b"not a capsule")


def test_dlpack_capsule_keeps_the_buffer_alive(stub):
    live = stub.stubHipLive(ALLOC)
    for kwargs in ({}, {"max_version": (1, 0)}):
        b = Device(0).allocate(64)
        ref = weakref.ref(b)
        capsule = b.__dlpack__(**kwargs)
        del b
        gc.collect()
        assert ref() is not None and stub.stubHipLive(ALLOC) == live + 1
        del capsule  # unconsumed: the capsule's destructor runs the deleter
        gc.collect()
        assert ref() is None and stub.stubHipLive(ALLOC) == live


def test_dlpack_lifecycle_over_1000_iterations(stub):
    from nccl._hip_compat.cuda_core_shim._memoryview import StridedMemoryView

    live = stub.stubHipLive(ALLOC)
    b = Device(0).allocate(64)
    refs = sys.getrefcount(b)
    for i in range(1000):
        capsule = b.__dlpack__(max_version=(1, 0) if i % 2 else None)
        assert sys.getrefcount(b) == refs + 1
        del capsule
        view = StridedMemoryView(b, stream_ptr=-1)
        assert sys.getrefcount(b) == refs + 2  # the consumed tensor's context, and exporting_obj
        del view
    gc.collect()
    assert sys.getrefcount(b) == refs
    b.close()
    assert stub.stubHipLive(ALLOC) == live


def test_numpy_consumes_host_buffer_and_releases_it(stub):
    live = stub.stubHipLive(ALLOC)
    for _ in range(1000):
        b = _HostResource().allocate(16)
        ref = weakref.ref(b)
        array = np.from_dlpack(b)
        del b
        assert ref() is not None
        del array  # numpy's finalizer calls our deleter
        assert ref() is None
    gc.collect()
    assert stub.stubHipLive(ALLOC) == live


# ---------------------------------------------------------------- bookkeeping


def test_nothing_left_behind(stub):
    gc.collect()
    assert stub.stubHipLive(STREAM) == 0
    assert stub.stubHipLive(EVENT) == 0
