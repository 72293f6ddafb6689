"""python -m nccl.bench: argument errors (no library needed), and every collective on the host
backend with #wrong == 0 out-of-place and in-place read from the JSON; the table as nccl-tests
prints it (no rank prefix under nccl.run, both column groups, the average bus bandwidth); the
warning of a run without a launcher; and the plot (matplotlib), whose title names the library."""

import json
import re
import subprocess
import sys

import pytest

import children

from nccl import bench


def env():
    return children.environment(drop=children.LAUNCH_VARIABLES, NCCL_LIBRARY="host", NCCL_HOST_TIMEOUT="60")


def bench_cli(*args, nranks=None, timeout=300):
    cmd = [sys.executable, "-m", "nccl.bench", *args]
    if nranks is not None:
        cmd = [sys.executable, "-m", "nccl.run", "-n", str(nranks), "--timeout", str(timeout - 30), "-m", "nccl.bench",
               *args]
    return subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("text, value", [("8", 8), ("1K", 1024), ("64k", 65536), ("128M", 128 << 20), ("1G", 1 << 30),
                                         ("2MB", 2 << 20)])
def test_parse_size(text, value):
    assert bench.parse_size(text) == value


@pytest.mark.parametrize("args, message", [
    (["-b", "0"], "bad size '0'"),
    (["-b", "-8"], "bad size '-8'"),
    (["-e", "1.5M"], "bad size '1.5M'"),
    (["-e", "12X"], "bad size '12X'"),
    (["-b", "1M", "-e", "1K"], "-b 1M is larger than -e 1K"),
    (["-f", "1"], "-f must be an integer >= 2"),
    (["-n", "0"], "-n must be an integer >= 1"),
    (["-w", "x"], "-w must be an integer >= 0"),
    (["-d", "complex64"], "unknown datatype 'complex64'"),
    (["-d", "int16"], "unknown datatype 'int16'"),
    (["-o", "xor"], "unknown op 'xor'"),
    (["-c", "allreduse"], "unknown collective 'allreduse'"),
    (["-d", "float8e4m3", "-o", "prod"], "unsupported combination: datatype float8e4m3 with op prod"),
    (["-d", "float8e5m2", "-o", "avg"], "unsupported combination: datatype float8e5m2 with op avg"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["-b"], "argument -b/--minbytes: expected one argument"),
    (["--min", "8"], "unrecognized arguments: --min 8"),  # no abbreviations
    (["-c", "allreduce", "extra"], "unrecognized arguments: extra"),
])
def test_bad_arguments(args, message):
    r = bench_cli(*args)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nccl.bench: error: ") and message in lines[0], r.stderr


def test_help():
    r = bench_cli("--help")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("usage: nccl.bench [-h] [-c LIST] [-b SIZE] [-e SIZE] [-f N]")
    for option in ("-c LIST, --collective LIST", "-n N, --iters N", "-w N, --warmup N", "--json PATH", "--plot PATH"):
        assert option in r.stdout
    assert "Exit status 1 when any #wrong is not 0." in r.stdout.replace("\n", " ")


def test_defaults_and_long_forms():
    s = bench.parse_args([])
    assert (s["collectives"], s["minbytes"], s["maxbytes"], s["stepfactor"], s["datatypes"], s["ops"], s["root"],
            s["iters"], s["warmup"], s["json"], s["plot"]) == (
        ["allreduce"], 8, 32 << 20, 2, ["float32"], ["sum"], 0, 20, 5, None, None)
    s = bench.parse_args(["--collective=broadcast,gather", "--minbytes", "1K", "--maxbytes=4K", "--stepfactor", "4",
                          "--datatype", "half,bf16", "--op", "max", "--root", "1", "--iters", "3", "--warmup", "0",
                          "--json", "-"])
    assert (s["collectives"], s["minbytes"], s["maxbytes"], s["stepfactor"], s["datatypes"], s["ops"], s["root"],
            s["iters"], s["warmup"], s["json"]) == (
        ["broadcast", "gather"], 1024, 4096, 4, ["float16", "bfloat16"], ["max"], 1, 3, 0, "-")


def test_fp8_prod_is_fine_when_no_reduction_is_run():
    s = bench.parse_args(["-c", "broadcast", "-d", "float8e4m3", "-o", "prod"])
    assert list(bench.combos(s)) == [("broadcast", "float8e4m3", None)]


def test_all_expands_and_skips_uncheckable_pairs():
    s = bench.parse_args(["-c", "all", "-d", "all", "-o", "all"])
    assert s["collectives"] == list(bench.COLLECTIVES)
    got = list(bench.combos(s))
    assert ("allreduce", "float8e4m3", "prod") not in got and ("allreduce", "float8e4m3", "max") in got
    assert ("allgather", "int8", None) in got


def test_plot_without_matplotlib(monkeypatch):
    monkeypatch.setattr(bench, "_have_matplotlib", lambda: False)
    with pytest.raises(bench.UsageError, match="--plot needs matplotlib"):
        bench.parse_args(["--plot", "x.png"])


def test_bus_factors():
    assert bench.bus_factor("allreduce", 4) == 1.5
    assert bench.bus_factor("allgather", 4) == 0.75
    assert bench.bus_factor("broadcast", 4) == 1.0


HEADER = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   "
          "busbw  #wrong")


def table_rows(stdout):
    """The table's rows: every line that is not a comment, split into its 13 fields."""
    return [ln.split() for ln in stdout.splitlines() if ln and not ln.startswith("#")]


@pytest.mark.timeout(300)
def test_every_collective_out_of_place_and_in_place(tmp_path):
    out = tmp_path / "bench.json"
    r = bench_cli("-c", "all", "-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1", "-r", "1", "--json", str(out),
                  nranks=3)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["nranks"] == 3 and doc["flavour"] == "host" and doc["wrong"] == 0
    assert re.fullmatch(r"host backend \d+\.\d+\.\d+ \(libnccl-host\.so\)", doc["measured"]), doc["measured"]
    seen = {row["collective"] for row in doc["results"]}
    assert seen == set(bench.COLLECTIVES)
    for row in doc["results"]:
        assert row["wrong"] == 0 and row["time_us"] > 0 and row["size"] == row["count"] * 4, row
        if row["collective"] in ("alltoall", "sendrecv"):  # no in-place form
            assert row["in_place"] is None
        else:
            assert row["in_place"]["wrong"] == 0 and row["in_place"]["time_us"] > 0, row
    # rank 0's table, as nccl-tests prints it: no rank prefix, both column groups
    lines = r.stdout.splitlines()
    assert not [ln for ln in lines if ln.startswith("[")], r.stdout
    assert lines.count(HEADER) == len(bench.COLLECTIVES)
    rows = table_rows(r.stdout)
    assert len(rows) == len(doc["results"]) and all(len(f) == 13 for f in rows)
    for fields, row in zip(rows, doc["results"]):
        assert fields[:5] == [str(row["size"]), str(row["count"]), row["type"], row["redop"], str(row["root"])]
        assert fields[8] == "0" and (fields[9:] == ["N/A"] * 4 if row["in_place"] is None else fields[12] == "0")
    parts = [p for row in doc["results"] for p in (row, row["in_place"]) if p is not None]
    assert doc["avg_busbw"] == pytest.approx(sum(p["busbw"] for p in parts) / len(parts))
    assert lines[-3:] == ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {doc['avg_busbw']:g}", "#"]


def test_types_and_ops_json_to_stdout():
    r = bench_cli("-c", "allreduce,reduce_scatter", "-d", "int8,uint64,float16,float64", "-o", "all",
                  "-b", "64", "-e", "1K", "-f", "4", "-n", "1", "-w", "0", "--json", "-", nranks=2)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)  # the JSON alone, unprefixed
    assert doc["wrong"] == 0
    assert {(row["type"], row["redop"]) for row in doc["results"]} == {
        (t, o) for t in ("int8", "uint64", "float16", "float64") for o in bench.OPS}


def test_one_rank_without_a_launcher_says_so():
    r = bench_cli("-b", "8", "-e", "16", "-n", "1", "-w", "0")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "nccl.bench: warning: no launcher found, so this is 1 rank: nothing crosses a process and busbw is 0. "
        "Start N ranks with python -m nccl.run -n N -m nccl.bench, mpirun -n N python -m nccl.bench, or "
        "torchrun --nproc-per-node N -m nccl.bench"]
    assert r.stdout.startswith("# nccl.bench (nccl4py ") and ", 1 rank(s)\n" in r.stdout
    assert len(table_rows(r.stdout)) == 2
    r = bench_cli("-b", "8", "-e", "16", "-n", "1", "-w", "0", nranks=1)  # one rank asked for: no warning
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_the_plot_title_names_the_library(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.axes

    titles = []
    real = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(matplotlib.axes.Axes, "set_title", lambda ax, t, *a, **k: (titles.append(t),
                                                                                   real(ax, t, *a, **k))[1])
    row = {"collective": "allreduce", "type": "float32", "redop": "sum", "size": 8, "busbw": 1.0}
    bench.plot([row], tmp_path / "p.png", 4, "NCCL 2.28.3 (libnccl.so.2)")
    assert titles == ["nccl.bench: NCCL 2.28.3 (libnccl.so.2), 4 rank(s)"]


def test_plot_file(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "busbw.png"
    r = bench_cli("-c", "allreduce,allgather", "-b", "1K", "-e", "64K", "-f", "4", "-n", "1", "-w", "0",
                  "--plot", str(png), nranks=2)
    assert r.returncode == 0, r.stdout + r.stderr
    data = png.read_bytes()
    assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"


def test_root_out_of_range():
    r = bench_cli("-c", "broadcast", "-r", "5", "-b", "8", "-e", "8", nranks=2)
    assert r.returncode == 2
    assert "nccl.bench: error: -r 5 is not a rank of 2" in r.stderr
