"""Cheap checks on src/hip/ written as tests (docs/developing.md#how-we-test): the build, exports, sources and stubs."""

import re
import subprocess

from conftest import HIP_SOURCES, HIP_SRC, build_extension

C_FILES = sorted(HIP_SRC.glob("*.c"))
# The GIL rules (nothing but the call in a released block, every HIP call made without the GIL)
# and the macro rule are checked over src/hip with the other C parts in tests/test_c_sources.py.


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
