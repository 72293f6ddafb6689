"""Every example a reader can copy from README.md and docs/ runs (docs/developing.md#examples-in-the-docs):
each python block, under python -m nccl.run when it makes a communicator, and the commands a user
types (doctor, bench, trace, the launcher), each exiting 0 and printing what the page says it
prints. tests/docs_examples.py finds them; the census test prints how many of each there are."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import children
import docs_examples as de

RUNS = [run for page in de.PAGES for run in de.page_runs(page)]
# A fragment is a piece of a program the page explains around; a page that can show a whole
# program shows one instead, so the count stays small.
MAX_FRAGMENTS = 4
TIMEOUT_S = 240
ON_GPU = os.environ.get("NCCL4PY_DOCS_GPU") == "1"


def _argv(run, folder):
    """The command to run, with python/mpirun/torchrun resolved to this environment's."""
    if run.command is None:
        name = run.block.file_name or "example.py"
        (folder / name).write_text(run.block.text)
        if run.block.ranks > 1:
            return [sys.executable, "-m", "nccl.run", "-n", str(run.block.ranks), "--timeout", str(TIMEOUT_S), name]
        return [sys.executable, name]
    tools = {"python": sys.executable, "python3": sys.executable, "mpirun": children.mpirun(),
             "mpiexec": children.mpirun(), "torchrun": str(Path(sys.executable).parent / "torchrun")}
    return [tools.get(a, a) if i == 0 or a in ("python", "python3") else a for i, a in enumerate(run.command.argv)]


def _several_ranks(argv):
    return "mpirun" in Path(argv[0]).name or "torchrun" in Path(argv[0]).name or (
        "nccl.run" in argv and argv[argv.index("-n") + 1] != "1")


def _folder(tmp_path, run):
    """The run's working folder: the page's named python files, and the repository's examples."""
    for name, text in run.files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "examples").symlink_to(de.ROOT / "examples")
    return tmp_path


@pytest.mark.parametrize("run", [r for r in RUNS if r.block.kind != "gpu"], ids=lambda r: r.where)
def test_docs_example_runs(run, tmp_path):
    _check_run(run, tmp_path)


@pytest.mark.skipif(not ON_GPU, reason="needs a GPU: tests/gpu/run_checks.sh sets NCCL4PY_DOCS_GPU=1")
@pytest.mark.parametrize("run", [r for r in RUNS if r.block.kind == "gpu"], ids=lambda r: r.where)
def test_docs_gpu_example_runs(run, tmp_path):
    _check_run(run, tmp_path)


def _check_run(run, tmp_path):
    folder = _folder(tmp_path, run)
    argv = _argv(run, folder)
    if None in argv or not Path(argv[0]).exists():
        pytest.fail(f"{run.where}: {run.command.argv[0]} is not installed here")
    env = children.environment(drop=children.LOADER_VARIABLES + children.LAUNCH_VARIABLES, NCCL_HOST_TIMEOUT="60",
                               MPLBACKEND="Agg")
    proc = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT_S + 30)
    assert proc.returncode == 0, children.describe(proc, run.where)
    if run.expected is not None:
        got = [line.rstrip() for line in proc.stdout.splitlines()]
        want = [line.rstrip() for line in run.expected.text.rstrip("\n").splitlines()]
        if _several_ranks(argv):
            got, want = sorted(got), sorted(want)
        assert got == want, f"{run.where}: the output differs from {run.expected.where}\n{proc.stdout}"


def test_fragments_and_gpu_blocks_compile():
    """What is not run here is still Python."""
    for page in de.PAGES:
        for block in de.blocks(page):
            if block.lang == "python" and block.kind != "run":
                compile(block.text, block.where, "exec")


def test_census(capsys):
    """The counts: printed for the record, and held to what the rules promise."""
    c = de.census()
    with capsys.disabled():
        print(f"\ndocs examples: {len(c['python-run'])} python blocks run, {len(c['fragment'])} fragments, "
              f"{len(c['gpu'])} need a GPU; {len(c['command-run'])} user commands run, "
              f"{len(c['command-not-run'])} shown only; {len(c['output'])} outputs compared; "
              f"{len(c['setup'])} set-up commands listed")
    assert len(c["fragment"]) <= MAX_FRAGMENTS, c["fragment"]
    assert len(c["python-run"]) >= 8 and len(c["command-run"]) >= 8 and len(c["output"]) >= 6


def test_markers_are_read(tmp_path):
    """A page's markers change what runs; a misspelt marker is an error, not a silent default."""
    page = tmp_path / "page.md"
    page.write_text("<!-- docs-test: fragment: a piece -->\n```python\ncomm.allreduce(x, x, SUM)\n```\n\n"
                    "```python\n# job.py\nimport nccl.core as nccl\nc = nccl.Communicator.from_env()\n```\n\n"
                    "```sh\npython -m nccl.run -n 3 job.py   # runs job.py\npip install .\n```\n\n"
                    "<!-- docs-test: output -->\n```text\n[0] hello\n```\n")
    kinds = [(b.lang, b.kind) for b in de.blocks(page)]
    assert kinds == [("python", "fragment"), ("python", "run"), ("sh", "commands"), ("text", "output")]
    runs = de.page_runs(page)
    # job.py runs through the command that names it, not by itself; pip is set-up, not run
    assert [r.command.text for r in runs] == ["python -m nccl.run -n 3 job.py"]
    assert runs[0].expected.text == "[0] hello\n" and set(runs[0].files) == {"job.py"}
    page.write_text("<!-- docs-test: fragmnet -->\n```python\nx = 1\n```\n")
    with pytest.raises(ValueError, match="not a docs-test marker"):
        de.blocks(page)
