"""The flight recorder against the stub library (tests/stubs): the library calls it adds. A
communicator that nccl.bindings creates by split or grow, whose creation call does not say its
rank and size, is asked for them once, right after the creation, and its line in the file has the
stub's answers (docs/api/trace.md#the-file-format)."""

import json

import pytest


@pytest.mark.timeout(120)
def test_a_split_through_the_bindings_asks_the_child_its_rank_and_size_once(fresh_python, tmp_path):
    r = fresh_python("""
        stub.set_out("ncclCommInitRank", 0xC0_0000)
        comm = b.comm_init_rank(4, bytes(128), 2)
        stub.reset()
        stub.set_out("ncclCommUserRank", 1)
        stub.set_out("ncclCommCount", 3)
        child = b.comm_split(comm, 0, 5, 0)
        calls = stub.calls()
        b.all_reduce(1, 2, 3, 7, 0, child, 0)
        import nccl.core as nc
        result = (calls, nc.dump_trace(), len(stub.calls()))
    """, variant="nccl", open_stub=True, env={"NCCL4PY_TRACE_DIR": str(tmp_path), "RANK": None})
    calls, path, after = r
    assert [n for n, _ in calls] == ["ncclCommSplit", "ncclCommUserRank", "ncclCommCount"]
    assert calls[1][1][0] == calls[2][1][0] not in (0, 0xC0_0000)  # the child
    assert after == 4  # the allreduce: nothing more is asked
    lines = [json.loads(x) for x in open(path)]
    child = next(x for x in lines if x.get("type") == "comm" and x["origin"] == "split")
    assert (child["rank"], child["nranks"], child["color"], child["key"]) == (1, 3, 0, 5)
