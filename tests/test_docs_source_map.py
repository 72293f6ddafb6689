"""docs/architecture.md's source map names every C and Python source file under src/, in the
subsection of its folder, and names no file that does not exist: a file added, moved or removed
without updating the map fails here."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
SUFFIXES = {".c", ".h", ".py"}
FILE_NAME = re.compile(r"`([A-Za-z0-9_./-]+\.(?:c|h|py|pyi))`")


def source_map_sections():
    """{'src/ext/': text of that subsection, ...} from the '## Source map' section."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("\n## Source map\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    parts = re.split(r"^### `(src/[^`]*/)`\s*$", section, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def sources():
    return sorted(p for p in SRC.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def folder_of(path, folders):
    rel = path.relative_to(ROOT).as_posix()
    owners = [f for f in folders if rel.startswith(f)]
    return max(owners, key=len) if owners else None


def test_every_src_folder_has_a_subsection():
    folders = source_map_sections()
    tops = {f"src/{d.name}/" for d in SRC.iterdir() if d.is_dir() and any(f.suffix in SUFFIXES for f in d.rglob("*"))}
    assert tops - folders.keys() == set()


def test_every_source_file_is_named():
    folders = source_map_sections()
    missing = []
    for path in sources():
        folder = folder_of(path, folders)
        rel = path.relative_to(ROOT / folder).as_posix() if folder else None
        if folder is None or f"`{rel}`" not in folders[folder]:
            missing.append(path.relative_to(ROOT).as_posix())
    assert missing == [], "add these files to docs/architecture.md's source map"


def test_every_named_file_exists():
    stale = []
    for folder, text in source_map_sections().items():
        for name in FILE_NAME.findall(text):
            if name.startswith(("src/", "tests/")):
                continue  # a path outside this folder, cited in prose
            if not (ROOT / folder / name).is_file():
                stale.append(folder + name)
    assert stale == [], "docs/architecture.md's source map names files that do not exist"


def test_the_map_is_not_empty():
    # guards the parsing above: a renamed heading would otherwise make every check vacuous
    assert len(source_map_sections()) >= 6
    assert len(sources()) > 100


def test_host_backend_components_name_every_file():
    # the host backend's own page lists its files with their roles; it must not drift either
    text = (ROOT / "docs" / "host-backend.md").read_text()
    start = text.index("\n## Components\n")
    section = text[start : text.index("\n## ", start + 1)]
    named = set(FILE_NAME.findall(section))
    files = {p.name for p in (SRC / "host").iterdir() if p.suffix in {".c", ".h"}}
    assert files - named == set(), "add these files to docs/host-backend.md#components"
    gone = {n for n in named if "/" not in n} - files
    assert gone == set(), "docs/host-backend.md#components names files that are gone"
