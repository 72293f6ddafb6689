"""Against the real libnccl.so.2 of the nvidia-nccl-cu12 wheel (a test extra): the version, the
error strings, unique ids, the no-GPU failure path, and which ABI rows it exports."""

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

import children
from api_tables import API_MIN_VERSION

from nccl._enums import Result


def _wheel_library():
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except ModuleNotFoundError:  # no nvidia namespace package at all
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for d in spec.submodule_search_locations:
        lib = Path(d) / "lib" / "libnccl.so.2"
        if lib.exists():
            return lib
    return None


LIB = _wheel_library()
pytestmark = pytest.mark.skipif(LIB is None, reason="the nvidia-nccl-cu12 wheel is not installed")


def _wheel_version_code():
    v = importlib.metadata.version("nvidia-nccl-cu12").split(".")
    x, y, z = int(v[0]), int(v[1]), int(v[2])
    return x * 10000 + y * 100 + z


@pytest.fixture(scope="module")
def real(request):
    """Everything these tests need from one interpreter that loaded the wheel's library."""
    import json

    code = """
import json, nccl
import nccl.bindings.nccl as n
from nccl.bindings._internal import nccl as internal
from nccl import _ext
builtin = {str(c): _ext._error_text(c) for c in range(0, 10)}  # before any load: our own table
out = {"builtin": builtin, "version": n.get_version(), "path": n.get_library_path(), "flavour": n.get_library_flavour()}
out["strings"] = {str(c): n.get_error_string(c) for c in range(0, 10)}
uid = n.get_unique_id()
out["uid_len"] = len(bytes(uid)); out["uid_nonzero"] = any(bytes(uid))
box = n.PointerBox()
try:
    n.comm_init_rank(box.address, 1, uid, 0)
    out["init"] = None
except n.NCCLError as e:
    out["init"] = [type(e).__name__, e.status, str(e), e.last_error]
out["pointers"] = internal._inspect_function_pointers()
out["rows"] = _ext._abi_symbols()
info = nccl.get_version().nccl
out["libinfo"] = [str(info.version), str(info.cuda_variant), str(info.path), info.flavour]
print(json.dumps(out))
"""
    env = children.environment(drop=("NCCL4PY_DEV_DIR",), NCCL_LIBRARY=LIB)
    return children.last_json(children.run_python(code, env=env, timeout=120))


def test_version_matches_the_wheel(real):
    assert real["version"] == _wheel_version_code()
    assert real["flavour"] == "nccl"
    assert real["path"] == str(LIB.resolve())
    version, cuda, path, flavour = real["libinfo"]
    assert version == importlib.metadata.version("nvidia-nccl-cu12")
    assert cuda.startswith("12.")
    assert (path, flavour) == (str(LIB.resolve()), "nccl")


def test_error_strings_match_the_built_in_table(real):
    for code in range(0, 9):
        assert real["strings"][str(code)] == real["builtin"][str(code)], Result(code).name


def test_unique_id(real):
    assert real["uid_len"] == 128 and real["uid_nonzero"]


def test_init_without_a_gpu_raises_unhandled_cuda_error_with_last_error(real):
    name, status, message, last = real["init"]
    assert (name, status) == ("NCCLUnhandledCudaError", 1)
    assert message.startswith("UnhandledCudaError (1): unhandled cuda error")
    assert last and message.endswith("\n  library's last error: " + last)


def test_every_abi_row_the_version_should_have_resolves(real):
    pointers = real["pointers"]
    nccl_rows = [(name, since) for name, since, rccl_only in real["rows"] if not rccl_only]
    assert len(nccl_rows) == len(API_MIN_VERSION) and set(pointers) == {f"__{name}" for name, _ in nccl_rows}
    expected = [name for name, since in nccl_rows if since <= real["version"]]
    missing = [name for name in expected if pointers[f"__{name}"] == 0]
    assert missing == []


def test_discovery_finds_the_wheel_on_a_gpu_machine(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvidia0").touch()
    env = children.environment(drop=("NCCL_LIBRARY", "ROCM_PATH", "HIP_PATH"), NCCL4PY_DEV_DIR=dev)
    proc = children.run_python("import nccl.bindings.nccl as n; print(n.get_library_path()); print(n.get_library_flavour())",
                               env=env, timeout=120, check_exit=True)
    assert proc.stdout.split() == [str(LIB.resolve()), "nccl"]
