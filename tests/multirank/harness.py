"""Multi-rank launcher for the host backend: N rank processes, no MPI.

The parent creates the unique id (its bootstrap root lives in the parent, which outlives the
ranks), then starts ``python -m``-style rank programs (rank_main.py) with RANK, WORLD_SIZE, the
id in hex, the target to run and a result file in their environment, plus NCCL_LIBRARY=host and a
short NCCL_HOST_TIMEOUT.  Each rank writes one JSON document to its result file.  The launcher
waits under one wall-clock deadline, kills stragglers, and fails the test naming the rank that
failed or timed out with the tail of its stderr.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RANK_MAIN = HERE / "rank_main.py"
STDERR_TAIL = 3000
# NCCL_HOST_DIRECT of each transport a multi-rank test runs under (conftest.py); "auto" leaves
# the library's default
TRANSPORTS = {"auto": None, "direct": "1", "segment": "0"}
FAIL_GRACE_S = 5.0  # once a rank has failed, the others get this long before they are killed


@dataclass
class RankResult:
    rank: int
    returncode: int | None  # None: killed by the launcher (timeout or after a peer failed)
    value: object = None  # what the rank function returned (JSON)
    error: dict | None = None  # {"type", "status", "message", "traceback"} if it raised
    stderr: str = ""
    timed_out: bool = False
    extra: dict = field(default_factory=dict)


# Pids of every rank process started by launch(), for the /dev/shm check of conftest.py.
started_pids = set()


def shm_segment_names():
    """{name: creator pid} of the host backend's /dev/shm names of our uid
    (nccl-host-<uid>-<pid>-<random>)."""
    prefix = f"nccl-host-{os.geteuid()}-"
    try:
        names = os.listdir("/dev/shm")
    except FileNotFoundError:
        return {}
    found = {}
    for n in names:
        if n.startswith(prefix):
            try:
                found[n] = int(n[len(prefix):].split("-", 1)[0])
            except ValueError:
                continue
    return found


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def leftover_segments(before, after, test_pids):
    """Names in ``after`` (from shm_segment_names) that are not in ``before`` and that this test
    left: created by this process, by one of ``test_pids``, or by a process that is gone. A name
    whose creator is another live process belongs to someone else on the machine."""
    return sorted(n for n, pid in after.items()
                  if n not in before and (pid == os.getpid() or pid in test_pids or not _alive(pid)))


def _tail(text, n=STDERR_TAIL):
    return text if len(text) <= n else "..." + text[-n:]


def new_unique_id_hex():
    """A fresh unique id from the host backend, as hex (created in this process)."""
    os.environ["NCCL_LIBRARY"] = "host"
    import nccl.bindings.nccl as b

    return bytes(b.get_unique_id()).hex()


def launch(nranks, target, timeout=60, env=None, params=None, expect_death=(), init=True):
    """Runs ``target`` on ``nranks`` rank processes; returns the list of RankResult.

    target: "module:function" (module importable from tests/multirank) or a code string, run
    with the names of the rank context (see rank_main.py) and leaving its answer in ``result``.
    params: JSON-able value handed to the rank function as ctx.params.
    expect_death: ranks that are expected to die (kill themselves); their exit is not a failure.
    init: False leaves communicator creation to the rank function (ctx.comm is None).
    Fails the calling test if any other rank raised, exited non-zero or overran ``timeout``.
    """
    uid = new_unique_id_hex()
    workdir = Path(tempfile.mkdtemp(prefix="nccl-mr-"))
    procs, files = [], []
    base = dict(os.environ)
    base.update({
        "NCCL_LIBRARY": "host",
        "NCCL_HOST_TIMEOUT": base.get("NCCL_HOST_TIMEOUT", "30"),
        "WORLD_SIZE": str(nranks),
        "NCCL_MR_UID": uid,
        "NCCL_MR_TARGET": target,
        "NCCL_MR_PARAMS": json.dumps(params),
        "NCCL_MR_INIT": "1" if init else "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    base.update(env or {})
    try:
        for r in range(nranks):
            res = workdir / f"rank{r}.json"
            err = open(workdir / f"rank{r}.err", "w+b")
            e = dict(base, RANK=str(r), NCCL_MR_RESULT=str(res))
            p = subprocess.Popen([sys.executable, str(RANK_MAIN)], env=e, stdin=subprocess.DEVNULL,
                                 stdout=err, stderr=subprocess.STDOUT, cwd=str(HERE),
                                 start_new_session=True)
            procs.append(p)
            started_pids.add(p.pid)
            files.append((res, err))
        deadline = time.monotonic() + timeout
        killed = set()
        first_fail = None
        while True:
            codes = [p.poll() for p in procs]
            if all(c is not None for c in codes):
                break
            now = time.monotonic()
            for r, c in enumerate(codes):
                if c not in (None, 0) and r not in expect_death and first_fail is None:
                    first_fail = now
            limit = deadline if first_fail is None else min(deadline, first_fail + FAIL_GRACE_S)
            if now >= limit:
                for r, p in enumerate(procs):
                    if p.poll() is None:
                        _kill(p)
                        killed.add(r)
                break
            time.sleep(0.01)
        for p in procs:
            p.wait()
        results = []
        for r, (p, (res, err)) in enumerate(zip(procs, files)):
            err.seek(0)
            stderr = err.read().decode("utf-8", "replace")
            err.close()
            rr = RankResult(rank=r, returncode=None if r in killed else p.returncode, stderr=stderr,
                            timed_out=r in killed and first_fail is None)
            if res.exists():
                try:
                    doc = json.loads(res.read_text())
                    rr.value = doc.get("value")
                    rr.error = doc.get("error")
                    rr.extra = doc.get("extra", {})
                except ValueError as exc:
                    rr.error = {"type": "BadResult", "status": None, "message": str(exc), "traceback": ""}
            results.append(rr)
    finally:
        for p in procs:
            if p.poll() is None:
                _kill(p)
                p.wait()
        for res, err in files:
            if not err.closed:
                err.close()
        for f in workdir.iterdir():
            f.unlink()
        workdir.rmdir()
    _check(results, nranks, target, timeout, expect_death)
    return results


def assert_clean(results, agree=()):
    """The ranks' verdict: every rank that finished reported no failure in value["failures"]
    (ranks that died, which launch() allows only under expect_death, report nothing); the
    outputs hashed in value["digest"], when the first rank reports one, are the same on every
    rank, and so is value[key] for each key in agree (which every rank must report). Returns
    results."""
    done = [r for r in results if r.value is not None or r.returncode == 0]
    failures = [f for r in done for f in r.value["failures"]]
    assert not failures, "\n".join(failures[:60])
    keys = list(agree)
    if done and "digest" in done[0].value and "digest" not in keys:
        keys.insert(0, "digest")
    for key in keys:
        seen = [r.value[key] for r in done]
        what = "bit for bit" if key == "digest" else f"on {key}"
        assert len(set(seen)) == 1, f"ranks disagree {what}: {seen}"
    return results


def _kill(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _check(results, nranks, target, timeout, expect_death):
    problems = []
    for rr in results:
        if rr.rank in expect_death:
            continue
        if rr.timed_out:
            problems.append(f"rank {rr.rank}/{nranks} timed out after {timeout} s (killed)")
        elif rr.returncode is None:
            problems.append(f"rank {rr.rank}/{nranks} killed after a peer failed")
        elif rr.error is not None:
            e = rr.error
            problems.append(f"rank {rr.rank}/{nranks} raised {e['type']} (status {e['status']}): "
                            f"{e['message']}\n{e['traceback']}")
        elif rr.returncode != 0:
            problems.append(f"rank {rr.rank}/{nranks} exited with code {rr.returncode}")
        else:
            continue
        problems[-1] += f"\n--- rank {rr.rank} output (tail) ---\n{_tail(rr.stderr)}"
    if problems:
        # the first real failure first; ranks killed because of it last
        problems.sort(key=lambda s: "killed after a peer failed" in s)
        pytest.fail(f"{target} at {nranks} ranks:\n" + "\n".join(problems), pytrace=False)
