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
3. ``torchrun`` (or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): torchrun
   has no channel for an NCCL id, so rank 0 makes one and serves it over TCP on MASTER_ADDR,
   port MASTER_PORT + 1 (NCCL4PY_ID_PORT overrides the port); the other ranks connect, with
   retries, until ``timeout``. See ``exchange_over_tcp``.
4. No launcher at all (no WORLD_SIZE, no MPI variables): a 1-rank communicator, so a script also
   runs as plain ``python script.py``.

RANK and WORLD_SIZE without an id channel (no NCCL4PY_UNIQUE_ID, no MASTER_ADDR/MASTER_PORT) are
an error: every rank would make its own id and hang.

Keyword arguments: ``config`` (an NCCLConfig, passed to ``init``), ``timeout`` (seconds for the id
exchange, default NCCL4PY_ID_TIMEOUT or 300), ``environ`` (a mapping read instead of os.environ).
The communicator's device is not chosen here: on GPUs, make ``local_rank()``'s device current first.
"""

import os
import socket
import struct
import time

__all__ = ["from_env", "detect", "local_rank", "exchange_over_tcp", "LaunchInfo"]

ID_BYTES = 128
DEFAULT_TIMEOUT_S = 300.0
_MAGIC = b"N4PYID1\0"
_HELLO = struct.Struct("<8sii")  # magic, rank, nranks
_HELLO_WAIT_S = 2.0  # one connection may keep rank 0 this long; it serves connections one at a time

# (rank variable, size variable or None) of the MPI launchers we recognise
_MPI_VARIABLES = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("PMIX_RANK", None),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
)
# the rank within the machine under MPI: the launcher's own variable first, then LOCAL_RANK
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


def _master(env):
    addr, port = env.get("MASTER_ADDR"), env.get("MASTER_PORT")
    if not addr or not port:
        return None
    id_port = env.get("NCCL4PY_ID_PORT")
    p = _int(env, "NCCL4PY_ID_PORT", 1) if id_port else _int(env, "MASTER_PORT", 1) + 1
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
    for rank_var, size_var in _MPI_VARIABLES:
        if rank_var in env and (size_var is None or size_var in env):
            if size_var is None:
                rank, nranks = _int(env, rank_var), None
            else:
                rank, nranks = _rank_and_size(env, rank_var, size_var)
            local = _first_count(env, _MPI_LOCAL_RANK_VARIABLES)
            return LaunchInfo("mpi", rank, nranks, local, source=rank_var, master=_master(env))
    if "WORLD_SIZE" in env or "RANK" in env:
        rank, nranks = _rank_and_size(env, "RANK", "WORLD_SIZE")
        master = _master(env)
        if master is None and nranks > 1:
            raise ValueError("RANK and WORLD_SIZE are set, but there is no channel for the unique id: launch with "
                             "python -m nccl.run (NCCL4PY_UNIQUE_ID), mpirun (with mpi4py), or torchrun "
                             "(MASTER_ADDR and MASTER_PORT)")
        return LaunchInfo("torchrun", rank, nranks, _first_count(env, ("LOCAL_RANK",)), source="RANK", master=master)
    return LaunchInfo("single", 0, 1, 0, source=None)


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


def _recv_exact(sock, n, deadline):
    data = b""
    while len(data) < n:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the peer closed the connection early")
        data += chunk
    return data


def exchange_over_tcp(rank, nranks, addr, port, uid=None, timeout=DEFAULT_TIMEOUT_S):
    """Hands rank 0's id to every rank over TCP; returns the 128 bytes on every rank.

    Rank 0 listens on (addr, port) and answers each of the nranks - 1 other ranks once: a rank
    sends a hello (magic, its rank, nranks), and rank 0 replies with the id, or closes the
    connection when the hello is malformed, repeats a rank, or disagrees on nranks. The others
    connect with retries (rank 0 may not be listening yet) until the deadline.
    """
    deadline = time.monotonic() + timeout
    if rank == 0:
        uid = _new_id_bytes() if uid is None else bytes(uid)
        if len(uid) != ID_BYTES:
            raise ValueError(f"the unique id must be {ID_BYTES} bytes")
        if nranks == 1:
            return uid
        _serve_id(uid, nranks, addr, port, deadline, timeout)
        return uid
    return _fetch_id(rank, nranks, addr, port, deadline, timeout)


def _serve_id(uid, nranks, addr, port, deadline, timeout):
    served = set()
    with socket.create_server((addr, port), family=_family(addr)) as srv:
        while len(served) < nranks - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(1, nranks)) - served)
                raise TimeoutError(f"unique id exchange on {addr}:{port}: rank(s) {missing} did not connect "
                                   f"within {timeout:g} s")
            srv.settimeout(left)
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            with conn:
                hello_deadline = min(deadline, time.monotonic() + _HELLO_WAIT_S)
                try:
                    magic, peer, peer_n = _HELLO.unpack(_recv_exact(conn, _HELLO.size, hello_deadline))
                except (OSError, ConnectionError, struct.error):
                    continue  # a stray or broken connection does not spoil the exchange
                if magic != _MAGIC or peer_n != nranks or not 0 < peer < nranks or peer in served:
                    continue
                try:
                    conn.sendall(uid)
                except OSError:
                    continue
                served.add(peer)


def _fetch_id(rank, nranks, addr, port, deadline, timeout):
    delay, last = 0.05, None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"unique id exchange: rank {rank} could not get the id from rank 0 at {addr}:{port} "
                               f"within {timeout:g} s (last error: {last})")
        try:
            with socket.create_connection((addr, port), timeout=min(left, 10.0)) as s:
                s.sendall(_HELLO.pack(_MAGIC, rank, nranks))
                return _recv_exact(s, ID_BYTES, deadline)
        except (OSError, ConnectionError) as exc:
            last = exc
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 1.0)


def _family(addr):
    try:
        socket.inet_pton(socket.AF_INET6, addr)
        return socket.AF_INET6
    except OSError:
        return socket.AF_INET


def _mpi_exchange(info, env, timeout):
    """(rank, nranks, id bytes) through mpi4py, or through TCP when mpi4py is absent but
    MASTER_ADDR/MASTER_PORT are set."""
    try:
        from mpi4py import MPI
    except ImportError:
        MPI = None
    if MPI is None:
        if info.master is not None and info.nranks is not None:
            uid = exchange_over_tcp(info.rank, info.nranks, *info.master, timeout=timeout)
            return info.rank, info.nranks, uid
        raise RuntimeError(f"running under MPI ({info.source} is set) but mpi4py is not importable, so the unique "
                           "id cannot be broadcast: pip install mpi4py, or launch with python -m nccl.run")
    world = MPI.COMM_WORLD
    rank, nranks = world.Get_rank(), world.Get_size()
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


def from_env(cls, *, config=None, timeout=None, environ=None):
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
    elif info.kind == "torchrun":
        rank, nranks = info.rank, info.nranks
        if nranks == 1:
            uid = _new_id_bytes()
        else:
            uid = exchange_over_tcp(rank, nranks, *info.master, timeout=timeout)
    else:
        rank, nranks, uid = 0, 1, _new_id_bytes()
    from nccl.core._unique_id import UniqueId

    kwargs = {"nranks": nranks, "rank": rank, "unique_id": UniqueId.from_bytes(uid)}
    if config is not None:
        kwargs["config"] = config
    return cls.init(**kwargs)
