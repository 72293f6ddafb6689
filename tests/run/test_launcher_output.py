"""python -m nccl.run's output and report (docs/api/launcher.md): the prefix, --log-dir,
--local-ranks-filter, the plain channel, tracebacks held whole and consequential ones folded, the
root-cause summary, a quiet Ctrl-C, and the folders of failed runs kept under the user's trace
folder.

The copying (nccl._run_output.Output) is checked on pipes this test writes; the rest end to end,
the launcher in a child process on the host backend."""

import io
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

import children
from nccl import _run_output, _run_trace
from nccl import run as launcher

LOADER_VARIABLES = children.LOADER_VARIABLES + children.LAUNCH_VARIABLES


def env(**overrides):
    return children.environment(drop=LOADER_VARIABLES, **{"NCCL_LIBRARY": "host", "NCCL_HOST_TIMEOUT": "60",
                                                          **overrides})


def script(tmp_path, text, name="rank.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def run(args, timeout=120, cwd=None, **env_overrides):
    return subprocess.run([sys.executable, "-m", "nccl.run", *map(str, args)], env=env(**env_overrides),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd)


# ---- the copying, on pipes written here ----

REMOTE_TB = """\
Traceback (most recent call last):
  File "/work/job/train.py", line 10, in <module>
    comm.allreduce(x, x, nccl.SUM)
nccl._errors.NCCLRemoteError: RemoteError (6): remote process exited or there was a network error
  library's last error: comm rank 0: ncclAllReduce failed: peer rank 1 (pid 4242) died
"""

VALUE_TB = """\
Traceback (most recent call last):
  File "/work/job/train.py", line 9, in <module>
    load(batch)
  File "/work/job/data.py", line 3, in load
    raise ValueError("bad batch")
ValueError: bad batch
"""

CHAINED_TB = """\
Traceback (most recent call last):
  File "a.py", line 2, in <module>
    {}["k"]
KeyError: 'k'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 4, in <module>
    raise RuntimeError("no key")
RuntimeError: no key
"""


def ended():
    """A pipe with nothing in it and no writer (a stream that is over)."""
    r, w = os.pipe()
    os.close(w)
    return os.fdopen(r, "rb", buffering=0)


def copy(ranks, **options):
    """Runs Output over pipes holding each rank's (stdout, stderr, plain) text; (console stdout,
    console stderr, Output)."""
    out, err = io.BytesIO(), io.BytesIO()
    o = _run_output.Output(out, err, **options)
    for rank, texts in ranks.items():
        ends = []
        for text in texts:
            if text is None:
                ends.append(None)
                continue
            r, w = os.pipe()
            os.write(w, text.encode())
            os.close(w)
            ends.append(os.fdopen(r, "rb", buffering=0))
        o.add_rank(rank, *ends)
    o.finish()
    return out.getvalue().decode(), err.getvalue().decode(), o


def test_a_consequential_traceback_is_folded_to_its_exception_line():
    _, err, o = copy({0: ("", "before\n" + REMOTE_TB + "after\n", None)})
    assert err.splitlines() == [
        "[0] before",
        "[0] nccl._errors.NCCLRemoteError: RemoteError (6): remote process exited or there was a network error "
        "[/work/job/train.py:10 in <module>; traceback folded: another rank failed]",
        "[0] after",
    ]
    e = o.errors[0]
    assert (e.type_name, e.consequential, e.site) == ("NCCLRemoteError", True, "/work/job/train.py:10 in <module>")


def test_other_tracebacks_are_copied_whole_and_remembered():
    _, err, o = copy({1: ("", VALUE_TB, None), 2: ("", CHAINED_TB, None)})
    assert [ln[4:] for ln in err.splitlines() if ln.startswith("[1] ")] == VALUE_TB.splitlines()
    assert [ln[4:] for ln in err.splitlines() if ln.startswith("[2] ")] == CHAINED_TB.splitlines()
    assert (o.errors[1].exception, o.errors[1].site) == ("ValueError: bad batch", "/work/job/data.py:3 in load")
    assert (o.errors[2].exception, o.errors[2].consequential) == ("RuntimeError: no key", False)


def test_tracebacks_of_several_ranks_do_not_interleave():
    # each rank's traceback arrives in pieces over the same time; each is written in one piece
    out, err = io.BytesIO(), io.BytesIO()
    o = _run_output.Output(out, err)
    pipes = {}
    for rank in (0, 1):
        r, w = os.pipe()
        pipes[rank] = w
        o.add_rank(rank, ended(), os.fdopen(r, "rb", buffering=0))
    lines = VALUE_TB.splitlines(keepends=True)
    for line in lines:
        for rank in (0, 1):
            os.write(pipes[rank], line.encode())
    for w in pipes.values():
        os.close(w)
    o.finish()
    ranks = [ln[:3] for ln in err.getvalue().decode().splitlines()]
    n = len(lines)
    assert ranks in (["[0]"] * n + ["[1]"] * n, ["[1]"] * n + ["[0]"] * n)


def test_a_traceback_is_released_when_the_rank_goes_quiet():
    out, err = io.BytesIO(), io.BytesIO()
    o = _run_output.Output(out, err)
    r, w = os.pipe()
    o.add_rank(3, ended(), os.fdopen(r, "rb", buffering=0))
    os.write(w, VALUE_TB.encode())  # and the pipe stays open: the rank lives on
    deadline = time.monotonic() + 30
    while b"ValueError: bad batch" not in err.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert err.getvalue().decode().splitlines()[-1] == "[3] ValueError: bad batch"
    os.close(w)
    o.finish()


def test_prefix_filter_plain_channel_and_files(tmp_path):
    out, err, _ = copy({0: ("a\n", "e0\n" + REMOTE_TB, "# table\n"), 1: ("b\nno newline", "e1\n", "plain1\n")},
                       prefix=False, shown={0}, log_dir=str(tmp_path))
    assert out.splitlines() == ["a", "# table"] or out.splitlines() == ["# table", "a"]
    assert err.splitlines()[0] == "e0" and "traceback folded" in err.splitlines()[1] and len(err.splitlines()) == 2
    # the files hold every rank's output whole, unprefixed, folded tracebacks included
    assert (tmp_path / "rank0.err").read_text() == "e0\n" + REMOTE_TB
    assert sorted((tmp_path / "rank0.out").read_text().splitlines()) == ["# table", "a"]
    assert sorted((tmp_path / "rank1.out").read_text().splitlines()) == ["b", "no newline", "plain1"]
    assert (tmp_path / "rank1.err").read_text() == "e1\n"
    out, _, _ = copy({2: ("x\n", "", "y\n")})  # the default: prefixed, except the plain channel
    assert sorted(out.splitlines()) == ["[2] x", "y"]


def test_silence_stops_the_console_but_not_the_files(tmp_path):
    out, err = io.BytesIO(), io.BytesIO()
    o = _run_output.Output(out, err, log_dir=str(tmp_path))
    o.silence()
    r, w = os.pipe()
    os.write(w, REMOTE_TB.encode())
    os.close(w)
    o.add_rank(0, ended(), os.fdopen(r, "rb", buffering=0))
    o.finish()
    assert err.getvalue() == b"" and (tmp_path / "rank0.err").read_text() == REMOTE_TB


def test_root_cause_names_the_first_failure_that_is_no_consequence():
    E = _run_output.RankError
    errors = {0: E("nccl._errors.NCCLRemoteError: peer died", "t.py:10 in <module>", 1.0),
              1: E("ValueError: bad batch", "t.py:9 in <module>", 2.0),
              2: E("nccl._errors.NCCLRemoteError: peer died", "t.py:10 in <module>", 3.0),
              4: E("KeyError: 'k'", None, 4.0)}
    # rank 0's NCCLRemoteError ended first, but it is a consequence: rank 1 is the cause
    failures = [(1.0, 0, 1), (2.0, 1, 1), (3.0, 2, 1), (4.0, 3, -9), (5.0, 4, 1)]
    assert launcher.root_cause(failures, errors, log_dir="logs") == [
        "root cause (first failure): rank 1 (exit code 1): ValueError: bad batch",
        "  raised at t.py:9 in <module>",
        "  its whole output: logs/rank1.err",
        "  then ranks 0,2 failed: NCCLRemoteError (a consequence; tracebacks folded above)",
        "  then rank 3 failed: killed by SIGKILL",
        "  then rank 4 failed: exit code 1: KeyError: 'k'",
    ]
    # only consequences: the first of them; a rank without a traceback says so
    assert launcher.root_cause([(1.0, 2, 1), (2.0, 0, 1)], errors)[0] == \
        "root cause (first failure): rank 2 (exit code 1): nccl._errors.NCCLRemoteError: peer died"
    assert launcher.root_cause([(1.0, 5, 3)], errors) == [
        "root cause (first failure): rank 5 (exit code 3); no Python traceback on its stderr"]
    assert launcher.root_cause([], errors) == []


# ---- end to end ----

def test_output_options_end_to_end(tmp_path):
    s = script(tmp_path, """
        import os, sys
        rank = os.environ["RANK"]
        print(f"out {rank}")
        print(f"err {rank}", file=sys.stderr)
        os.write(int(os.environ["NCCL4PY_RUN_PLAIN_FD"]), f"plain {rank}\\n".encode())
    """)
    r = run(["-n", 3, s])
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["[0] out 0", "[1] out 1", "[2] out 2", "plain 0", "plain 1", "plain 2"]
    assert sorted(r.stderr.splitlines()) == ["[0] err 0", "[1] err 1", "[2] err 2"]

    logs = tmp_path / "logs"
    r = run(["-n", 3, "--no-prefix", "--log-dir", logs, "--local-ranks-filter", "1-2", s])
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["out 1", "out 2", "plain 1", "plain 2"]
    assert sorted(r.stderr.splitlines()) == ["err 1", "err 2"]
    assert sorted(p.name for p in logs.iterdir()) == [f"rank{r}.{k}" for r in range(3) for k in ("err", "out")]
    for rank in range(3):
        assert sorted((logs / f"rank{rank}.out").read_text().splitlines()) == [f"out {rank}", f"plain {rank}"]
        assert (logs / f"rank{rank}.err").read_text() == f"err {rank}\n"


FAILS = """
import os, time
import numpy as np
import nccl.core as nccl

comm = nccl.Communicator.from_env()
x = np.ones(64, np.float32)
comm.allreduce(x, x, nccl.SUM)
if comm.rank == 1:
    raise ValueError("bad batch in rank 1")  # the cause
comm.allreduce(x, x, nccl.SUM)  # the others fail here, or are stopped first
time.sleep(60)
"""


@pytest.mark.timeout(180)
def test_a_failure_ends_with_its_root_cause_and_no_survivor_traceback(tmp_path):
    s = script(tmp_path, FAILS, name="fails.py")
    r = run(["-n", 3, "fails.py"], cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    err = r.stderr.splitlines()
    cause_line = FAILS.splitlines().index('    raise ValueError("bad batch in rank 1")  # the cause') + 1
    # the real traceback whole, once
    assert err.count("[1] Traceback (most recent call last):") == 1 and "[1] ValueError: bad batch in rank 1" in err
    # the survivors' consequences: one line each at most, no traceback
    for rank in (0, 2):
        said = [ln for ln in err if ln.startswith(f"[{rank}] ")]
        assert all("NCCLRemoteError" in ln and "traceback folded: another rank failed" in ln for ln in said), said
        assert len(said) <= 1
    # the summary is the end of the output
    summary = err[err.index("nccl.run: root cause (first failure): rank 1 (exit code 1): "
                            "ValueError: bad batch in rank 1"):]
    assert summary[1] == f"nccl.run:   raised at fails.py:{cause_line} in <module>"
    assert all(re.fullmatch(r"nccl\.run:   then ranks? [0-9,]+ failed: NCCLRemoteError \(a consequence; "
                            r"tracebacks folded above\)", ln) for ln in summary[2:]), summary
    # the first exit the launcher saw (rank 1's, unless a survivor's consequence came first)
    assert any(re.fullmatch(r"nccl\.run: rank [012] failed \(exit code 1\); stopping the other 2 rank\(s\)", ln)
               for ln in err), err


HANGS = """
import os, time
import numpy as np
import nccl.core as nccl

comm = nccl.Communicator.from_env()
x = np.ones(64, np.float32)
comm.allreduce(x, x, nccl.SUM)
open(os.path.join({dir!r}, f"ready{{comm.rank}}"), "w").close()
if comm.rank != 1:
    comm.allreduce(x, x, nccl.SUM)  # waits for rank 1, which sleeps
time.sleep(600)
"""


@pytest.mark.timeout(120)
def test_ctrl_c_stops_quietly(tmp_path):
    """Ctrl-C while ranks wait inside a collective: one line, exit status 130, no traceback of a
    survivor, no verdict, no folder left."""
    s = script(tmp_path, HANGS.format(dir=str(tmp_path)))
    p = subprocess.Popen([sys.executable, "-m", "nccl.run", "-n", "3", str(s)],
                         env=env(TMPDIR=tmp_path, NCCL4PY_TRACE_DIR=None), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ready{r}").exists() for r in range(3)) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # ranks 0 and 2 are inside the second allreduce
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert err == "nccl.run: interrupted; stopping all ranks\n"
    assert out == ""
    base = tmp_path / f"nccl4py-trace-uid{os.geteuid()}"
    assert list(base.iterdir()) == []


STUCK = """
import time
import numpy as np
import nccl.core as nccl


def stuck():
    time.sleep(600)  # rank 1 is here


comm = nccl.Communicator.from_env()
x = np.ones(64, np.float32)
comm.allreduce(x, x, nccl.SUM)
if comm.rank == 1:
    stuck()
comm.allreduce(x, x, nccl.SUM)  # the others wait here
"""


@pytest.mark.timeout(180)
def test_a_call_that_waits_too_long_names_the_missing_rank_and_where_it_is(tmp_path):
    script(tmp_path, STUCK, name="stuck.py")
    lines = STUCK.splitlines()
    r = run(["-n", 3, "--wait-warning", 2, "--timeout", 20, "stuck.py"], cwd=tmp_path, NCCL_HOST_TIMEOUT=300)
    assert r.returncode == launcher.EXIT_TIMEOUT, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "still waiting" in ln]
    want = (r"nccl\.run: ranks 0,2 still waiting in AllReduce\(count=64, float32, sum\) \(seq 3\) at "
            rf"stuck\.py:{lines.index('comm.allreduce(x, x, nccl.SUM)  # the others wait here') + 1} for [0-9.]+ s, "
            rf"for rank 1; rank 1 is at stuck\.py:{lines.index('    time.sleep(600)  # rank 1 is here') + 1} in stuck "
            rf"\(time\.sleep\(600\)  # rank 1 is here\), called from stuck\.py:{lines.index('    stuck()') + 1} in "
            r"<module>")
    assert len(said) == 1 and re.fullmatch(want, said[0]), said
    assert float(re.search(r" for ([0-9.]+) s, for", said[0]).group(1)) >= 2
    # and the verdict at the timeout says the same of rank 1
    assert "its main thread was at stuck.py:" in r.stderr


KEEPS = """
import os, sys, time
import numpy as np
import nccl.core as nccl
comm = nccl.Communicator.from_env()
x = np.ones(4, np.float32)
comm.allreduce(x, x, nccl.SUM)
if comm.rank == 1:
    sys.exit(3)
time.sleep(60)
"""


@pytest.mark.timeout(240)
def test_the_folders_of_the_newest_failed_runs_are_kept(tmp_path):
    s = script(tmp_path, KEEPS)
    base = tmp_path / f"nccl4py-trace-uid{os.geteuid()}"
    printed = []
    for _ in range(3):
        r = run(["-n", 2, s], TMPDIR=tmp_path, NCCL4PY_TRACE_DIR=None, NCCL4PY_TRACE_KEEP=2)
        assert r.returncode == 3, r.stderr
        m = re.search(r"^nccl\.run: flight recorder: python -m nccl\.trace (\S+)$", r.stderr, re.M)
        printed.append(m.group(1))
        assert (f"nccl.run:   (the folders of the newest 2 failed runs are kept in {base}; NCCL4PY_TRACE_KEEP)"
                in r.stderr.splitlines())
    assert stat.S_IMODE(base.stat().st_mode) == 0o700
    assert sorted(str(p) for p in base.iterdir()) == sorted(printed[1:])  # the oldest went
    for folder in printed[1:]:
        names = sorted(p.name for p in os.scandir(folder))
        # rank 1 exited without a library error, so only rank 0 (asked with SIGUSR1) wrote a dump,
        # and its Python stacks
        assert names == [".launcher", "launcher.json", "rank0.jsonl", "rank0.stack.json"], names


def test_prune_keeps_the_newest_and_the_running(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])  # a pid that has exited
    dead.wait()
    folders = {}
    for name, pid, started in (("old-live", os.getpid(), 1.0), ("old", dead.pid, 2.0), ("mid", dead.pid, 3.0),
                               ("new", dead.pid, 4.0)):
        f = tmp_path / name
        f.mkdir()
        (f / _run_trace.PID_FILE).write_text(f"{pid} {started}\n")
        folders[name] = f
    (tmp_path / "not-a-run").mkdir()
    removed = _run_trace.prune(str(tmp_path), 1)
    assert sorted(removed) == sorted(str(folders[n]) for n in ("old", "mid"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "not-a-run", "old-live"]


def test_a_user_folder_open_to_others_is_not_used(tmp_path):
    base = tmp_path / f"nccl4py-trace-uid{os.geteuid()}"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    s = script(tmp_path, "print('ok')\n")
    r = run(["-n", 1, s], TMPDIR=tmp_path, NCCL4PY_TRACE_DIR=None)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [f"nccl.run: warning: the trace folder {base} is open to other users "
                                     f"(mode 755); this run's goes to a new temporary folder"]
    assert list(base.iterdir()) == []
