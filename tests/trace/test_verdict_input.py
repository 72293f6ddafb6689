"""The verdict on files made by hand (synth.py): damaged or mixed input gets a note or a clear
refusal, never a traceback; the matching rules (collective ordinals across dropped entries, sends
and receives, grown communicators, hangs) on exactly the case each needs; and 8 ranks x 2,000
entries."""

import json
import subprocess
import sys
import time

import pytest

import nccl.trace
import synth
from synth import CID, op


def cli(*args):
    proc = subprocess.run([sys.executable, "-m", "nccl.trace", *map(str, args)], capture_output=True, text=True,
                          timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def wrong_count(rank, ops, at=12, who=2):
    if rank == who:
        ops[at - 1] = op(CID, at, at, "AllReduce", count=1000, line=91)
    return ops


def test_a_mismatch_names_the_odd_rank_its_call_and_line(tmp_path):
    synth.job(tmp_path, 4, plant=wrong_count)
    r = nccl.trace.analyze(tmp_path)
    f = r.findings[0]
    assert (f.kind, f.ranks, f.coll, f.seq) == ("mismatch", [2], 12, {0: 12, 1: 12, 2: 12, 3: 12})
    assert r.verdict == (f"seq 12 on comm {CID} (4 ranks): ranks 0,1,3 entered AllReduce(count=1024, float32, sum) "
                         f"at train.py:88; rank 2 entered AllReduce(count=1000, float32, sum) at train.py:91. "
                         f"Outcome: ranks 0-3 returned (after up to 1.0 ms)")


def test_a_clean_job_has_no_divergence(tmp_path):
    synth.job(tmp_path, 2)
    r = nccl.trace.analyze(tmp_path)
    assert r.findings == []
    assert r.verdict.startswith("no divergence: on each of the 1 communicator(s) the ranks' calls agree (20 ")


def test_a_cut_short_file_is_read_up_to_the_cut(tmp_path):
    synth.job(tmp_path, 3, plant=wrong_count)
    path = tmp_path / "rank1.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # the last entry loses its end
    proc = cli(tmp_path)
    assert proc.returncode == 0
    assert ("note: rank1.jsonl: its last line is not JSON (the file was cut short or edited); "
            "the 21 line(s) before it are used") in proc.stdout
    assert f"verdict: seq 12 on comm {CID} (3 ranks): ranks 0,1 entered" in proc.stdout


def test_a_file_of_another_version_is_left_out_and_its_rank_is_missing(tmp_path):
    synth.job(tmp_path, 2)
    path = tmp_path / "rank1.jsonl"
    lines = path.read_text().splitlines()
    lines[0] = json.dumps(dict(json.loads(lines[0]), version=2))
    path.write_text("\n".join(lines) + "\n")
    proc = cli(tmp_path)
    assert proc.returncode == 0
    assert ("note: rank1.jsonl is format version 2; this nccl4py reads version 1 (it was written by a newer "
            "nccl4py: read it with that one)") in proc.stdout
    assert "verdict: no dump from rank 1 of 2 (it died, was killed, never created a communicator" in proc.stdout


def test_missing_ranks_are_named(tmp_path):
    synth.job(tmp_path, 4)
    (tmp_path / "rank3.jsonl").unlink()
    r = nccl.trace.analyze(tmp_path)
    assert [(f.kind, f.ranks) for f in r.findings] == [("no_dump", [3])]


def test_two_jobs_in_one_folder_are_refused_unless_one_is_chosen(tmp_path):
    synth.job(tmp_path, 2, job_id="a")
    (tmp_path / "rank1.jsonl").unlink()
    synth.write(tmp_path, "rank1.jsonl", synth.header(1, 2, job="b"), [])
    proc = cli(tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"nccl.trace: {tmp_path} holds the dumps of 2 jobs: 'a' (ranks 0); 'b' (ranks 1); "
                           f"choose one with --job (the header's \"job\")\n")
    with pytest.raises(nccl.trace.TraceInputError, match="holds the dumps of 2 jobs"):
        nccl.trace.analyze(tmp_path)
    chosen = cli(tmp_path, "--job", "a", "--last", "0")
    assert chosen.returncode == 0 and "1 dump(s) of job 'a'" in chosen.stdout
    assert cli(tmp_path, "--job", "c").stderr.startswith(f"nccl.trace: no dump of job 'c' in {tmp_path}; it holds ")


@pytest.mark.parametrize("content, note", [
    ("", "rank0.jsonl is empty"),
    ("not json\n", "rank0.jsonl is not a flight-recorder file (line 1 is not JSON)"),
    ('{"format": "other"}\n', 'rank0.jsonl is not a flight-recorder file (line 1 has no "format": "nccl4py-trace")'),
    ('{"format": "nccl4py-trace", "version": 1, "rank": "x"}\n',
     "rank0.jsonl: its header has 'rank' = 'x'; the file is left out"),
])
def test_nothing_usable_is_a_clear_refusal(tmp_path, content, note):
    (tmp_path / "rank0.jsonl").write_text(content)
    proc = cli(tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"nccl.trace: no flight-recorder dump to analyse in {tmp_path}: {note}\n"


def test_a_folder_that_does_not_exist_or_is_empty(tmp_path):
    assert cli(tmp_path / "nope").stderr == f"nccl.trace: {tmp_path / 'nope'} does not exist\n"
    proc = cli(tmp_path)
    assert (proc.returncode, proc.stderr) == (2, f"nccl.trace: no flight-recorder dump to analyse in {tmp_path}: "
                                                 f"no rank<R>.jsonl or pid<P>.jsonl file in it\n")


def test_bad_entries_are_left_out_with_a_note(tmp_path):
    def plant(rank, ops):
        if rank == 1:
            ops[3] = dict(ops[3], seq="four")
        return ops
    synth.job(tmp_path, 2, plant=plant)
    r = nccl.trace.analyze(tmp_path)
    assert r.folder.notes == ["rank1.jsonl: line 6, an entry, has 'seq' = 'four'; it is left out"]
    # the entry left out is collective call #4 of rank 1: the others' #4 is then compared with nothing
    assert (r.findings[0].kind, r.findings[0].ranks) == ("not_reached", [1])


def test_collective_calls_line_up_across_dropped_entries_and_point_to_point_calls(tmp_path):
    """Rank 0 made 3 sends more than rank 1 (seqs differ) and both rings wrapped: collective call
    #1500 is still compared with #1500."""
    for r in range(2):
        ops, seq = [], 0
        for k in range(1000, 1600):
            seq += 1
            ops.append(op(CID, seq, k, "AllReduce", count=1000 if (r == 1 and k == 1500) else 1024,
                          line=91 if (r == 1 and k == 1500) else 88))
            if r == 0 and k in (1100, 1200, 1300):
                seq += 1
                ops.append(op(CID, seq, k, "Send", peer=1, redop=None))
        ops = [dict(o, seq=o["seq"] + 5000) for o in ops]
        c = synth.comm(CID, r, 2, ops, dropped=5000)
        synth.write(tmp_path, f"rank{r}.jsonl", synth.header(r, 2), [(c, ops)])
    f = nccl.trace.analyze(tmp_path).findings[0]
    assert (f.kind, f.coll, f.seq) == ("mismatch", 1500, {0: 5504, 1: 5501})
    assert f.text.startswith(f"collective call #1500 on comm {CID} (2 ranks) (seq 5501 on rank 1; 5504 on rank 0): ")


def test_a_send_without_its_receive(tmp_path):
    def plant(rank, ops):
        if rank == 0:
            ops.append(op(CID, 21, 20, "Send", peer=1, redop=None, line=40, file="model.py", took=None))
        return ops
    synth.job(tmp_path, 2, plant=plant)
    f = nccl.trace.analyze(tmp_path).findings[0]
    assert (f.kind, f.ranks) == ("p2p_unmatched", [1])
    assert f.text.startswith(f"rank 0's Send to rank 1 (count=1024, float32) at model.py:40 (seq 21 on comm {CID} "
                             f"(2 ranks)) has no matching Recv on rank 1, which made 0 since collective call #20. ")


def test_every_rank_inside_the_same_call_is_a_hang(tmp_path):
    def plant(rank, ops):
        ops[-1] = op(CID, 20, 20, "AllReduce", took=None)
        return ops
    synth.job(tmp_path, 3, plant=plant)
    f = nccl.trace.analyze(tmp_path).findings[0]
    assert (f.kind, f.ranks) == ("hang", [0, 1, 2])
    assert f.text.startswith(f"all 3 ranks of comm {CID} (3 ranks) are inside AllReduce(count=1024, float32, sum) at "
                             f"train.py:88 (seq 20) and none returned")


def test_a_grown_communicator_is_matched_by_its_parent(tmp_path):
    grown, other = "1111111111111111", "2222222222222222"
    for r in range(3):
        base = synth.allreduces(CID, 3)
        cid = other if r == 1 else grown  # the existing non-root rank's id differs (docs/api/trace.md)
        kid = synth.allreduces(cid, 4)
        if r == 2:
            kid[-1] = op(cid, 4, 4, "AllReduce", count=7, line=99)
        c = synth.comm(cid, r, 3, kid, origin="grow", parent=CID)
        synth.write(tmp_path, f"rank{r}.jsonl", synth.header(r, 3), [(synth.comm(CID, r, 3, base), base), (c, kid)])
    f = nccl.trace.analyze(tmp_path).findings[0]
    assert (f.kind, f.ranks, f.comm, f.coll) == ("mismatch", [2], grown, 4)
    assert f"comm {grown} (grow of {CID}; 3 ranks)" in f.text


def test_json_output(tmp_path):
    synth.job(tmp_path, 2, plant=lambda r, ops: wrong_count(r, ops, who=1))
    out = json.loads(cli(tmp_path, "--json", "--last", "2").stdout)
    assert (out["format"], out["version"], out["job"], out["world_size"], out["ranks"]) == (
        "nccl4py-trace-verdict", 1, "job-s", 2, [0, 1])
    assert out["findings"][0]["kind"] == "mismatch" and out["verdict"] == out["findings"][0]["text"]
    assert [e["seq"] for e in out["last"]["1"]] == [19, 20]


def test_eight_ranks_of_2000_entries(tmp_path):
    """A planted mismatch at seq 1500 of 2,000 on rank 5 of 8 (benchmarks/trace_verdict.py times it)."""
    synth.job(tmp_path, 8, n=2000, plant=lambda r, ops: wrong_count(r, ops, at=1500, who=5))
    start = time.perf_counter()
    r = nccl.trace.analyze(tmp_path)
    took = time.perf_counter() - start
    f = r.findings[0]
    assert (f.kind, f.ranks, f.coll) == ("mismatch", [5], 1500)
    print(f"8 x 2000 entries analysed in {took:.3f} s")


@pytest.mark.parametrize("resolution, took, said", [
    (0.004, 0.0, "returned within a clock tick (4.0 ms)"),
    (0.004, 0.008, "returned after 8.0 ms"),
    (None, 0.0, "returned after 0 us"),  # a file without the field: the fine clock's reading
])
def test_a_coarse_clock_says_within_a_tick(tmp_path, resolution, took, said):
    """The header's resolution (docs/api/trace.md#cost): a call whose entry and return fell in the
    same step of the coarse clock did not take 0 us."""
    extra = {} if resolution is None else {"clock": "coarse", "resolution": resolution}
    for r in range(2):
        ops = synth.allreduces(CID, 4)
        ops[-1]["m_return"] = ops[-1]["m_enter"] + took
        synth.write(tmp_path, f"rank{r}.jsonl", synth.header(r, 2, **extra), [(synth.comm(CID, r, 2, ops), ops)])
    table = cli(tmp_path, "--last", "1").stdout
    rows = [line for line in table.splitlines() if line.startswith("  rank ")]
    assert len(rows) == 2 and all(row.endswith(said) for row in rows), table
