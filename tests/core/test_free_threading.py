"""Many threads on the extension at once: one communicator, the buffer resolver, and the first
calls of a fresh process (the library load and everything nccl._ext fills in lazily).

Each scenario runs in a fresh child interpreter on the host backend (_free_threading_child.py),
so the first-use paths really are first, and a crash or hang shows up as a failed test, not a
lost session. On a free-threaded build the GIL must stay off in the child (nccl._ext declares
Py_MOD_GIL_NOT_USED; only PYTHON_GIL=1 may turn it on), so these are real races; on a GIL build
they still run, interleaved by a tiny switch interval, and must pass all the same.
"""

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import children
pytest.importorskip("numpy")

CHILD = Path(__file__).with_name("_free_threading_child.py")
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
NTHREADS = 8


def run_child(scenario, nthreads=NTHREADS, iterations=200):
    env = children.environment(NCCL_LIBRARY="host", NCCL_HOST_TIMEOUT="30")
    proc = subprocess.run([sys.executable, str(CHILD), scenario, str(nthreads), str(iterations)],
                          env=env, capture_output=True, text=True, timeout=270, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, f"child exited with {proc.returncode}:\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if FREE_THREADED and os.environ.get("PYTHON_GIL") != "1":
        # Importing a module that does not declare Py_mod_gil turns the GIL on (with a warning):
        # the races below would then not be real.
        assert out["gil"] is False, "the GIL was on in the child: an imported extension re-enabled it"
    return out


@pytest.mark.timeout(300)
@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded CPython build")
def test_importing_the_package_keeps_the_gil_off():
    env = children.environment(drop=children.LOADER_VARIABLES + ("PYTHON_GIL",), NCCL_LIBRARY="host")
    code = ("import sys, warnings; warnings.simplefilter('error'); "
            "import nccl._ext, nccl.core, nccl.bindings.nccl, nccl.bindings.rocm_extensions; "
            "nccl.core.get_unique_id(); print(sys._is_gil_enabled())")
    proc = children.run_python(code, env=env, timeout=270, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip() == "False"


@pytest.mark.timeout(300)
def test_one_communicator_shared_by_threads_taking_turns():
    out = run_child("comm_turns", iterations=150)
    assert out["failures"] == [], out
    assert out["calls"] == NTHREADS * 150 * 3 and out["refused"] == 0


@pytest.mark.timeout(300)
def test_one_communicator_shared_by_everything_then_destroyed_by_all():
    out = run_child("comm_mixed", iterations=100)
    assert out["failures"] == [], out
    assert out["calls"] == NTHREADS * 100
    assert out["kept"] == NTHREADS * 34  # handles left open for destroy() to close (i % 3 == 0)


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
