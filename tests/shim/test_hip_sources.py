"""Cheap checks on src/hip/ written as tests (STYLE.md section 4)."""

import re
import subprocess

import pytest

from conftest import HIP_SOURCES, HIP_SRC, build_extension

C_FILES = sorted(HIP_SRC.glob("*.c"))
# Functions documented to run with the GIL already released (called only inside such blocks).
GIL_FREE_HELPERS = {"enter_device", "leave_device"}
STRING_LOOKUPS = {"hipGetErrorString", "hipGetErrorName"}


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _blocks(text):
    return re.findall(r"Py_BEGIN_ALLOW_THREADS(.*?)Py_END_ALLOW_THREADS", text, flags=re.S)


@pytest.mark.parametrize("path", C_FILES, ids=lambda p: p.name)
def test_nothing_python_inside_gil_released_blocks(path):
    for block in _blocks(_strip_comments(path.read_text())):
        for token in ("Py", "return", "goto", "self->"):
            assert not re.search(rf"\b{re.escape(token)}", block), f"{path.name}: {token!r} in\n{block}"


@pytest.mark.parametrize("path", C_FILES, ids=lambda p: p.name)
def test_every_hip_call_releases_the_gil(path):
    """Each gpu_hip.<entry point>( call sits in a GIL-released block, in a helper that only runs
    inside one, or is a string lookup made while building an exception."""
    text = _strip_comments(path.read_text())
    released = set()
    for match in re.finditer(r"Py_BEGIN_ALLOW_THREADS.*?Py_END_ALLOW_THREADS", text, flags=re.S):
        released.update(range(match.start(), match.end()))
    functions = [(m.start(), m.group(1)) for m in re.finditer(r"^[a-zA-Z][^\n;]*?\b(\w+)\([^;{]*\)\s*\{", text, re.M)]
    for call in re.finditer(r"gpu_hip\.(hip\w+)\(", text):
        name = call.group(1)
        if call.start() in released or name in STRING_LOOKUPS:
            continue
        owner = max((f for f in functions if f[0] < call.start()), default=(0, "?"))[1]
        assert owner in GIL_FREE_HELPERS, f"{path.name}: {name} called with the GIL held in {owner}()"


def test_builds_without_warnings(tmp_path):
    build_extension(tmp_path, extra_flags=["-Werror", "-Wshadow", "-Wstrict-prototypes"])


def test_meson_lists_every_source():
    meson = (HIP_SRC / "meson.build").read_text()
    listed = re.findall(r"'(\w+\.c)'", meson)
    assert sorted(listed) == sorted(p.name for p in C_FILES) == sorted(HIP_SOURCES)
    assert "subdir : 'nccl/_hip_compat'" in meson and "py.extension_module('_hip'" in meson


def test_extension_exports_only_its_init(tmp_path):
    out = build_extension(tmp_path)
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(out)], capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in symbols.splitlines() if line.split()[1:2] == ["T"]}
    assert exported == {"PyInit__hip"}


def test_stub_exports_the_whole_table(hip, stub_path):
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(stub_path)], capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in symbols.splitlines()}
    missing = [name for name, _ in hip.symbols() if name not in exported]
    assert missing == []


def test_no_hip_headers_needed():
    for path in HIP_SRC.glob("*.[ch]"):
        includes = re.findall(r'#include\s*[<"]([^>"]+)[>"]', path.read_text())
        assert not [i for i in includes if "hip/" in i or i.startswith("hip_runtime")], (path.name, includes)


def test_stub_file_matches_the_module(hip):
    import ast

    tree = ast.parse((HIP_SRC.parent / "nccl" / "_hip_compat" / "_hip.pyi").read_text())
    declared = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            declared.add(node.target.id)
    public = {name for name in dir(hip) if not name.startswith("_")}
    assert declared == public
