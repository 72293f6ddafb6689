"""register_cuda_core_shim(): when it registers, what it installs, and what it leaves alone.

Registration is process-global, so each test runs in a fresh interpreter. The children unset
the variables that steer the decision, so the host's environment cannot change the outcome.
"""

import textwrap

import pytest

STEERING = ("NCCL4PY_CUDA_CORE_SHIM", "NCCL_LIBRARY", "NCCL4PY_DEV_DIR")


# `import nccl` registers the shim once the package is installed with its real __init__; each
# child first undoes that, so it starts from "not registered yet" in every layout.
PRELUDE = """\
import sys as _sys
from nccl._hip_compat import _register as _reg
for _name in [_k for _k in _sys.modules if _k == "cuda" or _k.startswith("cuda.")]:
    del _sys.modules[_name]
_reg._registered_core = None
"""


@pytest.fixture
def child(run_python):
    def run(code, env=None, **kwargs):
        return run_python(PRELUDE + textwrap.dedent(code), env=env, unset=STEERING, **kwargs)

    return run


def _fake_cuda_core(root):
    """A real-looking `cuda.core` distribution: the cuda namespace (no __init__) with core/."""
    core = root / "cuda" / "core"
    core.mkdir(parents=True)
    (core / "__init__.py").write_text("REAL = True\n")
    return root


def test_registers_without_opening_the_runtime(child, stub_path):
    child("""
        import sys
        from nccl._hip_compat import register_cuda_core_shim, is_cuda_core_shim_registered
        assert not is_cuda_core_shim_registered()
        assert register_cuda_core_shim() is True
        assert "nccl._hip_compat._hip" not in sys.modules, "registration imported the C module"
        from nccl._hip_compat import _hip
        assert is_cuda_core_shim_registered()
        import cuda.core, cuda.core.system, cuda.core.utils, cuda.core.typing
        from cuda.core import (Device, Stream, StreamOptions, Event, EventOptions, Buffer, MemoryResource,
                               IsStreamType, IsStreamT, DevicePointerType, DevicePointerT, system, utils, typing)
        from cuda.core.system import get_num_devices
        from cuda.core.utils import StridedMemoryView, args_viewable_as_strided_memory
        from cuda.core._stream import Stream as S2, IsStreamT as I2, default_stream, StreamOptions as SO2
        from cuda.core._memory import Buffer as B2, MemoryResource as M2, DevicePointerT as D2
        from cuda.core._memory._buffer import Buffer as B3, MemoryResource as M3, DevicePointerT as D3
        from cuda.core import *
        for module in [m for name, m in sys.modules.items() if name.startswith("cuda.core")]:
            for name in dir(module):
                getattr(module, name)
        assert not _hip.is_loaded(), "resolving names opened the HIP runtime"
        assert "numpy" not in sys.modules, "resolving names imported numpy"
        maps = open("/proc/self/maps").read()
        assert %r not in maps and "libamdhip64" not in maps
    """ % str(stub_path))


def test_idempotent_and_thread_safe(child):
    child("""
        import sys, threading
        from nccl._hip_compat import register_cuda_core_shim
        results = []
        threads = [threading.Thread(target=lambda: results.append(register_cuda_core_shim())) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert results == [True] * 8
        core = sys.modules["cuda.core"]
        names = {k: v for k, v in sys.modules.items() if k.startswith("cuda")}
        assert register_cuda_core_shim() is True and register_cuda_core_shim(force=True) is True
        assert {k: v for k, v in sys.modules.items() if k.startswith("cuda")} == names
        assert sys.modules["cuda.core"] is core
    """)


@pytest.mark.parametrize("env, force, expected", [
    ({"NCCL4PY_CUDA_CORE_SHIM": "0"}, None, False),
    ({"NCCL4PY_CUDA_CORE_SHIM": "1"}, None, True),
    ({}, False, False),
    ({"NCCL4PY_CUDA_CORE_SHIM": "0"}, True, True),
    ({"NCCL4PY_CUDA_CORE_SHIM": " 1 "}, None, True),
])
def test_environment_and_force(child, env, force, expected):
    child("""
        import sys
        from nccl._hip_compat import register_cuda_core_shim
        assert register_cuda_core_shim(%r) is %r
        assert ("cuda.core" in sys.modules) is %r
    """ % (force, expected, expected), env=env)


def test_unknown_setting_warns_and_is_ignored(child):
    result = child("""
        import warnings
        from nccl._hip_compat import register_cuda_core_shim
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert register_cuda_core_shim() is True
        assert any("NCCL4PY_CUDA_CORE_SHIM='yes'" in str(w.message) for w in caught), caught
    """, env={"NCCL4PY_CUDA_CORE_SHIM": "yes"})
    assert result.returncode == 0


@pytest.mark.parametrize("env, kfd, expected", [
    ({}, False, False),  # a real cuda.core is importable: use it
    ({"NCCL4PY_CUDA_CORE_SHIM": "1"}, False, True),
    ({"NCCL_LIBRARY": "/opt/rocm/lib/librccl.so.1"}, False, True),
    ({"NCCL_LIBRARY": "librccl.so"}, False, True),
    ({"NCCL_LIBRARY": "HOST"}, False, True),
    ({"NCCL_LIBRARY": "libnccl.so.2"}, False, False),
    ({}, True, True),  # a ROCm host
])
def test_real_cuda_core_importable(child, tmp_path, env, kfd, expected):
    site = _fake_cuda_core(tmp_path / "site")
    kfd_path = tmp_path / "kfd"
    if kfd:
        kfd_path.write_text("")
    child("""
        import sys
        sys.path.insert(0, %r)
        from nccl._hip_compat import _register, register_cuda_core_shim
        assert register_cuda_core_shim() is %r
        import cuda, cuda.core
        assert hasattr(cuda.core, "REAL") is (not %r)
        # the real namespace package was used, never a synthetic one
        assert cuda.__spec__.origin is None and %r in list(cuda.__path__)
    """ % (str(site), expected, expected, str(site / "cuda")), env={**env, "NCCL4PY_DEV_DIR": str(tmp_path)})


def test_existing_cuda_core_is_left_alone(child):
    child("""
        import sys, types
        mine = types.ModuleType("cuda.core")
        sys.modules["cuda.core"] = mine
        from nccl._hip_compat import register_cuda_core_shim
        assert register_cuda_core_shim() is False
        assert register_cuda_core_shim(force=True) is False
        assert sys.modules["cuda.core"] is mine and "cuda.core.experimental" not in sys.modules
    """)


def test_synthetic_namespace_follows_sys_path(child, tmp_path):
    """No `cuda` distribution at registration: cuda.bindings/cuda.pathfinder installed later
    (regular and namespace packages) still import."""
    later = tmp_path / "later"
    (later / "cuda" / "bindings").mkdir(parents=True)
    (later / "cuda" / "bindings" / "__init__.py").write_text("WHO = 'bindings'\n")
    (later / "cuda" / "pathfinder").mkdir()  # a namespace portion without __init__.py
    (later / "cuda" / "pathfinder" / "finder.py").write_text("WHO = 'pathfinder'\n")
    child("""
        import importlib.util, sys
        from nccl._hip_compat import register_cuda_core_shim
        assert importlib.util.find_spec("cuda") is None
        assert register_cuda_core_shim() is True
        import cuda
        assert len(cuda.__path__) == 0 and list(cuda.__path__) == []
        assert type(cuda.__path__).__name__ == "_LiveNamespacePath"
        assert cuda.__spec__.loader is None
        sys.path.append(%r)
        import cuda.bindings
        from cuda.pathfinder import finder
        assert cuda.bindings.WHO == "bindings" and finder.WHO == "pathfinder"
        assert importlib.util.find_spec("cuda.bindings") is not None
        assert list(cuda.__path__) == [%r]
        import cuda.core
        assert cuda.core is sys.modules["cuda.core"] and hasattr(cuda.core, "Device")
    """ % (str(later), str(later / "cuda")))


def test_real_namespace_is_extended(child, tmp_path):
    first, later = tmp_path / "first", tmp_path / "later"
    (first / "cuda" / "pathfinder").mkdir(parents=True)
    (first / "cuda" / "pathfinder" / "__init__.py").write_text("WHO = 'pathfinder'\n")
    (later / "cuda" / "bindings").mkdir(parents=True)
    (later / "cuda" / "bindings" / "__init__.py").write_text("WHO = 'bindings'\n")
    child("""
        import sys
        sys.path.insert(0, %r)
        from nccl._hip_compat import register_cuda_core_shim
        assert register_cuda_core_shim() is True
        import cuda
        assert type(cuda.__path__).__name__ == "_NamespacePath", type(cuda.__path__)
        sys.path.append(%r)
        import cuda.bindings, cuda.pathfinder
        assert cuda.bindings.WHO == "bindings" and cuda.pathfinder.WHO == "pathfinder"
        assert cuda.core is sys.modules["cuda.core"]
    """ % (str(first), str(later)))


def test_broken_real_cuda_is_not_shadowed(child, tmp_path):
    site = tmp_path / "site"
    (site / "cuda").mkdir(parents=True)
    (site / "cuda" / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    child("""
        import sys, warnings
        sys.path.insert(0, %r)
        from nccl._hip_compat import register_cuda_core_shim
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert register_cuda_core_shim() is False
        assert "cuda" not in sys.modules and "cuda.core" not in sys.modules
        assert any("broken on purpose" in str(w.message) for w in caught), caught
    """ % str(site))


def test_unregistered_submodules_do_not_exist(child):
    child("""
        import importlib
        from nccl._hip_compat import register_cuda_core_shim
        register_cuda_core_shim()
        for name in ("cuda.core._utils", "cuda.core.experimental._device", "cuda.core._memory._vmm"):
            try:
                importlib.import_module(name)
            except ModuleNotFoundError:
                pass
            else:
                raise AssertionError(name)
    """)


def test_shim_runs_when_registered(child):
    """Through the registered names, every runtime-backed path works on the stub."""
    child("""
        import numpy as np
        from nccl._hip_compat import register_cuda_core_shim
        register_cuda_core_shim()
        from cuda.core import Device, EventOptions
        from cuda.core.system import get_num_devices
        from cuda.core.utils import StridedMemoryView
        assert get_num_devices() == 2
        d = Device(1)
        d.set_current()
        s = d.create_stream()
        b = d.allocate(1 << 20)
        b.fill(1, stream=s)
        start = s.record(options=EventOptions(enable_timing=True))
        end = s.record(options=EventOptions(enable_timing=True))
        s.sync()
        assert end - start >= 0
        v = StridedMemoryView(b, stream_ptr=s.handle)
        assert (v.ptr, v.shape, v.device_id) == (b.handle, (1 << 20,), 1)
        b.close(); s.close()
    """)
