"""The shipped type stubs (.pyi beside the C-implemented modules, py.typed): mypy checks
typing_example.py cleanly and rejects misuse."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent

pytest.importorskip("mypy", reason="mypy is in the 'test' extra")


def _mypy(tmp_path, path):
    # Run from an empty directory so that mypy reads the installed package (with its stubs), not src/.
    cmd = [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
           "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}",
           "--no-error-summary", "--show-error-codes", "--config-file", os.devnull, str(path)]
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)


def test_stubs_are_installed():
    import nccl
    import nccl.core

    root = pathlib.Path(nccl.__file__).parent
    assert (root / "py.typed").is_file()
    for name in ("communicator.pyi", "resources.pyi", "buffer.pyi", "cuda.pyi"):
        assert (pathlib.Path(nccl.core.__file__).parent / name).is_file(), name


def test_example_type_checks(tmp_path):
    example = tmp_path / "typing_example.py"
    shutil.copy(HERE / "typing_example.py", example)
    r = _mypy(tmp_path, example)
    assert r.returncode == 0, r.stdout + r.stderr


def test_misuse_is_reported(tmp_path):
    bad = tmp_path / "bad_usage.py"
    bad.write_text(
        "import nccl.core as nc\n"
        "comm = nc.Communicator()\n"
        "comm.allreduce(1, 2, nc.SUM, 0)\n"            # stream is keyword-only
        "n: str = comm.nranks\n"                        # an int
        "nc.NCCLConfig(True)\n"                         # keyword-only dataclass
        "nc.group_end(True)\n"                          # simulate is keyword-only
        "comm.allreduce(1, 2, nc.SUM, None, nc.NCCLCollConfig())\n"  # config is keyword-only
        "comm.allreduce(1, 2, nc.SUM, config=nc.NCCLConfig())\n"     # a communicator config
        "t: int = comm.team_world\n"                    # an NCCLTeam
    )
    r = _mypy(tmp_path, bad)
    assert r.returncode == 1
    lines = [line for line in r.stdout.splitlines() if "error:" in line]
    assert {line.split(":")[1] for line in lines} == {"3", "4", "5", "6", "7", "8", "9"}, r.stdout
