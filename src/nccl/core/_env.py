"""Communicator.from_env(**kwargs): a communicator from whatever launched this process.

The C classmethod ``nccl.core.Communicator.from_env`` calls ``from_env(cls, **kwargs)`` here. It
finds the rank, the number of ranks and the unique id, then returns
``cls.init(nranks=..., rank=..., unique_id=UniqueId)``. Launchers, in the order they are checked:

1. ``python -m nccl.run``: RANK, WORLD_SIZE and NCCL4PY_UNIQUE_ID (the id, 256 hex digits, made
   by the launcher).
2. MPI (``mpirun``/``mpiexec``/``srun`` with PMI): OMPI_COMM_WORLD_RANK/SIZE (Open MPI),
   PMI_RANK/PMI_SIZE (MPICH, Intel MPI, Slurm), PMIX_RANK (PMIx, the size from MPI), or
   MV2_COMM_WORLD_RANK/SIZE (MVAPICH). Rank 0 makes the id, and ``mpi4py``'s
   ``COMM_WORLD.bcast`` hands it to the others; rank and size are MPI's. Without mpi4py the id
   has no channel, and a RuntimeError says so (unless MASTER_ADDR/MASTER_PORT are also set).
3. ``torchrun`` (or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): rank 0
   makes the id and hands it over TCP (see _id_exchange): through torchrun's own store when its
   agent runs one (TORCHELASTIC_USE_AGENT_STORE=True), otherwise through our authenticated
   exchange on MASTER_ADDR, port MASTER_PORT + 1 or NCCL4PY_ID_PORT.
4. ``srun`` without PMI (SLURM_PROCID and SLURM_NTASKS / SLURM_STEP_NUM_TASKS of a step with
   several tasks): served like 3 when MASTER_ADDR and MASTER_PORT are set.
5. No launcher at all: a 1-rank communicator, so a script also runs as plain ``python script.py``;
   one line on stderr says so and how to start N ranks (once per process).

Every other sign of a launch with several tasks that gives no channel for the id is an error,
never a silent 1-rank job: RANK/WORLD_SIZE without an id channel, srun without PMI and without
MASTER_ADDR/MASTER_PORT, Flux or jsrun tasks, an MPI size without its rank, LOCAL_WORLD_SIZE > 1.

Keyword arguments: ``config`` (an NCCLConfig, passed to ``init``), ``timeout`` (seconds for the id
exchange, default NCCL4PY_ID_TIMEOUT or 300), ``environ`` (a mapping read instead of os.environ).
The communicator's device is not chosen here: on GPUs, make ``local_rank()``'s device current first.
"""

import os
import sys

from nccl.core._id_exchange import (ID_BYTES, SECRET_VARIABLE, exchange_over_store, exchange_over_tcp,
                                    torch_store_class, uses_agent_store)

__all__ = ["from_env", "detect", "local_rank", "exchange_over_tcp", "LaunchInfo"]

DEFAULT_TIMEOUT_S = 300.0

# (rank variable, size variable or None, its own machine-local rank variable or None) of the MPI
# launchers we recognise
_MPI_VARIABLES = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("PMIX_RANK", None, None),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK"),
)
# the rank within the machine under MPI: the launcher's own variable first, then these, LOCAL_RANK
# last (docs/api/several-machines.md#the-variables-read)
_MPI_LOCAL_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                             "MV2_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK")


class LaunchInfo:
    """What detect() found: kind ("nccl.run", "mpi", "torchrun", "single"), rank, nranks,
    local_rank, and for each kind its own details (uid_hex, the MPI variable, master address)."""

    __slots__ = ("kind", "rank", "nranks", "local_rank", "uid_hex", "source", "master")

    def __init__(self, kind, rank, nranks, local_rank=None, uid_hex=None, source=None, master=None):
        self.kind, self.rank, self.nranks, self.local_rank = kind, rank, nranks, local_rank
        self.uid_hex, self.source, self.master = uid_hex, source, master

    def __repr__(self):
        return (f"LaunchInfo(kind={self.kind!r}, rank={self.rank}, nranks={self.nranks}, "
                f"local_rank={self.local_rank}, source={self.source!r}, master={self.master!r})")


def _int(env, name, minimum=0):
    text = env.get(name)
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={text!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")
    return value


def _rank_and_size(env, rank_var, size_var):
    rank = _int(env, rank_var)
    nranks = _int(env, size_var, minimum=1)
    if rank >= nranks:
        raise ValueError(f"{rank_var}={rank} is not below {size_var}={nranks}")
    return rank, nranks


def _id_port_origin(env):
    """Where the id exchange's port comes from: "NCCL4PY_ID_PORT" when set, else "MASTER_PORT + 1"."""
    return "NCCL4PY_ID_PORT" if env.get("NCCL4PY_ID_PORT") else "MASTER_PORT + 1"


def _master(env):
    addr, port = env.get("MASTER_ADDR"), env.get("MASTER_PORT")
    if not addr or not port:
        return None
    if _id_port_origin(env) == "NCCL4PY_ID_PORT":
        p = _int(env, "NCCL4PY_ID_PORT", 1)
    else:
        p = _int(env, "MASTER_PORT", 1) + 1
    if p > 65535:
        raise ValueError(f"the id exchange port {p} is out of range (MASTER_PORT + 1, or NCCL4PY_ID_PORT)")
    return addr, p


def _first_count(env, names):
    """The value of the first of names set to a whole number, or None."""
    for name in names:
        text = env.get(name, "")
        if text.isdigit():
            return int(text)
    return None


def detect(environ=None):
    """The LaunchInfo of this process's launcher, from the environment alone (no MPI call, no
    library load). Raises ValueError for inconsistent or unusable variables."""
    env = os.environ if environ is None else environ
    uid_hex = env.get("NCCL4PY_UNIQUE_ID")
    if uid_hex:
        rank, nranks = _rank_and_size(env, "RANK", "WORLD_SIZE")
        uid_hex = uid_hex.strip()
        try:
            ok = len(bytes.fromhex(uid_hex)) == ID_BYTES
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"NCCL4PY_UNIQUE_ID must be {2 * ID_BYTES} hex digits (a {ID_BYTES}-byte id)")
        local = _first_count(env, ("LOCAL_RANK",))
        return LaunchInfo("nccl.run", rank, nranks, rank if local is None else local, uid_hex, "NCCL4PY_UNIQUE_ID")
    for rank_var, size_var, local_var in _MPI_VARIABLES:
        if rank_var in env and (size_var is None or size_var in env):
            if size_var is None:
                rank, nranks = _int(env, rank_var), None
            else:
                rank, nranks = _rank_and_size(env, rank_var, size_var)
            local = _first_count(env, ((local_var,) if local_var else ()) + _MPI_LOCAL_RANK_VARIABLES)
            return LaunchInfo("mpi", rank, nranks, local, source=rank_var, master=_master(env))
    if "WORLD_SIZE" in env or "RANK" in env:
        rank, nranks = _rank_and_size(env, "RANK", "WORLD_SIZE")
        master = _master(env)
        if master is None and nranks > 1:
            raise ValueError("RANK and WORLD_SIZE are set, but there is no channel for the unique id: launch with "
                             "python -m nccl.run (NCCL4PY_UNIQUE_ID), mpirun (with mpi4py), or torchrun "
                             "(MASTER_ADDR and MASTER_PORT)")
        return LaunchInfo("torchrun", rank, nranks, _first_count(env, ("LOCAL_RANK",)), source="RANK", master=master)
    slurm = _slurm_tasks(env)
    if slurm is not None:
        rank, nranks, source = slurm
        master = _master(env)
        if master is None:
            raise ValueError(f"srun started this process as task {rank} of {nranks} ({source}), without PMI, so "
                             "there is no channel for the unique id: use srun --mpi=pmix (or pmi2) with mpi4py "
                             "installed, set MASTER_ADDR and MASTER_PORT, or start the ranks with python -m nccl.run")
        return LaunchInfo("slurm", rank, nranks, _first_count(env, ("SLURM_LOCALID", "LOCAL_RANK")), source=source,
                          master=master)
    _refuse_other_launches(env)
    return LaunchInfo("single", 0, 1, 0, source=None)


def _int_or_none(env, name):
    text = env.get(name, "")
    return int(text) if text.strip().isdigit() else None


def _slurm_tasks(env):
    """(rank, ntasks, description) when this process is one task of an srun step with several
    tasks; None otherwise. A batch script (one process, SLURM_PROCID=0 outside any step) is not."""
    procid = _int_or_none(env, "SLURM_PROCID")
    if procid is None:
        return None
    step_tasks = _int_or_none(env, "SLURM_STEP_NUM_TASKS")
    ntasks = step_tasks if step_tasks is not None else _int_or_none(env, "SLURM_NTASKS")
    in_step = step_tasks is not None or "SLURM_STEP_ID" in env or "SLURM_STEPID" in env
    if ntasks is None or ntasks <= 1 or not (in_step or procid > 0):
        return None
    if procid >= ntasks:
        raise ValueError(f"SLURM_PROCID={procid} is not below the number of tasks {ntasks}")
    size_var = "SLURM_STEP_NUM_TASKS" if step_tasks is not None else "SLURM_NTASKS"
    return procid, ntasks, f"SLURM_PROCID={procid}, {size_var}={ntasks}"


# Other launchers of several tasks that leave no channel for the id: (variable, what it means).
_TASK_COUNTS = (
    ("FLUX_JOB_SIZE", "a Flux job of {n} tasks (FLUX_JOB_SIZE)"),
    ("JSM_NAMESPACE_SIZE", "jsrun with {n} tasks (JSM_NAMESPACE_SIZE)"),
    ("OMPI_COMM_WORLD_SIZE", "Open MPI with {n} ranks (OMPI_COMM_WORLD_SIZE, without OMPI_COMM_WORLD_RANK)"),
    ("PMI_SIZE", "a PMI launch of {n} ranks (PMI_SIZE, without PMI_RANK)"),
    ("MPI_LOCALNRANKS", "an MPI launch with {n} local ranks (MPI_LOCALNRANKS, without a rank variable)"),
    ("LOCAL_WORLD_SIZE", "a launch of {n} local ranks (LOCAL_WORLD_SIZE, without RANK and WORLD_SIZE)"),
)


def _refuse_other_launches(env):
    """Raises when the environment shows a launch of several tasks that from_env cannot serve:
    each task would otherwise run a 1-rank job of its own, silently."""
    for var, what in _TASK_COUNTS:
        n = _int_or_none(env, var)
        if n is not None and n > 1:
            raise ValueError(f"this process looks like one of {what.format(n=n)}, but there is no channel for the "
                             "unique id: launch with python -m nccl.run, mpirun (with mpi4py), or torchrun; or set "
                             "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT")


_said_one_rank = False


def _say_one_rank():
    """One line on stderr, once per process: no launcher was found, so this is a 1-rank world,
    and how to start several ranks instead (docs/api/communicators.md#from-a-launcher)."""
    global _said_one_rank
    if _said_one_rank:
        return
    _said_one_rank = True
    script = sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else "script.py"
    print(f"nccl4py: no launcher found, so this is rank 0 of a 1-rank world; for N ranks run python -m nccl.run -n N "
          f"{script} (or torchrun --nproc-per-node N, or mpirun -n N python)", file=sys.stderr, flush=True)


def local_rank(environ=None):
    """This process's rank among the ranks on its machine, as its launcher says: LOCAL_RANK under
    nccl.run and torchrun, the MPI launcher's own variable under mpirun/srun (see ``detect``); 0
    when the launcher does not say or there is none. On GPUs the device to make current before
    ``Communicator.from_env`` is usually ``local_rank() % device count``. Raises ValueError where
    ``detect`` does."""
    info = detect(environ)
    return 0 if info.local_rank is None else info.local_rank


def _new_id_bytes():
    import nccl.bindings.nccl as b

    return bytes(b.get_unique_id())


def _exchange(rank, nranks, master, env, timeout):
    """The id for a torchrun-style launch: made by rank 0, handed over TCP (see _id_exchange)."""
    uid = _new_id_bytes() if rank == 0 else None
    if nranks == 1:
        return uid
    addr, id_port = master
    store = torch_store_class() if uses_agent_store(env) else None
    if store is not None:
        return exchange_over_store(store, rank, uid, timeout, env)
    return exchange_over_tcp(rank, nranks, addr, id_port, uid=uid, timeout=timeout, secret=env.get(SECRET_VARIABLE),
                             port_origin=_id_port_origin(env))


# The MPI each launcher's rank variable comes from, for the message when mpi4py belongs to another.
_MPI_OF_VARIABLE = {"OMPI_COMM_WORLD_RANK": "Open MPI", "PMI_RANK": "MPICH, Intel MPI or Slurm (PMI)",
                    "PMIX_RANK": "a PMIx launcher", "MV2_COMM_WORLD_RANK": "MVAPICH"}


def _check_mpi_agrees(info, MPI, rank, nranks):
    """Raises when mpi4py's MPI does not see the launch the variables describe: mpi4py built for
    another MPI than the mpirun that started this process initialises a 1-process world, and each
    rank would run a 1-rank job of its own."""
    if (info.nranks is None or info.nranks == nranks) and info.rank == rank:
        return
    try:
        library = MPI.Get_library_version().strip().splitlines()[0]
    except Exception:  # noqa: BLE001 - only for the message
        library = "unknown"
    described = f"rank {info.rank}" + ("" if info.nranks is None else f" of {info.nranks}")
    raise RuntimeError(f"this process was started by {_MPI_OF_VARIABLE[info.source]} as {described} "
                       f"({info.source}), but mpi4py's MPI ({library}) sees rank {rank} of {nranks}: mpi4py is built "
                       "for another MPI than the launcher. Start the job with the mpirun of mpi4py's MPI, or "
                       "install an mpi4py built for the launcher's MPI, or launch with python -m nccl.run")


def _mpi_exchange(info, env, timeout):
    """(rank, nranks, id bytes) through mpi4py, or through TCP when mpi4py is absent but
    MASTER_ADDR/MASTER_PORT are set."""
    try:
        from mpi4py import MPI
    except ImportError:
        MPI = None
    if MPI is None:
        if info.master is not None and info.nranks is not None:
            return info.rank, info.nranks, _exchange(info.rank, info.nranks, info.master, env, timeout)
        raise RuntimeError(f"running under MPI ({info.source} is set) but mpi4py is not importable, so the unique "
                           "id cannot be broadcast: pip install mpi4py, or launch with python -m nccl.run")
    world = MPI.COMM_WORLD
    rank, nranks = world.Get_rank(), world.Get_size()
    _check_mpi_agrees(info, MPI, rank, nranks)
    uid = None
    error = None
    if rank == 0:
        try:
            uid = _new_id_bytes()
        except Exception as exc:  # noqa: BLE001 - every rank must leave the bcast
            error = f"{type(exc).__name__}: {exc}"
    uid, error = world.bcast((uid, error), root=0)
    if error is not None:
        raise RuntimeError(f"rank 0 could not create the unique id: {error}")
    return rank, nranks, uid


def from_env(cls, *, config=None, timeout=None, environ=None, trace_buffer=None):
    """``cls.init(nranks=..., rank=..., unique_id=...)`` from the launcher's environment (see the
    module documentation for the launchers recognised and how the id travels)."""
    env = os.environ if environ is None else environ
    if timeout is None:
        timeout = float(env.get("NCCL4PY_ID_TIMEOUT") or DEFAULT_TIMEOUT_S)
    info = detect(env)
    if info.kind == "nccl.run":
        rank, nranks, uid = info.rank, info.nranks, bytes.fromhex(info.uid_hex)
    elif info.kind == "mpi":
        rank, nranks, uid = _mpi_exchange(info, env, timeout)
    elif info.kind in ("torchrun", "slurm"):
        rank, nranks = info.rank, info.nranks
        uid = _exchange(rank, nranks, info.master, env, timeout)
    else:
        _say_one_rank()
        rank, nranks, uid = 0, 1, _new_id_bytes()
    from nccl.core._unique_id import UniqueId

    kwargs = {"nranks": nranks, "rank": rank, "unique_id": UniqueId.from_bytes(uid), "trace_buffer": trace_buffer}
    if config is not None:
        kwargs["config"] = config
    return cls.init(**kwargs)
