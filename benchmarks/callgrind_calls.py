"""Instructions per call of nccl4py's hot paths, counted by callgrind against the null library:
the count does not depend on the machine's load, so two builds compare exactly.

Each case runs in a fresh interpreter under ``valgrind --tool=callgrind``, once with N calls and
once with 2N; the difference divided by N is the cost of one call, interpreter startup and the
loop's set-up cancelling out. The loop's own step stays in every figure: the first row measures
it alone.

    python benchmarks/callgrind_calls.py [--calls 20000] [--json out.json]

Run it with each build's interpreter (e.g. before and after a change) and compare the columns.
Not a test: it needs valgrind, and it takes about a minute.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import overhead  # noqa: E402  (builds the null library)

SETUP = """
import numpy as np
import nccl.bindings.nccl as n
import nccl.core as nc
buf, comm, x = 0x7F0000001000, 0x55550000, np.zeros(1024, np.float32)
comm_obj = n.Comm(comm)
core = nc.Communicator(comm)
"""

CASES = {
    "the loop alone (pass)": "pass",
    "nccl.bindings.nccl.all_reduce (int comm)": "n.all_reduce(buf, buf, 1024, 7, 0, comm, 0)",
    "nccl.bindings.nccl.all_reduce (Comm)": "n.all_reduce(buf, buf, 1024, 7, 0, comm_obj, 0)",
    "nccl.bindings.nccl.all_reduce_config": "n.all_reduce_config(buf, buf, 1024, 7, 0, comm, 0, 0)",
    "nccl.core allreduce (numpy)": "core.allreduce(x, x, nc.SUM)",
}


def instructions(stmt, calls, env, tmp):
    """Instructions of the main thread of a fresh interpreter that runs stmt `calls` times (the
    main thread alone: the package's helper threads wake on timers, not per call)."""
    code = SETUP + f"for _ in range({calls}):\n    {stmt}\n"
    out_file = Path(tmp) / f"callgrind.{calls}"
    out = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out_file}",
                          sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{stmt} failed under callgrind:\n{out.stderr[-2000:]}")
    main_thread = Path(f"{out_file}-01")
    found = re.search(r"^(?:summary|totals):\s*(\d+)", main_thread.read_text(), re.M)
    for f in Path(tmp).glob(f"callgrind.{calls}-*"):
        f.unlink()
    if found is None:
        raise RuntimeError(f"no total in {main_thread}")
    return int(found.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        null, _ = overhead.build(tmp)
        env = dict(os.environ, NCCL_LIBRARY=str(null), PYTHONHASHSEED="0")  # the same dict layouts every run
        per_call = {}
        for name, stmt in CASES.items():
            one, two = instructions(stmt, args.calls, env, tmp), instructions(stmt, 2 * args.calls, env, tmp)
            per_call[name] = (two - one) / args.calls
    print(f"{'case':42} instructions/call")
    for name, value in per_call.items():
        print(f"{name:42} {value:12.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(per_call, indent=1))


if __name__ == "__main__":
    main()
