"""nccl.core._env: launcher detection, the TCP id exchange, and Communicator.from_env.

The detection and exchange tests need only nccl.core._env. from_env itself is tested two ways:
with a recording stand-in class (no library is loaded in the pytest process: the id maker is
patched), and end to end with the real nccl.core.Communicator under nccl.run and a torchrun-style
environment.
"""

import importlib
import os
import socket
import subprocess
import sys
import textwrap
import threading
import types

import pytest

from nccl.core import _env

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
    for payload in (b"hello?", _env._HELLO.pack(_env._MAGIC, 1, 3)):
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


def test_from_env_single_process(stand_in):
    _env.from_env(stand_in, environ={})
    (kw,) = stand_in.calls
    assert (kw["nranks"], kw["rank"], bytes(kw["unique_id"])) == (1, 0, UID)


def test_from_env_torchrun_threads(stand_in):
    port = free_port()
    base = {"WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port - 1)}
    threads = [threading.Thread(target=_env.from_env, args=(stand_in,),
                                kwargs={"environ": dict(base, RANK=str(r), LOCAL_RANK=str(r)), "timeout": 20})
               for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(kw["rank"] for kw in stand_in.calls) == [0, 1, 2]
    assert {bytes(kw["unique_id"]) for kw in stand_in.calls} == {UID}


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


def _mpirun():
    import shutil
    from pathlib import Path

    found = shutil.which("mpirun")
    if found is None and (Path(sys.executable).parent / "mpirun").exists():
        found = str(Path(sys.executable).parent / "mpirun")
    return found


def test_from_env_under_mpirun_broadcasts_the_id(tmp_path):
    pytest.importorskip("mpi4py")
    mpirun = _mpirun()
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
    e = {k: v for k, v in os.environ.items()
         if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NCCL4PY_UNIQUE_ID", "MASTER_ADDR", "MASTER_PORT")}
    e.update(NCCL_LIBRARY="host", NCCL_HOST_TIMEOUT="30")
    e.update({k: str(v) for k, v in extra.items()})
    return e


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
