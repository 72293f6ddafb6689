"""Many threads on the extension at once: one communicator, the buffer resolver, and the first
calls of a fresh process (the library load and everything nccl._ext fills in lazily).

Each scenario runs in a fresh child interpreter on the host backend (_free_threading_child.py),
so the first-use paths really are first, and a crash or hang shows up as a failed test, not a
lost session. On a free-threaded build whose GIL is off in the child (the module declares it can
run without the GIL, or PYTHON_GIL=0 forces it off) these are real races; on a GIL build, or when
importing nccl._ext turned the GIL back on, they still run, interleaved by a tiny switch interval,
and must pass all the same.
"""

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("numpy")

CHILD = Path(__file__).with_name("_free_threading_child.py")
LOADER_VARIABLES = ("NCCL_LIBRARY", "ROCM_PATH", "HIP_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH",
                    "NCCL4PY_DEV_DIR")
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
NTHREADS = 8


def run_child(scenario, nthreads=NTHREADS, iterations=200):
    env = {k: v for k, v in os.environ.items() if k not in LOADER_VARIABLES}
    env.update(NCCL_LIBRARY="host", NCCL_HOST_TIMEOUT="30")
    proc = subprocess.run([sys.executable, str(CHILD), scenario, str(nthreads), str(iterations)],
                          env=env, capture_output=True, text=True, timeout=240, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, f"child exited with {proc.returncode}:\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if FREE_THREADED and os.environ.get("PYTHON_GIL") == "0":
        # PYTHON_GIL=0 keeps the GIL off whatever the modules declare: the race must be real.
        assert out["gil"] is False, "the GIL was on in the child despite PYTHON_GIL=0"
    return out


@pytest.mark.timeout(300)
# Seen twice in full-suite runs on a loaded 2-core machine, never alone (30 runs): once a refusal
# appears, every thread but one gets "ncclBroadcast: communicator is in use by another thread"
# although the calls are serialized by a lock, as if the host backend's in-use mark (active or
# group_owner in src/host/group.c) stayed set. Not yet explained; kept visible as a non-strict
# xfail until it is.
@pytest.mark.xfail(strict=False, reason="host backend: an in-use mark that outlives its call under load (open)")
def test_one_communicator_shared_by_threads_taking_turns():
    out = run_child("comm_turns", iterations=150)
    assert out["failures"] == [], out
    assert out["calls"] == NTHREADS * 150 * 3 and out["refused"] == 0


@pytest.mark.timeout(300)
def test_one_communicator_used_by_threads_at_once():
    """Misuse (NCCL wants one issuing thread): refused calls raise, the others are right."""
    out = run_child("comm_contend", iterations=150)
    assert out["failures"] == [], out
    assert out["calls"] == NTHREADS * 150 * 3


@pytest.mark.timeout(300)
@pytest.mark.parametrize("round_", range(2))
def test_buffer_resolver_from_many_threads(round_):
    out = run_child("buffers", iterations=400)
    assert out["failures"] == [], out
    assert out["calls"] == NTHREADS * (400 + out["kinds"])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("round_", range(3))
def test_first_use_raced_by_many_threads(round_):
    out = run_child("first_use", nthreads=16, iterations=4)
    assert out["failures"] == [], out
    assert out["calls"] == 16 * 4
