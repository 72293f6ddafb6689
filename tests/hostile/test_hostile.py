"""The hostile-object test (issue 47; docs/architecture.md#callbacks-into-python): every C callable
of nccl.bindings.nccl, nccl.bindings.rocm_extensions and nccl._ext's C types (surface.py), at
every parameter, against every object of catalogue.py. Every case must end in a Python exception
or a result: no crash, no hang, no nccl.core call reaching the library with a destroyed
communicator (child.py's verdicts).

The cases run in child processes (child.py), in order; a child that crashes or stops making
progress is killed, its case recorded as a failure by name, and a new child goes on from the next
case. One rank runs them all; two ranks (the host backend as RCCL) run the callables that walk
per-rank sequences, whose walks need a second entry; HOSTILE_THREADS=1 adds a thread that mutates
every list the calls are walking (the free-threaded interpreter of .ci/interpreters runs it
without a GIL). Each run prints its size (callables x parameters x objects) and its time.
"""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASE_DEADLINE_S = 60.0  # a case running longer is a hang (library waits end after NCCL_HOST_TIMEOUT=5)


def _read(path):
    """{index: verdict} and the index of a case started but not finished (or None)."""
    done, started = {}, None
    if path.exists():
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            if "v" in d:
                done[d["i"]] = d
                started = None
            else:
                started = d["i"]
    return done, started


def _env(**extra):
    return dict(os.environ, NCCL_LIBRARY="host", NCCL_HOST_TIMEOUT="5", PYTHONDONTWRITEBYTECODE="1", **extra)


def _surface(tmp_path, mode):
    """The cases of mode and the surface's size, listed by a child (this process imports no nccl)."""
    out = tmp_path / "cases.json"
    subprocess.run([sys.executable, str(HERE / "child.py"), "list", mode, str(out)], env=_env(), check=True,
                   timeout=300)
    return json.loads(out.read_text())


def _run(tmp_path, mode, nranks, env_extra):
    """Runs every case of mode on nranks ranks; (the surface, verdicts by index, failures as text)."""
    info = _surface(tmp_path, mode)
    cases = info["cases"]
    results = [tmp_path / f"rank{r}.jsonl" for r in range(nranks)]
    failures, start, generation = [], 0, 0
    while start < len(cases):
        generation += 1
        uid_dir = tmp_path / f"ids{generation}"
        uid_dir.mkdir()
        procs = []
        for r in range(nranks):
            env = _env(RANK=str(r), WORLD_SIZE=str(nranks), HOSTILE_DIR=str(uid_dir), **env_extra)
            err = open(tmp_path / f"rank{r}.err", "ab")
            procs.append(subprocess.Popen([sys.executable, str(HERE / "child.py"), mode, str(start), str(results[r])],
                                          env=env, stdout=err, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True))
            err.close()
        last, progress_at = -1, time.monotonic()
        while True:
            codes = [p.poll() for p in procs]
            states = [_read(path) for path in results]
            finished = min(max(d, default=-1) for d, _ in states)
            if finished != last:
                last, progress_at = finished, time.monotonic()
            if all(c == 0 for c in codes):
                start = len(cases)
                break
            stuck = time.monotonic() - progress_at > CASE_DEADLINE_S
            if any(c not in (None, 0) for c in codes) or stuck:
                for p in procs:
                    if p.poll() is None:
                        os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                bad = next((s for _, s in states if s is not None), finished + 1)
                how = "hung" if stuck else "crashed (" + ", ".join(
                    f"rank {r}: {_status(p.returncode)}" for r, p in enumerate(procs)) + ")"
                tail = (tmp_path / "rank0.err").read_text(errors="replace")[-1500:]
                failures.append(f"{cases[bad]}: {how}\n{tail}")
                start = bad + 1
                break
            time.sleep(0.05)
    verdicts = {}
    for path in results:
        verdicts.update(_read(path)[0])
    for i, d in sorted(verdicts.items()):
        if d["v"] == "fail":
            failures.append(f"{cases[i]}: {d['why']}")
    return info, verdicts, failures


def _status(code):
    return f"signal {-code}" if code is not None and code < 0 else f"exit {code}"


def _report(capsys, title, info, verdicts, seconds):
    counts = Counter(d["v"] for d in verdicts.values())
    ended = Counter(d.get("how") for d in verdicts.values() if d["v"] == "ok")
    unsigned = f"; taken as parameterless (no signature): {', '.join(info['unsigned'])}" if info["unsigned"] else ""
    with capsys.disabled():
        print(f"\n{title}: {info['with_params']} callables with parameters (of {info['callables']}), "
              f"{info['params']} parameters x {info['entries']} objects = {len(info['cases'])} cases "
              f"in {seconds:.1f} s: "
              f"{counts['ok']} ended well ({ended['returned']} returned, {counts['ok'] - ended['returned']} raised), "
              f"{counts['raw']} bindings calls given a raw handle a callback destroyed (the host backend reported "
              f"them), {counts['skip']} skipped, {counts['fail']} failed{unsigned}")


@pytest.mark.timeout(1800)
def test_every_callable_every_parameter_every_hostile_object(tmp_path, capsys):
    t0 = time.monotonic()
    info, verdicts, failures = _run(tmp_path, "single", 1, {})
    _report(capsys, "hostile objects, 1 rank", info, verdicts, time.monotonic() - t0)
    assert not failures, "\n".join(failures[:30])
    assert len(verdicts) + len(failures) >= len(info["cases"])


@pytest.mark.timeout(600)
def test_per_rank_walks_at_two_ranks(tmp_path, capsys):
    t0 = time.monotonic()
    info, verdicts, failures = _run(tmp_path, "pair", 2, {"NCCL_HOST_FLAVOR": "rccl"})
    _report(capsys, "hostile objects, 2 ranks (as RCCL)", info, verdicts, time.monotonic() - t0)
    assert not failures, "\n".join(failures[:30])
    assert any(d.get("how") == "returned" for d in verdicts.values()), "no honest alltoallv ever ran"


@pytest.mark.timeout(1800)
@pytest.mark.skipif(getattr(sys, "_is_gil_enabled", lambda: True)(),
                    reason="a second thread walks with the first only without a GIL (.ci/interpreters ft runs it)")
def test_with_a_thread_mutating_the_lists_being_walked(tmp_path, capsys):
    t0 = time.monotonic()
    info, verdicts, failures = _run(tmp_path, "single", 1, {"HOSTILE_THREADS": "1"})
    _report(capsys, "hostile objects, 1 rank, a thread mutating the lists (GIL off)", info, verdicts,
            time.monotonic() - t0)
    assert not failures, "\n".join(failures[:30])
