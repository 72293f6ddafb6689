"""The public surface of nccl.core (docs/compatibility.md#names-and-types) and its use of cuda.core:
the shim over the host backend's virtual devices when NCCL_LIBRARY=host."""

import ast
import importlib
import pathlib

import pytest

import nccl.core as core

# Every name of NVIDIA nccl4py 0.6.0's nccl.core.__all__, as introspected from its PyPI wheel.
UPSTREAM_060_ALL = [
    "AVG", "BFLOAT16", "CHAR", "CTAPolicy", "CftLeInfo", "CommShrinkFlag", "CommSuspendFlag", "Communicator",
    "CustomRedOp", "DOUBLE", "DevCommResource", "FLOAT", "FLOAT16", "FLOAT32", "FLOAT64", "FLOAT8E4M3",
    "FLOAT8E5M2", "GinBarrierHandle", "GinBarrierRequirement", "GroupSimInfo", "HALF", "INT", "INT32",
    "INT64", "INT8", "LLA2AHandle", "LLA2ARequirement", "LibraryInfo", "LsaBarrierHandle",
    "LsaBarrierRequirement", "MAX", "MIN", "MultimemHandle", "NCCLCollConfig", "NCCLCommProperties",
    "NCCLConfig", "NCCLDevCommRequirements", "NCCLTeam", "NcclBufferSpec", "NcclCftCap", "NcclCftTeamMode",
    "NcclCommMemStat", "NcclDataType", "NcclDeviceSpec", "NcclEventSpec", "NcclGinConnectionType",
    "NcclGinType", "NcclHostCftMode", "NcclInvalid", "NcclNvlsHostMode", "NcclRedOp", "NcclScalarSpec",
    "NcclStreamSpec", "PROD", "RegisteredBufferHandle", "RegisteredWindowHandle", "SUM", "TeamRequirement",
    "UINT32", "UINT64", "UINT8", "UniqueId", "VendorOption", "VersionInfo", "WaitSignalDesc", "WindowFlag",
    "__version__", "cupy", "dump_params", "get_error_string", "get_unique_id", "get_version", "group",
    "group_end", "group_start", "mem_alloc", "mem_free", "params", "show_versions", "torch",
]
# nccl4py 0.3.1 names that 0.6.0 dropped and we keep (code written for 0.3.1 still imports them).
KEPT_031 = ["Version", "get_lib_version", "get_lib_path"]
# Names we add (docs/compatibility.md#what-we-add).
ADDED = ["dump_trace"]
EXPECTED_ALL = sorted(UPSTREAM_060_ALL + KEPT_031 + ADDED)

# Communicator methods of 0.6.0 with their signatures (inspect.signature, self left out).
UPSTREAM_060_METHODS = {
    "abort": "meth()",
    "allgather": "meth(sendbuf, recvbuf, *, stream=None, config=None)",
    "allreduce": "meth(sendbuf, recvbuf, op, *, stream=None, config=None)",
    "alltoall": "meth(sendbuf, recvbuf, *, stream=None, config=None)",
    "broadcast": "meth(sendbuf, recvbuf, root, *, stream=None, config=None)",
    "close_all_resources": "meth()",
    "create_dev_comm": "meth(requirements=None)",
    "create_pre_mul_sum": "meth(scalar, datatype=None)",
    "destroy": "meth()",
    "finalize": "meth()",
    "gather": "meth(sendbuf, recvbuf, root=None, *, stream=None, config=None)",
    "get_async_error": "meth()",
    "get_last_error": "meth()",
    "get_mem_stat": "meth(stat)",
    "get_unique_id": "meth()",
    "grow": "meth(nranks, unique_id=None, rank=None, config=None)",
    "initialize": "meth(nranks, rank, unique_id, config=None)",
    "put_signal": "meth(local_buffer, peer, peer_window, peer_window_offset=0, signal_index=0, context=0, flags=0, *, stream=None)",
    "recv": "meth(recvbuf, peer, *, stream=None)",
    "reduce": "meth(sendbuf, recvbuf, op, root=None, *, stream=None, config=None)",
    "reduce_scatter": "meth(sendbuf, recvbuf, op, *, stream=None, config=None)",
    "register_buffer": "meth(buffer)",
    "register_window": "meth(buffer, flags=None)",
    "resume": "meth()",
    "revoke": "meth(flags=0)",
    "scatter": "meth(sendbuf, recvbuf, root, *, stream=None, config=None)",
    "send": "meth(sendbuf, peer, *, stream=None)",
    "shrink": "meth(exclude_ranks=None, config=None, flag=CommShrinkFlag.DEFAULT)",
    "signal": "meth(peer, signal_index=0, context=0, flags=0, *, stream=None)",
    "split": "meth(color=None, key=0, config=None)",
    "suspend": "meth(flags=CommSuspendFlag.MEM)",
    "team_cft": "meth(mode=NcclCftTeamMode.FLAT)",
    "team_rank_to_lsa": "meth(team, team_rank)",
    "team_rank_to_world": "meth(team, team_rank)",
    "wait_signal": "meth(descs, *, stream=None)",
}

# Parameters we add to 0.6.0's methods, keyword-only after its own (docs/compatibility.md#what-we-add):
# the flight recorder's ring size of the communicator being created (docs/api/trace.md).
ADDED_PARAMETERS = {name: "*, trace_buffer=None" for name in ("initialize", "split", "shrink", "grow")}

SUBMODULES = ["typing", "constants", "communicator", "resources", "group", "utils", "buffer", "memory", "cuda",
              "interop", "interop.cupy", "interop.torch"]


def test_all_exact():
    assert sorted(core.__all__) == EXPECTED_ALL
    assert len(core.__all__) == len(set(core.__all__))
    for name in core.__all__:
        assert hasattr(core, name), name


def test_every_upstream_060_name_is_exported():
    assert [n for n in UPSTREAM_060_ALL if n not in core.__all__ or not hasattr(core, n)] == []


@pytest.mark.parametrize("name", sorted(UPSTREAM_060_METHODS))
def test_communicator_signatures_match_060(name):
    import inspect

    expected = UPSTREAM_060_METHODS[name][len("meth"):]
    if name in ADDED_PARAMETERS:
        expected = f"{expected[:-1]}, {ADDED_PARAMETERS[name]})"
    if name in _ENUM_DEFAULTS:  # no inspect.signature for enum defaults: the text signature
        text = getattr(core.Communicator, name).__text_signature__
        # spelled with their module so that inspect can evaluate them; 0.6.0 writes Class.MEMBER
        assert text.replace("($self, ", "(").replace("nccl.core.", "") == expected
        return
    sig = str(inspect.signature(getattr(core.Communicator, name)))
    # text_signature carries enum defaults as their repr; 0.6.0 writes them as Class.MEMBER
    sig = sig.replace("(self, /)", "()").replace("(self)", "()").replace("(self, /, ", "(").replace("(self, ", "(")
    assert sig == expected, (name, sig)


_ENUM_DEFAULTS = {"shrink", "suspend", "team_cft"}


def test_star_import():
    ns = {}
    exec("from nccl.core import *", ns)
    assert set(ns) - {"__builtins__"} == set(EXPECTED_ALL)


def test_unknown_attribute():
    with pytest.raises(AttributeError) as ei:
        core.no_such_name
    assert str(ei.value) == "module 'nccl.core' has no attribute 'no_such_name'"
    for name in ("NCCLError", "comm_grow", "ep"):
        with pytest.raises(AttributeError):
            getattr(core, name)


def test_interop_modules_are_lazy():
    assert core.cupy is importlib.import_module("nccl.core.interop.cupy")
    assert core.torch is importlib.import_module("nccl.core.interop.torch")
    assert "cupy" in dir(core) and "torch" in dir(core)


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodules_import(name):
    importlib.import_module(f"nccl.core.{name}")


def test_out_of_scope_modules():
    # nccl.ep is nccl-extensions' (tests/test_nccl_extensions.py); the CuTe DSL subpackage is refused
    # (tests/test_upstream_modules.py).
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("nccl.ep")
    with pytest.raises(ImportError, match="nvidia-cutlass-dsl"):
        importlib.import_module("nccl.core.device.cute")


def test_outside_all():
    from nccl.core.buffer import NcclBuffer  # noqa: F401
    from nccl.core.cuda import (CudaDeviceContext, get_cuda_device, get_cuda_stream, get_device_id,  # noqa: F401
                                get_stream_ptr)
    from nccl.core.memory import NcclMemoryResource, get_memory_resource  # noqa: F401
    from nccl.core.resources import CommResource  # noqa: F401


def test_same_objects_across_modules():
    from nccl._errors import NcclInvalid
    from nccl.core import communicator, constants, resources, utils

    assert core.NcclInvalid is NcclInvalid
    assert constants.FLOAT is core.FLOAT32 and constants.NcclDataType is core.NcclDataType
    assert communicator.Communicator is core.Communicator and communicator.NCCLConfig is core.NCCLConfig
    assert resources.CustomRedOp is core.CustomRedOp and utils.UniqueId is core.UniqueId


def test_not_exported_names():
    assert "NCCLError" not in core.__all__
    from nccl.core.typing import NcclBufferSpec, NcclSupportedBuffer, SupportsCAI, SupportsDLPack  # noqa: F401

    assert NcclSupportedBuffer is NcclBufferSpec  # upstream's alias, outside __all__ there too

    assert not hasattr(core, "SupportsDLPack")


def test_dev_comm_resource_is_made_by_create_dev_comm_only():
    with pytest.raises(TypeError) as ei:
        core.DevCommResource()
    assert str(ei.value) == "cannot create 'nccl.core.resources.DevCommResource' instances"
    assert issubclass(core.DevCommResource, core.resources.CommResource)


def test_cuda_core_import_statement():
    # docs/compatibility.md#names-and-types, docs/compatibility.md#the-rccl-forks-test-files: a module outside
    # _hip_compat imports from cuda.core, and every name it
    # imports is served (here: by the shim or the real package, whichever is cuda.core).
    path = pathlib.Path(core.__file__).parent / "cuda.py"
    found = [(node.module, alias.name) for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cuda.core")
             for alias in node.names]
    assert found
    for module, name in found:
        assert hasattr(importlib.import_module(module), name), (module, name)


HOST_DEVICES = """
import cuda.core
from nccl._hip_compat import is_cuda_core_shim_registered
import nccl.core.cuda as cu
n = cu.get_num_devices()
d = cu.get_cuda_device(2)
cur = cu.get_device_id()
with cu.CudaDeviceContext(5) as inside:
    during = (cu.get_device_id(), inside.device_id, cuda.core.Device().device_id)
    flat = ctypes_device()
after = cu.get_device_id()
s = cu.get_cuda_stream(None)
s2 = cu.get_cuda_stream(s)
try:
    cu.get_device_id("0")
    bad = None
except TypeError as exc:
    bad = str(exc)
from nccl._hip_compat.cuda_core_shim import _runtime
result = dict(shim=is_cuda_core_shim_registered(), n=n, device_type=type(d).__module__, device=(d.device_id, d is cuda.core.Device(2)),
              ids=(cu.get_device_id(3), cu.get_device_id(d), cur), during=during, after=after, flat=flat,
              stream=(type(s).__name__, s.handle, s2 is s), bad=bad, backend=type(_runtime.hip()).__name__)
"""

CTYPES_DEVICE = """
import ctypes
def ctypes_device():
    lib = ctypes.CDLL(b.get_library_path())
    v = ctypes.c_int(-1)
    lib.ncclHostGetDevice(ctypes.byref(v))
    return v.value
"""


def test_shim_devices_on_host_backend(fresh_python):
    r = fresh_python(CTYPES_DEVICE + HOST_DEVICES, env={"NCCL_LIBRARY": "host", "NCCL_HOST_NUM_DEVICES": "8"})
    assert r["shim"] is True and r["backend"] == "HostBackend"
    assert r["n"] == 8
    assert r["device_type"].startswith("nccl._hip_compat.cuda_core_shim") and r["device"] == (2, True)
    assert r["ids"] == (3, 2, 0)
    assert r["during"] == (5, 5, 5)
    assert r["flat"] == 5  # the host backend's own current device follows the shim's
    assert r["after"] == 0
    assert r["stream"] == ("Stream", 0, True)
    assert r["bad"] == "device must be a cuda.core Device, an int or None, got str"


def test_nvidia_flavour_without_cuda_core(fresh_python):
    r = fresh_python("""
import nccl.core.cuda as cu
result = catch(cu.get_num_devices)
""", variant="nccl")
    assert r[0] == "NotSupportedError" and r[1] == "the cuda.core shim has no CUDA backing; install cuda-core"


def test_import_loads_nothing(fresh_python):
    r = fresh_python("""
import nccl.core, nccl.core.cuda, nccl.core.memory, nccl.core.interop.torch, nccl.core.interop.cupy
import sys
import os
with open("/proc/self/maps") as f:
    maps = f.read()
result = (os.environ["NCCL_LIBRARY"] in maps, "torch" in sys.modules, "cupy" in sys.modules, "hip" in sys.modules)
""", variant="nccl")
    assert r == (False, False, False, False)


def test_every_cuda_core_import_is_served():
    # The scan of docs/compatibility.md#the-rccl-forks-test-files over every nccl module outside _hip_compat.
    import nccl

    root = pathlib.Path(nccl.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        if "_hip_compat" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cuda.core"):
                found.update((node.module, alias.name) for alias in node.names)
    assert ("cuda.core", "Device") in found
    for module, name in sorted(found):
        assert hasattr(importlib.import_module(module), name), (module, name)


def _stub_members(stub, cls):
    """Public names a stub class declares, its base classes' in the same stub included."""
    tree = ast.parse((pathlib.Path(core.__file__).parent / stub).read_text())
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    assert cls in classes, f"{cls} not in {stub}"
    names, todo = set(), [cls]
    while todo:
        node = classes.get(todo.pop())
        if node is None:
            continue
        names |= {n.name for n in node.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("__")}
        todo += [base.id for base in node.bases if isinstance(base, ast.Name)]
    return names


@pytest.mark.parametrize("stub,cls", [("communicator.pyi", "Communicator"), ("buffer.pyi", "NcclBuffer"),
                                      ("resources.pyi", "CommResource"), ("resources.pyi", "RegisteredBufferHandle"),
                                      ("resources.pyi", "RegisteredWindowHandle"), ("resources.pyi", "CustomRedOp")])
def test_stub_names_match_the_c_types(stub, cls):
    from nccl import _ext

    runtime = getattr(_ext, cls)
    declared = _stub_members(stub, cls)
    undeclared = sorted(n for n in dir(runtime) if not n.startswith("_") and n not in declared)
    assert not undeclared, f"{stub} does not declare {cls}.{undeclared}"
    missing = sorted(name for name in declared if not hasattr(runtime, name))
    assert not missing, f"{cls} lacks what its stub declares: {missing}"


def test_c_names_are_the_extension_types():
    from nccl import _ext

    for module, name in (("communicator", "Communicator"), ("buffer", "NcclBuffer"), ("resources", "CommResource"),
                         ("resources", "RegisteredBufferHandle"), ("resources", "RegisteredWindowHandle"),
                         ("resources", "CustomRedOp"), ("cuda", "get_stream_ptr")):
        assert getattr(importlib.import_module(f"nccl.core.{module}"), name) is getattr(_ext, name)


COMM_DEVICES = """
import cuda.core
import nccl.core as nc
from nccl.core.cuda import CudaDeviceContext
with CudaDeviceContext(3):
    with nc.Communicator.init(1, 0, nc.get_unique_id(), config=nc.NCCLConfig(comm_name="c")) as comm:
        one = (type(comm.device).__module__, comm.device.device_id, comm.device is cuda.core.Device(3))
comms = nc.Communicator.init_all([1, 2])
many = [(c.rank, c.nranks, c.device.device_id) for c in comms]
default = nc.Communicator.init_all(None)
n = [c.device.device_id for c in default]
for c in comms + default:
    c.destroy()
result = dict(one=one, many=many, empty=nc.Communicator.init_all([]), n=n)
"""


def test_communicator_devices_are_shim_devices_on_host(fresh_python):
    from nccl import _ext

    if not hasattr(_ext, "Communicator"):
        pytest.skip("nccl._ext.Communicator is not in this build yet")
    r = fresh_python(COMM_DEVICES, env={"NCCL_LIBRARY": "host", "NCCL_HOST_NUM_DEVICES": "4"})
    assert r["one"][0].startswith("nccl._hip_compat.cuda_core_shim")
    assert r["one"][1:] == (3, True)  # the device made current through the shim is the communicator's
    assert r["many"] == [(0, 2, 1), (1, 2, 2)]
    assert r["empty"] == []
    assert r["n"] == [0, 1, 2, 3]  # None: every device cuda.core reports


def test_host_backend_chosen_at_import_without_loading(fresh_python):
    r = fresh_python("""
import os
import cuda.core
import nccl.core
from nccl._hip_compat.cuda_core_shim import _runtime
backend = type(_runtime.hip()).__name__
with open("/proc/self/maps") as f:
    loaded_at_import = "libnccl-host" in f.read()
cuda.core.Device(2).set_current()
result = dict(backend=backend, loaded_at_import=loaded_at_import, current=nccl.core.cuda.get_device_id(),
              n=cuda.core.system.get_num_devices())
if hasattr(nccl._ext, "Communicator"):
    with nccl.core.Communicator.init(1, 0, nccl.core.get_unique_id()) as comm:
        result["comm_device"] = comm.device.device_id
""", env={"NCCL_LIBRARY": "host", "NCCL_HOST_NUM_DEVICES": "5"})
    assert r["backend"] == "HostBackend" and r["loaded_at_import"] is False
    assert r["current"] == 2 and r["n"] == 5
    assert r.get("comm_device", 2) == 2


def test_get_stream_ptr_is_the_c_function():
    from nccl import _ext
    from nccl.core import cuda as cu

    if not hasattr(_ext, "get_stream_ptr"):
        pytest.skip("nccl._ext.get_stream_ptr is not in this build yet")
    assert cu.get_stream_ptr is _ext.get_stream_ptr
    assert cu.get_stream_ptr(None) == 0 and cu.get_stream_ptr(0x40) == 0x40


def test_get_cuda_stream_from_handles(fresh_python):
    from nccl import _ext

    if not hasattr(_ext, "get_stream_ptr"):
        pytest.skip("nccl._ext.get_stream_ptr is not in this build yet")
    r = fresh_python("""
import cuda.core
from nccl.core.cuda import get_cuda_stream, get_stream_ptr
s = get_cuda_stream(0x1234)
class Proto:
    def __cuda_stream__(self):
        return (0, 0x99)
result = (type(s) is cuda.core.Stream, s.handle, get_stream_ptr(s), get_cuda_stream(Proto()).handle)
""", env={"NCCL_LIBRARY": "host"})
    assert r == (True, 0x1234, 0x1234, 0x99)
