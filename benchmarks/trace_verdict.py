"""How long the flight recorder's verdict takes on real dumps, against the floor of only parsing
their JSON lines, side by side in one run (docs/api/trace.md#the-verdict).

    python benchmarks/trace_verdict.py [--ranks 8] [--entries 2000] [--repeat 5]

Runs a job of RANKS ranks under python -m nccl.run on the host backend, each making ENTRIES - 1
allreduces on one communicator (its Init is the first entry) and writing its file with
nccl.core.dump_trace(); then times nccl.trace.analyze of the folder and json.loads of every line,
alternately, and prints the medians and their ratio."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RANK = """
import numpy as np, nccl.core as nc
c = nc.Communicator.from_env()
x = np.ones(16, np.float32)
for _ in range({entries} - 1):
    c.allreduce(x, x, nc.SUM)
nc.dump_trace()
c.destroy()
"""


def parse_only(folder):
    for path in sorted(Path(folder).glob("rank*.jsonl")):
        for line in path.read_text().splitlines():
            json.loads(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import nccl.trace

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "rank.py"
        script.write_text(RANK.format(entries=args.entries))
        folder = Path(tmp) / "dumps"
        env = dict(os.environ, NCCL4PY_TRACE_DIR=str(folder), NCCL4PY_TRACE_JOB="bench",
                   NCCL4PY_TRACE_BUFFER=str(args.entries))
        subprocess.run([sys.executable, "-m", "nccl.run", "-n", str(args.ranks), "--timeout", "300", str(script)],
                       env=env, check=True)
        lines = sum(len(p.read_text().splitlines()) for p in folder.glob("rank*.jsonl"))
        verdict, floor = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            report = nccl.trace.analyze(folder)
            verdict.append(time.perf_counter() - t)
            t = time.perf_counter()
            parse_only(folder)
            floor.append(time.perf_counter() - t)
        v, f = statistics.median(verdict), statistics.median(floor)
        print(f"{args.ranks} ranks x {args.entries} entries ({lines} lines): verdict {v:.3f} s, "
              f"JSON parsing alone {f:.3f} s, ratio {v / f:.2f}")
        print(f"verdict: {report.verdict}")


if __name__ == "__main__":
    main()
