"""The examples a reader can copy from README.md and docs/, as tests/test_docs_examples.py runs them
(the rules: docs/developing.md#examples-in-the-docs).

Every fenced ```python block is a program. Its first line may name its file (``# name.py``); a
shell command on the same page that runs that file runs it, otherwise it runs by itself: under
``python -m nccl.run -n 2`` when it creates a communicator (``from_env``, ``Communicator.init``,
``comm_init_rank``, torch's ``init_process_group``), in one process otherwise. A fenced ```sh block holds commands; those a user
types to use the package (``python -m nccl...``, ``python file.py``, ``mpirun``, ``torchrun``)
run, the set-up and developer commands (``pip``, ``./run.sh``, ``.venv/bin/...``, ``tools/...``,
``tests/...``, ``export``) are listed but not run. An HTML comment on the line above a fence changes that:

    <!-- docs-test: ranks=N -->           run the python block under python -m nccl.run -n N
    <!-- docs-test: fragment: WHY -->     a python block that is a piece of a program: compiled, not run
    <!-- docs-test: gpu: WHY -->          a python block that needs a GPU: run only by tests/gpu
    <!-- docs-test: not-run: WHY -->      an sh block whose commands are shown, not run
    <!-- docs-test: output -->            a ```text block: the standard output of the run just above

An output block is compared line by line, as a sorted list when the run had several ranks (their
lines interleave in any order).
"""

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "api").glob("*.md"))]

MARKER = re.compile(r"^<!-- docs-test: (ranks=(\d+)|fragment: .+|gpu: .+|not-run: .+|output) -->$")
FENCE = re.compile(r"^```(\w*)\s*$")
FILE_LINE = re.compile(r"^# ([\w.-]+\.py)\s*$")
MAKES_COMMUNICATOR = re.compile(r"\b(from_env|Communicator\.init|comm_init_rank|init_process_group)\(")
# Launchers whose command lines are a user's use of the package.
LAUNCHERS = {"mpirun", "mpiexec", "torchrun", "srun"}


@dataclass
class Block:
    page: Path
    line: int           # of the opening fence, 1-based
    lang: str
    text: str
    marker: str = ""    # the marker's text after "docs-test: ", or ""

    @property
    def where(self):
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"

    @property
    def kind(self):
        """python blocks: "run", "fragment" or "gpu"; sh blocks: "commands" or "not-run";
        text blocks: "output" or "text"."""
        head = self.marker.split(":")[0].split("=")[0]
        if self.lang == "python":
            return head if head in ("fragment", "gpu") else "run"
        if self.lang == "sh":
            return "not-run" if head == "not-run" else "commands"
        return "output" if head == "output" else "text"

    @property
    def file_name(self):
        m = FILE_LINE.match(self.text.split("\n", 1)[0])
        return m.group(1) if m else None

    @property
    def ranks(self):
        m = re.match(r"ranks=(\d+)$", self.marker)
        if m:
            return int(m.group(1))
        return 2 if MAKES_COMMUNICATOR.search(self.text) else 1


@dataclass
class Command:
    block: Block
    text: str                      # the command line, continuations joined, comment dropped
    argv: list = field(default_factory=list)

    @property
    def user_facing(self):
        """python -m nccl..., python FILE.py (not a tool of this repository) and the launchers; a
        path to an interpreter (.venv/bin/python) is a developer's command."""
        a = self.argv
        if not a:
            return False
        if a[0] in ("python", "python3"):
            return (a[1:2] == ["-m"] and a[2:3] != [] and a[2].split(".")[0] == "nccl") or (
                len(a) > 1 and a[1].endswith(".py") and not a[1].startswith(("tools/", "tests/")))
        return a[0] in LAUNCHERS

    @property
    def runs_file(self):
        """The .py file the command runs, if any."""
        return next((a for a in self.argv[1:] if a.endswith(".py")), None)


@dataclass
class Run:
    """One thing the test runs: a python block by itself, or a command (which may run a block's
    file). ``expected`` is the output block that follows it, if any."""
    where: str
    block: Block
    command: Command = None
    expected: Block = None
    files: dict = field(default_factory=dict)   # name -> text of the page's named python blocks


def blocks(page):
    """The fenced blocks of a page, in order, each with the marker on the line above it."""
    lines = page.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        above = lines[start - 1].strip() if start > 0 else ""
        mm = MARKER.match(above)
        if above.startswith("<!-- docs-test") and mm is None:
            raise ValueError(f"{page}:{start}: not a docs-test marker: {above}")
        out.append(Block(page, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n",
                         above[len("<!-- docs-test: "):-len(" -->")] if mm else ""))
        i = j + 1
    return out


def commands(block):
    """The command lines of an sh block: continuations joined, comments and blank lines dropped."""
    out, pending = [], ""
    for raw in block.text.split("\n"):
        line = pending + raw
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        argv = shlex.split(line, comments=True)
        if argv:
            text = shlex.join(argv)
            out.append(Command(block, text, argv))
    return out


def page_runs(page):
    """What the test runs for one page, in page order: the commands of its sh blocks that are not
    marked not-run, and its runnable python blocks that no such command runs."""
    found = blocks(page)
    files = {b.file_name: b.text for b in found if b.lang == "python" and b.file_name}
    run_by_command = set()
    for b in found:
        if b.kind == "commands":
            run_by_command |= {c.runs_file for c in commands(b) if c.user_facing and c.runs_file in files}
    runs = []
    for b in found:
        if b.kind == "run" and b.file_name not in run_by_command:
            runs.append(Run(b.where, b, files=files))
        elif b.kind == "commands":
            runs += [Run(f"{b.where}: {c.text}", b, c, files=files) for c in commands(b) if c.user_facing]
        elif b.kind == "output":
            if not runs or runs[-1].expected is not None:
                raise ValueError(f"{b.where}: an output block with no run above it")
            runs[-1].expected = b
    return runs


def census():
    """{kind: [where, ...]} over every page: python blocks run, fragments, gpu blocks; user
    commands run and not run; set-up commands; output blocks."""
    out = {k: [] for k in ("python-run", "fragment", "gpu", "command-run", "command-not-run", "setup", "output")}
    for page in PAGES:
        for b in blocks(page):
            if b.lang == "python":
                out["python-run" if b.kind == "run" else b.kind].append(b.where)
            elif b.lang == "sh":
                for c in commands(b):
                    key = "setup" if not c.user_facing else ("command-run" if b.kind == "commands"
                                                            else "command-not-run")
                    out[key].append(f"{b.where}: {c.text}")
            elif b.kind == "output":
                out["output"].append(b.where)
    return out
