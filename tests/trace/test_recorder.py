"""What the flight recorder writes for each kind of call (docs/api/trace.md#what-is-recorded), at
2 ranks on the host backend: every field of every entry against what the rank did, the
communicators' lines and identities across ranks, and a dump taken by SIGUSR1 while a rank waits
inside a collective."""

from pathlib import Path

import pytest

import harness
from tracefile import Dump

pytest.importorskip("numpy")

HERE = Path(__file__).resolve().parent
NRANKS = 2


def run(fn, tmp_path, init=False, params=None, **env):
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import ranks_trace; "
            f"result = ranks_trace.{fn}(ctx)")
    env = {"NCCL4PY_TRACE_DIR": str(tmp_path), "NCCL4PY_TRACE_JOB": "job-7", **env}
    results = harness.launch(NRANKS, code, timeout=90, env=env, init=init, params=params)
    return [r.value for r in results]


def op_entries(dump, comm):
    return dump.ops[comm["comm"]]


@pytest.mark.timeout(120)
def test_every_kind_of_call_with_its_fields(tmp_path):
    values = run("every_kind", tmp_path)
    ids = set()
    for rank, v in enumerate(values):
        assert v["path"] == str(tmp_path / f"rank{rank}.jsonl")
        d = Dump(v["path"])
        h = d.header
        assert (h["job"], h["rank"], h["world_size"], h["pid"], h["reason"], h["error"], h["buffer"]) == (
            "job-7", rank, NRANKS, v["pid"], "dump_trace", None, 2000)
        assert h["library"].endswith("libnccl-host.so")
        main, sub = d.comm_of("init"), d.comm_of("split")
        ids.add(main["comm"])
        assert (main["rank"], main["nranks"], main["parent"], main["dropped"]) == (rank, NRANKS, None, 0)
        assert (sub["parent"], sub["color"], sub["key"], sub["rank"], sub["nranks"]) == (main["comm"], rank % 2, rank,
                                                                                        0, 1)
        ops = op_entries(d, main)
        names = [o["op"] for o in ops]
        assert names == ["Init", "AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll",
                         "Gather", "Scatter", "GroupStart", "Send", "Recv", "GroupEnd", "Split", "AllReduce"]
        assert [o["seq"] for o in ops] == list(range(1, 16))
        # the collective ordinal: Init and the collectives count, the group's markers and p2p do not
        assert [o["coll"] for o in ops] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 9, 10, 11]
        lines, buf = v["lines"], v["buffers"]
        want = {  # op: (count, dtype, redop, root, peer, sendbuff, recvbuff)
            1: (8, "float32", "sum", None, None, buf["x"], buf["y"]),
            2: (8, "float32", None, 1, None, buf["x"] if rank == 1 else None, buf["y"]),
            3: (8, "float32", "max", 0, None, buf["x"], buf["y"] if rank == 0 else None),
            4: (8, "float32", None, None, None, buf["x"], buf["big"]),
            5: (8, "float32", "prod", None, None, buf["big"], buf["y"]),
            7: (8, "float32", None, 1, None, buf["x"], buf["big"] if rank == 1 else None),
            8: (8, "float32", None, 0, None, buf["big"] if rank == 0 else None, buf["y"]),
            10: (8, "float32", None, None, (rank + 1) % NRANKS, buf["x"], None),
            11: (8, "float32", None, None, (rank - 1) % NRANKS, None, buf["y"]),
            14: (8, "float32", "min", None, None, buf["x"], buf["y"]),
        }
        for i, fields in want.items():
            o = ops[i]
            got = (o["count"], o["dtype"], o["redop"], o["root"], o["peer"], o["sendbuff"], o["recvbuff"])
            assert got == fields, (o["op"], got, fields)
            assert o["stream"] == 0
        for o in ops:
            assert o["file"] == v["file"] and o["rc"] == 0
            assert o["m_enter"] <= o["m_return"] <= h["monotonic"]
            assert abs(o["t_enter"] - o["m_enter"] - (h["wall"] - h["monotonic"])) < 1e-3
        for i, name in ((1, "AllReduce"), (2, "Broadcast"), (3, "Reduce"), (4, "AllGather"), (5, "ReduceScatter"),
                        (6, "AlltoAll"), (7, "Gather"), (8, "Scatter"), (10, "Send"), (11, "Recv"),
                        (12, "GroupEnd"), (13, "Split"), (14, "Binding")):
            assert ops[i]["line"] == lines[name], (ops[i]["op"], ops[i]["line"], lines[name])
            assert ops[i]["func"] == "every_kind"
        assert ops[9]["line"] == lines["Send"]  # GroupStart: just before the group's first call here
        groups = [o["group"] for o in ops]
        assert groups[9:13] == [groups[9]] * 4 and groups[9] >= 1
        assert groups[:9] == [None] * 9 and groups[13:] == [None, None]
        assert all(o["count"] is None and o["dtype"] is None for o in (ops[0], ops[9], ops[12], ops[13]))
        sub_ops = op_entries(d, sub)
        assert [(o["op"], o["seq"], o["redop"], o["line"]) for o in sub_ops] == [
            ("Init", 1, None, lines["Split"]), ("AllReduce", 2, "avg", lines["SubAllReduce"])]
    assert len(ids) == 1  # every rank computed the communicator's identity alike


@pytest.mark.timeout(120)
def test_a_communicator_of_the_bindings_records_bindings_calls_and_its_wrapper(tmp_path):
    values = run("bindings_comm", tmp_path, init=True)
    for rank, v in enumerate(values):
        d = Dump(v["path"])
        (comm,) = d.comms.values()
        assert (comm["origin"], comm["rank"], comm["nranks"]) == ("init", rank, NRANKS)
        ops = d.ops[comm["comm"]]
        assert [o["op"] for o in ops] == ["Init", "AllReduce", "AllReduce", "GroupStart", "Send", "Recv", "GroupEnd"]
        lines = v["lines"]
        assert [o["line"] for o in ops[1:]] == [lines["Binding"], lines["Wrapped"], lines["Send"], lines["Send"],
                                                lines["Recv"], lines["GroupEnd"]]
        assert ops[4]["peer"] == (rank + 1) % NRANKS and ops[5]["peer"] == (rank - 1) % NRANKS
        assert ops[3]["group"] == ops[6]["group"] is not None


@pytest.mark.timeout(120)
def test_windows_and_one_sided_calls(tmp_path):
    values = run("windows", tmp_path, params=str(tmp_path))
    for rank, v in enumerate(values):
        d = Dump(v["path"])
        comm = d.comm_of("init")
        ops = d.ops[comm["comm"]]
        assert [o["op"] for o in ops] == ["Init", "WindowRegister", "PutSignal", "WaitSignal", "Signal", "WaitSignal",
                                          "AllReduce", "WindowDeregister"]
        assert [o["coll"] for o in ops] == [1, 2, 2, 2, 2, 2, 3, 4]
        lines = v["lines"]
        for o in ops:
            if o["op"] in lines and o["op"] != "WaitSignal":
                assert o["line"] == lines[o["op"]], o
        assert ops[3]["line"] == lines["WaitSignal"]
        assert (ops[1]["count"], ops[1]["sendbuff"]) == (NRANKS * 8 * 4, v["win_ptr"])
        assert (ops[2]["peer"], ops[2]["count"], ops[2]["dtype"]) == ((rank + 1) % NRANKS, 8, "float32")
        assert ops[4]["peer"] == (rank + 1) % NRANKS and ops[3]["count"] == 1
        after = Dump(v["after"])
        closed = after.ops[comm["comm"]]
        assert [o["op"] for o in closed][-1] == "Destroy" and closed[-1]["line"] == lines["Destroy"]
        assert after.comms[comm["comm"]]["recorded"] == len(ops) + 1


@pytest.mark.timeout(120)
def test_sigusr1_dumps_a_rank_waiting_inside_a_collective(tmp_path):
    values = run("signal_while_stuck", tmp_path)
    d = Dump(tmp_path / "rank0.jsonl")
    assert d.header["reason"] == "signal"
    ops = d.ops[d.comm_of("init")["comm"]]
    last = ops[-1]
    assert (last["op"], last["seq"], last["line"]) == ("AllReduce", 2, values[0]["lines"]["AllReduce"])
    assert last["m_return"] is None and last["rc"] is None
    assert 0 < d.header["monotonic"] - last["m_enter"] < 2.0
    assert not (tmp_path / "rank1.jsonl").exists()  # no signal, no error there: nothing written
