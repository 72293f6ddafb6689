"""test_mpi.py's checks at 2 ranks under a real MPI launcher (the mpich wheel's mpirun), so the
MPI path runs in CI and not only at one rank inside this pytest process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import children
import harness  # tests/multirank is on sys.path (conftest.py)

HERE = Path(__file__).resolve().parent


@pytest.mark.timeout(300)
def test_mpi_checks_at_two_ranks(transport):
    pytest.importorskip("mpi4py", reason="mpi4py is not installed")
    mpirun = children.mpirun()
    if mpirun is None:
        pytest.skip("no mpirun (install the mpich wheel)")
    env = dict(os.environ, NCCL_LIBRARY="host", NCCL_HOST_TIMEOUT="30", NCCL_HOST_DIRECT=harness.TRANSPORTS[transport])
    cmd = [mpirun, "-n", "2", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "mpi",
           str(HERE / "test_mpi.py")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=280, cwd=HERE.parent.parent)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    # both ranks ran every check, and none was skipped (the mismatch check needs two ranks)
    assert out.count(" passed") == 2 and "skipped" not in out, out[-4000:]
