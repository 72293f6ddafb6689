"""Engine tests of the host backend (libnccl-host.so), written in C and driven from here.

The library under test is the installed one, nccl/_lib/libnccl-host.so of the installed package;
the driver tests/host/host_smoke_test.c is built against it by meson with the other C test
artefacts (tests/host/meson.build, tests/artefacts.py). Each scenario runs in its own process
under a wall-clock limit and short library deadlines (NCCL_HOST_TIMEOUT=3), so nothing can hang;
the driver prints "PASS <scenario>" and exits 0, or prints "FAIL file:line: ..." with the
library's last error.

Numerics against numpy are covered by test_reduce_kernels.py (the kernels) and, later, by the
Python binding suite; here we test the engine: bootstrap, shared-memory data plane, every
collective's buffer rules, groups, nonblocking init, split/shrink, deadlines, peer death, abort,
mismatch detection, symbol exports, and that the shared segment never has a name.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import artefacts
import children

ROOT = Path(__file__).resolve().parents[2]
ABI_INCLUDE = ROOT / "src" / "include"


@pytest.fixture(scope="module")
def build():
    """(the installed libnccl-host.so, the smoke driver linked against it). .ci/aarch64 names an
    aarch64 driver, linked against an aarch64 build of the library, in NCCL4PY_HOST_SMOKE_DRIVER:
    the scenarios then run under qemu-aarch64 (docs/developing.md#ci-on-aarch64)."""
    cross = os.environ.get("NCCL4PY_HOST_SMOKE_DRIVER")
    if cross:
        return None, Path(cross)
    lib = artefacts.installed_host_library()
    assert lib.is_file(), f"the installed package has no {lib}"
    return lib, artefacts.artefact("tests/host/host_smoke_test")


@pytest.fixture(scope="module")
def shm_probe():
    """tests/host/shm_probe.c as an LD_PRELOAD library that logs every shared-memory name opened
    (tests/host/meson.build)."""
    return artefacts.artefact("tests/host/libshm_probe.so")


def run_scenario(build, scenario, nranks=None, limit=90, **env):
    _, exe = build
    # Under ./run.sh asan the driver is instrumented itself (the test build is configured like the
    # package), so it runs without the interpreter's sanitizer preload.
    e = artefacts.tool_env()
    for k in list(e):
        if k.startswith("NCCL_"):
            del e[k]
    e.update({"NCCL_HOST_TIMEOUT": "3", "NCCL_HOST_CHUNK_BYTES": "4096", "NCCL_HOST_P2P_BYTES": "4096"})
    e.update({k: str(v) for k, v in env.items()})
    args = [str(exe), scenario] + ([str(nranks)] if nranks is not None else [])
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=limit, env=e)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{scenario} exceeded {limit} s\n{exc.stdout}\n{exc.stderr}")
    assert r.returncode == 0 and f"PASS {scenario}" in r.stdout, (
        f"{scenario} (n={nranks}) exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


@pytest.fixture(params=["1", "0"], ids=["direct", "segment"])
def direct(request):
    """NCCL_HOST_DIRECT for a scenario that moves data: single-copy reads forced on for every size
    (where the kernel allows them; the engine falls back otherwise), or forced off."""
    return request.param


# ---------------------------------------------------------------------------------------------
# Build hygiene and exports
# ---------------------------------------------------------------------------------------------


def test_sources_compile_without_warnings():
    """Every src/host/*.c, compiled by the project's own target and flags in the test build."""
    output = artefacts.compile_target(artefacts.built(), "src/host/libnccl-host.so")
    compiled = set(re.findall(r"Compiling C object src/host/libnccl-host\.so\.p/(\w+\.c)\.o", output))
    assert compiled == {p.name for p in (ROOT / "src" / "host").glob("*.c")}, output
    assert "warning:" not in output, output


def _abi_names():
    text = (ABI_INCLUDE / "abi.h").read_text()
    return set(re.findall(r"^\s*X\((\w+),", text, flags=re.M))


@pytest.mark.timeout(60)
def test_exports_only_nccl_names(build):
    lib, _ = build
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm not found")
    out = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    foreign = sorted(n for n in names if not (n.startswith("nccl") or n.startswith("pnccl")))
    assert not foreign, f"exports outside nccl*/pnccl*: {foreign}"
    abi = _abi_names()
    assert len(abi) >= 59
    missing = sorted(n for n in abi | {"ncclHostGetInfo", "ncclHostSetDevice", "ncclHostGetDevice"} if n not in names)
    assert not missing, f"ABI entry points not exported: {missing}"
    assert {"p" + n for n in abi} <= names


@pytest.mark.timeout(60)
def test_info_and_version_through_ctypes(build):
    lib, _ = build
    code = (
        "import ctypes, sys\n"
        f"l = ctypes.CDLL({str(lib)!r})\n"
        "l.ncclHostGetInfo.restype = ctypes.c_char_p\n"
        "l.ncclGetErrorString.restype = ctypes.c_char_p\n"
        "v = ctypes.c_int()\n"
        "assert l.ncclGetVersion(ctypes.byref(v)) == 0\n"
        "print(l.ncclHostGetInfo().decode(), v.value, l.ncclGetErrorString(8).decode())\n"
    )
    # this interpreter's environment: under ./run.sh asan it keeps the sanitizer preload the
    # instrumented library needs
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
    r = children.run_python(code, env=env, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["libnccl-host", "0.1.0", "flavour=nccl", "api=23203", "fp8=ocp", "timeout=180",
                                "23203", "timeout"]
    env.update(NCCL_HOST_FLAVOR="rccl", NCCL_HOST_VERSION_CODE="22105")
    r = children.run_python(code, env=env, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["libnccl-host", "0.1.0", "flavour=rccl", "api=22105", "fp8=fnuz", "timeout=180",
                                "22105", "unknown", "result", "code"]


# ---------------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_argument_checks(build):
    run_scenario(build, "argcheck")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_collectives_threads(build, nranks, direct):
    """Every collective, in and out of place, multi-step chunks, p2p rings, split; ranks as threads."""
    run_scenario(build, "threads", nranks, NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_collectives_processes(build, nranks, direct):
    """The same suite with every rank a separate process (fork + exec, id on the command line)."""
    run_scenario(build, "procs", nranks, NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_one_thread_drives_all_ranks(build, nranks, direct):
    """Groups over several communicators from one thread: collectives, p2p, split, grouped inits."""
    run_scenario(build, "onethread", nranks, NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 3])
def test_nonblocking(build, nranks, direct):
    run_scenario(build, "nonblocking", nranks, NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(60)
def test_deadlines(build, direct):
    """A rank that never arrives and a send/send deadlock end with ncclTimeout, not a hang."""
    run_scenario(build, "timeout", NCCL_HOST_TIMEOUT="2", NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(60)
def test_mismatches(build, direct):
    """count, datatype, op, root, collective kind and send/recv size mismatches -> IU on both ranks."""
    run_scenario(build, "mismatch", NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(60)
def test_abort_from_another_thread(build, direct):
    run_scenario(build, "abort", NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(60)
def test_bootstrap_faults(build):
    """Wrong secret rejected without breaking the bootstrap; duplicate rank; nranks disagreement; root
    deadline naming the missing rank; InitRankScalable."""
    run_scenario(build, "bootstrap", NCCL_HOST_TIMEOUT="2")


@pytest.mark.timeout(90)
def test_killed_peer(build, direct):
    """kill -9 mid-collective, mid-p2p and mid-bootstrap: survivors get ncclRemoteError in < 1.5 s
    (the driver checks the latency), then shrink the dead rank away."""
    run_scenario(build, "kill", 3, NCCL_HOST_TIMEOUT="30", NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(60)
def test_fork_child_cannot_use_parent_comms(build):
    run_scenario(build, "fork", 2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_rccl_flavour(build, nranks, direct):
    """AllToAllv (multi-step), ncclAllToAll and AllReduceWithBias in the rccl flavour."""
    run_scenario(build, "rccl", nranks, NCCL_HOST_FLAVOR="rccl", NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(60)
def test_thread_hammer(build, direct):
    """Four threads, each creating and driving its own pair of communicators concurrently."""
    run_scenario(build, "hammer", 4, NCCL_HOST_DIRECT=direct)


def test_caller_fenv_is_isolated_and_kept(build):
    """A reduction run on the calling thread uses the default rounding and restores the caller's."""
    run_scenario(build, "fenv")


@pytest.mark.timeout(60)
def test_waiting_ranks_do_not_spin(build):
    run_scenario(build, "idle")


@pytest.mark.timeout(300)
def test_eight_ranks_outnumbering_the_cpus(build):
    """8 rank processes on a machine of fewer CPUs (the suite's CI has 2 to 4): every wait yields,
    then sleeps, and the whole collective suite of each rank still completes with correct
    results."""
    if len(os.sched_getaffinity(0)) >= 8:
        pytest.skip("needs fewer than 8 usable CPUs")
    run_scenario(build, "procs", 8, limit=280, NCCL_HOST_TIMEOUT="120")


@pytest.mark.timeout(60)
def test_large_chunks_and_eager(build, direct):
    """Default chunk and ring sizes, and an eager p2p limit, through the same suite."""
    run_scenario(build, "threads", 2, NCCL_HOST_CHUNK_BYTES="262144", NCCL_HOST_P2P_BYTES="65536",
                 NCCL_HOST_P2P_EAGER="1024", NCCL_HOST_DIRECT=direct)


@pytest.mark.timeout(60)
def test_misuse_becomes_errors(build):
    """A comm used from two threads at once (IU); shrink with NCCL_SHRINK_ABORT and ncclCommRevoke
    cancelling a stuck op (then IU for ops, IA for finalize, split still works);
    finalize/destroy or init mixed with ops in a group (IU); blocking + nonblocking in one group (IA);
    config version gating and RCCL's short config layout."""
    run_scenario(build, "misuse")


@pytest.mark.timeout(120)
def test_segment_never_has_a_name(build, shm_probe, tmp_path):
    """The segment is an anonymous memfd passed over a Unix socket: no rank ever creates or opens
    a shared-memory name, so none can survive a kill -9 at any instant. Process ranks, peers
    killed mid-collective, mid-p2p and mid-bootstrap, all under a probe that logs every
    shm_open and every open under /dev/shm."""
    if artefacts.SANITIZE:
        pytest.skip("the probe would have to come after the sanitizer runtimes in LD_PRELOAD")
    log = tmp_path / "shm.log"
    probe = {"LD_PRELOAD": str(shm_probe), "SHM_PROBE_LOG": str(log)}
    # the probe sees a name when one is made (so an empty log means something)
    control = ("from multiprocessing import shared_memory as s\n"
               "m = s.SharedMemory(create=True, size=16)\nm.close()\nm.unlink()\n")
    r = subprocess.run(["python3", "-c", control], env=dict(artefacts.tool_env(), **probe), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "shm_open" in log.read_text(), "the probe does not see shm_open"
    log.unlink()
    run_scenario(build, "procs", 3, **probe)
    run_scenario(build, "kill", 3, NCCL_HOST_TIMEOUT="30", **probe)
    assert not log.exists(), f"shared-memory names were opened:\n{log.read_text()}"


# ---------------------------------------------------------------------------------------------
# Hostile neighbours (issue 15): floods and slow connections on the listeners, unused ids
# ---------------------------------------------------------------------------------------------

ATTACKER = Path(__file__).resolve().parent / "flood_attacker.py"


@pytest.fixture(scope="module")
def hostile():
    """tests/host/hostile_test.c linked against the library under test (tests/host/meson.build)."""
    return artefacts.artefact("tests/host/hostile_test")


def _engine_env(**extra):
    e = {k: v for k, v in artefacts.tool_env().items() if not k.startswith("NCCL_")}
    e.update({k: str(v) for k, v in extra.items()})
    return e


@pytest.mark.timeout(120)
def test_unused_ids_share_one_root(hostile):
    """2000 unused ncclGetUniqueId calls under a 256-file limit: one root thread and one
    listener in all; the open-id limit, and a file limit reached, are errors that name it."""
    r = subprocess.run([str(hostile), "ids"], capture_output=True, text=True, timeout=100,
                       env=_engine_env(NCCL_HOST_TIMEOUT=30))
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(hostile), "nofile"], capture_output=True, text=True, timeout=60,
                       env=_engine_env(NCCL_HOST_TIMEOUT=30))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ncclGetUniqueId: cannot start the bootstrap root" in r.stdout and "RLIMIT_NOFILE" in r.stdout


def _listen_port(pid, limit_s=30.0):
    """The TCP port of the one listening socket of process pid (its control-mesh listener)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
                      if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
            with open(f"/proc/{pid}/net/tcp") as f:
                for line in f.readlines()[1:]:
                    cols = line.split()
                    if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                        return int(cols[1].split(":")[1], 16)
        except (FileNotFoundError, ProcessLookupError):
            pass
        time.sleep(0.02)
    pytest.fail(f"process {pid} opened no listener within {limit_s} s")


def _attacker_command():
    """(interpreter, Popen keywords): as `nobody` when we are root, so the attacker is another user
    as a real one would be, with an interpreter that user may run; as ourselves otherwise."""
    import pwd

    if os.geteuid() != 0:
        return sys.executable, {}
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return sys.executable, {}
    for python in ("/usr/bin/python3", sys.executable):
        probe = subprocess.run([python, "-c", "pass"], user="nobody", capture_output=True, timeout=60)
        if probe.returncode == 0:
            return python, {"user": "nobody", "group": "nogroup" if _has_group("nogroup") else "nobody"}
    pytest.skip("no Python interpreter that the user nobody may run")


def _has_group(name):
    import grp

    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.timeout(150)
@pytest.mark.parametrize("mode", ["silent", "slowloris"])
def test_init_beside_a_flood(hostile, mode):
    """A 2-rank init while another user holds 1000 connections to the root's listener (whose
    process may open 1024 files) and 200 to rank 1's control-mesh listener, silent or sending a
    byte every half second: both ranks initialise and agree, the root's process never holds
    more than a bounded number of them, and nobody else receives the segment."""
    env = _engine_env(NCCL_HOST_TIMEOUT=20)
    python, as_user = _attacker_command()
    procs = []

    def start(*args, **kw):
        p = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=kw.pop("env", env), **kw)
        procs.append(p)
        return p

    try:
        holder = start(hostile, "hold", 1024, stdin=subprocess.PIPE)
        uid = holder.stdout.readline().strip()
        assert len(uid) == 256, holder.stderr.read()
        root_port = int.from_bytes(bytes.fromhex(uid)[66:68], "big")
        r1 = start(hostile, "rank", 1, 2, uid)
        mesh_port = _listen_port(r1.pid)
        attacker = start(python, ATTACKER, "--port", f"{root_port}:1000", "--port", f"{mesh_port}:200",
                         "--mode", mode, "--lifetime", 100, env=dict(env, PYTHONDONTWRITEBYTECODE="1"),
                         cwd="/", **as_user)
        ready = attacker.stdout.readline()
        assert ready.startswith("ready"), attacker.stderr.read()
        r0 = start(hostile, "rank", 0, 2, uid)
        holder_fds = _fd_count(holder.pid)
        outs = {}
        for r, p in ((0, r0), (1, r1)):
            out, err = p.communicate(timeout=60)
            outs[r] = (p.returncode, out, err)
        holder_fds = max(holder_fds, _fd_count(holder.pid))
        attacker.terminate()
        summary = attacker.communicate(timeout=30)[0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
    for r, (code, out, err) in outs.items():
        assert code == 0 and f"INIT {r} " in out, f"rank {r} under a {mode} flood: exit {code}\n{out}\n{err}"
    print(f"{mode} flood ({ready.strip()}): init", " / ".join(outs[r][1].split()[2] + " s" for r in (0, 1)),
          f"; root process holds {holder_fds} fds")
    assert holder_fds < 128, f"the root's process held {holder_fds} descriptors during the flood"
    assert "summary stolen=0 " in summary, summary


# ---------------------------------------------------------------------------------------------
# Who gets blamed (issue 23): after a kill -9, every survivor names the rank that died
# ---------------------------------------------------------------------------------------------

def _blame_trial(hostile, nranks, victim, delay, env):
    """One job of `hostile_test blame` ranks: once every rank is in its AllReduce loop, rank
    `victim` gets SIGKILL after `delay` s; each survivor prints the error its failed AllReduce
    left and aborts at once. Returns (the victim's pid, {rank: (result, message)})."""
    procs = []

    def start(*args, **kw):
        p = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, **kw)
        procs.append(p)
        return p

    errors = {}
    try:
        holder = start(hostile, "hold", 1024, stdin=subprocess.PIPE)
        uid = holder.stdout.readline().strip()
        assert len(uid) == 256, holder.stderr.read()
        ranks = [start(hostile, "blame", r, nranks, uid) for r in range(nranks)]
        for r, p in enumerate(ranks):
            line = p.stdout.readline()
            assert line == f"READY {r}\n", f"rank {r}: {line!r} {p.stderr.read() if not line else ''}"
        time.sleep(delay)
        ranks[victim].kill()
        for r, p in enumerate(ranks):
            out, err = p.communicate(timeout=60)
            if r != victim:
                assert p.returncode == 0 and out.startswith(f"ERR {r} "), f"rank {r}: exit {p.returncode}\n{out}\n{err}"
                code, msg = out.split(" ", 3)[2:]
                errors[r] = (int(code), msg.strip())
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
    return ranks[victim].pid, errors


@pytest.mark.timeout(280)
@pytest.mark.parametrize("nranks", [3, 4])
def test_survivors_blame_the_rank_that_died(hostile, nranks):
    """10 jobs: kill -9 of a random non-zero rank while every rank loops on AllReduce. Each
    survivor aborts as soon as its call fails, so the others may see an abort before the death;
    still every survivor's error is ncclRemoteError naming the rank that died and its pid, never
    a survivor that aborted because of it."""
    import random

    rng = random.Random(2300 + nranks)
    env = _engine_env(NCCL_HOST_TIMEOUT=30)
    wrong = []
    for trial in range(10):
        victim = rng.randrange(1, nranks)
        pid, errors = _blame_trial(hostile, nranks, victim, rng.uniform(0.0, 0.05), env)
        for r, (code, msg) in sorted(errors.items()):
            if code != 6 or f"rank {victim} (pid {pid})" not in msg:
                wrong.append(f"trial {trial}, rank {victim} killed: rank {r} got {code}: {msg}")
    print(f"{nranks} ranks: {len(wrong)} of {10 * (nranks - 1)} survivors blamed something else")
    assert not wrong, "\n".join(wrong)


@pytest.mark.timeout(120)
def test_abort_during_a_blocking_init_says_aborted(hostile):
    """The id's root lives in the process of rank 0, whose blocking init (ncclGroupEnd) another
    thread aborts, 30 times: the error is the abort, never the root's note that rank 0 closed its
    connection."""
    r = subprocess.run([str(hostile), "initabort", "30"], capture_output=True, text=True, timeout=100,
                       env=_engine_env(NCCL_HOST_TIMEOUT=30))
    assert r.returncode == 0, r.stdout + r.stderr
