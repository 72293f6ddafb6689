"""Engine tests of the host backend (libnccl-host.so), written in C and driven from here.

The library is compiled from src/host/*.c with gcc into a temporary directory (the meson build
installs the same sources as nccl/_lib/libnccl-host.so), together with the driver
tests/host/host_smoke_test.c. Each scenario runs in its own process under a wall-clock limit and
short library deadlines (NCCL_HOST_TIMEOUT=3), so nothing can hang; the driver prints
"PASS <scenario>" and exits 0, or prints "FAIL file:line: ..." with the library's last error.

Numerics against numpy are covered by test_reduce_kernels.py (the kernels) and, later, by the
Python binding suite; here we test the engine: bootstrap, shared-memory data plane, every
collective's buffer rules, groups, nonblocking init, split/shrink, deadlines, peer death, abort,
mismatch detection, symbol exports and shared-memory cleanup.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST = ROOT / "src" / "host"
ABI_INCLUDE = ROOT / "src" / "include"
DRIVER = Path(__file__).resolve().parent / "host_smoke_test.c"
CFLAGS = [
    "-std=c11", "-D_GNU_SOURCE", "-ffp-contract=off", "-fPIC", "-fvisibility=hidden", "-O2", "-g",
    "-Wall", "-Wextra", "-Wno-missing-field-initializers",
]
OWNED_BY_OTHERS = {"reduce.c"}  # the kernels engineer's file: compiled, but not held to -Werror here
# `./run.sh asan` preloads the sanitizer runtimes into the interpreter; then the engine and the
# driver are built instrumented themselves, and children run without the preload.
SANITIZE = "libasan" in os.environ.get("LD_PRELOAD", "")
SAN_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"] if SANITIZE else []


def _child_env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def _gcc():
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not found")
    return gcc


def _shm_leftovers():
    try:
        names = os.listdir("/dev/shm")
    except FileNotFoundError:
        return set()
    prefix = f"nccl-host-{os.geteuid()}-"
    return {n for n in names if n.startswith(prefix)}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """Compiles libnccl-host.so and the driver; returns (library path, driver path, warnings)."""
    gcc = _gcc()
    out = tmp_path_factory.mktemp("hostlib")
    objs, warnings = [], {}
    for src in sorted(HOST.glob("*.c")):
        obj = out / (src.stem + ".o")
        r = subprocess.run([gcc, *CFLAGS, *SAN_FLAGS, "-I", str(ABI_INCLUDE), "-I", str(HOST), "-c", str(src), "-o", str(obj)],
                           capture_output=True, text=True, timeout=300, env=_child_env())
        assert r.returncode == 0, f"{src.name} does not compile:\n{r.stderr}"
        warnings[src.name] = r.stderr
        objs.append(str(obj))
    lib = out / "libnccl-host.so"
    r = subprocess.run([gcc, "-shared", *SAN_FLAGS, "-o", str(lib), *objs,
                        f"-Wl,--version-script={HOST / 'libnccl-host.map'}", "-Wl,-Bsymbolic",
                        "-Wl,--no-undefined", "-lpthread", "-lrt", "-lm"],
                       capture_output=True, text=True, timeout=300, env=_child_env())
    assert r.returncode == 0, f"link failed:\n{r.stderr}"
    exe = out / "host_smoke_test"
    r = subprocess.run([gcc, "-std=c11", "-O1", "-g", *SAN_FLAGS, "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                        "-Wno-maybe-uninitialized", "-I", str(ABI_INCLUDE), str(DRIVER), "-o", str(exe),
                        "-L", str(out), "-lnccl-host", f"-Wl,-rpath,{out}", "-lpthread", "-lm"],
                       capture_output=True, text=True, timeout=300, env=_child_env())
    assert r.returncode == 0, f"driver does not compile:\n{r.stderr}"
    return lib, exe, warnings


@pytest.fixture(autouse=True)
def no_shm_leftovers():
    """Every test must leave /dev/shm as it found it (section 10: cleanup on every path)."""
    before = _shm_leftovers()
    yield
    left = _shm_leftovers() - before
    assert not left, f"shared-memory objects left behind: {sorted(left)}"


def run_scenario(build, scenario, nranks=None, limit=90, **env):
    _, exe, _ = build
    e = _child_env()
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


def test_sources_compile_without_warnings(build):
    _, _, warnings = build
    noisy = {name: text for name, text in warnings.items() if text.strip() and name not in OWNED_BY_OTHERS}
    assert not noisy, "\n".join(f"{k}:\n{v}" for k, v in noisy.items())


def _abi_names():
    text = (ABI_INCLUDE / "abi.h").read_text()
    return set(re.findall(r"^\s*X\((\w+),", text, flags=re.M))


@pytest.mark.timeout(60)
def test_exports_only_nccl_names(build):
    lib, _, _ = build
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
def test_info_and_version_through_ctypes(build, tmp_path):
    lib, _, _ = build
    code = (
        "import ctypes, sys\n"
        f"l = ctypes.CDLL({str(lib)!r})\n"
        "l.ncclHostGetInfo.restype = ctypes.c_char_p\n"
        "l.ncclGetErrorString.restype = ctypes.c_char_p\n"
        "v = ctypes.c_int()\n"
        "assert l.ncclGetVersion(ctypes.byref(v)) == 0\n"
        "print(l.ncclHostGetInfo().decode(), v.value, l.ncclGetErrorString(8).decode())\n"
    )
    env = {k: v for k, v in _child_env().items() if not k.startswith("NCCL_")}
    if SANITIZE:
        pytest.skip("loads the instrumented library into a plain interpreter")
    r = subprocess.run(["python3", "-c", code], capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["libnccl-host", "0.1.0", "flavour=nccl", "api=23007", "fp8=ocp", "timeout=180",
                                "23007", "timeout"]
    env.update(NCCL_HOST_FLAVOR="rccl", NCCL_HOST_VERSION_CODE="22105")
    r = subprocess.run(["python3", "-c", code], capture_output=True, text=True, env=env, timeout=30)
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


@pytest.mark.timeout(60)
def test_stale_segment_of_dead_creator_is_swept(build):
    """A creator killed inside the attach window leaves its name; the next creator removes it."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = f"/dev/shm/nccl-host-{os.geteuid()}-{dead.pid}-00000000deadbeef"
    alive = f"/dev/shm/nccl-host-{os.geteuid()}-{os.getpid()}-00000000cafef00d"
    for path in (name, alive):
        with open(path, "wb") as f:
            f.write(b"x")
        os.chmod(path, 0o600)
    try:
        run_scenario(build, "threads", 2)
        assert not os.path.exists(name), "stale segment of a dead pid was not swept"
        assert os.path.exists(alive), "a live process's segment must never be touched"
    finally:
        for path in (name, alive):
            if os.path.exists(path):
                os.unlink(path)
