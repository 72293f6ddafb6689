"""Fixtures for the loader tests: tiny NCCL-ABI libraries (mini_nccl.c, built by meson with the other
C test artefacts: tests/loader/meson.build, tests/artefacts.py), and a runner that executes a
snippet in a fresh interpreter (the loaded library is process-wide, so each scenario needs one)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import artefacts


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
    env = {k: v for k, v in os.environ.items()
           if k not in ("NCCL_LIBRARY", "ROCM_PATH", "HIP_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH",
                        "NCCL4PY_DEV_DIR", "LD_LIBRARY_PATH") and k not in drop}
    env.update({k: str(v) for k, v in (env_extra or {}).items()})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=60)
    if not expect_ok:
        return proc
    if proc.returncode != 0:
        raise AssertionError(f"snippet failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def place():
    return _place


@pytest.fixture
def run_py():
    return _run_py
