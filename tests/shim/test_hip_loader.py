"""Finding and opening the HIP runtime, and what happens when it is missing or incomplete.
Each test runs in a fresh interpreter: the loaded runtime is process-wide."""

import ctypes.util
import shutil

import pytest


def test_missing_runtime_never_crashes(run_python, tmp_path):
    missing = tmp_path / "nowhere" / "libamdhip64.so"
    run_python("""
        from nccl._hip_compat import _hip
        from nccl._hip_compat.cuda_core_shim import (Buffer, Device, Stream, StridedMemoryView,
                                                   default_stream, get_num_devices)
        from nccl._hip_compat.cuda_core_shim._memory import _HipMallocResource
        from nccl._hip_compat.cuda_core_shim import typing
        calls = [get_num_devices, Device, lambda: Device(0), lambda: Buffer.allocate(8),
                 lambda: _HipMallocResource(0), lambda: Device.__new__(Device, 0), _hip.load,
                 _hip.runtime_version, _hip.function_pointers, lambda: _hip.malloc(8)]
        for call in calls:
            try:
                call()
            except RuntimeError as e:
                assert type(e).__name__ == "NotSupportedError", type(e)
                text = str(e)
                assert text.startswith("Could not load the HIP runtime (libamdhip64)"), text
                assert "NCCL4PY_HIP_LIBRARY=%(p)s: not found: %(p)s: cannot open shared object file" in text, text
                assert text.endswith("Set NCCL4PY_HIP_LIBRARY to the path of libamdhip64.so."), text
                assert len(e.attempts) == 1 and e.attempts[0][0] == "NCCL4PY_HIP_LIBRARY=%(p)s"
            else:
                raise AssertionError(f"{call} did not raise")
        # what needs no runtime still works
        s = Stream.from_handle(0x10); s.close()
        assert default_stream().handle == 0
        b = Buffer.from_handle(0x1000, 64); b.close()
        import numpy as np
        assert StridedMemoryView(np.zeros(2), stream_ptr=-1).device_id == -1
        assert not _hip.is_loaded() and _hip.library_path() is None
        from nccl._hip_compat import cuda_core_shim
        try:
            Device(0)
        except cuda_core_shim.NotSupportedError:
            pass
        assert issubclass(cuda_core_shim.HipError, RuntimeError)
        assert len(_hip.load_attempts()) == 1
    """ % {"p": str(missing)}, env={"NCCL4PY_HIP_LIBRARY": str(missing)})


def test_not_supported_error_is_the_bindings_class_when_available(run_python, tmp_path):
    """With a nccl._errors module present, its NotSupportedError is raised (here a stand-in)."""
    site = tmp_path / "site"
    (site / "nccl").mkdir(parents=True)
    (site / "nccl" / "_errors.py").write_text(
        "class NotSupportedError(RuntimeError):\n    pass\n"
        "class FunctionNotFoundError(NotImplementedError):\n    pass\n")
    run_python("""
        import sys
        import nccl
        nccl.__path__.append(%r)
        import nccl._errors
        from nccl._hip_compat import _hip
        try:
            _hip.load()
        except nccl._errors.NotSupportedError as e:
            assert e.attempts
        else:
            raise AssertionError("no error")
    """ % str(site / "nccl"), env={"NCCL4PY_HIP_LIBRARY": str(tmp_path / "missing.so")})


def test_found_but_not_loadable(run_python, tmp_path):
    bogus = tmp_path / "libamdhip64.so"
    bogus.write_text("not an ELF file\n")
    run_python("""
        from nccl._hip_compat import _hip
        try:
            _hip.load()
        except RuntimeError as e:
            assert "NCCL4PY_HIP_LIBRARY=%(p)s: found, failed to load: %(p)s: " in str(e), str(e)
        else:
            raise AssertionError("loaded a text file")
    """ % {"p": str(bogus)}, env={"NCCL4PY_HIP_LIBRARY": str(bogus)})


def test_not_a_hip_runtime(run_python, stub_variant):
    lib = stub_variant("stub_hip_norequired")
    run_python("""
        from nccl._hip_compat import _hip
        try:
            _hip.get_device_count()
        except RuntimeError as e:
            assert "loaded, but not a HIP runtime: it does not export hipGetDeviceCount" in str(e), str(e)
        else:
            raise AssertionError("accepted")
        assert not _hip.is_loaded()
    """, env={"NCCL4PY_HIP_LIBRARY": str(lib)})


def test_missing_optional_function_names_library_and_function(run_python, stub_variant):
    lib = stub_variant("stub_hip_nooptional")
    run_python("""
        from nccl._hip_compat import _hip
        from nccl._hip_compat.cuda_core_shim import Device, StreamOptions
        d = Device(0)
        s = d.create_stream()          # hipStreamCreateWithFlags is there
        e = s.record()
        pointers = _hip.function_pointers()
        for name in ("hipStreamWaitEvent", "hipEventQuery", "hipStreamCreateWithPriority",
                     "hipMemsetAsync", "hipDeviceGetPCIBusId"):
            assert pointers[name] == 0, name
        cases = [(lambda: s.wait(e), "hipStreamWaitEvent"), (lambda: e.is_done, "hipEventQuery"),
                 (lambda: d.create_stream(options=StreamOptions(priority=0)), "hipStreamCreateWithPriority"),
                 (lambda: d.allocate(8).fill(0, stream=s), "hipMemsetAsync"),
                 (lambda: d.pci_bus_id, "hipDeviceGetPCIBusId")]
        for call, name in cases:
            try:
                call()
            except NotImplementedError as err:
                assert type(err).__name__ == "FunctionNotFoundError"
                assert str(err) == f"function {name} is not found in the HIP runtime %s", str(err)
                assert err.function == name
            else:
                raise AssertionError(name)
        e.close(); s.close()
    """ % str(lib), env={"NCCL4PY_HIP_LIBRARY": str(lib)})


def test_failed_load_is_not_cached(run_python, tmp_path, stub_path):
    run_python("""
        import os
        from nccl._hip_compat import _hip
        try:
            _hip.load()
        except RuntimeError:
            pass
        else:
            raise AssertionError("loaded")
        os.environ["NCCL4PY_HIP_LIBRARY"] = %r
        assert _hip.load() == %r and _hip.get_device_count() == 2
        assert _hip.load_attempts() == (("NCCL4PY_HIP_LIBRARY=%s", "loaded"),)
    """ % (str(stub_path), str(stub_path), str(stub_path)), env={"NCCL4PY_HIP_LIBRARY": str(tmp_path / "x.so")})


def test_override_is_stripped_and_blank_means_unset(run_python, stub_path):
    run_python("""
        from nccl._hip_compat import _hip
        assert _hip.load() == %r
    """ % str(stub_path), env={"NCCL4PY_HIP_LIBRARY": f"  {stub_path}\n"})


def test_already_mapped_runtime_is_reused(run_python, stub_path, tmp_path):
    """A libamdhip64 another library brought in (librccl, torch) is used, not a second copy."""
    copy = tmp_path / "lib" / "libamdhip64.so.6"
    copy.parent.mkdir()
    shutil.copy(stub_path, copy)
    run_python("""
        import ctypes
        ctypes.CDLL(%r, mode=ctypes.RTLD_LOCAL)
        from nccl._hip_compat import _hip
        assert _hip.load() == %r, _hip.load()
        attempts = _hip.load_attempts()
        assert attempts == (("%s (already loaded in the process)", "loaded"),), attempts
        assert _hip.get_device_count() == 2
    """ % (str(copy), str(copy), str(copy)), unset=("NCCL4PY_HIP_LIBRARY",))


def test_search_order_without_override(run_python, stub_path, tmp_path):
    """Bare SONAMEs first, then $ROCM_PATH/lib, then $HIP_PATH/lib, each .so.7, .so.6, .so.5, .so."""
    rocm, hip_path = tmp_path / "rocm", tmp_path / "hip"
    (rocm / "lib").mkdir(parents=True)
    (hip_path / "lib").mkdir(parents=True)
    shutil.copy(stub_path, hip_path / "lib" / "libamdhip64.so.5")
    result = run_python("""
        from nccl._hip_compat import _hip
        print(_hip.load())
        for candidate, outcome in _hip.load_attempts():
            print(candidate, "->", outcome)
    """, env={"ROCM_PATH": str(rocm), "HIP_PATH": str(hip_path)}, unset=("NCCL4PY_HIP_LIBRARY",))
    lines = result.stdout.splitlines()
    attempts = [line.split(" -> ")[0] for line in lines[1:]]
    names = ["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"]
    if ctypes.util.find_library("amdhip64"):
        # The system runtime (Debian's libamdhip64-5) wins at the bare SONAMEs.
        assert attempts == names[:3] and lines[-1].endswith("-> loaded")
        assert "libamdhip64.so.5" in lines[0]
    else:
        # found at $HIP_PATH/lib/libamdhip64.so.5, before the bare .so there
        expected = names + [f"{rocm}/lib/{n}" for n in names] + [f"{hip_path}/lib/{n}" for n in names[:3]]
        assert attempts == expected, lines
        assert lines[0] == f"{hip_path}/lib/libamdhip64.so.5"
        assert all("-> not found: " in line for line in lines[1:-1]), lines


def test_rocm7_soname_is_found(run_python, stub_path, tmp_path):
    """ROCm 7 installs only libamdhip64.so.7: found through the dynamic loader's search, first."""
    lib = tmp_path / "rocm7"
    lib.mkdir()
    shutil.copy(stub_path, lib / "libamdhip64.so.7")
    result = run_python("""
        from nccl._hip_compat import _hip
        from nccl._hip_compat.cuda_core_shim import get_num_devices
        print(get_num_devices())
        print(_hip.load())
        print(_hip.load_attempts())
    """, env={"LD_LIBRARY_PATH": str(lib), "ROCM_PATH": str(tmp_path / "none")},
        unset=("NCCL4PY_HIP_LIBRARY", "HIP_PATH"))
    ndev, path, attempts = result.stdout.splitlines()
    assert ndev == "2"
    assert path == str(lib / "libamdhip64.so.7")
    assert attempts == "(('libamdhip64.so.7', 'loaded'),)"


def test_concurrent_first_use_waits_without_the_gil(run_python, stub_path):
    """While one thread is inside the load (the stub blocks hipRuntimeGetVersion, called under the
    loader's mutex), another thread waits for the mutex; the main thread must still run Python
    to release them, so both waits happen with the GIL released. Discovery runs once."""
    run_python("""
        import ctypes, threading
        stub = ctypes.CDLL(%r)
        stub.stubHipBlock.argtypes = [ctypes.c_char_p]
        stub.stubHipCalls.argtypes = [ctypes.c_char_p]
        stub.stubHipCalls.restype = ctypes.c_long
        from nccl._hip_compat import _hip
        stub.stubHipBlock(b"hipRuntimeGetVersion")
        results = []
        t1 = threading.Thread(target=lambda: results.append(_hip.load()))
        t1.start()
        assert stub.stubHipWaitEntered(10000) == 1
        t2 = threading.Thread(target=lambda: results.append(_hip.get_device_count()))
        t2.start()
        total = sum(range(100000))  # Python runs while both threads wait in C
        stub.stubHipRelease()
        t1.join(30); t2.join(30)
        assert sorted(map(str, results)) == sorted([%r, "2"]), results
        assert stub.stubHipCalls(b"hipRuntimeGetVersion") == 1
        assert len(_hip.load_attempts()) == 1
    """ % (str(stub_path), str(stub_path)))


def test_rocm5_pointer_attributes(run_python):
    run_python("""
        import ctypes
        from nccl._hip_compat import _hip
        assert _hip.runtime_version() == 50200000
        p = _hip.malloc(64, 1)
        assert _hip.pointer_get_attributes(p)[:2] == ("device", 1)
        _hip.free(p)
        host = ctypes.create_string_buffer(8)
        try:
            _hip.pointer_get_attributes(ctypes.addressof(host))
        except _hip.HipError as e:
            assert e.name == "hipErrorInvalidValue"
        else:
            raise AssertionError("ROCm 5 accepts unregistered memory")
    """, env={"STUB_HIP_VERSION": "50200000"})


@pytest.mark.parametrize("count", ["1", "0"])
def test_device_count_from_the_stub(run_python, count):
    run_python("""
        from nccl._hip_compat.cuda_core_shim import Device, get_num_devices
        n = %s
        assert get_num_devices() == n
        try:
            Device(n)
        except ValueError as e:
            assert str(e) == f"device_id {n} is out of range; HIP reports {n} device(s)", str(e)
        else:
            raise AssertionError("in range")
        if n:
            assert Device() is Device(0)
        else:
            try:
                Device()
            except ValueError as e:
                assert str(e) == "device_id 0 is out of range; HIP reports 0 device(s)", str(e)
            else:
                raise AssertionError("a current device without devices")
    """ % count, env={"STUB_HIP_DEVICE_COUNT": count})


def test_unbacked_cuda_backend(run_python):
    run_python("""
        from nccl._hip_compat.cuda_core_shim import Device, _runtime, get_num_devices
        _runtime.set_backend(_runtime.UnbackedCuda())
        for call in (get_num_devices, lambda: Device(0)):
            try:
                call()
            except RuntimeError as e:
                assert str(e) == "the cuda.core shim has no CUDA backing; install cuda-core", str(e)
                assert type(e).__name__ == "NotSupportedError"
            else:
                raise AssertionError("no error")
        _runtime.set_backend(None)
        assert get_num_devices() == 2
    """)


def test_host_flavour_backend(run_python, tmp_path):
    """The host flavour: virtual devices, host memory exported as kDLCPU, no HIP runtime."""
    run_python("""
        import gc
        import numpy as np
        from nccl._hip_compat import _hip
        from nccl._hip_compat.cuda_core_shim import (Buffer, Device, EventOptions, StridedMemoryView,
                                                   get_num_devices, _runtime)
        _runtime.set_backend(_runtime.HostBackend())
        assert get_num_devices() == 3
        d = Device(2)
        d.set_current()
        assert Device() is d and d.pci_bus_id == "host:0002"
        s = d.create_stream()
        b = d.allocate(64)
        assert (b.is_device_accessible, b.is_host_accessible, b.__dlpack_device__()) == (False, True, (1, 0))
        b.fill(9, stream=s)
        a = np.from_dlpack(b)
        assert (a == 9).all()
        c = b.copy_to(stream=s)
        assert (np.from_dlpack(c) == 9).all()
        start = s.record(options=EventOptions(enable_timing=True))
        end = s.record(options=EventOptions(enable_timing=True))
        assert end.is_done and end - start >= 0.0
        s.wait(end)
        view = StridedMemoryView(b, stream_ptr=-1)
        assert view.device_id == -1 and not view.is_device_accessible
        try:
            Device(3)
        except ValueError as e:
            assert str(e) == "device_id 3 is out of range; HIP reports 3 device(s)", str(e)
        for obj in (start, end, c, b, s):
            obj.close()
        del a, view
        gc.collect()
        assert not _hip.is_loaded(), "the host flavour opened the HIP runtime"
    """, env={"NCCL4PY_HIP_LIBRARY": str(tmp_path / "absent.so"), "NCCL_HOST_NUM_DEVICES": "3"})
