"""Fixtures for the cuda.core shim tests.

* The stub HIP runtime (stub_hip.c) is compiled with gcc into a temporary directory and selected
  with NCCL4PY_HIP_LIBRARY, for this process and every subprocess a test starts.
* If no ``nccl`` package is installed, the extension is compiled from src/hip/ into a scratch tree
  together with links to src/nccl/_hip_compat/, and that tree goes first on sys.path here and on
  PYTHONPATH in the subprocesses ``run_python`` starts. An installed ``nccl`` that ships
  ``_hip_compat._hip`` is used as is; one that lacks it makes these tests skip.

Registration as ``cuda.core`` is process-global, so every test that registers runs in a fresh
interpreter (``run_python``).
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HIP_SRC = ROOT / "src" / "hip"
SHARED_INCLUDE = ROOT / "src" / "include"
# The GPU runtime loader shared with nccl._ext (meson.build's gpu_loader_src).
SHARED_SOURCES = [ROOT / "src" / "common" / "gpu_loader.c"]
PKG_SRC = ROOT / "src" / "nccl" / "_hip_compat"
STUB_SRC = Path(__file__).resolve().parent / "stub_hip.c"
HIP_SOURCES = ["hip_module.c", "hip_errors.c", "hip_library.c", "hip_runtime.c", "hip_dlpack.c"]
# The flags meson uses (warning_level=2, c_std=c11) plus those of src/hip/meson.build.
EXT_CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-D_GNU_SOURCE", "-fvisibility=hidden", "-O1", "-g"]
# Extra flags for the scratch extension and the stub, e.g. "-fsanitize=address,undefined".
EXTRA_CFLAGS = os.environ.get("NCCL4PY_SHIM_TEST_CFLAGS", "").split()

_session = {}


def _probe(code):
    """Runs code in a fresh interpreter (so nothing is imported, or registered, here)."""
    env = {k: v for k, v in os.environ.items() if k != "NCCL4PY_HIP_LIBRARY"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True).returncode == 0


def _installed_extension():
    """True if an importable nccl package already ships nccl._hip_compat._hip."""
    return _probe("import nccl._hip_compat._hip")


def _other_nccl_importable():
    return _probe("import importlib.util, sys; sys.exit(importlib.util.find_spec('nccl') is None)")


def _gcc(args, cwd=None):
    result = subprocess.run(["gcc", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"gcc {' '.join(args)} failed:\n{result.stderr}")
    return result


def build_extension(dest, extra_flags=()):
    """Compile nccl._hip_compat._hip from src/hip into dest; returns the file."""
    include = sysconfig.get_paths()["include"]
    out = Path(dest) / ("_hip" + sysconfig.get_config_var("EXT_SUFFIX"))
    _gcc([*EXT_CFLAGS, *EXTRA_CFLAGS, *extra_flags, "-shared", "-fPIC", f"-I{include}", f"-I{SHARED_INCLUDE}",
          *[str(HIP_SRC / name) for name in HIP_SOURCES], *map(str, SHARED_SOURCES), "-ldl", "-lpthread",
          "-o", str(out)])
    return out


def build_stub(dest, name="libstub_hip.so", defines=()):
    out = Path(dest) / name
    _gcc(["-std=c11", "-O1", "-g", "-Wall", "-Wextra", *EXTRA_CFLAGS, "-shared", "-fPIC",
          *[f"-D{d}" for d in defines], str(STUB_SRC), "-lpthread", "-o", str(out)])
    return out


def _scratch_tree(base):
    site = base / "site"
    pkg = site / "nccl"
    compat = pkg / "_hip_compat"
    compat.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "# Test scratch tree: lets other installed `nccl` portions stay importable.\n"
        "from pkgutil import extend_path\n__path__ = extend_path(__path__, __name__)\n"
    )
    for entry in PKG_SRC.iterdir():
        if entry.name == "__pycache__" or entry.suffix == ".so":
            continue
        (compat / entry.name).symlink_to(entry)
    build_extension(compat)
    return site


def pytest_configure(config):
    base = Path(tempfile.mkdtemp(prefix="nccl4py-shim-tests-"))
    _session["base"] = base
    _session["site"] = None
    _session["skip"] = None
    _session["stub"] = build_stub(base)
    if not _installed_extension():
        if _other_nccl_importable():
            # An installed nccl without the extension: a scratch `nccl` would shadow it for every
            # other test in this session, so the shim tests are skipped instead.
            _session["skip"] = ("the installed nccl package lacks nccl._hip_compat._hip "
                                "(the meson build needs subdir('src/hip'))")
        else:
            site = _scratch_tree(base)
            _session["site"] = site
            sys.path.insert(0, str(site))
    os.environ["NCCL4PY_HIP_LIBRARY"] = str(_session["stub"])
    os.environ.setdefault("STUB_HIP_DEVICE_COUNT", "2")


def pytest_collection_modifyitems(config, items):
    reason = _session.get("skip")
    if reason is None:
        return
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_unconfigure(config):
    base = _session.get("base")
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)


def pytest_report_header(config):
    site = _session.get("site")
    return f"nccl._hip_compat: {'scratch build in ' + str(site) if site else 'installed package'}"


@pytest.fixture(scope="session")
def stub_path():
    return _session["stub"]


@pytest.fixture(scope="session")
def stub_variant():
    """build(name, defines) -> path of a stub compiled with those -D switches."""
    built = {}

    def build(name, defines):
        if name not in built:
            built[name] = build_stub(_session["base"], f"lib{name}.so", defines)
        return built[name]

    return build


@pytest.fixture(scope="session")
def stub(stub_path):
    """ctypes handle on the stub loaded in this process (the same object the shim opens)."""
    import ctypes

    lib = ctypes.CDLL(str(stub_path))
    lib.stubHipLive.restype = ctypes.c_long
    lib.stubHipLive.argtypes = [ctypes.c_int]
    lib.stubHipCalls.restype = ctypes.c_long
    lib.stubHipCalls.argtypes = [ctypes.c_char_p]
    lib.stubHipBlock.argtypes = [ctypes.c_char_p]
    lib.stubHipWaitEntered.argtypes = [ctypes.c_int]
    lib.stubHipSetEventsPending.argtypes = [ctypes.c_int]
    return lib


@pytest.fixture(scope="session")
def hip():
    """The C module, loaded against the stub (2 devices)."""
    from nccl._hip_compat import _hip

    _hip.load()
    return _hip


@pytest.fixture(scope="session")
def shim(hip):
    import nccl._hip_compat.cuda_core_shim as shim

    return shim


@pytest.fixture
def run_python(tmp_path):
    """run_python(code, env={...}, unset=(...)) runs code in a fresh interpreter, with the stub
    selected and the scratch tree importable; fails the test on a nonzero exit unless
    check=False. Returns the CompletedProcess."""

    def run(code, env=None, unset=(), check=True, timeout=120):
        environment = dict(os.environ)
        for name in unset:
            environment.pop(name, None)
        site = _session.get("site")
        if site is not None:
            environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), environment.get("PYTHONPATH")]))
        environment.update(env or {})
        script = tmp_path / "child.py"
        script.write_text(textwrap.dedent(code))
        result = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True,
                                text=True, timeout=timeout, cwd=str(tmp_path))
        if check and result.returncode != 0:
            pytest.fail(f"child exited with {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
        return result

    return run
