"""What ``python -m nccl.run`` tells its ranks about the launch (its name, and the plain channel
that nccl.bench writes its table to), and the check that keeps a rank from running a job of its
own.

The launcher (nccl/run.py) sets LAUNCHER_VARIABLE=LAUNCHER_NAME and WORLD_SIZE in every rank's
environment. A program that takes its rank and size from somewhere else sees the wrong size: one
written for MPI (``MPI.COMM_WORLD.Get_rank()``, as NVIDIA's examples are) finds itself alone,
since mpi4py initialises MPI as a singleton without ``mpirun``, and every rank would then run a
1-rank job and succeed. So every creation of a 1-rank communicator (``Communicator.init`` and
``initialize``, the bindings' ``comm_init_rank``, ``comm_init_rank_config`` and
``comm_init_rank_scalable``) calls ``check_one_rank()`` first, from C (nccl.core and
nccl.bindings.nccl hand it to nccl._ext at their import):

* inside a launch of several ranks, with mpi4py's MPI initialised and counting one process, it
  raises RuntimeError saying what happened and the ``mpirun`` command to use instead;
* inside a launch of several ranks otherwise, it warns (RuntimeWarning): a rank may want a
  private 1-rank communicator, but more often the program ignores the launcher's variables.

Standard library only, so importing it with the bindings costs nothing.
"""

import os
import shlex
import sys
import warnings

__all__ = ["LAUNCHER_VARIABLE", "LAUNCHER_NAME", "PLAIN_FD_VARIABLE", "check_one_rank"]

LAUNCHER_VARIABLE = "NCCL4PY_LAUNCHER"
LAUNCHER_NAME = "nccl.run"
# The descriptor of a rank's plain channel: lines written to it reach the launcher's stdout
# without the rank prefix (nccl.bench's table; docs/api/launcher.md#output).
PLAIN_FD_VARIABLE = "NCCL4PY_RUN_PLAIN_FD"


def _launch_size():
    """WORLD_SIZE of the nccl.run launch this process is a rank of, or None."""
    if os.environ.get(LAUNCHER_VARIABLE) != LAUNCHER_NAME:
        return None
    try:
        return int(os.environ.get("WORLD_SIZE", ""))
    except ValueError:
        return None


def _mpi_world_size():
    """The size of MPI's COMM_WORLD when mpi4py has initialised MPI in this process, else None."""
    mpi = sys.modules.get("mpi4py.MPI")
    try:
        if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
            return None
        return mpi.COMM_WORLD.Get_size()
    except Exception:  # an mpi4py we cannot ask: no MPI verdict
        return None


def check_one_rank():
    """Refuses (RuntimeError) or flags (RuntimeWarning) a 1-rank communicator created by one rank
    of a multi-rank ``python -m nccl.run`` launch; nothing otherwise."""
    world = _launch_size()
    if world is None or world < 2:
        return
    rank = os.environ.get("RANK", "?")
    launch = f"python -m {LAUNCHER_NAME} -n {world}"
    if _mpi_world_size() == 1:
        command = shlex.join(["mpirun", "-n", str(world), "python", *sys.orig_argv[1:]])
        raise RuntimeError(
            f"this process is rank {rank} of {world} started by `{launch}`, but MPI counts 1 process "
            f"(mpi4py's MPI.COMM_WORLD.Get_size() is 1: {LAUNCHER_NAME} starts its ranks without MPI), "
            f"so this 1-rank communicator would make each of the {world} ranks a 1-rank job of its own. "
            f"The program takes its rank from MPI: run it with `{command}`, or take the rank from the "
            f"launcher with nccl.core.Communicator.from_env()")
    warnings.warn(
        f"rank {rank} of {world} started by `{launch}` creates a 1-rank communicator; if the program "
        f"meant to use all {world} ranks, take the rank and size from the launcher "
        f"(nccl.core.Communicator.from_env(), or RANK, WORLD_SIZE and NCCL4PY_UNIQUE_ID)",
        RuntimeWarning, stacklevel=2)
