"""The verdict on planted faults (docs/api/trace.md#the-verdict), end to end: faults.py runs under
python -m nccl.run on the host backend, the launcher asks the ranks left for their dumps and prints
the verdict, and nccl.trace.analyze of the same folder names the rank, the seq, the call and the
source line of the fault."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import nccl.trace

HERE = Path(__file__).resolve().parent
FAULTS = HERE / "faults.py"
SOURCE = FAULTS.read_text()


def site(name):
    """The line number of the line marked ``# site: name`` in faults.py."""
    for number, line in enumerate(SOURCE.splitlines(), start=1):
        if line.rstrip().endswith(f"# site: {name}"):
            return number
    raise KeyError(name)


def launch(fault, nranks, tmp_path, monkeypatch):
    env = dict(os.environ, NCCL4PY_TRACE_DIR=str(tmp_path), NCCL4PY_TRACE_JOB=f"verdict-{fault}",
               NCCL_HOST_TIMEOUT="3", NCCL_LIBRARY="host")
    proc = subprocess.run([sys.executable, "-m", "nccl.run", "-n", str(nranks), "--timeout", "100", str(FAULTS), fault],
                          env=env, capture_output=True, text=True, timeout=150, cwd=HERE)
    assert proc.returncode != 0, proc.stderr[-3000:]
    printed = re.findall(r"^nccl\.run:   verdict: (.*)$", proc.stderr, re.M)
    assert len(printed) == 1, proc.stderr[-3000:]
    monkeypatch.chdir(HERE)  # file names are shown relative to the working folder, as the launcher's were
    report = nccl.trace.analyze(tmp_path, f"verdict-{fault}")
    assert printed[0] == report.verdict
    return report, proc.stderr


# fault: (ranks, the first finding's kind, the ranks it blames, the seq of the call on the blamed
# rank(s) or None, the sites and calls its text must name)
CASES = {
    # rank 2 skips step 5's allreduce: its broadcast meets the others' allreduce
    "skip": (3, "mismatch", [2], 12, ["ranks 0,1 entered AllReduce(count=256, float32, sum) at faults.py:{allreduce}",
                                     "rank 2 entered Broadcast(root=0, count=256, float32) at faults.py:{broadcast}"]),
    "count": (3, "mismatch", [1], 12, ["rank 1 entered AllReduce(count=255, float32, sum) at faults.py:{count-bad}"]),
    "dtype": (3, "mismatch", [2], 12, ["rank 2 entered AllReduce(count=256, float64, sum) at faults.py:{dtype-bad}"]),
    "root": (3, "mismatch", [0], 13, ["rank 0 entered Broadcast(root=1, count=256, float32) at faults.py:{root-bad}",
                                     "ranks 1,2 entered Broadcast(root=0, count=256, float32) at faults.py:{broadcast}"]),
    "group": (3, "mismatch", [2], 15, ["rank 2 entered AllReduce(count=128, float32, sum) at faults.py:{group}"]),
    "split": (4, "mismatch", [1], 7, ["(split of ", "color 0; 3 ranks)",
                                     "rank 1 entered AllReduce(count=128, float32, sum) at faults.py:{split-bad}"]),
    "p2p": (2, "p2p_mismatch", [0, 1], None, ["rank 0's Send to rank 1 (count=32, float32) at faults.py:{send}",
                                             "rank 1's Recv from rank 0 (count=16, float32) at faults.py:{recv}"]),
    # rank 1 sleeps in Python after step 5: the others time out in step 6's allreduce (seq 14)
    "sleep": (4, "not_reached", [1], 14, ["rank 1 never reached seq 14 on comm",
                                         "AllReduce(count=256, float32, sum) at faults.py:{allreduce}",
                                         "entered by ranks 0,2,3", "returned ncclTimeout (8)",
                                         "Rank 1's last call on it: Broadcast(root=0, count=256, float32) at "
                                         "faults.py:{broadcast} (seq 13), returned",
                                         # where it is: its Python stack when the launcher asked for its dump
                                         "its main thread was at faults.py:{sleep} in step (time.sleep(600)  # site: "
                                         "sleep), called from faults.py:{loop} in <module>"]),
    # where each survivor was when it learnt of the death: in step 6's allreduce, or still in step
    # 5's broadcast (test_a_kill_places_every_survivor)
    "kill": (4, "died", [3], None, ["rank 3 died (the launcher saw SIGKILL; no dump); "]),
}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", sorted(CASES))
def test_the_verdict_names_the_rank_the_call_and_the_line(fault, tmp_path, monkeypatch):
    nranks, kind, blamed, seq, texts = CASES[fault]
    report, stderr = launch(fault, nranks, tmp_path, monkeypatch)
    first = report.findings[0]
    assert (first.kind, first.ranks) == (kind, blamed), first.text
    if seq is not None:
        assert set(first.seq.values()) == {seq}, first.seq
    for text in texts:
        want = re.sub(r"\{([a-z0-9-]+)\}", lambda m: str(site(m.group(1))), text)
        assert want in first.text, (want, first.text)
    if fault == "kill":
        places = {f"AllReduce(count=256, float32, sum) at faults.py:{site('allreduce')} (seq 14 on comm ",
                  f"Broadcast(root=0, count=256, float32) at faults.py:{site('broadcast')} (seq 13 on comm "}
        parts = first.text.removeprefix("rank 3 died (the launcher saw SIGKILL; no dump); ").split("; ")
        named = set()
        for part in parts:
            m = re.match(r"(?:rank (\d+) was|ranks ([\d,-]+) were) in (.*)", part)
            assert m and any(m.group(3).startswith(p) for p in places), part
            text = m.group(1) or m.group(2)
            for piece in text.split(","):
                lo, _, hi = piece.partition("-")
                named |= set(range(int(lo), int(hi or lo) + 1))
        assert named == {0, 1, 2}, first.text
    assert f"nccl.run: flight recorder: python -m nccl.trace {tmp_path}" in stderr
    launcher = (tmp_path / "launcher.json").read_text()
    assert '"format": "nccl4py-launch"' in launcher


@pytest.mark.timeout(120)
def test_a_clean_run_leaves_no_folder_behind(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("NCCL4PY_TRACE_DIR", "NCCL4PY_TRACE_JOB")}
    env.update(TMPDIR=str(tmp_path), NCCL_LIBRARY="host")
    script = tmp_path / "clean.py"
    script.write_text("import numpy as np, nccl.core as nc\n"
                      "c = nc.Communicator.from_env()\n"
                      "x = np.ones(4, np.float32)\n"
                      "c.allreduce(x, x, nc.SUM)\n"
                      "c.destroy()\n")
    proc = subprocess.run([sys.executable, "-m", "nccl.run", "-n", "2", str(script)], env=env, capture_output=True,
                          text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "flight recorder" not in proc.stderr
    # the user's trace folder is made (mode 0700), and this run's folder in it is gone again
    base = tmp_path / f"nccl4py-trace-uid{os.geteuid()}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.py", base.name]
    assert list(base.iterdir()) == [] and (base.stat().st_mode & 0o777) == 0o700
