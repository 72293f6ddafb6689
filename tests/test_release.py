"""The release checks of tools/build_wheels.py (docs/developing.md#release) and of the target CPython its
aarch64 wheels are built against (tools/aarch64_python.py): what a wheel must hold
is derived from the source tree, and a wheel with a file more or less, or with debug info left in a
library, is refused. .ci/release sets NCCL4PY_RELEASE_WHEEL / NCCL4PY_RELEASE_SDIST to the wheel and
sdist the release tool built, and the last two tests check those; elsewhere they skip."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("tomllib", reason="tools/build_wheels.py reads pyproject.toml with tomllib (3.11+)")
import aarch64_python  # noqa: E402
import build_wheels  # noqa: E402

EXT = ".cpython-399-x86_64-linux-gnu.so"


def make_wheel(path, names):
    with zipfile.ZipFile(path, "w") as zf:
        for name in sorted(names):
            zf.writestr(name, b"\x7fELF\x02\x01" if name.endswith(".so") else b"")
    return path


def test_wheel_needs_every_package_file_and_the_license():
    needs = build_wheels.wheel_needs(EXT)
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "src/nccl"], capture_output=True,
                             text=True, check=True).stdout.split()
    on_disk = {str(p.relative_to(ROOT / "src")) for p in (ROOT / "src" / "nccl").rglob("*")
               if p.suffix in (".py", ".pyi") or p.name == "py.typed"}
    assert on_disk <= {p.removeprefix("src/") for p in tracked}
    assert on_disk | build_wheels.installed_libraries(EXT) <= needs
    assert "nccl4py-0.6.0.dist-info/licenses/LICENSE" in needs
    assert not [n for n in needs if n.startswith(("tests/", "build", "benchmarks/", "src/"))]


def test_installed_libraries_are_those_the_installed_package_has():
    """The parse of src/**/meson.build names exactly the .so files of the package under test."""
    import nccl

    package = Path(nccl.__file__).parent
    site = package.parent
    have = {str(p.relative_to(site)) for p in package.rglob("*.so")}
    assert build_wheels.installed_libraries(sysconfig.get_config_var("EXT_SUFFIX")) == have
    assert len(have) == 3


def test_wheel_mismatch_names_missing_and_unexpected_files(tmp_path):
    needs = build_wheels.wheel_needs(EXT)
    assert build_wheels.wheel_mismatch(make_wheel(tmp_path / "ok.whl", needs), EXT) == ([], [])
    bad = (needs - {"nccl/py.typed", "nccl/core/buffer.pyi"}) | {"tests/conftest.py", "nccl/_build/x.o"}
    assert build_wheels.wheel_mismatch(make_wheel(tmp_path / "bad.whl", bad), EXT) == (
        ["nccl/core/buffer.pyi", "nccl/py.typed"], ["nccl/_build/x.o", "tests/conftest.py"])


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_debug_sections_found_and_absent(tmp_path):
    (tmp_path / "f.c").write_text("int f(int x) { return x + 1; }\n")
    for flags, debug in ((["-g"], True), ([], False)):
        so = tmp_path / f"f{len(flags)}.so"
        subprocess.run(["cc", "-shared", "-fPIC", *flags, "-o", str(so), str(tmp_path / "f.c")], check=True)
        assert (".debug_info" in build_wheels.debug_sections(so.read_bytes())) is debug
    with pytest.raises(ValueError, match="not an ELF64"):
        build_wheels.debug_sections(b"#!/bin/sh\n")


@pytest.mark.parametrize("policy, arch, ok", [
    ("manylinux_2_17_x86_64", "x86_64", True), ("manylinux_2_28_x86_64", "x86_64", True),
    ("manylinux2014_x86_64", "x86_64", True), ("manylinux_2_34_x86_64", "x86_64", False),
    ("linux_x86_64", "x86_64", False), (None, "x86_64", False),
    ("manylinux_2_28_aarch64", "aarch64", True), ("manylinux_2_17_aarch64", "aarch64", True),
    ("manylinux_2_31_aarch64", "aarch64", False), ("manylinux_2_28_x86_64", "aarch64", False),
    ("manylinux_2_28_aarch64", "x86_64", False)])
def test_policy_ok(policy, arch, ok):
    assert build_wheels.policy_ok(policy, arch) is ok


def test_cross_target_describes_the_target_python(tmp_path):
    """The build-details file of an aarch64 build names the target's EXT_SUFFIX and a header folder
    whose pyconfig.h is the target's multiarch one (not Debian's dispatching wrapper)."""
    headers = tmp_path / "sysroot" / "usr" / "include" / "python3.11"
    headers.mkdir(parents=True)
    (headers / "Python.h").write_text("/* Python.h */\n")
    (headers / "pyconfig.h").write_text("#include <aarch64-linux-gnu/python3.11/pyconfig.h>\n")
    real = tmp_path / "pyconfig-aarch64.h"
    real.write_text("#define SIZEOF_LONG 8 /* aarch64 */\n")
    target = {"sysroot": str(tmp_path / "sysroot"), "headers": str(headers), "pyconfig": str(real),
              "version": "3.11", "ext_suffix": ".cpython-311-aarch64-linux-gnu.so", "free_threaded": False}
    work = tmp_path / "work"
    work.mkdir()
    details = json.loads(build_wheels.cross_target(work, target).read_text())
    assert details["abi"] == {"flags": [], "extension_suffix": ".cpython-311-aarch64-linux-gnu.so",
                              "stable_abi_suffix": ".abi3.so"}
    assert details["platform"] == "linux-aarch64" and details["language"] == {"version": "3.11"}
    inc = Path(details["c_api"]["headers"])
    assert (inc / "pyconfig.h").read_text() == real.read_text()
    assert (inc / "Python.h").is_file()


@pytest.mark.skipif("NCCL4PY_RELEASE_WHEEL" not in os.environ, reason="no release wheel (set by .ci/release)")
def test_release_wheel_holds_what_the_package_needs():
    wheel = Path(os.environ["NCCL4PY_RELEASE_WHEEL"])
    assert build_wheels.wheel_mismatch(wheel, sysconfig.get_config_var("EXT_SUFFIX")) == ([], [])
    assert build_wheels.unstripped(wheel) == {}


@pytest.mark.skipif("NCCL4PY_RELEASE_SDIST" not in os.environ, reason="no release sdist (set by .ci/release)")
def test_release_sdist_holds_what_a_build_needs():
    assert build_wheels.sdist_missing(Path(os.environ["NCCL4PY_RELEASE_SDIST"])) == []


# ---- tools/aarch64_python.py: the target CPython of the aarch64 wheels --------------------------------


def fake_arm64_sysroot(root, series="3.13", suffix=".cpython-313-aarch64-linux-gnu.so"):
    """The files describe() reads, laid out as dpkg-deb -x unpacks Debian's arm64 packages."""
    usr = root / "usr"
    for d in (f"include/python{series}", f"include/aarch64-linux-gnu/python{series}", f"lib/python{series}",
              "lib/aarch64-linux-gnu", "bin"):
        (usr / d).mkdir(parents=True)
    (usr / "include" / f"python{series}" / "Python.h").write_text("")
    (usr / "include" / "aarch64-linux-gnu" / f"python{series}" / "pyconfig.h").write_text("")
    (usr / "lib" / "aarch64-linux-gnu" / "libstdc++.so.6").write_text("")
    (usr / "bin" / f"python{series}").write_text("")
    (usr / "lib" / f"python{series}" / "_sysconfigdata__linux_aarch64-linux-gnu.py").write_text(
        f"# system configuration\nbuild_time_vars = {{'VERSION': '{series}', 'EXT_SUFFIX': '{suffix}', "
        "'Py_GIL_DISABLED': 0}\n")
    return root


def test_aarch64_target_is_read_from_the_unpacked_packages(tmp_path):
    info = aarch64_python.describe(fake_arm64_sysroot(tmp_path / "s"), "3.13")
    assert (info["version"], info["ext_suffix"], info["free_threaded"]) == (
        "3.13", ".cpython-313-aarch64-linux-gnu.so", False)
    assert info["pyconfig"].endswith("usr/include/aarch64-linux-gnu/python3.13/pyconfig.h")
    (tmp_path / "s" / "usr" / "include" / "python3.13" / "Python.h").unlink()
    with pytest.raises(OSError, match="no Python.h in"):
        aarch64_python.describe(tmp_path / "s", "3.13")


class FakeApt:
    def __init__(self, rows):
        self.rows = rows

    def madison(self, package):
        return self.rows


def test_aarch64_target_comes_from_a_released_suite_before_sid():
    rows = [("3.13.18-1", "sid", "Packages"), ("3.13.5-2", "trixie", "Packages"), ("3.13.5-2", "trixie", "Sources")]
    assert aarch64_python.find_suite(FakeApt(rows), "3.13") == ("trixie", "3.13.5-2")
    assert aarch64_python.find_suite(FakeApt(rows[:1]), "3.13") == ("sid", "3.13.18-1")
    with pytest.raises(RuntimeError, match=r"Debian \(bookworm, trixie, sid\) has no arm64 CPython 3.12"):
        aarch64_python.find_suite(FakeApt([]), "3.12")
    with pytest.raises(RuntimeError, match="Debian builds no free-threaded arm64 CPython"):
        aarch64_python.get("3.13t", cache=Path("/nonexistent"))
