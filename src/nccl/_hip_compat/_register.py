"""Registration of the cuda.core shim in ``sys.modules`` (docs/architecture.md#the-cudacore-shim).

Only the standard library is imported here, and nothing HIP-related is touched: every name of
the registered modules is resolved on first access, from ``nccl._hip_compat.cuda_core_shim``.
The decision reads the library-selection environment and device nodes as the loader does
(``nccl._ext._library_selection()``, which loads no library).
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
import warnings

_SHIM = "nccl._hip_compat.cuda_core_shim"
_ORIGIN = "nccl._hip_compat (HIP shim)"

_TYPING_NAMES = {
    "IsStreamType": ("typing", "IsStreamType"),
    "IsStreamT": ("typing", "IsStreamType"),
    "DevicePointerType": ("typing", "DevicePointerType"),
    "DevicePointerT": ("typing", "DevicePointerType"),
}
_MEMORY_NAMES = {
    "Buffer": ("_memory", "Buffer"),
    "MemoryResource": ("_memory", "MemoryResource"),
    "DevicePointerT": ("typing", "DevicePointerType"),
    "DevicePointerType": ("typing", "DevicePointerType"),
}

# suffix after "cuda.core" -> (is a package, {attribute: (shim submodule, attribute)})
_LAYOUT = {
    "": (
        True,
        {
            "Device": ("_device", "Device"),
            "Stream": ("_stream", "Stream"),
            "StreamOptions": ("_stream", "StreamOptions"),
            "Event": ("_event", "Event"),
            "EventOptions": ("_event", "EventOptions"),
            "Buffer": ("_memory", "Buffer"),
            "MemoryResource": ("_memory", "MemoryResource"),
            **_TYPING_NAMES,
        },
    ),
    ".system": (False, {"get_num_devices": ("_system", "get_num_devices")}),
    ".utils": (
        False,
        {
            "StridedMemoryView": ("_memoryview", "StridedMemoryView"),
            "args_viewable_as_strided_memory": ("_memoryview", "args_viewable_as_strided_memory"),
        },
    ),
    ".typing": (False, dict(_TYPING_NAMES)),
    "._stream": (
        False,
        {
            "Stream": ("_stream", "Stream"),
            "StreamOptions": ("_stream", "StreamOptions"),
            "default_stream": ("_stream", "default_stream"),
            "IsStreamT": ("typing", "IsStreamType"),
            "IsStreamType": ("typing", "IsStreamType"),
        },
    ),
    "._memory": (True, dict(_MEMORY_NAMES)),
    "._memory._buffer": (False, dict(_MEMORY_NAMES)),
}

_lock = threading.RLock()  # reentrant: importing a real `cuda` package may import nccl again
_registered_core = None  # the cuda.core module object we installed, once registered


def is_registered():
    core = _registered_core
    return core is not None and sys.modules.get("cuda.core") is core


def _lazy_module(name, is_package, names):
    """A module whose attributes are resolved from the shim on first access and then cached."""
    module = types.ModuleType(name, f"HIP-backed stand-in for {name} (nccl4py's cuda.core shim).")
    spec = importlib.machinery.ModuleSpec(name, None, origin=_ORIGIN, is_package=is_package)
    module.__spec__ = spec
    module.__loader__ = None
    module.__package__ = name if is_package else name.rpartition(".")[0]
    if is_package:
        spec.submodule_search_locations = []
        module.__path__ = []
    module.__all__ = sorted(names)

    def __getattr__(attr):
        target = names.get(attr)
        if target is None:
            raise AttributeError(f"module '{name}' has no attribute '{attr}' (HIP shim)")
        submodule = importlib.import_module(f"{_SHIM}.{target[0]}")
        value = getattr(submodule, target[1])
        setattr(module, attr, value)
        return value

    def __dir__():
        return sorted(set(module.__dict__) | set(names))

    module.__getattr__ = __getattr__
    module.__dir__ = __dir__
    return module


class _LiveNamespacePath:
    """``__path__`` of a synthetic ``cuda`` namespace: every iteration lists the ``cuda``
    directories that exist under the current ``sys.path``, so a ``cuda.*`` distribution that
    becomes importable after registration (cuda.bindings, cuda.pathfinder) is still found."""

    def __init__(self):
        self._extra = []

    def _entries(self):
        candidates = [os.path.join(entry or os.getcwd(), "cuda") for entry in sys.path if isinstance(entry, str)]
        seen = []
        for candidate in candidates + self._extra:
            if candidate not in seen and os.path.isdir(candidate):
                seen.append(candidate)
        return seen

    def __iter__(self):
        return iter(self._entries())

    def __len__(self):
        return len(self._entries())

    def __getitem__(self, index):
        return self._entries()[index]

    def __contains__(self, item):
        return item in self._entries()

    def append(self, item):
        self._extra.append(item)

    def __repr__(self):
        return f"_LiveNamespacePath({self._entries()!r})"


def _cuda_parent():
    """The ``cuda`` package to hang ``cuda.core`` on: the real namespace when one exists,
    otherwise a synthetic namespace whose path follows ``sys.path``. None if a real ``cuda``
    exists but cannot be imported (then we register nothing rather than hide it)."""
    parent = sys.modules.get("cuda")
    if parent is not None:
        return parent
    try:
        return importlib.import_module("cuda")
    except ModuleNotFoundError as exc:
        if exc.name != "cuda":
            warnings.warn(f"nccl4py: not registering the cuda.core shim: importing cuda failed: {exc}",
                          RuntimeWarning, stacklevel=3)
            return None
    except Exception as exc:  # a broken real `cuda` package: do not shadow it
        warnings.warn(f"nccl4py: not registering the cuda.core shim: importing cuda failed: {exc}",
                      RuntimeWarning, stacklevel=3)
        return None
    path = _LiveNamespacePath()
    spec = importlib.machinery.ModuleSpec("cuda", None, origin=None, is_package=True)
    spec.submodule_search_locations = path
    parent = types.ModuleType("cuda")
    parent.__spec__ = spec
    parent.__loader__ = None
    parent.__package__ = "cuda"
    parent.__path__ = path
    sys.modules["cuda"] = parent
    return parent


def _real_cuda_core_importable():
    try:
        return importlib.util.find_spec("cuda.core") is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _wanted(force):
    if force is None:
        setting = os.environ.get("NCCL4PY_CUDA_CORE_SHIM", "").strip()
        if setting == "1":
            return True
        if setting == "0":
            return False
        if setting:
            warnings.warn(f"nccl4py: ignoring NCCL4PY_CUDA_CORE_SHIM={setting!r} (expected 0 or 1)",
                          RuntimeWarning, stacklevel=3)
    else:
        return bool(force)
    from nccl import _ext

    selection = _ext._library_selection()
    if selection["host"] or "rccl" in (selection["library"] or "").lower():
        return True
    if selection["amd"]:  # a ROCm host
        return True
    return not _real_cuda_core_importable()


def register(force=None):
    global _registered_core
    with _lock:
        existing = sys.modules.get("cuda.core")
        if existing is not None:
            return existing is _registered_core
        if not _wanted(force):
            return False
        parent = _cuda_parent()
        if parent is None:
            return False
        modules = {}
        for suffix, (is_package, names) in _LAYOUT.items():
            modules[suffix] = _lazy_module("cuda.core" + suffix, is_package, names)
        core = modules[""]
        for suffix, module in modules.items():
            if suffix:
                owner, _, leaf = ("cuda.core" + suffix).rpartition(".")
                setattr(modules[owner[len("cuda.core"):]], leaf, module)
        # cuda.core 0.5.0's deprecated prefix: the very same module objects.
        core.experimental = core
        for suffix, module in modules.items():
            sys.modules["cuda.core" + suffix] = module
            sys.modules["cuda.core.experimental" + suffix] = module
        parent.core = core
        _registered_core = core
        return True
