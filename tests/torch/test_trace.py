"""The flight recorder under torch.distributed (docs/api/trace.md): a call made through torch,
DDP included, is recorded with the line of the program that called torch, not a line of torch or
of nccl.torch."""

import json

from launch import run_ranks


def test_calls_through_torch_carry_the_programs_lines(tmp_path):
    reports, _ = run_ranks("rank_trace.py", 2, tmp_path / "out", env={"NCCL4PY_TRACE_DIR": str(tmp_path / "trace")})
    for rank, rep in enumerate(reports):
        entries = [json.loads(line) for line in open(rep["dump"])][1:]
        ops = [e for e in entries if e.get("type") == "op" and e["op"] != "Init"]
        sites = {(e["op"], e["file"], e["line"]) for e in ops}
        lines = rep["lines"]
        assert ("AllReduce", rep["file"], lines["all_reduce"]) in sites, (rank, sites)
        assert ("Broadcast", rep["file"], lines["broadcast"]) in sites, (rank, sites)
        # DDP's gradient allreduce runs in the C++ reducer during backward: the program's line
        assert ("AllReduce", rep["file"], lines["backward"]) in sites, (rank, sites)
        assert all(e["file"] == rep["file"] for e in ops), [e["file"] for e in ops]
