"""Runs a rank program of tests/torch under ``python -m nccl.run`` and collects what each rank
reported: every rank writes ``rank<R>.json`` into the folder named by the variable OUT_DIR.

nccl.run gives the ranks torch's env:// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT),
stops them all when one fails, and bounds the job with --timeout; the host backend's own
deadline (NCCL_HOST_TIMEOUT) is short, so a hang fails within seconds, not minutes.

The rank programs meet through a file store in the job's folder (INIT_METHOD, init_method() below)
rather than env://'s TCP port, so no other process's port can fail them; rank_trace.py keeps
env:// under nccl.run, the path a user takes (tests/torch/test_trace.py).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_ranks(script, nranks, out_dir, *args, env=None, timeout=240, check=True):
    """The ranks' reports (a list, rank order) and the launcher's CompletedProcess."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ, OUT_DIR=str(out_dir), NCCL_LIBRARY="host", PYTHONPATH=str(HERE),
                    INIT_METHOD=f"file://{out_dir / 'store'}")
    full_env.setdefault("NCCL_HOST_TIMEOUT", "60")
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        full_env.pop(name, None)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "nccl.run", "-n", str(nranks), "--timeout", str(timeout),
                           str(HERE / script), *map(str, args)], env=full_env, capture_output=True, text=True,
                          timeout=timeout + 60)
    if check and proc.returncode != 0:
        raise AssertionError(f"{script} at {nranks} ranks exited with {proc.returncode}\n"
                             f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-6000:]}")
    reports = []
    for rank in range(nranks):
        path = out_dir / f"rank{rank}.json"
        reports.append(json.loads(path.read_text()) if path.exists() else None)
    return reports, proc


def init_method():
    """init_process_group's keyword arguments in a rank: the job's file store, with the rank and
    size nccl.run gave (file:// takes them as arguments), or env:// when run by hand."""
    method = os.environ.get("INIT_METHOD")
    if not method:
        return {}
    return {"init_method": method, "rank": int(os.environ["RANK"]), "world_size": int(os.environ["WORLD_SIZE"])}


def report(value):
    """Writes this rank's report (called by the rank programs)."""
    path = Path(os.environ["OUT_DIR"]) / f"rank{os.environ['RANK']}.json"
    path.write_text(json.dumps(value))
