"""python -m nccl.run: success, the rank environment, failure propagation, crashes, hangs and
timeouts, orphans, Ctrl-C, /dev/shm, bad arguments.

Each test writes a small rank script to tmp_path that uses only nccl.bindings.nccl (or no NCCL at
all) and runs the launcher in a child process. Ranks that must be checked for orphans write their
pids (and their own children's) to files in tmp_path.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import children
from nccl import run as launcher

# Variables that steer library discovery: the launcher's children start without them.
LOADER_VARIABLES = children.LOADER_VARIABLES + ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                launcher.UNIQUE_ID_VARIABLE)

ALLREDUCE = """
import os, sys
import numpy as np
import nccl.bindings.nccl as b

rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
uid = bytes.fromhex(os.environ["NCCL4PY_UNIQUE_ID"])
box = b.PointerBox()
b.comm_init_rank(box.address, n, uid, rank)
x = np.full(1000, rank + 1, dtype=np.float32)
y = np.zeros_like(x)
b.all_reduce(x.ctypes.data, y.ctypes.data, x.size, b.DataType.Float32, b.RedOp.Sum, box.ptr, 0)
b.comm_destroy(box.ptr)
want = n * (n + 1) / 2
print(f"rank {rank}/{n} sum={y[0]:g} ok={bool((y == want).all())}")
print(f"to stderr from {rank}", file=sys.stderr)
sys.exit(0 if (y == want).all() else 1)
"""

# Records this rank's pid and a child's, then behaves as ACTION says.
PIDS = """
import os, subprocess, sys, time
rank = int(os.environ["RANK"])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
out = os.path.join({dir!r}, f"pids{{rank}}")
with open(out + ".tmp", "w") as f:
    f.write(f"{{os.getpid()}} {{child.pid}}")
os.replace(out + ".tmp", out)
print("ready", flush=True)
{action}
"""


def env(**overrides):
    return children.environment(drop=LOADER_VARIABLES,
                                **{"NCCL_HOST_TIMEOUT": os.environ.get("NCCL_HOST_TIMEOUT", "30"), **overrides})


def script(tmp_path, text, name="rank.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def run(args, timeout=90, **env_overrides):
    return subprocess.run([sys.executable, "-m", "nccl.run", *map(str, args)], env=env(**env_overrides),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def alive(pid):
    """False once the process is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def zombie_of(pid, parent):
    """True while pid is a zombie (or still running) child of parent."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1]) == parent
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def pids(tmp_path, nranks):
    out = []
    for r in range(nranks):
        p = tmp_path / f"pids{r}"
        if p.exists():
            out.extend(int(x) for x in p.read_text().split())
    return out


def assert_all_gone(pid_list, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(alive(p) for p in pid_list):
        time.sleep(0.05)
    assert not [p for p in pid_list if alive(p)], "processes outlived the launcher"


def wait_for_files(paths, within=60.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(p.exists() for p in paths):
            return
        time.sleep(0.05)
    raise AssertionError(f"the ranks did not start: {[str(p) for p in paths if not p.exists()]}")


def lines_of(text, rank):
    return [ln[len(f"[{rank}] "):] for ln in text.splitlines() if ln.startswith(f"[{rank}] ")]


def test_allreduce_two_ranks_prefixed_output(tmp_path):
    r = run(["-n", 2, script(tmp_path, ALLREDUCE)])
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        assert lines_of(r.stdout, rank) == [f"rank {rank}/2 sum=3 ok=True"]
        assert lines_of(r.stderr, rank) == [f"to stderr from {rank}"]


def test_host_backend_notice_once(tmp_path):
    # An empty device directory: the loader sees a machine without a GPU, wherever this runs.
    devdir = tmp_path / "dev"
    devdir.mkdir()
    r = run(["-n", 3, script(tmp_path, ALLREDUCE)], NCCL4PY_DEV_DIR=devdir)
    assert r.returncode == 0, r.stderr
    notices = [ln for ln in r.stderr.splitlines() if "host backend" in ln]
    assert len(notices) == 1 and notices[0].startswith("nccl.run: no GPU found"), r.stderr
    assert "HostBackendWarning" not in r.stderr


def test_explicit_host_is_silent(tmp_path):
    r = run(["-n", 2, script(tmp_path, ALLREDUCE)], NCCL_LIBRARY="host")
    assert r.returncode == 0, r.stderr
    assert "host backend" not in r.stderr


def test_rank_environment_and_arguments(tmp_path):
    s = script(tmp_path, """
        import os, sys
        keys = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"]
        print(" ".join(os.environ[k] for k in keys), len(os.environ["NCCL4PY_UNIQUE_ID"]), sys.argv[1:])
    """)
    r = run(["-n", 3, "--timeout", 60, s, "a", "-n", "5", "--timeout=x"], NCCL_LIBRARY="host")
    assert r.returncode == 0, r.stderr
    for rank in range(3):
        # the script's own arguments pass through untouched, even ones that look like ours
        assert lines_of(r.stdout, rank) == [f"{rank} 3 {rank} 3 256 ['a', '-n', '5', '--timeout=x']"]


def test_the_id_is_a_unique_id(tmp_path):
    s = script(tmp_path, """
        import os
        raw = bytes.fromhex(os.environ["NCCL4PY_UNIQUE_ID"])
        print(len(raw), raw != bytes(128))
    """)
    r = run(["-n", 1, s], NCCL_LIBRARY="host")
    assert r.returncode == 0, r.stderr
    assert lines_of(r.stdout, 0) == ["128 True"]


def test_module_mode(tmp_path):
    (tmp_path / "mymod.py").write_text("import os, sys\nprint('module', os.environ['RANK'], sys.argv[1:])\n")
    r = run(["-n", 2, "-m", "mymod", "x"], NCCL_LIBRARY="host", PYTHONPATH=tmp_path)
    assert r.returncode == 0, r.stderr
    assert lines_of(r.stdout, 1) == ["module 1 ['x']"]


def test_failure_stops_the_others_and_names_the_rank(tmp_path):
    action = "if rank == 1:\n    time.sleep(0.5)\n    sys.exit(3)\ntime.sleep(600)"
    s = script(tmp_path, PIDS.format(dir=str(tmp_path), action=action))
    t0 = time.monotonic()
    r = run(["-n", 3, s], NCCL_LIBRARY="host")
    assert time.monotonic() - t0 < 60
    assert r.returncode == 3, r.stderr
    assert "nccl.run: rank 1 failed (exit code 3)" in r.stderr
    assert len(pids(tmp_path, 3)) == 6
    assert_all_gone(pids(tmp_path, 3))


def test_crash_by_signal(tmp_path):
    action = "if rank == 0:\n    os.kill(os.getpid(), 9)\ntime.sleep(600)"
    s = script(tmp_path, PIDS.format(dir=str(tmp_path), action=action))
    r = run(["-n", 2, s], NCCL_LIBRARY="host")
    assert r.returncode == 128 + 9, r.stderr
    assert "rank 0 failed (killed by SIGKILL)" in r.stderr
    assert_all_gone(pids(tmp_path, 2))


def test_exception_in_a_rank(tmp_path):
    s = script(tmp_path, """
        import os, time
        if os.environ["RANK"] == "1":
            raise ValueError("bad rank")
        time.sleep(600)
    """)
    r = run(["-n", 2, s], NCCL_LIBRARY="host")
    assert r.returncode == 1
    assert "[1] ValueError: bad rank" in r.stderr
    assert "rank 1 failed (exit code 1)" in r.stderr


def test_timeout(tmp_path):
    s = script(tmp_path, PIDS.format(dir=str(tmp_path), action="time.sleep(600)"))
    r = run(["-n", 2, "--timeout", 8, s], NCCL_LIBRARY="host")
    assert r.returncode == launcher.EXIT_TIMEOUT, r.stderr
    assert "timeout after 8 s; rank(s) 0, 1 still running" in r.stderr
    assert len(pids(tmp_path, 2)) == 4
    assert_all_gone(pids(tmp_path, 2))


def test_rank_hung_in_a_collective(tmp_path):
    # Rank 0 waits in all_reduce for rank 1, which never calls it; the backend's own deadline is
    # far away, so the launcher's timeout is what ends it.
    s = script(tmp_path, """
        import os, time
        import numpy as np
        import nccl.bindings.nccl as b
        rank = int(os.environ["RANK"])
        box = b.PointerBox()
        b.comm_init_rank(box.address, 2, bytes.fromhex(os.environ["NCCL4PY_UNIQUE_ID"]), rank)
        print("initialised", flush=True)
        x = np.ones(4, dtype=np.float32)
        if rank == 0:
            b.all_reduce(x.ctypes.data, x.ctypes.data, 4, b.DataType.Float32, b.RedOp.Sum, box.ptr, 0)
        time.sleep(600)
    """)
    r = run(["-n", 2, "--timeout", 15, s], NCCL_LIBRARY="host", NCCL_HOST_TIMEOUT=300)
    assert r.returncode == launcher.EXIT_TIMEOUT, r.stderr
    assert lines_of(r.stdout, 0) == ["initialised"] and lines_of(r.stdout, 1) == ["initialised"]


# Each rank starts two processes that sleep far longer than any deadline below and hold the
# rank's output pipes: one in the rank's process group, and a daemon (fork, setsid, fork: its
# parent exits, so it is reparented and in a session of its own). ACTION: what the rank does then.
FAMILY = """
import os, subprocess, sys, time
rank = int(os.environ["RANK"])
kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep({sleep})"])
r, w = os.pipe()
first = os.fork()
if first == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        time.sleep({sleep})
    os._exit(0)
os.waitpid(first, 0)
os.close(w)
daemon = int(os.read(r, 32))
out = os.path.join({dir!r}, f"pids{{rank}}")
with open(out + ".tmp", "w") as f:
    f.write(f"{{os.getpid()}} {{kid.pid}} {{daemon}}")
os.replace(out + ".tmp", out)
print("ready", flush=True)
{action}
"""
ORPHAN_SLEEP_S = 120
EXIT_WITHIN_S = 30  # a deadline to detect a launcher that waits for the orphans, not a speed

EXIT_PATHS = {  # name: (the ranks' action, launcher options, signal sent to the launcher, status)
    "success": ("sys.exit(0)", [], None, 0),
    # rank 1 fails once rank 0 has written its pids: otherwise the launcher may stop rank 0 before
    # it did (seen on a loaded machine), and there would be no family to check
    "failed rank": ("if rank == 1:\n    while not os.path.exists(os.path.join(os.path.dirname(out), 'pids0')):\n"
                    "        time.sleep(0.05)\n    sys.exit(3)\ntime.sleep(600)", [], None, 3),
    "timeout": ("time.sleep(600)", ["--timeout", 15], None, launcher.EXIT_TIMEOUT),
    "SIGINT": ("time.sleep(600)", [], signal.SIGINT, launcher.EXIT_INTERRUPT),
    "SIGTERM": ("time.sleep(600)", [], signal.SIGTERM, 128 + signal.SIGTERM),
    "SIGKILL": ("time.sleep(600)", [], signal.SIGKILL, -signal.SIGKILL),
}


@pytest.mark.parametrize("path", list(EXIT_PATHS))
def test_nothing_a_rank_started_outlives_the_launcher(tmp_path, path):
    """On every way out, the ranks' children in their process group and the daemons they started
    in sessions of their own are gone, and the launcher does not wait for them to end."""
    action, options, sig, status = EXIT_PATHS[path]
    s = script(tmp_path, FAMILY.format(dir=str(tmp_path), action=action, sleep=ORPHAN_SLEEP_S))
    p = subprocess.Popen([sys.executable, "-m", "nccl.run", "-n", "2", *map(str, options), str(s)],
                         env=env(NCCL_LIBRARY="host"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    try:
        wait_for_files([tmp_path / "pids0", tmp_path / "pids1"])
        family = pids(tmp_path, 2)
        assert len(family) == 6
        if sig is not None:
            p.send_signal(sig)
        # communicate() reads the launcher's pipes to their end: a killed launcher's ranks and
        # orphans hold them too, until the guard has stopped them.
        out, err = p.communicate(timeout=EXIT_WITHIN_S)
        assert p.returncode == status, err
        if sig != signal.SIGKILL:
            assert lines_of(out.decode(), 0) == ["ready"], err
        assert_all_gone(family, within=20.0)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for pid in pids(tmp_path, 2):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_pipe_held_outside_the_launch_does_not_delay_the_exit(tmp_path):
    """A rank hands its stdout and stderr to a process that is no part of the launch (this test);
    the launcher still exits, with the rank's last line copied."""
    sock_path = tmp_path / "fds.sock"
    s = script(tmp_path, f"""
        import socket
        with socket.socket(socket.AF_UNIX) as c:
            c.connect({str(sock_path)!r})
            socket.send_fds(c, [b"x"], [1, 2])
            c.recv(1)
        print("last words")
    """)
    import socket
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_path))
        server.listen(1)
        server.settimeout(60)
        p = subprocess.Popen([sys.executable, "-m", "nccl.run", "-n", "1", str(s)], env=env(NCCL_LIBRARY="host"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        held = []
        try:
            conn, _ = server.accept()
            with conn:
                _, held, _, _ = socket.recv_fds(conn, 1, 2)
                conn.send(b"k")
            out, err = p.communicate(timeout=EXIT_WITHIN_S)  # while this process holds the pipes
            assert p.returncode == 0, err
            assert lines_of(out.decode(), 0) == ["last words"]
        finally:
            for fd in held:
                os.close(fd)
            if p.poll() is None:
                p.kill()
                p.wait()


def test_orphans_that_end_are_reaped_while_the_ranks_run(tmp_path):
    """The launcher adopts a rank's orphans: one that ends is reaped, not left a zombie."""
    s = script(tmp_path, f"""
        import os, time
        first = os.fork()
        if first == 0:
            if os.fork() == 0:
                with open(os.path.join({str(tmp_path)!r}, "orphan.tmp"), "w") as f:
                    f.write(str(os.getpid()))
                os.replace(os.path.join({str(tmp_path)!r}, "orphan.tmp"), os.path.join({str(tmp_path)!r}, "orphan"))
                time.sleep(0.5)
            os._exit(0)
        os.waitpid(first, 0)
        time.sleep(600)
    """)
    p = subprocess.Popen([sys.executable, "-m", "nccl.run", "-n", "1", str(s)], env=env(NCCL_LIBRARY="host"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        wait_for_files([tmp_path / "orphan"])
        orphan = int((tmp_path / "orphan").read_text())
        deadline = time.monotonic() + 30
        while zombie_of(orphan, p.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not zombie_of(orphan, p.pid), "the orphan was not reaped"
        assert p.poll() is None
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_interrupt_stops_every_rank(tmp_path, sig, code):
    s = script(tmp_path, PIDS.format(dir=str(tmp_path), action="time.sleep(600)"))
    shm_before = _shm_names()
    p = subprocess.Popen([sys.executable, "-m", "nccl.run", "-n", "2", str(s)], env=env(NCCL_LIBRARY="host"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        wait_for_files([tmp_path / "pids0", tmp_path / "pids1"])
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == code, err
    said = "interrupted" if sig == signal.SIGINT else f"{signal.Signals(sig).name} received"
    assert err == f"nccl.run: {said}; stopping all ranks\n"
    assert_all_gone(pids(tmp_path, 2))
    assert _shm_names() <= shm_before


def test_repeated_interrupts_still_clean_up(tmp_path):
    # the ranks ignore SIGTERM, so cleanup takes the SIGKILL path while more signals arrive
    action = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)"
    s = script(tmp_path, PIDS.format(dir=str(tmp_path), action=action))
    p = subprocess.Popen([sys.executable, "-m", "nccl.run", "-n", "2", str(s)], env=env(NCCL_LIBRARY="host"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        wait_for_files([tmp_path / "pids0", tmp_path / "pids1"])
        for _ in range(5):
            p.send_signal(signal.SIGINT)
            time.sleep(0.2)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert_all_gone(pids(tmp_path, 2))


def test_interrupt_during_init_leaves_no_shared_memory(tmp_path):
    # Ranks killed while they bootstrap (the segment is named only inside the attach window).
    s = script(tmp_path, """
        import os
        import nccl.bindings.nccl as b
        rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        open(os.path.join(os.path.dirname(__file__), f"started{rank}"), "w").close()
        for _ in range(1):
            box = b.PointerBox()
            b.comm_init_rank(box.address, n, bytes.fromhex(os.environ["NCCL4PY_UNIQUE_ID"]), rank)
        import time; time.sleep(600)
    """)
    shm_before = _shm_names()
    p = subprocess.Popen([sys.executable, "-m", "nccl.run", "-n", "2", str(s)], env=env(NCCL_LIBRARY="host"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        wait_for_files([tmp_path / "started0", tmp_path / "started1"])
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert _shm_names() <= shm_before


def _shm_names():
    """Host-backend /dev/shm names of our uid whose creator is gone (ranks of this test, after
    the launcher stopped them); names of live processes elsewhere on the machine do not count."""
    prefix = f"nccl-host-{os.geteuid()}-"
    try:
        names = [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]
    except OSError:
        return set()
    return {n for n in names if not alive(int(n[len(prefix):].split("-", 1)[0]))}


MARKED = """
import os, subprocess, sys, time
rank = int(os.environ["RANK"])
# one child in the rank's process group, one that left it for a session of its own
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)]
out = os.path.join({dir!r}, f"pids{{rank}}")
with open(out + ".tmp", "w") as f:
    f.write(" ".join(str(p) for p in [os.getpid()] + [k.pid for k in kids]))
os.replace(out + ".tmp", out)
time.sleep(600)
"""


def marked_processes(marker):
    """Live processes whose environment holds ORPHAN_MARK=marker."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if f"ORPHAN_MARK={marker}".encode() in f.read().split(b"\0") and alive(int(name)):
                    found.append(int(name))
        except OSError:
            continue
    return found


def test_killed_launcher_takes_its_ranks_along(tmp_path):
    """SIGKILL to the launcher: no rank, and no child of a rank (even one in a session of its
    own), outlives it; found by an environment marker they all inherit."""
    marker = os.urandom(8).hex()
    s = script(tmp_path, MARKED.format(dir=str(tmp_path)))
    p = subprocess.Popen([sys.executable, "-m", "nccl.run", "-n", "2", str(s)],
                         env=env(NCCL_LIBRARY="host", ORPHAN_MARK=marker), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_for_files([tmp_path / "pids0", tmp_path / "pids1"])
        assert len(marked_processes(marker)) >= 6  # the launcher, two ranks, four children
        p.kill()
        p.wait()
        deadline = time.monotonic() + 20
        while marked_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = marked_processes(marker)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for pid in marked_processes(marker):  # never leave them running, whatever happened
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes outlived the killed launcher: {left}"


@pytest.mark.parametrize("args, message", [
    ([], "the following arguments are required: script"),
    (["x.py"], "-n N (the number of ranks) is required"),
    (["-n"], "argument -n/--nranks: expected one argument"),
    (["-n", "0", "x.py"], "argument -n/--nranks: must be a positive integer, got '0'"),
    (["-n", "two", "x.py"], "argument -n/--nranks: must be a positive integer, got 'two'"),
    (["-np", "-3", "x.py"], "argument -np: must be a positive integer, got '-3'"),
    (["-n", "2"], "the following arguments are required: script"),
    (["-n", "2", "missing_script.py"], "script not found: missing_script.py"),
    (["-n", "2", "--timeout", "-1", "x.py"], "argument --timeout: must be a positive number of seconds, got '-1'"),
    (["-n", "2", "--timeout", "soon", "x.py"], "argument --timeout: must be a positive number of seconds"),
    (["-n", "2", "--wait-warning", "x", "x.py"], "argument --wait-warning: must be a number of seconds, 0 or more"),
    (["-n", "2", "--bogus", "x.py"], "unrecognized arguments: --bogus"),
    (["-n", "2", "--time", "5", "x.py"], "unrecognized arguments: --time"),  # no abbreviations
    (["-n", "2", "-m"], "the following arguments are required: script"),
    (["-n", "2", "--local-ranks-filter", "0,x", "x.py"], "must be ranks such as 0 or 0,2-3, got '0,x'"),
    (["-n", "2", "--local-ranks-filter", "1-2", "x.py"], "--local-ranks-filter names rank 2, but the ranks are 0 to 1"),
    (["-n", "2", "--log-dir", "x.py/sub", "x.py"], "--log-dir x.py/sub: Not a directory"),
])
def test_bad_arguments(tmp_path, args, message):
    (tmp_path / "x.py").write_text("pass\n")
    r = subprocess.run([sys.executable, "-m", "nccl.run", *args], env=env(), capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nccl.run: error: ") and message in lines[0], r.stderr
    assert lines[0].endswith("(python -m nccl.run --help lists the options)")


def test_parse_args_forms():
    def p(argv, **env):
        o = launcher.parse_args(argv, environ=env)
        return o.nranks, o.timeout, o.command

    assert p(["-n", "2", "--", __file__, "-n", "9"]) == (2, None, [__file__, "-n", "9"])
    assert p(["-n4", "--timeout=2.5", __file__]) == (4, 2.5, [__file__])
    assert p(["--nranks=3", "-np", "5", __file__]) == (5, None, [__file__])
    assert p(["--nproc-per-node", "3", __file__]) == (3, None, [__file__])
    assert p(["--nproc_per_node=6", __file__]) == (6, None, [__file__])
    assert p(["-n", "1", "-m", "pkg.mod", "-x"]) == (1, None, ["-m", "pkg.mod", "-x"])
    assert p(["-n", "1", "--module", "pkg.mod", "--", "-m"]) == (1, None, ["-m", "pkg.mod", "--", "-m"])
    # the program's own arguments are its own, even ones that look like the launcher's or "--"
    assert p(["-n", "2", __file__, "--", "-n", "3", "--help"]) == (2, None, [__file__, "--", "-n", "3", "--help"])
    o = launcher.parse_args(["-n", "3", "--no-prefix", "--local-ranks-filter", "0,2", __file__], environ={})
    assert (o.prefix, o.shown, o.log_dir, o.wait_warning) == (False, {0, 2}, None, 30.0)
    assert launcher.parse_args(["-n", "2", __file__], environ={}).prefix is True
    assert launcher.parse_args(["-n", "2", __file__], environ={"NCCL4PY_WAIT_WARNING": "4.5"}).wait_warning == 4.5
    assert launcher.parse_args(["-n", "2", "--wait-warning", "0", __file__],
                               environ={"NCCL4PY_WAIT_WARNING": "4.5"}).wait_warning == 0
    with pytest.raises(launcher.UsageError, match="NCCL4PY_WAIT_WARNING must be a number of seconds, 0 or more"):
        launcher.parse_args(["-n", "2", __file__], environ={"NCCL4PY_WAIT_WARNING": "soon"})


def test_help():
    r = subprocess.run([sys.executable, "-m", "nccl.run", "--help"], env=env(), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("usage: python -m nccl.run -n N [options] (script.py | -m module) [args ...]\n")
    for option in ("-n N, --nranks N", "-m, --module", "--timeout S", "--wait-warning S", "--no-prefix",
                   "--log-dir DIR", "--local-ranks-filter RANKS"):
        assert f"\n  {option}" in r.stdout, option
    # the options, not the design: that is in docs/api/launcher.md
    assert "subreaper" not in r.stdout and "prctl" not in r.stdout
    assert len(r.stdout.splitlines()) < 40


# NVIDIA's nccl4py examples take the rank from MPI: rank 0 makes the id, MPI broadcasts it.
MPI_PROGRAM = """
from mpi4py import MPI
import numpy as np
import nccl.core as nccl

comm_mpi = MPI.COMM_WORLD
rank = comm_mpi.Get_rank()
nranks = comm_mpi.Get_size()
unique_id = nccl.get_unique_id() if rank == 0 else None
unique_id = comm_mpi.bcast(unique_id, root=0)
comm = nccl.Communicator.init(nranks=nranks, rank=rank, unique_id=unique_id)
x = np.full(4, rank + 1, dtype=np.float32)
comm.allreduce(x, x, nccl.SUM)
comm.destroy()
print(f"rank {rank}/{nranks} SUCCESS {x[0]:g}")
"""

# The same with the bindings' 0.3.1 form.
MPI_BINDINGS_PROGRAM = """
from mpi4py import MPI
import nccl.bindings.nccl as b

world = MPI.COMM_WORLD
uid = world.bcast(bytes(b.get_unique_id()) if world.Get_rank() == 0 else None, root=0)
box = b.PointerBox()
b.comm_init_rank(box.address, world.Get_size(), uid, world.Get_rank())
b.comm_destroy(box.ptr)
print("SUCCESS")
"""


def refusal(rank, nranks, script_name):
    return (f"RuntimeError: this process is rank {rank} of {nranks} started by `python -m nccl.run -n {nranks}`, "
            f"but MPI counts 1 process (mpi4py's MPI.COMM_WORLD.Get_size() is 1: nccl.run starts its ranks "
            f"without MPI), so this 1-rank communicator would make each of the {nranks} ranks a 1-rank job of "
            f"its own. The program takes its rank from MPI: run it with `mpirun -n {nranks} python "
            f"{script_name}`, or take the rank from the launcher with nccl.core.Communicator.from_env()")


@pytest.mark.parametrize("program", [MPI_PROGRAM, MPI_BINDINGS_PROGRAM], ids=["core", "bindings"])
def test_an_mpi_program_under_the_launcher_is_refused(tmp_path, program):
    """Not two 1-rank jobs that report success: every rank fails saying what to run instead."""
    pytest.importorskip("mpi4py")
    s = script(tmp_path, program, name="mpi_prog.py")
    r = subprocess.run([sys.executable, "-m", "nccl.run", "-n", "2", s.name], env=env(NCCL_LIBRARY="host"),
                       capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "SUCCESS" not in r.stdout
    # The first rank to fail ends the job, so the other may be stopped before (or while) it prints
    # its own refusal: at least one rank ends with it, and no rank says anything else went wrong.
    said = {rank: lines_of(r.stderr, rank) for rank in (0, 1)}
    assert any(lines and lines[-1] == refusal(rank, 2, "mpi_prog.py") for rank, lines in said.items()), r.stderr
    for rank, lines in said.items():
        errors = [ln for ln in lines if "Error:" in ln]
        assert errors in ([], [refusal(rank, 2, "mpi_prog.py")]), r.stderr


@pytest.mark.parametrize("launch", [[], ["-m", "nccl.run", "-n", "1"]], ids=["python", "nccl.run -n 1"])
def test_an_mpi_program_alone_still_runs(tmp_path, launch):
    pytest.importorskip("mpi4py")
    s = script(tmp_path, MPI_PROGRAM)
    r = subprocess.run([sys.executable, *launch, str(s)], env=env(NCCL_LIBRARY="host"), capture_output=True,
                       text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].endswith("rank 0/1 SUCCESS 1"), r.stdout
    assert "RuntimeWarning" not in r.stderr


def test_a_one_rank_communicator_in_a_launch_of_two_warns(tmp_path):
    """Without MPI's word the 1-rank communicator may be meant (a private one): a warning, not an
    error, in each rank."""
    s = script(tmp_path, """
        import nccl.core as nccl
        comm = nccl.Communicator.init(nranks=1, rank=0, unique_id=nccl.get_unique_id())
        comm.destroy()
        print("done")
    """)
    r = run(["-n", 2, s], NCCL_LIBRARY="host")
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        assert lines_of(r.stdout, rank) == ["done"]
        want = (f"RuntimeWarning: rank {rank} of 2 started by `python -m nccl.run -n 2` creates a 1-rank "
                f"communicator; if the program meant to use all 2 ranks, take the rank and size from the "
                f"launcher (nccl.core.Communicator.from_env(), or RANK, WORLD_SIZE and NCCL4PY_UNIQUE_ID)")
        assert any(ln.endswith(want) for ln in lines_of(r.stderr, rank)), r.stderr


class _FakeMPI:
    """Stands in for mpi4py.MPI in check_one_rank's view."""

    def __init__(self, size, initialized=True, finalized=False):
        self.size, self.initialized, self.finalized = size, initialized, finalized
        self.COMM_WORLD = self

    def Is_initialized(self):
        return self.initialized

    def Is_finalized(self):
        return self.finalized

    def Get_size(self):
        return self.size


@pytest.mark.parametrize("variables, mpi, outcome", [
    ({"NCCL4PY_LAUNCHER": "nccl.run", "WORLD_SIZE": "2"}, _FakeMPI(1), RuntimeError),
    ({"NCCL4PY_LAUNCHER": "nccl.run", "WORLD_SIZE": "2"}, _FakeMPI(2), RuntimeWarning),
    ({"NCCL4PY_LAUNCHER": "nccl.run", "WORLD_SIZE": "2"}, _FakeMPI(1, initialized=False), RuntimeWarning),
    ({"NCCL4PY_LAUNCHER": "nccl.run", "WORLD_SIZE": "2"}, _FakeMPI(1, finalized=True), RuntimeWarning),
    ({"NCCL4PY_LAUNCHER": "nccl.run", "WORLD_SIZE": "2"}, None, RuntimeWarning),
    ({"NCCL4PY_LAUNCHER": "nccl.run", "WORLD_SIZE": "1"}, _FakeMPI(1), None),
    ({"NCCL4PY_LAUNCHER": "torchrun", "WORLD_SIZE": "2"}, _FakeMPI(1), None),  # not our launch
    ({"WORLD_SIZE": "2"}, _FakeMPI(1), None),
    ({"NCCL4PY_LAUNCHER": "nccl.run", "WORLD_SIZE": "two"}, _FakeMPI(1), None),
])
def test_check_one_rank_cases(monkeypatch, variables, mpi, outcome):
    import warnings

    from nccl import _launch

    for name in ("NCCL4PY_LAUNCHER", "WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", mpi)
    if outcome is RuntimeError:
        with pytest.raises(RuntimeError, match=r"MPI counts 1 process .* run it with `mpirun -n 2 python "):
            _launch.check_one_rank()
    elif outcome is RuntimeWarning:
        with pytest.warns(RuntimeWarning, match="creates a 1-rank communicator"):
            _launch.check_one_rank()
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _launch.check_one_rank()


def test_only_the_unique_id_failure_is_reported_as_one(monkeypatch, capsys):
    """A library that does not load is reported as the unique id's failure; a RuntimeError later in
    the launch is not dressed up as one (it propagates with its own traceback)."""
    opts = launcher.parse_args(["-n", "2", __file__], environ={})

    def no_library():
        raise RuntimeError("no NCCL library could be loaded\n  tried: libnccl.so.2")
    monkeypatch.setattr(launcher, "create_unique_id", no_library)
    assert launcher.launch(opts) == 1
    assert capsys.readouterr().err == ("nccl.run: cannot create the unique id: no NCCL library could be loaded\n"
                                       "  tried: libnccl.so.2\n")

    def launch_fails(self):
        raise RuntimeError("the launch itself failed")
    monkeypatch.setattr(launcher, "create_unique_id", lambda: (bytes(128), {}, None))
    monkeypatch.setattr(launcher.LaunchTrace, "setup", staticmethod(lambda *a: None))
    monkeypatch.setattr(launcher._Launch, "run", launch_fails)
    with pytest.raises(RuntimeError, match="the launch itself failed"):
        launcher.launch(opts)
    assert "unique id" not in capsys.readouterr().err
