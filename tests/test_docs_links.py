"""Comments, docstrings and the docs themselves cite docs/<page>.md#<anchor>: every such citation
names a page that exists and a heading on it, so a renamed section cannot leave dangling
references behind. Anchors are GitHub's: the heading lowercased, punctuation other than '-' and
'_' dropped, spaces as '-', and '-1', '-2', ... for repeated headings."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CITATION = re.compile(r"(?:docs/)?\b([a-z][a-z0-9-]*\.md)#([a-z0-9_-]+)")


def anchors(page):
    seen = {}
    out = set()
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"#{1,6} +(.*?) *#*$", line)
        if m is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def tracked_files():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / f for f in listed.stdout.split() if Path(f).suffix in {".c", ".h", ".py", ".pyi", ".md", ".sh"}]


def citations():
    pages = {p.name: anchors(p) for p in [*DOCS.glob("*.md"), *(DOCS / "api").glob("*.md")]}
    for path in tracked_files():
        if not path.is_file():
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for m in CITATION.finditer(line):
                page, anchor = m.groups()
                # docs pages link to each other by bare name; elsewhere only docs/<page> counts
                if path.parent != DOCS and not m.group(0).startswith("docs/"):
                    continue
                yield f"{path.relative_to(ROOT)}:{lineno}", page, anchor, pages


def test_there_are_citations_to_check():
    assert sum(1 for _ in citations()) > 100


def test_every_cited_anchor_exists():
    broken = [f"{where}: {page}#{anchor}" for where, page, anchor, pages in citations()
              if anchor not in pages.get(page, ())]
    assert broken == []


def test_no_comment_cites_the_specifications_outside_the_repository():
    old = re.compile(r"\b(API|HOST_BACKEND|STYLE|ARCHITECTURE)\.md\b")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in tracked_files() if p.is_file() and p.parent != DOCS
             for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if old.search(line)]
    assert found == []
