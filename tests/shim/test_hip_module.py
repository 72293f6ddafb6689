"""nccl._hip_compat._hip against the stub HIP runtime (2 emulated devices), in this process."""

import ctypes
import inspect
import sys
import threading

import pytest

ALLOC, STREAM, EVENT = 0, 1, 2


def test_loaded_from_the_override(hip, stub_path):
    assert hip.is_loaded()
    assert hip.library_path() == str(stub_path)
    assert hip.load() == str(stub_path)
    assert hip.load_attempts() == ((f"NCCL4PY_HIP_LIBRARY={stub_path}", "loaded"),)
    assert hip.runtime_version() == 60200000


def test_function_pointers_cover_the_table(hip):
    names = [name for name, _ in hip.symbols()]
    pointers = hip.function_pointers()
    assert list(pointers) == names
    assert all(address != 0 for address in pointers.values())
    required = {name for name, required in hip.symbols() if required}
    assert required == {"hipGetDeviceCount", "hipGetDevice", "hipSetDevice", "hipGetErrorString"}


def test_devices(hip, stub):
    assert hip.get_device_count() == 2
    before = hip.get_device()
    try:
        hip.set_device(1)
        assert hip.get_device() == 1
    finally:
        hip.set_device(before)
    assert hip.device_get_pci_bus_id(0) == "0000:c1:00.0"
    assert hip.device_get_pci_bus_id(1) == "0000:c2:00.0"
    hip.device_synchronize()
    hip.device_synchronize(1)
    assert hip.get_device() == before


def test_failed_call_raises_hip_error(hip):
    with pytest.raises(hip.HipError) as info:
        hip.set_device(7)
    error = info.value
    assert isinstance(error, RuntimeError)
    assert str(error) == "hipSetDevice failed: invalid device ordinal (101)"
    assert (error.code, error.name, error.function) == (101, "hipErrorInvalidDevice", "hipSetDevice")
    with pytest.raises(hip.HipError, match=r"^hipMalloc failed: out of memory \(2\)$") as info:
        hip.malloc(1 << 40)
    assert info.value.name == "hipErrorOutOfMemory"


def test_hip_error_pickles(hip):
    import pickle

    with pytest.raises(hip.HipError) as info:
        hip.set_device(7)
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is hip.HipError
    assert (copy.code, copy.name, copy.function, str(copy)) == (101, "hipErrorInvalidDevice", "hipSetDevice",
                                                                str(info.value))


def test_error_strings(hip):
    assert hip.get_error_string(2) == "out of memory"
    assert hip.get_error_name(600) == "hipErrorNotReady"


def test_malloc_free_memset_memcpy(hip, stub):
    live = stub.stubHipLive(ALLOC)
    a = hip.malloc(64)
    b = hip.malloc(64, 1)
    assert a and b and a % 256 == 0
    assert stub.stubHipLive(ALLOC) == live + 2
    assert hip.get_device() == 0  # malloc on device 1 restored the current device
    hip.memset_async(a, 0x5A, 64, 0)
    hip.memcpy_async(b, a, 64, hip.hipMemcpyDeviceToDevice, 0)
    assert ctypes.string_at(b, 64) == b"\x5a" * 64
    hip.free(a)
    hip.free(b)
    assert stub.stubHipLive(ALLOC) == live
    with pytest.raises(hip.HipError, match="hipFree failed: invalid argument"):
        hip.free(a)  # already freed: the stub knows
    hip.free(0)


def test_pointer_attributes(hip):
    ptr = hip.malloc(128, 1)
    try:
        kind, device, device_ptr, host_ptr, managed = hip.pointer_get_attributes(ptr + 16)
        assert (kind, device, device_ptr, host_ptr, managed) == ("device", 1, ptr + 16, 0, False)
    finally:
        hip.free(ptr)
    host = ctypes.create_string_buffer(16)
    assert hip.pointer_get_attributes(ctypes.addressof(host))[:2] == ("unregistered", -1)


def test_streams_and_events(hip, stub):
    streams, events = stub.stubHipLive(STREAM), stub.stubHipLive(EVENT)
    s = hip.stream_create(hip.hipStreamNonBlocking, None, 1)
    s2 = hip.stream_create(0, -1)
    e1 = hip.event_create(hip.hipEventDefault)
    e2 = hip.event_create(hip.hipEventDisableTiming, 1)
    assert stub.stubHipLive(STREAM) == streams + 2 and stub.stubHipLive(EVENT) == events + 2
    assert stub.stubHipCalls(b"hipStreamCreateWithPriority") >= 1
    hip.event_record(e1, s)
    hip.event_record(e2, s)
    hip.stream_wait_event(s2, e1)
    hip.stream_wait_event(s2, e1, 0)
    hip.event_synchronize(e1)
    hip.stream_synchronize(s)
    assert hip.event_query(e1) is True
    stub.stubHipSetEventsPending(1)
    try:
        assert hip.event_query(e1) is False
    finally:
        stub.stubHipSetEventsPending(0)
    e3 = hip.event_create()
    hip.event_record(e3, s)
    assert hip.event_elapsed_time(e1, e3) >= 0.0
    with pytest.raises(hip.HipError, match="hipEventElapsedTime failed"):
        hip.event_elapsed_time(e1, e2)  # e2 has timing disabled
    for e in (e1, e2, e3):
        hip.event_destroy(e)
    hip.stream_destroy(s)
    hip.stream_destroy(s2)
    assert stub.stubHipLive(STREAM) == streams and stub.stubHipLive(EVENT) == events
    with pytest.raises(hip.HipError, match="hipStreamDestroy failed: invalid resource handle"):
        hip.stream_destroy(s)


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda h: h.malloc(0), ValueError, "size must be positive, got 0"),
        (lambda h: h.malloc(-1), ValueError, "a size must be non-negative, got -1"),
        (lambda h: h.malloc(True), TypeError, "not bool"),
        (lambda h: h.malloc("8"), TypeError, "'str' object cannot be interpreted as an integer"),
        (lambda h: h.free(-5), ValueError, "a pointer or handle must be non-negative, got -5"),
        (lambda h: h.free(1 << 70), OverflowError, "too large"),
        (lambda h: h.free(), TypeError, r"free\(\) takes exactly 1 positional argument \(0 given\)"),
        (lambda h: h.set_device(1 << 40), OverflowError, "C int"),
        (lambda h: h.memset_async(8, 256, 1, 0), ValueError, r"value must be a byte \(0-255\), got 256"),
        (lambda h: h.stream_create(0, None, 0, 0), TypeError, "from 0 to 3 positional arguments"),
        (lambda h: h.dlpack_release(0, False), ValueError, "address must not be 0"),
    ],
)
def test_bad_arguments(hip, call, exc, message):
    with pytest.raises(exc, match=message):
        call(hip)


def test_every_function_has_a_signature(hip):
    for name in dir(hip):
        obj = getattr(hip, name)
        if callable(obj) and not isinstance(obj, type):
            assert obj.__doc__, name
            inspect.signature(obj)  # "name(...)\n--\n\n" docstrings


def test_refcounts_unchanged_over_loops(hip):
    size = 4096 + 17  # not a cached small int
    device = 1
    flags = 1
    before = (sys.getrefcount(size), sys.getrefcount(hip), sys.getrefcount(hip.HipError))
    for _ in range(500):
        p = hip.malloc(size, device)
        hip.memset_async(p, 3, size, 0)
        hip.pointer_get_attributes(p)
        hip.free(p)
        s = hip.stream_create(flags, None, device)
        hip.stream_destroy(s)
        try:
            hip.set_device(99)
        except hip.HipError:
            pass
    assert (sys.getrefcount(size), sys.getrefcount(hip), sys.getrefcount(hip.HipError)) == before


def test_gil_released_while_hip_blocks(hip, stub):
    """The stub blocks hipStreamSynchronize until released. Releasing it needs this thread to
    run Python, which it could not if the worker held the GIL; then the stub's deadline would
    fail the worker's call instead."""
    s = hip.stream_create()
    errors = []

    def worker():
        try:
            hip.stream_synchronize(s)
        except Exception as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    stub.stubHipBlock(b"hipStreamSynchronize")
    t = threading.Thread(target=worker)
    t.start()
    try:
        assert stub.stubHipWaitEntered(10000) == 1
        busy = sum(range(10000))  # Python runs here while the worker sits in HIP
        assert busy == 49995000
    finally:
        stub.stubHipRelease()
        t.join(30)
    hip.stream_destroy(s)
    assert not t.is_alive()
    assert errors == []


def test_reimport_makes_fresh_module_state(run_python):
    run_python("""
        import sys
        from nccl._hip_compat import _hip as first
        del sys.modules["nccl._hip_compat._hip"]
        import importlib
        second = importlib.import_module("nccl._hip_compat._hip")
        assert second is not first and second.HipError is not first.HipError
        assert second.get_device_count() == first.get_device_count() == 2
        try:
            second.set_device(9)
        except second.HipError:
            pass
        try:
            first.set_device(9)
        except first.HipError:
            pass
    """)
