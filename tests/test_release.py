"""The release checks of tools/build_wheels.py (docs/developing.md#release) and of the target CPython its
aarch64 wheels are built against (tools/aarch64_python.py): what a wheel must hold
is derived from the source tree, and a wheel with a file more or less, or with debug info left in a
library, is refused. .ci/release sets NCCL4PY_RELEASE_WHEEL / NCCL4PY_RELEASE_SDIST to the wheel and
sdist the release tool built, and two tests check those; elsewhere they skip. The target
CPython's sysroot, Debian's or cross-compiled (tools/aarch64_cross_python.py), is checked on fakes of
its layout; .ci/aarch64 runs the real ones."""

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
import aarch64_cross_python  # noqa: E402
import aarch64_python  # noqa: E402
import build_wheels  # noqa: E402
import debian_apt  # noqa: E402

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
    # the version is meson.build's, label and all; _version.py is made from its template
    assert build_wheels.version() == "0.6.0+host"
    assert "nccl4py-0.6.0+host.dist-info/licenses/LICENSE" in needs
    assert "nccl4py-0.6.0+host.dist-info/entry_points.txt" in needs  # torch's backend autoload
    assert "nccl/_version.py" in needs and "nccl/_version.py.in" not in needs
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


def fake_arm64_sysroot(root, series="3.13", suffix=".cpython-313-aarch64-linux-gnu.so", upstream=False,
                       gil_disabled=None):
    """The files describe() reads, laid out as dpkg-deb -x unpacks Debian's arm64 packages or, with
    `upstream`, as CPython's own ``make install`` of a cross build lays them out (pyconfig.h beside
    Python.h; ``t`` in a free-threaded series' names). `gil_disabled`: what the sysconfig data says
    (default: what the series' name says)."""
    usr = root / "usr"
    abiflags = "t" if series.endswith("t") else ""
    pyconfig = Path(f"include/python{series}") if upstream else Path(f"include/aarch64-linux-gnu/python{series}")
    for d in (f"include/python{series}", pyconfig, f"lib/python{series}", "lib/aarch64-linux-gnu", "bin"):
        (usr / d).mkdir(parents=True, exist_ok=True)
    (usr / "include" / f"python{series}" / "Python.h").write_text("")
    (usr / pyconfig / "pyconfig.h").write_text("")
    (usr / "lib" / "aarch64-linux-gnu" / "libstdc++.so.6").write_text("")
    (usr / "bin" / f"python{series}").write_text("")
    (usr / "lib" / f"python{series}" / f"_sysconfigdata_{abiflags}_linux_aarch64-linux-gnu.py").write_text(
        f"# system configuration\nbuild_time_vars = {{'VERSION': '{series.rstrip('t')}', 'EXT_SUFFIX': '{suffix}', "
        f"'Py_GIL_DISABLED': {int(bool(abiflags) if gil_disabled is None else gil_disabled)}}}\n")
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


def test_aarch64_target_of_an_upstream_cross_build_is_read(tmp_path):
    info = aarch64_python.describe(fake_arm64_sysroot(tmp_path / "s", "3.13t", ".cpython-313t-aarch64-linux-gnu.so",
                                                      upstream=True), "3.13t")
    assert (info["version"], info["ext_suffix"], info["free_threaded"]) == (
        "3.13", ".cpython-313t-aarch64-linux-gnu.so", True)
    assert info["pyconfig"].endswith("usr/include/python3.13t/pyconfig.h")
    assert info["python"].endswith("usr/bin/python3.13t")
    fake_arm64_sysroot(tmp_path / "g", "3.13t", ".cpython-313t-aarch64-linux-gnu.so", upstream=True, gil_disabled=0)
    with pytest.raises(OSError, match="its CPython is not free-threaded"):
        aarch64_python.describe(tmp_path / "g", "3.13t")


def test_a_series_debian_lacks_is_cross_compiled_once_and_then_cached(tmp_path, monkeypatch):
    """get() falls back to the cross build for a series Debian has no arm64 build of (and for a
    free-threaded one without asking Debian); the result is cached under its own name, a
    free-threaded sysroot never standing in for the default build of the series or the reverse."""
    calls = []

    def fake_build(series, cache, build_python):
        calls.append((series, build_python))
        dest = cache / f"cpython-3.13.5{'t' if series.endswith('t') else ''}-cross-arm64"
        suffix = f".cpython-313{'t' if series.endswith('t') else ''}-aarch64-linux-gnu.so"
        fake_arm64_sysroot(dest, series, suffix, upstream=True)
        return dest, {"source": "Debian python3.13 3.13.5-2", "seconds": {"total": 1.0}}

    def not_in_debian(series, cache):
        raise aarch64_python.NotInDebian(f"Debian (bookworm, trixie, sid) has no arm64 CPython {series}")

    monkeypatch.setattr(aarch64_cross_python, "build", fake_build)
    monkeypatch.setattr(aarch64_python, "fetch_debian", not_in_debian)
    monkeypatch.setattr(aarch64_python, "check_runs", lambda info: None)
    ft = aarch64_python.get("3.13t", cache=tmp_path, build_python="/x/python3.13t")
    assert ft["free_threaded"] and calls == [("3.13t", Path("/x/python3.13t"))]
    assert json.loads((tmp_path / "cpython-3.13.5t-cross-arm64" / "manifest.json").read_text())["source"] == \
        "Debian python3.13 3.13.5-2"
    default = aarch64_python.get("3.13", cache=tmp_path, build_python="/x/python3.13")
    assert not default["free_threaded"] and calls[-1] == ("3.13", Path("/x/python3.13"))
    assert aarch64_python.get("3.13t", cache=tmp_path)["sysroot"] == ft["sysroot"]
    assert aarch64_python.get("3.13", cache=tmp_path)["sysroot"] == default["sysroot"]
    assert len(calls) == 2


SHOWSRC = """Package: python3.12
Version: 3.12.3-1
Checksums-Sha256:
 {old} 3000 python3.12_3.12.3-1.dsc
 {old} 20625068 python3.12_3.12.3.orig.tar.xz
Directory: pool/main/p/python3.12

Package: python3.12
Version: 3.12.3-1ubuntu0.18
Checksums-Sha256:
 {dsc} 3715 python3.12_3.12.3-1ubuntu0.18.dsc
 {orig} 20625068 python3.12_3.12.3.orig.tar.xz
 {dsc} 298684 python3.12_3.12.3-1ubuntu0.18.debian.tar.xz
Directory: pool/main/p/python3.12
"""


class FakeSourceApt:
    """apt-cache showsrc from SHOWSRC; apt-get source writes `served` (name: bytes) and fails, as a
    mirror that serves the tarball but not the package's other files makes it fail."""

    def __init__(self, orig, served):
        self.text = SHOWSRC.format(old="0" * 64, dsc="1" * 64, orig=orig)
        self.served = served

    def update(self):
        pass

    def madison(self, package):
        return [("3.12.3-1", "noble", "Sources"), ("3.12.3-1ubuntu0.18", "noble-updates", "Sources")]

    versions = debian_apt.PrivateApt.versions

    def run(self, tool, *args, cwd=None):
        if tool == "apt-cache":
            return subprocess.CompletedProcess(args, 0, self.text, "")
        for name, data in self.served.items():
            (Path(cwd) / name).write_bytes(data)
        raise RuntimeError("apt-get source failed (100):\nE: Failed to fetch some archives.")


def test_the_source_tarball_is_taken_only_when_it_matches_the_signed_index(tmp_path, monkeypatch):
    import hashlib
    data = b"the upstream tarball"
    good = FakeSourceApt(hashlib.sha256(data).hexdigest(), {"python3.12_3.12.3.orig.tar.xz": data})
    assert aarch64_cross_python.orig_checksum(good, "python3.12", "3.12.3-1ubuntu0.18") == (
        "python3.12_3.12.3.orig.tar.xz", hashlib.sha256(data).hexdigest())
    with pytest.raises(RuntimeError, match="python3.12 3.11.9-1: no orig tarball in the index"):
        aarch64_cross_python.orig_checksum(good, "python3.12", "3.11.9-1")
    monkeypatch.setattr(aarch64_cross_python, "source_archives", lambda work: iter([("Ubuntu", lambda: good)]))
    archive, version, tarball = aarch64_cross_python.download_source("3.12", tmp_path / "a")
    assert (archive, version, tarball.read_bytes()) == ("Ubuntu", "3.12.3-1ubuntu0.18", data)
    # the newest version first; a tarball that does not match the index is never used
    bad = FakeSourceApt(hashlib.sha256(data).hexdigest(), {"python3.12_3.12.3.orig.tar.xz": b"tampered"})
    monkeypatch.setattr(aarch64_cross_python, "source_archives", lambda work: iter([("Ubuntu", lambda: bad)]))
    with pytest.raises(RuntimeError, match=r"no source of CPython 3.12 could be downloaded "
                                           r"\(Ubuntu 3.12.3-1ubuntu0.18; Ubuntu 3.12.3-1\)"):
        aarch64_cross_python.download_source("3.12", tmp_path / "b")


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_unpacked_packages_get_merged_usr_links_and_no_absolute_library_link(tmp_path):
    """A -dev package's absolute libX.so link would dangle in the sysroot (the linker then takes the
    static archive); unpack_debs makes it point inside the sysroot."""
    tree = tmp_path / "pkg"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text("Package: fake\nVersion: 1\nArchitecture: arm64\n"
                                            "Maintainer: nobody\nDescription: fake\n")
    lib = tree / "usr" / "lib" / "aarch64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libz.so.1.2.13").write_text("the library")
    (lib / "libz.so").symlink_to("/usr/lib/aarch64-linux-gnu/libz.so.1.2.13")
    (lib / "libffi.so").symlink_to("libz.so.1.2.13")
    debs = tmp_path / "debs"
    debs.mkdir()
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(tree), str(debs / "fake.deb")],
                   check=True, capture_output=True)
    root = tmp_path / "sysroot"
    aarch64_cross_python.unpack_debs(debs, root)
    unpacked = root / "usr" / "lib" / "aarch64-linux-gnu"
    assert os.readlink(unpacked / "libz.so") == "libz.so.1.2.13"
    assert os.readlink(unpacked / "libffi.so") == "libz.so.1.2.13"
    assert (unpacked / "libz.so").read_text() == "the library"
    assert os.readlink(root / "lib") == "usr/lib"
