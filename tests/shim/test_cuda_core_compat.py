"""The cuda.core surface the shim serves: our equivalent of the RCCL fork's
test_cuda_core_compat.py (docs/compatibility.md#the-rccl-forks-test-files) and of its shim surface test
(docs/compatibility.md#the-rccl-forks-test-files), minus what
needs nccl.core, torch or CuPy.

The shim is registered in this process for the module and sys.modules is restored afterwards.
"""

import ast
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

# What nccl.core is specified to import from cuda.core (docs/architecture.md#names-the-shim-serves).
SPECIFIED_IMPORTS = {
    "cuda.core": {"Device", "Stream", "Buffer", "MemoryResource", "Event", "EventOptions", "StreamOptions",
                  "system", "utils", "typing", "IsStreamType", "IsStreamT", "DevicePointerType", "DevicePointerT"},
    "cuda.core.system": {"get_num_devices"},
    "cuda.core.utils": {"StridedMemoryView", "args_viewable_as_strided_memory"},
    "cuda.core.typing": {"IsStreamType", "IsStreamT", "DevicePointerType", "DevicePointerT"},
    "cuda.core._stream": {"Stream", "IsStreamT"},
    "cuda.core._memory": {"Buffer", "MemoryResource", "DevicePointerT"},
    "cuda.core._memory._buffer": {"Buffer", "MemoryResource", "DevicePointerT"},
    "cuda.core.experimental": {"Device", "Stream", "Buffer", "MemoryResource", "system"},
    "cuda.core.experimental._stream": {"IsStreamT"},
    "cuda.core.experimental._memory": {"DevicePointerT"},
    "cuda.core.experimental.typing": {"IsStreamType", "DevicePointerType"},
}
SUFFIXES = ["", ".system", ".utils", ".typing", "._stream", "._memory", "._memory._buffer"]


@pytest.fixture(scope="module")
def cuda_core(hip):
    from nccl._hip_compat import _register, register_cuda_core_shim

    saved = {k: v for k, v in sys.modules.items() if k == "cuda" or k.startswith("cuda.")}
    existing = sys.modules.get("cuda.core")
    if existing is not None and not _register.is_registered():
        pytest.skip("a real cuda.core is already imported in this process")
    previous = _register._registered_core
    assert register_cuda_core_shim(force=True)
    import cuda.core

    yield cuda.core
    if existing is None:
        for name in [k for k in sys.modules if (k == "cuda" or k.startswith("cuda.")) and k not in saved]:
            del sys.modules[name]
        parent = saved.get("cuda")
        if parent is not None and "core" in vars(parent):
            delattr(parent, "core")
        _register._registered_core = previous


def _package_dirs():
    dirs = [ROOT / "src" / "nccl"]
    spec = importlib.util.find_spec("nccl")
    if spec is not None and spec.submodule_search_locations:
        dirs += [Path(p) for p in spec.submodule_search_locations]
    return [d for d in dict.fromkeys(d.resolve() for d in dirs) if d.is_dir()]


def _scan():
    """{module: {names}} of every `from cuda.core... import` / `import cuda.core...` in nccl
    outside nccl/_hip_compat/."""
    found = {}
    for base in _package_dirs():
        for path in base.rglob("*.py"):
            if "_hip_compat" in path.relative_to(base).parts:
                continue
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                        and (node.module == "cuda.core" or node.module.startswith("cuda.core.")):
                    found.setdefault(node.module, set()).update(a.name for a in node.names if a.name != "*")
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name == "cuda.core" or alias.name.startswith("cuda.core."):
                            found.setdefault(alias.name, set())
    return found


class TestVendoredImportSurface:
    def test_scan_finds_what_nccl_core_imports(self):
        found = _scan()
        # nccl.core's own imports (cuda.py, memory.py, typing.py): without them the scanned checks
        # below would pass on an empty scan
        assert found.get("cuda.core", set()) >= {"Buffer", "Device", "MemoryResource", "Stream", "system"}, found
        unspecified = {m: names - SPECIFIED_IMPORTS.get(m, set()) for m, names in found.items()}
        assert not any(unspecified.values()), f"cuda.core imports outside the specified surface: {unspecified}"

    @pytest.mark.parametrize("source", ["scanned", "specified"])
    def test_every_imported_module_resolves(self, cuda_core, source):
        imports = _scan() if source == "scanned" else SPECIFIED_IMPORTS
        missing = []
        for module in imports:
            try:
                importlib.import_module(module)
            except ImportError:
                missing.append(module)
        assert not missing, f"cuda.core modules missing from the HIP shim: {missing}"

    @pytest.mark.parametrize("source", ["scanned", "specified"])
    def test_every_imported_symbol_resolves(self, cuda_core, source):
        imports = _scan() if source == "scanned" else SPECIFIED_IMPORTS
        missing = [f"{m}.{n}" for m, names in imports.items() for n in sorted(names)
                   if not hasattr(importlib.import_module(m), n)]
        assert not missing, f"symbols missing from the HIP shim: {missing}"


class TestTypingSurface:
    def test_exports_cuda_core_1_0_names(self, cuda_core):
        import cuda.core.typing as t

        assert "__cuda_stream__" in t.IsStreamType.__dict__
        assert set(t.DevicePointerType.__args__) == {int, type(None)}

    def test_pre_1_0_names_are_aliases(self, cuda_core):
        import cuda.core.typing as t

        assert t.IsStreamT is t.IsStreamType
        assert t.DevicePointerT is t.DevicePointerType

    def test_pre_1_0_locations_serve_the_same_objects(self, cuda_core):
        import cuda.core._memory
        import cuda.core._memory._buffer
        import cuda.core._stream
        import cuda.core.typing as t

        assert cuda_core.IsStreamType is t.IsStreamType
        assert cuda_core.DevicePointerType is t.DevicePointerType
        assert cuda.core._stream.IsStreamT is t.IsStreamType
        assert cuda.core._memory.DevicePointerT is t.DevicePointerType
        assert cuda.core._memory._buffer.DevicePointerT is t.DevicePointerType

    def test_protocol_is_usable(self, cuda_core):
        from cuda.core.typing import IsStreamType

        assert isinstance(cuda_core.Stream.from_handle(5), IsStreamType)
        assert not isinstance(object(), IsStreamType)


class TestExperimentalAlias:
    @pytest.mark.parametrize("suffix", SUFFIXES)
    def test_prefix_aliases_the_top_level(self, cuda_core, suffix):
        assert sys.modules["cuda.core.experimental" + suffix] is sys.modules["cuda.core" + suffix]

    def test_pre_0_5_0_import_paths_resolve(self, cuda_core):
        from cuda.core.experimental._memory import DevicePointerT
        from cuda.core.experimental._stream import IsStreamT
        from cuda.core.experimental.typing import DevicePointerType, IsStreamType

        assert DevicePointerT is DevicePointerType and IsStreamT is IsStreamType

    def test_attribute_chain(self, cuda_core):
        import cuda

        assert cuda.core is cuda_core and cuda_core.experimental is cuda_core
        assert cuda_core._memory._buffer is sys.modules["cuda.core._memory._buffer"]


class TestOutOfScopeAttributes:
    def test_launch_config(self, cuda_core):
        with pytest.raises(AttributeError, match="HIP shim"):
            cuda_core.LaunchConfig

    def test_stream_type(self, cuda_core):
        import cuda.core.typing

        with pytest.raises(AttributeError, match="HIP shim"):
            cuda.core.typing.StreamType

    @pytest.mark.parametrize("suffix", SUFFIXES)
    def test_message(self, cuda_core, suffix):
        module = sys.modules["cuda.core" + suffix]
        with pytest.raises(AttributeError) as info:
            module.NoSuchName
        assert str(info.value) == f"module 'cuda.core{suffix}' has no attribute 'NoSuchName' (HIP shim)"

    def test_shim_package_message(self):
        import nccl._hip_compat.cuda_core_shim as shim

        with pytest.raises(AttributeError, match=r"^module 'nccl._hip_compat.cuda_core_shim' has no attribute "
                                                 r"'launch' \(HIP shim\)$"):
            shim.launch


class TestNameMap:
    def test_classes_come_from_the_shim_modules(self, cuda_core):
        from nccl._hip_compat.cuda_core_shim import _device, _event, _memory, _memoryview, _stream, _system

        assert cuda_core.Device is _device.Device
        assert cuda_core.Stream is _stream.Stream and sys.modules["cuda.core._stream"].Stream is _stream.Stream
        assert cuda_core.Buffer is _memory.Buffer is sys.modules["cuda.core._memory._buffer"].Buffer
        assert cuda_core.MemoryResource is _memory.MemoryResource
        assert (cuda_core.Event, cuda_core.EventOptions, cuda_core.StreamOptions) == (
            _event.Event, _event.EventOptions, _stream.StreamOptions)
        assert cuda_core.system.get_num_devices is _system.get_num_devices
        assert cuda_core.utils.StridedMemoryView is _memoryview.StridedMemoryView


class TestShimSurface:
    """docs/compatibility.md#the-rccl-forks-test-files, on the stub runtime (2 devices) instead of hip-python and
    a GPU."""

    def test_private_paths(self):
        from nccl._hip_compat.cuda_core_shim._dlpack import parse_capsule  # noqa: F401
        from nccl._hip_compat.cuda_core_shim._memory import _HipMallocResource  # noqa: F401
        from nccl._hip_compat.cuda_core_shim._memoryview import _StridedMemoryViewProxy  # noqa: F401

    def test_device(self, cuda_core):
        from cuda.core import Device, Stream

        assert Device(0).device_id == 0
        assert 0 <= Device().device_id < cuda_core.system.get_num_devices()
        Device(0).set_current()
        stream = Device(0).default_stream
        assert isinstance(stream, Stream) and stream.handle == 0

    def test_stream(self, cuda_core):
        from cuda.core import Stream

        Stream.from_handle(0)
        assert Stream.from_handle(0xDEADBEEF).__cuda_stream__() == (0, 0xDEADBEEF)
        assert Stream.from_handle(Stream.from_handle(1234).handle).handle == 1234

    def test_buffer(self, cuda_core):
        from cuda.core import Buffer
        from cuda.core.utils import StridedMemoryView

        Buffer.from_handle(ptr=0xBEEF, size=1024, mr=None)
        b = Buffer.allocate(1024)
        view = StridedMemoryView(b, stream_ptr=-1)
        assert view.shape == (1024,) and view.ptr == b.handle and view.is_device_accessible
        assert b.handle != 0
        b.close()
        b.close()

    def test_memory_resource(self, cuda_core):
        from cuda.core import MemoryResource
        from nccl._hip_compat.cuda_core_shim._memory import _HipMallocResource

        mr = _HipMallocResource(0)
        assert isinstance(mr, MemoryResource)
        assert (mr.is_device_accessible, mr.is_host_accessible, mr.device_id) == (True, False, 0)
        mr.deallocate(0, 0)

    def test_strided_memory_view_numpy(self, cuda_core):
        from cuda.core.utils import StridedMemoryView

        a = np.zeros(4, dtype=np.float32)
        view = StridedMemoryView(a, stream_ptr=-1)
        assert view.device_id == -1 and not view.is_device_accessible and view.dtype == np.float32
        for name in ("ptr", "shape", "strides", "dtype", "device_id", "is_device_accessible", "readonly",
                     "exporting_obj"):
            assert hasattr(view, name)
        assert view.exporting_obj is a

    def test_strided_memory_view_torch(self, cuda_core):
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("needs a torch-ROCm device")
        from cuda.core.utils import StridedMemoryView  # pragma: no cover - needs a GPU

        t = torch.ones(4, device="cuda")
        view = StridedMemoryView(t, stream_ptr=-1)
        assert view.ptr == t.data_ptr() and view.dtype == np.float32 and view.device_id == 0

    def test_decorator(self, cuda_core):
        from cuda.core.utils import args_viewable_as_strided_memory
        from nccl._hip_compat.cuda_core_shim._memoryview import _StridedMemoryViewProxy

        @args_viewable_as_strided_memory((0,))
        def f(x, *, flag=False):
            return x, flag

        x, flag = f(np.zeros(1), flag=True)
        assert isinstance(x, _StridedMemoryViewProxy) and flag is True

    def test_dlpack(self, cuda_core):
        from cuda.core import Buffer
        from nccl._hip_compat.cuda_core_shim._dlpack import parse_capsule

        b = Buffer.allocate(64)
        assert b.__dlpack_device__() == (10, 0)
        assert parse_capsule(b.__dlpack__(max_version=(1, 0)))[0].device.device_type == 10
