"""Child processes for every test directory: their environment, running Python code in a fresh
interpreter, reading what it reports, and finding mpirun.

The loaded NCCL/RCCL library, registration as ``cuda.core`` and the host backend's state are
process-global, so a test about any of them runs its code in a child. tests/ is on sys.path (the
root conftest.py lives there), so any test module can ``import children``.

* ``environment(drop=LOADER_VARIABLES, **overrides)``: this process's environment without the
  variables in ``drop``, with keyword arguments set (``None`` removes one).
* ``run_python(code, env=None, ...)``: ``python -c code`` (dedented); the CompletedProcess, or,
  with ``check=True``, an AssertionError carrying the child's output if it did not exit 0.
* ``last_json(proc)``: the JSON a child printed on its last line; an AssertionError with the
  child's output if it failed or printed nothing.
* ``LAUNCH_VARIABLES``: what a launcher sets for its ranks, for tests that launch ranks themselves.
* ``mpirun()``: mpirun on PATH or beside this interpreter (the mpich wheel installs it into the
  venv), or None.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

# Variables that steer library discovery; children start without them unless a test sets them.
LOADER_VARIABLES = ("NCCL_LIBRARY", "ROCM_PATH", "HIP_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH",
                    "NCCL4PY_DEV_DIR")
# Variables a launcher sets for its ranks; a test's own launch starts without them.
LAUNCH_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NCCL4PY_UNIQUE_ID", "MASTER_ADDR", "MASTER_PORT")
OUTPUT_TAIL = 4000


def environment(drop=LOADER_VARIABLES, drop_prefix=None, **overrides):
    """os.environ without the names in drop (and, given drop_prefix, every name starting with it);
    keyword arguments set variables (str()), or, given None, remove them."""
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not (drop_prefix and k.startswith(drop_prefix))}
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def describe(proc, what="the child"):
    """How a child ended, with its output: for failure messages."""
    how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    stdout, stderr = proc.stdout, proc.stderr
    if isinstance(stdout, bytes):
        stdout, stderr = stdout.decode(errors="replace"), stderr.decode(errors="replace")
    return f"{what} ended with {how}\n--- stdout\n{stdout[-OUTPUT_TAIL:]}\n--- stderr\n{stderr[-OUTPUT_TAIL:]}"


def check(proc, what="the child"):
    """proc, if it exited 0; else an AssertionError saying how it ended."""
    if proc.returncode != 0:
        raise AssertionError(describe(proc, what))
    return proc


def run_python(code, env=None, args=(), timeout=60, cwd=None, launcher=(), check_exit=False, text=True):
    """Runs the dedented code with this interpreter (python -c code args...) under env (default:
    this process's environment); launcher is put before the interpreter (a dynamic loader).
    Returns the CompletedProcess; check_exit=True fails on a non-zero exit (check())."""
    proc = subprocess.run([*map(str, launcher), sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                          env=env, capture_output=True, text=text, timeout=timeout, cwd=cwd)
    return check(proc) if check_exit else proc


def last_json(proc, what="the child"):
    """The JSON document a child printed on its last line of output; an AssertionError with its
    output if it did not exit 0 or printed nothing."""
    check(proc, what)
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise AssertionError(f"{what} printed nothing\n--- stderr\n{proc.stderr[-OUTPUT_TAIL:]}")
    return json.loads(lines[-1])


def mpirun():
    """mpirun on PATH, or beside this interpreter (the mpich wheel installs it into the venv); None
    if neither."""
    found = shutil.which("mpirun")
    beside = Path(sys.executable).parent / "mpirun"
    if found is None and beside.exists():
        found = str(beside)
    return found
