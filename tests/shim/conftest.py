"""Fixtures for the cuda.core shim tests.

* The stub HIP runtime (stub_hip.c, built by meson with the other C test artefacts:
  tests/shim/meson.build, tests/artefacts.py) is selected with NCCL4PY_HIP_LIBRARY, for this
  process and every subprocess a test starts. The tests use the installed nccl package.
* ``build_extension(dest, extra_flags)`` builds nccl._hip_compat._hip by the project's own meson
  target with extra compiler flags (tests/artefacts.py), for checks on the build itself.

Registration as ``cuda.core`` is process-global, so every test that registers runs in a fresh
interpreter (``run_python``).
"""

import os
from pathlib import Path

import pytest

import artefacts
import children

ROOT = Path(__file__).resolve().parents[2]
HIP_SRC = ROOT / "src" / "hip"
# The sources src/hip/meson.build lists (test_hip_sources.py checks that it lists every file).
HIP_SOURCES = ["hip_module.c", "hip_errors.c", "hip_library.c", "hip_runtime.c", "hip_dlpack.c"]


def build_extension(dest, extra_flags=()):
    """Build nccl._hip_compat._hip (src/hip) with extra_flags into dest; returns the file. Raises
    RuntimeError with the compiler's messages when it does not build."""
    return artefacts.build_extension(dest, extra_flags)


def stub_library(name="stub_hip"):
    """A stub HIP runtime of tests/shim/meson.build: stub_hip, stub_hip_norequired, stub_hip_nooptional."""
    return artefacts.artefact(f"tests/shim/lib{name}.so")


def pytest_configure(config):
    os.environ["NCCL4PY_HIP_LIBRARY"] = str(stub_library())
    os.environ.setdefault("STUB_HIP_DEVICE_COUNT", "2")


@pytest.fixture(autouse=True)
def no_library_choice(monkeypatch):
    """The shim's in-process tests run on the stub HIP runtime: NCCL_LIBRARY=host (which
    tests/multirank/conftest.py sets for the whole process when the suite runs together) would make
    the shim's first runtime call take the host backend instead (docs/architecture.md#what-backs-the-shim)."""
    monkeypatch.delenv("NCCL_LIBRARY", raising=False)


@pytest.fixture(scope="session")
def stub_path():
    return stub_library()


@pytest.fixture(scope="session")
def stub_variant():
    """stub_variant(name) -> path of that stub HIP runtime (tests/shim/meson.build)."""
    return stub_library


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
    selected; fails the test on a nonzero exit unless check=False. Returns the CompletedProcess."""

    def run(code, env=None, unset=(), check=True, timeout=120):
        environment = children.environment(drop=unset, **(env or {}))
        return children.run_python(code, env=environment, timeout=timeout, cwd=tmp_path, check_exit=check)

    return run
