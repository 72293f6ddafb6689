"""nccl.core._env: launcher detection, the TCP id exchange, and Communicator.from_env.

The detection and exchange tests need only nccl.core._env. from_env itself is tested two ways:
with a recording stand-in class (no library is loaded in the pytest process: the id maker is
patched), and end to end with the real nccl.core.Communicator under nccl.run and a torchrun-style
environment.
"""

import errno
import functools
import importlib
import importlib.util
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import types
from pathlib import Path

import pytest

import children
from nccl.core import _env
from nccl.core import _id_exchange as X

UID = bytes(range(128))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- detect() ----

def test_detect_nccl_run():
    info = _env.detect({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "NCCL4PY_UNIQUE_ID": UID.hex()})
    assert (info.kind, info.rank, info.nranks, info.local_rank, info.uid_hex) == ("nccl.run", 1, 2, 1, UID.hex())


@pytest.mark.parametrize("env, message", [
    ({"RANK": "0", "WORLD_SIZE": "2", "NCCL4PY_UNIQUE_ID": "abc"}, "must be 256 hex digits"),
    ({"RANK": "0", "WORLD_SIZE": "2", "NCCL4PY_UNIQUE_ID": "zz" * 128}, "must be 256 hex digits"),
    ({"RANK": "2", "WORLD_SIZE": "2", "NCCL4PY_UNIQUE_ID": UID.hex()}, "RANK=2 is not below WORLD_SIZE=2"),
    ({"RANK": "x", "WORLD_SIZE": "2", "NCCL4PY_UNIQUE_ID": UID.hex()}, "RANK='x' is not an integer"),
    ({"RANK": "0", "WORLD_SIZE": "0", "NCCL4PY_UNIQUE_ID": UID.hex()}, "WORLD_SIZE=0 must be >= 1"),
    ({"RANK": "0", "WORLD_SIZE": "2"}, "no channel for the unique id"),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "65535"}, "out of range"),
])
def test_detect_rejects(env, message):
    with pytest.raises(ValueError, match=message):
        _env.detect(env)


@pytest.mark.parametrize("env, source, rank, nranks, local", [
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
     "OMPI_COMM_WORLD_RANK", 3, 4, 1),
    ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1"}, "PMI_RANK", 1, 2, 1),
    ({"PMIX_RANK": "5"}, "PMIX_RANK", 5, None, None),
    ({"MV2_COMM_WORLD_RANK": "0", "MV2_COMM_WORLD_SIZE": "8"}, "MV2_COMM_WORLD_RANK", 0, 8, None),
])
def test_detect_mpi(env, source, rank, nranks, local):
    info = _env.detect(env)
    assert (info.kind, info.source, info.rank, info.nranks, info.local_rank) == ("mpi", source, rank, nranks, local)


def test_detect_torchrun_and_single():
    env = {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    info = _env.detect(env)
    assert (info.kind, info.rank, info.nranks, info.master) == ("torchrun", 1, 4, ("127.0.0.1", 29501))
    info = _env.detect(dict(env, NCCL4PY_ID_PORT="4000"))
    assert info.master == ("127.0.0.1", 4000)
    assert _env.detect({"RANK": "0", "WORLD_SIZE": "1"}).kind == "torchrun"  # one rank needs no channel
    info = _env.detect({})
    assert (info.kind, info.rank, info.nranks) == ("single", 0, 1)


@pytest.mark.parametrize("env, message", [
    ({"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, "srun started this process as task 1 of 2 .*without PMI"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_STEP_ID": "0"}, "task 0 of 4 "),
    ({"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_NTASKS": "8"}, "task 0 of 2 "),
    ({"FLUX_JOB_SIZE": "2", "FLUX_TASK_RANK": "1"}, "a Flux job of 2 tasks"),
    ({"JSM_NAMESPACE_SIZE": "4", "JSM_NAMESPACE_RANK": "0"}, "jsrun with 4 tasks"),
    ({"PMI_SIZE": "2"}, "a PMI launch of 2 ranks"),
    ({"OMPI_COMM_WORLD_SIZE": "3"}, "Open MPI with 3 ranks"),
    ({"LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": "1"}, "a launch of 2 local ranks"),
])
def test_detect_refuses_launches_it_cannot_serve(env, message):
    """Several tasks and no channel for the id: an error, never a silent 1-rank job per task."""
    with pytest.raises(ValueError, match=message):
        _env.detect(env)


def test_detect_srun_and_batch_scripts():
    # one process of a batch script (SLURM_PROCID 0 outside any step) or a 1-task step: one rank
    for env in ({"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "7"},
                {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_STEP_ID": "0"},
                {"LOCAL_WORLD_SIZE": "1"}):
        assert _env.detect(env).kind == "single", env
    # srun without PMI but with MASTER_ADDR/MASTER_PORT: served like torchrun
    info = _env.detect({"SLURM_PROCID": "2", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_ID": "0",
                        "SLURM_LOCALID": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"})
    assert (info.kind, info.rank, info.nranks, info.local_rank, info.master) == ("slurm", 2, 4, 0,
                                                                                  ("127.0.0.1", 29501))
    # torchrun inside an srun step is torchrun
    assert _env.detect({"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "RANK": "3", "WORLD_SIZE": "8",
                        "MASTER_ADDR": "h", "MASTER_PORT": "1"}).kind == "torchrun"


# ---- exchange_over_tcp ----

def _run_ranks(nranks, port, timeout=20.0, skip=()):
    results, errors = {}, {}

    def one(r):
        try:
            results[r] = _env.exchange_over_tcp(r, nranks, "127.0.0.1", port, uid=UID if r == 0 else None,
                                                timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors[r] = exc

    threads = [threading.Thread(target=one, args=(r,)) for r in range(nranks) if r not in skip]
    # the clients first: they must retry until rank 0 listens
    for t in reversed(threads):
        t.start()
    for t in threads:
        t.join(60)
    return results, errors


def test_tcp_exchange_gives_every_rank_the_id():
    results, errors = _run_ranks(4, free_port())
    assert not errors
    assert results == {r: UID for r in range(4)}


def test_tcp_exchange_survives_a_stray_connection():
    port = free_port()
    done = {}

    def rank0():
        done[0] = _env.exchange_over_tcp(0, 2, "127.0.0.1", port, uid=UID, timeout=20)

    t = threading.Thread(target=rank0)
    t.start()
    # a stray client: connects, sends garbage, leaves; then a hello with the wrong nranks
    for payload in (b"hello?", X.HELLO.pack(X.MAGIC, 1, 3, bytes(16))):
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(payload)
                    s.shutdown(socket.SHUT_WR)
                    s.settimeout(5)
                    assert s.recv(200) == b""  # closed without the id
                break
            except ConnectionRefusedError:
                threading.Event().wait(0.05)
    assert _env.exchange_over_tcp(1, 2, "127.0.0.1", port, timeout=20) == UID
    t.join(30)
    assert done[0] == UID


def test_tcp_exchange_times_out_naming_the_missing_rank():
    results, errors = _run_ranks(3, free_port(), timeout=1.5, skip=(2,))
    assert isinstance(errors.get(0), TimeoutError) and "rank(s) [2] did not connect" in str(errors[0])
    assert results.get(1) == UID


def test_tcp_client_times_out_without_rank_0():
    with pytest.raises(TimeoutError, match="rank 1 could not get the id from rank 0"):
        _env.exchange_over_tcp(1, 2, "127.0.0.1", free_port(), timeout=0.5)


def _silent_clients(port, n, release):
    """n connections to rank 0's exchange that never say anything, held until release is set."""
    socks = []
    deadline = time.monotonic() + 20
    while len(socks) < n and time.monotonic() < deadline:
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except ConnectionRefusedError:
            time.sleep(0.02)
    release.wait(30)
    for s in socks:
        s.close()


@pytest.mark.timeout(60)
def test_tcp_exchange_is_not_held_up_by_silent_connections():
    """Rank 0 serves connections concurrently: 100 that never send anything, held until rank 1 is
    done (2 s each when served one after another), do not keep rank 1 from its id within 10 s."""
    port = free_port()
    done = {}
    t = threading.Thread(target=lambda: done.update(r0=_env.exchange_over_tcp(0, 2, "127.0.0.1", port, uid=UID,
                                                                              timeout=30)))
    t.start()
    release = threading.Event()
    flood = threading.Thread(target=_silent_clients, args=(port, 100, release))
    flood.start()
    time.sleep(1.0)  # the silent connections are in before rank 1 asks
    try:
        assert _env.exchange_over_tcp(1, 2, "127.0.0.1", port, timeout=10) == UID
    finally:
        release.set()
        t.join(40)
        flood.join(40)
    assert done["r0"] == UID


def test_tcp_exchange_with_a_secret():
    port = free_port()
    got = {}

    def rank0():
        got[0] = _env.exchange_over_tcp(0, 2, "127.0.0.1", port, uid=UID, timeout=20, secret="s3cret")

    t = threading.Thread(target=rank0)
    t.start()
    try:
        # a client without the secret gets nothing (rank 0 does not prove itself to it either)
        with pytest.raises(TimeoutError, match="does not know this job's NCCL4PY_ID_SECRET"):
            _env.exchange_over_tcp(1, 2, "127.0.0.1", port, timeout=1.5, secret="guess")
        assert _env.exchange_over_tcp(1, 2, "127.0.0.1", port, timeout=20, secret="s3cret") == UID
    finally:
        t.join(30)
    assert got[0] == UID


def test_tcp_exchange_off_this_machine_needs_a_secret():
    with pytest.raises(X.ExchangeError, match="NCCL4PY_ID_SECRET"):
        _env.exchange_over_tcp(1, 2, "192.0.2.1", 29501, timeout=1)


@functools.lru_cache(maxsize=None)  # a skip raises, so only a found interpreter is kept
def _nobody_python(need_torch=False):
    """(interpreter, environment) with which the user nobody runs Python, with this interpreter's
    torch on its path when need_torch (found, not imported: that takes seconds). Skips the test
    when the tests do not run as root or there is no such interpreter."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run a process as another user")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    probe = "pass"
    if need_torch:
        torch = pytest.importorskip("torch")
        env["PYTHONPATH"] = str(Path(torch.__file__).parent.parent)
        probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for python in (sys.executable, shutil.which(version), "/usr/bin/python3"):
        try:
            if python and subprocess.run([python, "-c", probe], user="nobody", env=env, cwd="/", capture_output=True,
                                         timeout=120).returncode == 0:
                return python, env
        except PermissionError:  # nobody may not run this one
            continue
    pytest.skip("no interpreter that nobody may run" + (" with torch" if need_torch else ""))


@pytest.fixture
def exchange_copy():
    """A copy of _id_exchange.py that nobody may read (it needs the standard library only)."""
    import tempfile

    readable = Path(tempfile.mkdtemp(prefix="nccl-idx-", dir="/tmp"))  # pytest's tmp_path is root-only
    readable.chmod(0o755)
    module = readable / "id_exchange.py"
    module.write_text(Path(X.__file__).read_text())
    module.chmod(0o644)
    yield module
    module.unlink()
    readable.rmdir()


# nobody's attempts at the id on a port: argv = port, a copy of _id_exchange.py, "torch" to try
# torch's TCPStore too (the store rank 0 once opened for anyone) under its key of rank 1
NOBODY_CLIENT = """
import datetime, importlib.util, sys
port = int(sys.argv[1])
if "torch" in sys.argv[3:]:
    import torch.distributed as dist  # a failure here shows in the output: no "exchange:" line
    try:
        store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=3))
        print("GOT THE ID", bytes(store.get("nccl4py/unique_id/-/0/1")).hex())
    except Exception as exc:
        print("store:", type(exc).__name__, exc)
spec = importlib.util.spec_from_file_location("x", sys.argv[2])  # no nccl import
X = importlib.util.module_from_spec(spec)
spec.loader.exec_module(X)
try:
    print("GOT THE ID", X.exchange_over_tcp(1, 2, "127.0.0.1", port, timeout=3).hex())
except Exception as exc:
    print("exchange:", type(exc).__name__, exc)
"""


def _as_nobody(port, module, torch=False):
    python, env = _nobody_python(need_torch=torch)
    r = subprocess.run([python, "-c", NOBODY_CLIENT, str(port), str(module)] + (["torch"] if torch else []),
                       user="nobody", env=env, capture_output=True, text=True, timeout=120, cwd="/")
    return r.stdout + r.stderr


@pytest.mark.timeout(120)
def test_tcp_exchange_serves_only_our_user(exchange_copy):
    """Without a secret the exchange stays on loopback and rank 0 serves only connections of its
    own user: another user's client (nobody, when the tests run as root) gets nothing, and the
    real rank 1 still gets the id."""
    _nobody_python()
    port = free_port()
    got = {}
    t = threading.Thread(target=lambda: got.update(r0=_env.exchange_over_tcp(0, 2, "127.0.0.1", port, uid=UID,
                                                                             timeout=60)))
    t.start()
    try:
        out = _as_nobody(port, exchange_copy)
        assert "GOT THE ID" not in out and "exchange: TimeoutError" in out, out
        assert _env.exchange_over_tcp(1, 2, "127.0.0.1", port, timeout=20) == UID
    finally:
        t.join(60)
    assert got["r0"] == UID


# ---- from_env with a stand-in class ----

class Recorder:
    calls = []

    @classmethod
    def init(cls, **kwargs):
        cls.calls.append(kwargs)
        return ("comm", kwargs)


class FakeUniqueId:
    def __init__(self, raw):
        self.raw = raw

    @staticmethod
    def from_bytes(b):
        assert len(b) == 128
        return FakeUniqueId(bytes(b))

    def __bytes__(self):
        return self.raw


@pytest.fixture
def stand_in(monkeypatch):
    """Recorder, with the id maker patched (no library in this process) and a UniqueId module:
    the real nccl.core._unique_id when importable, else a stand-in."""
    try:
        importlib.import_module("nccl.core._unique_id")
    except ImportError:
        mod = types.ModuleType("nccl.core._unique_id")
        mod.UniqueId = FakeUniqueId
        monkeypatch.setitem(sys.modules, "nccl.core._unique_id", mod)
    monkeypatch.setattr(_env, "_new_id_bytes", lambda: UID)
    Recorder.calls = []
    return Recorder


def test_from_env_nccl_run(stand_in):
    env = {"RANK": "1", "WORLD_SIZE": "2", "NCCL4PY_UNIQUE_ID": bytes(reversed(UID)).hex()}
    _env.from_env(stand_in, environ=env)
    (kw,) = stand_in.calls
    assert (kw["nranks"], kw["rank"], bytes(kw["unique_id"])) == (2, 1, bytes(reversed(UID)))
    assert "config" not in kw
    _env.from_env(stand_in, environ=env, config="cfg")
    assert stand_in.calls[-1]["config"] == "cfg"


def test_from_env_single_process(stand_in, monkeypatch, capsys):
    monkeypatch.setattr(_env, "_said_one_rank", False)
    monkeypatch.setattr(sys, "argv", ["train.py"])
    _env.from_env(stand_in, environ={})
    (kw,) = stand_in.calls
    assert (kw["nranks"], kw["rank"], bytes(kw["unique_id"])) == (1, 0, UID)
    # one line, once per process: what happened and how to start N ranks instead
    _env.from_env(stand_in, environ={})
    assert capsys.readouterr().err == (
        "nccl4py: no launcher found, so this is rank 0 of a 1-rank world; for N ranks run python -m nccl.run -n N "
        "train.py (or torchrun --nproc-per-node N, or mpirun -n N python)\n")


def test_from_env_under_a_launcher_says_nothing(stand_in, monkeypatch, capsys):
    monkeypatch.setattr(_env, "_said_one_rank", False)
    _env.from_env(stand_in, environ={"RANK": "0", "WORLD_SIZE": "1", "NCCL4PY_UNIQUE_ID": UID.hex()})
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="needs mpi4py")
def test_open_mpi_variables_under_another_mpis_mpi4py_refuse(tmp_path):
    """Open MPI's mpirun with an mpi4py built for MPICH: MPI sees a 1-process world in each rank,
    which must be refused, not run as 1-rank jobs."""
    code = ("import nccl.core as nccl\n"
            "try:\n"
            "    nccl.Communicator.from_env()\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    env = _env_for_children(OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_RANK="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    from mpi4py import MPI

    library = MPI.Get_library_version().strip().splitlines()[0]
    assert r.stdout == (f"this process was started by Open MPI as rank 1 of 2 (OMPI_COMM_WORLD_RANK), but mpi4py's "
                        f"MPI ({library}) sees rank 0 of 1: mpi4py is built for another MPI than the launcher. Start "
                        "the job with the mpirun of mpi4py's MPI, or install an mpi4py built for the launcher's MPI, "
                        "or launch with python -m nccl.run\n")


def _torchrun_threads(stand_in, base, nranks=3):
    errors = []

    def one(r):
        try:
            _env.from_env(stand_in, environ=dict(base, RANK=str(r), LOCAL_RANK=str(r)), timeout=30)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(r,)) for r in range(nranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors, errors
    assert sorted(kw["rank"] for kw in stand_in.calls) == list(range(nranks))
    assert {bytes(kw["unique_id"]) for kw in stand_in.calls} == {UID}


def _no_tcp_exchange(*args, **kwargs):
    raise AssertionError("the id went through our TCP exchange instead of torch's TCPStore")


def _no_store_exchange(*args, **kwargs):
    raise AssertionError("the id went through a TCPStore outside torchrun's agent store")


@pytest.mark.timeout(120)
def test_from_env_torchrun_threads_use_our_exchange(stand_in, monkeypatch):
    """Without torchrun's agent store the id goes through our own exchange, torch or no torch."""
    monkeypatch.setattr(_env, "exchange_over_store", _no_store_exchange)
    port = free_port()
    _torchrun_threads(stand_in, {"WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port - 1)})


@pytest.mark.timeout(120)
def test_from_env_torchrun_uses_the_agent_store(stand_in, monkeypatch):
    """Under torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True) every rank is a client of
    the store at MASTER_ADDR:MASTER_PORT; two launches (restarts) in a row get their own keys."""
    dist = pytest.importorskip("torch.distributed")
    import datetime

    monkeypatch.setattr(_env, "exchange_over_tcp", _no_tcp_exchange)
    port = free_port()
    agent = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=30))
    base = {"WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RUN_ID": "job7"}
    _torchrun_threads(stand_in, dict(base, TORCHELASTIC_RESTART_COUNT="0"))
    stand_in.calls.clear()
    _torchrun_threads(stand_in, dict(base, TORCHELASTIC_RESTART_COUNT="1"))
    del agent


# ---- from_env: only the job's ranks get the id, and only from rank 0 ----

def _listening_addresses(port):
    """The local addresses of the sockets listening on TCP port (from /proc/net/tcp[6])."""
    found = []
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(path) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                ip, p = X._proc_addr(cols[1])
                if p == port and cols[3] == "0A":  # TCP_LISTEN
                    found.append(ip)
    return found


def _rank0_listening(stand_in, base, timeout=60):
    """Starts rank 0's from_env in a thread; returns (thread, errors) once it listens on the id port."""
    errors = []

    def rank0():
        try:
            _env.from_env(stand_in, environ=dict(base, RANK="0"), timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    t = threading.Thread(target=rank0)
    t.start()
    port = _env.detect(dict(base, RANK="0")).master[1]
    deadline = time.monotonic() + 60
    while not _listening_addresses(port) and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _listening_addresses(port), errors
    return t, errors


def _torch_env(port, **extra):
    """A torchrun-like environment set by hand (no torchrun, so no agent store), with torch importable."""
    pytest.importorskip("torch.distributed")
    return dict({"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port - 1)}, **extra)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("addr", ["127.0.0.1", "127.0.0.2"])
def test_from_env_listens_on_master_addr_only(stand_in, addr):
    """Rank 0 listens on MASTER_ADDR's interface alone, never on every interface."""
    port = free_port()
    base = _torch_env(port, MASTER_ADDR=addr)
    t, errors = _rank0_listening(stand_in, base)
    try:
        assert _listening_addresses(port) == [ipaddress.ip_address(addr)]
    finally:
        _env.from_env(stand_in, environ=dict(base, RANK="1"), timeout=60)
        t.join(60)
    assert not errors, errors
    assert sorted(kw["rank"] for kw in stand_in.calls) == [0, 1]
    assert {bytes(kw["unique_id"]) for kw in stand_in.calls} == {UID}


@pytest.mark.timeout(300)
def test_from_env_serves_another_user_nothing(stand_in, exchange_copy):
    """With torch importable and no torchrun store, another user (nobody) tries torch's TCPStore
    and our exchange on the id port while rank 0 serves: it gets nothing, and the job goes on."""
    _nobody_python(need_torch=True)
    port = free_port()
    base = _torch_env(port)
    t, errors = _rank0_listening(stand_in, base, timeout=240)
    try:
        out = _as_nobody(port, exchange_copy, torch=True)
    finally:
        _env.from_env(stand_in, environ=dict(base, RANK="1"), timeout=60)
        t.join(60)
    assert "GOT THE ID" not in out and UID.hex() not in out, out
    assert "exchange: TimeoutError" in out, out
    assert not errors, errors
    assert sorted(kw["rank"] for kw in stand_in.calls) == [0, 1]
    assert {bytes(kw["unique_id"]) for kw in stand_in.calls} == {UID}


@pytest.mark.timeout(120)
def test_from_env_with_a_secret_serves_only_ranks_that_know_it(stand_in):
    """NCCL4PY_ID_SECRET set, torch importable: a TCPStore client and a client with a wrong secret
    get nothing from rank 0, and the real rank 1 still gets the id."""
    import datetime

    dist = pytest.importorskip("torch.distributed")
    port = free_port()
    base = _torch_env(port, NCCL4PY_ID_SECRET="s3cret")
    t, errors = _rank0_listening(stand_in, base)
    try:
        with pytest.raises(dist.DistError):
            store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=2))
            store.get("nccl4py/unique_id/-/0/1")
        with pytest.raises(TimeoutError, match="does not know this job's NCCL4PY_ID_SECRET"):
            _env.exchange_over_tcp(1, 2, "127.0.0.1", port, timeout=1.5, secret="guess")
    finally:
        _env.from_env(stand_in, environ=dict(base, RANK="1"), timeout=60)
        t.join(60)
    assert not errors, errors
    assert {bytes(kw["unique_id"]) for kw in stand_in.calls} == {UID}
    assert sorted(kw["rank"] for kw in stand_in.calls) == [0, 1]


@pytest.mark.timeout(120)
def test_from_env_refuses_an_id_from_a_tcp_store(stand_in):
    """A TCPStore on the id port (someone else's, holding an id under our key) is not rank 0: a
    rank takes nothing from it and times out."""
    import datetime

    dist = pytest.importorskip("torch.distributed")
    port = free_port()
    base = _torch_env(port)
    rogue = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=30))
    rogue.set("nccl4py/unique_id/-/0/1", bytes(reversed(UID)))
    with pytest.raises(TimeoutError, match="rank 1 could not get the id from rank 0"):
        _env.from_env(stand_in, environ=dict(base, RANK="1"), timeout=2)
    assert stand_in.calls == []
    del rogue


def _tampering_relay(srv, target, stop):
    """Relays each connection accepted on srv to target, flipping one bit of the first byte the
    server sends after its 48-byte proof (the first byte of the id)."""

    def pipe(src, dst, flip_at):
        n = 0
        try:
            while data := src.recv(4096):
                if flip_at is not None and n <= flip_at < n + len(data):
                    data = bytearray(data)
                    data[flip_at - n] ^= 1
                n += len(data)
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    srv.settimeout(0.1)
    while not stop.is_set():
        try:
            client = srv.accept()[0]
        except TimeoutError:
            continue
        try:
            server = socket.create_connection(target, timeout=5)
        except OSError:
            client.close()
            continue
        with client, server:
            up = threading.Thread(target=pipe, args=(client, server, None))
            up.start()
            pipe(server, client, X.SERVER_PROOF.size)
            up.join(10)


@pytest.mark.timeout(120)
def test_tcp_exchange_refuses_an_id_changed_on_the_way():
    """A relay between rank 1 and rank 0 (both with the secret) that changes the id: rank 1
    refuses it, and says why."""
    port = free_port()
    got = {}
    t = threading.Thread(target=lambda: got.update(
        r0=_env.exchange_over_tcp(0, 2, "127.0.0.1", port, uid=UID, timeout=20, secret="s3cret")))
    t.start()
    stop = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as srv:
        relay = threading.Thread(target=_tampering_relay, args=(srv, ("127.0.0.1", port), stop))
        relay.start()
        try:
            with pytest.raises(TimeoutError, match="is not authenticated by this job's NCCL4PY_ID_SECRET"):
                _env.exchange_over_tcp(1, 2, "127.0.0.1", srv.getsockname()[1], timeout=3, secret="s3cret")
        finally:
            stop.set()
            relay.join(30)
            t.join(30)
    assert got["r0"] == UID  # rank 0 served rank 1 once, through the relay


@pytest.mark.timeout(60)
@pytest.mark.parametrize("origin", ["MASTER_PORT + 1", "NCCL4PY_ID_PORT"])
def test_from_env_names_a_squatted_id_port(stand_in, origin):
    with socket.create_server(("127.0.0.1", 0)) as squatter:
        port = squatter.getsockname()[1]
        env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port - 1)}
        if origin == "NCCL4PY_ID_PORT":
            env.update(MASTER_PORT=str(free_port()), NCCL4PY_ID_PORT=str(port))
        with pytest.raises(OSError) as info:
            _env.from_env(stand_in, environ=env, timeout=5)
    assert info.value.errno == errno.EADDRINUSE
    assert re.fullmatch(re.escape(f"[Errno {errno.EADDRINUSE}] rank 0 cannot serve the unique id on 127.0.0.1:{port} "
                                  f"({origin}): the port is already in use, by another job or another process on "
                                  "this machine; set NCCL4PY_ID_PORT to a free port, the same on every rank (or "
                                  "choose another MASTER_PORT)"), str(info.value)), str(info.value)
    assert stand_in.calls == []


def test_from_env_names_a_master_addr_of_another_machine(stand_in):
    """Rank 0 listens on MASTER_ADDR alone: an address this machine does not have is named."""
    port = free_port()
    env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "192.0.2.1", "MASTER_PORT": str(port - 1),
           "NCCL4PY_ID_SECRET": "s3cret"}  # 192.0.2.0/24: documentation only, never assigned
    with pytest.raises(OSError, match=re.escape(f"rank 0 cannot serve the unique id on 192.0.2.1:{port} (MASTER_PORT + "
                                                "1): 192.0.2.1 is not an address of this machine")) as info:
        _env.from_env(stand_in, environ=env, timeout=5)
    assert info.value.errno == errno.EADDRNOTAVAIL
    assert stand_in.calls == []


def test_from_env_raises_under_srun_without_pmi(stand_in):
    with pytest.raises(ValueError, match="srun started this process as task 1 of 2"):
        _env.from_env(stand_in, environ={"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0"})
    assert stand_in.calls == []  # no 1-rank communicator was made


def test_from_env_mpi_without_mpi4py(stand_in, monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import fails
    with pytest.raises(RuntimeError, match="OMPI_COMM_WORLD_RANK is set\\) but mpi4py is not importable"):
        _env.from_env(stand_in, environ={"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"})


def test_from_env_keyword_only(stand_in):
    with pytest.raises(TypeError):
        _env.from_env(stand_in, {"RANK": "0"})
    with pytest.raises(TypeError):
        _env.from_env(stand_in, colour=1)


# ---- under mpirun, through mpi4py (a stand-in class; the id comes from the host backend) ----

MPI_SCRIPT = """
import sys, types
try:
    import nccl.core._unique_id
except ImportError:
    class UniqueId:
        def __init__(self, raw):
            self.raw = raw
        @staticmethod
        def from_bytes(b):
            return UniqueId(bytes(b))
        def __bytes__(self):
            return self.raw
    mod = types.ModuleType("nccl.core._unique_id")
    mod.UniqueId = UniqueId
    sys.modules["nccl.core._unique_id"] = mod
from nccl.core import _env

class Recorder:
    @classmethod
    def init(cls, **kw):
        with open(f"{sys.argv[1]}/rank{kw['rank']}", "w") as f:
            f.write(f"{kw['rank']} {kw['nranks']} {bytes(kw['unique_id']).hex()}")

_env.from_env(Recorder)
"""


def test_from_env_under_mpirun_broadcasts_the_id(tmp_path):
    pytest.importorskip("mpi4py")
    mpirun = children.mpirun()
    if mpirun is None:
        pytest.skip("mpirun is not installed")
    s = tmp_path / "mpi_env.py"
    s.write_text(MPI_SCRIPT)
    r = subprocess.run([mpirun, "-n", "2", sys.executable, str(s), str(tmp_path)], env=_env_for_children(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [(tmp_path / f"rank{i}").read_text().split() for i in range(2)]
    assert [row[:2] for row in rows] == [["0", "2"], ["1", "2"]]
    assert rows[0][2] == rows[1][2] and len(rows[0][2]) == 256 and rows[0][2] != "00" * 128


# ---- end to end with nccl.core ----

ALLREDUCE = """
import os, sys
import numpy as np
import nccl.core as nccl

comm = nccl.Communicator.from_env()
x = np.full(64, comm.rank + 1, dtype=np.float32)
y = np.zeros_like(x)
comm.allreduce(x, y, nccl.SUM)
n = comm.nranks
ok = bool((y == n * (n + 1) / 2).all())
print(f"rank {comm.rank}/{n} ok={ok}")
comm.destroy()
sys.exit(0 if ok else 1)
"""


def _env_for_children(**extra):
    return children.environment(drop=children.LAUNCH_VARIABLES, **{"NCCL_LIBRARY": "host", "NCCL_HOST_TIMEOUT": "30",
                                                                   **extra})


def test_from_env_under_nccl_run(tmp_path):
    s = tmp_path / "ar.py"
    s.write_text(textwrap.dedent(ALLREDUCE))
    r = subprocess.run([sys.executable, "-m", "nccl.run", "-n", "2", "--timeout", "120", str(s)],
                       env=_env_for_children(), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[0] rank 0/2 ok=True" in r.stdout and "[1] rank 1/2 ok=True" in r.stdout


def test_from_env_torchrun_style(tmp_path):
    s = tmp_path / "ar.py"
    s.write_text(textwrap.dedent(ALLREDUCE))
    port = free_port()
    procs = [subprocess.Popen([sys.executable, str(s)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=_env_for_children(RANK=r, WORLD_SIZE=2, LOCAL_RANK=r, MASTER_ADDR="127.0.0.1",
                                                    MASTER_PORT=port - 1, NCCL4PY_ID_TIMEOUT=60))
             for r in range(2)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=180)[0])
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], outs
    assert "rank 1/2 ok=True" in outs[1]


def test_from_env_single_rank(tmp_path):
    s = tmp_path / "ar.py"
    s.write_text(textwrap.dedent(ALLREDUCE))
    r = subprocess.run([sys.executable, str(s)], env=_env_for_children(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "rank 0/1 ok=True" in r.stdout


# ---- local_rank() ----

@pytest.mark.parametrize("env, local", [
    ({}, 0),  # no launcher: one rank
    ({"RANK": "3", "WORLD_SIZE": "4", "NCCL4PY_UNIQUE_ID": UID.hex()}, 3),  # nccl.run without LOCAL_RANK: one machine
    ({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "NCCL4PY_UNIQUE_ID": UID.hex()}, 1),
    ({"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "h", "MASTER_PORT": "29500"}, 1),
    ({"RANK": "5", "WORLD_SIZE": "8", "MASTER_ADDR": "h", "MASTER_PORT": "29500"}, 0),  # torchrun did not say
    # under MPI the launcher's own variable wins over a LOCAL_RANK inherited from outside
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "LOCAL_RANK": "7"},
     1),
    ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1"}, 1),
    ({"PMIX_RANK": "5", "SLURM_LOCALID": "2"}, 2),
    ({"MV2_COMM_WORLD_RANK": "9", "MV2_COMM_WORLD_SIZE": "16", "MV2_COMM_WORLD_LOCAL_RANK": "3"}, 3),
    # the launcher's own variable before another launcher's (an srun allocation around mpirun)
    ({"MV2_COMM_WORLD_RANK": "1", "MV2_COMM_WORLD_SIZE": "2", "MV2_COMM_WORLD_LOCAL_RANK": "1", "SLURM_LOCALID": "3"},
     1),
    ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "0", "OMPI_COMM_WORLD_LOCAL_RANK": "5"}, 0),
    ({"PMI_RANK": "1", "PMI_SIZE": "2", "LOCAL_RANK": "1"}, 1),
    ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "x"}, 0),
])
def test_local_rank(env, local):
    assert _env.local_rank(env) == local


def test_local_rank_reads_os_environ_and_rejects_what_detect_rejects(monkeypatch):
    for name in ("NCCL4PY_UNIQUE_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK",
                 "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ValueError, match="RANK=1 is not below WORLD_SIZE=1"):
        _env.local_rank()
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert _env.local_rank() == 1
