"""Every examples/01_basic example at 2 ranks (04_split also at 3) on the host backend, under
python -m nccl.run, and under mpirun when mpirun and mpi4py are installed.

Each example checks its own result and exits non-zero on a wrong answer, so a zero exit status
and the SUCCESS line are the test.
"""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import children

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "01_basic"
NAMES = ["01_allreduce", "02_send_recv", "03_broadcast_allgather", "04_split", "05_nonblocking_init"]


def env(**extra):
    return children.environment(drop=children.LAUNCH_VARIABLES, **{"NCCL_LIBRARY": "host", "NCCL_HOST_TIMEOUT": "60",
                                                                   **extra})


def run_example(name, nranks):
    path = EXAMPLES / f"{name}.py"
    return subprocess.run([sys.executable, "-m", "nccl.run", "-n", str(nranks), "--timeout", "240", str(path)],
                          env=env(), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name, nranks", [(n, 2) for n in NAMES] + [("04_split", 3)])
def test_example_under_nccl_run(name, nranks):
    r = run_example(name, nranks)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"[0] {name}: SUCCESS" in r.stdout
    assert "WRONG" not in r.stdout
    for rank in range(nranks):
        assert f"[{rank}] rank {rank}: " in r.stdout  # every rank checked something


@pytest.mark.parametrize("name", ["01_allreduce", "03_broadcast_allgather", "05_nonblocking_init"])
def test_example_as_one_process(name):
    r = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py")], env=env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{name}: SUCCESS" in r.stdout


def test_send_recv_needs_two_ranks():
    r = subprocess.run([sys.executable, str(EXAMPLES / "02_send_recv.py")], env=env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1 and "needs at least 2 ranks" in r.stdout


def _mpi_ready():
    if children.mpirun() is None:
        return False
    try:
        importlib.import_module("mpi4py")
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _mpi_ready(), reason="needs mpirun and mpi4py")
@pytest.mark.parametrize("name", NAMES)
def test_example_under_mpirun(name):
    r = subprocess.run([children.mpirun(), "-n", "2", sys.executable, str(EXAMPLES / f"{name}.py")], env=env(),
                       capture_output=True, text=True, timeout=300)
    # the exit status is the verdict: mpirun may interleave the ranks' output inside a line
    assert r.returncode == 0, r.stdout + r.stderr
