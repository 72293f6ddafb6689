"""Fixtures for the loader tests: tiny NCCL-ABI libraries (mini_nccl.c, built by meson with the other
C test artefacts: tests/loader/meson.build, tests/artefacts.py), and a runner that executes a
snippet in a fresh interpreter (the loaded library is process-wide, so each scenario needs one)."""

import shutil
from pathlib import Path

import pytest

import artefacts
import children


MINI_LIBS = ("nccl", "rccl", "rccl_other", "not_nccl", "init_2_13", "init_2_22", "init_2_23")


@pytest.fixture(scope="session")
def mini_libs():
    """{name: path} of the mini libraries (libnccl.so, librccl.so, librccl_other.so, libnot_nccl.so, and
    the constructor generations libinit_2_13/2_22/2_23.so)."""
    return {name: artefacts.artefact(f"tests/loader/lib{name}.so") for name in MINI_LIBS}


def _place(src, directory, name):
    """Copies a built library into directory under a file name of the test's choosing."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    dst = directory / name
    shutil.copyfile(src, dst)
    return dst


@pytest.fixture
def gpu_dev(tmp_path):
    """A directory standing in for /dev on a machine with an NVIDIA GPU (NCCL4PY_DEV_DIR)."""
    d = tmp_path / "dev_gpu"
    d.mkdir()
    (d / "nvidia0").touch()
    return d


@pytest.fixture
def amd_dev(tmp_path):
    """A directory standing in for /dev on a machine with an AMD GPU (the ROCm kernel driver's kfd)."""
    d = tmp_path / "dev_amd"
    d.mkdir()
    (d / "kfd").touch()
    return d


@pytest.fixture
def both_dev(tmp_path):
    """A directory standing in for /dev on a machine with an AMD and an NVIDIA GPU."""
    d = tmp_path / "dev_both"
    d.mkdir()
    (d / "kfd").touch()
    (d / "nvidia0").touch()
    return d


@pytest.fixture
def no_gpu_dev(tmp_path):
    """A directory standing in for /dev on a machine without GPU device nodes."""
    d = tmp_path / "dev_none"
    d.mkdir()
    (d / "nvidiactl").touch()  # present in some containers without a GPU; must not count
    return d


def _run_py(code, env_extra=None, drop=(), expect_ok=True):
    """Runs code in a fresh interpreter with a controlled loader environment; returns the JSON the
    snippet prints on its last line (or the CompletedProcess when expect_ok is False)."""
    env = children.environment(drop=(*children.LOADER_VARIABLES, "LD_LIBRARY_PATH", *drop), **(env_extra or {}))
    proc = children.run_python(code, env=env, timeout=60)
    return children.last_json(proc, "the snippet") if expect_ok else proc


@pytest.fixture
def place():
    return _place


@pytest.fixture
def run_py():
    return _run_py
