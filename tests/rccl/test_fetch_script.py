"""tools/fetch_rccl.py's choices that need no network: which version to fetch when the archive
has the pin, when it has moved on, and how prefixes are named and run."""

import shutil
import subprocess
from pathlib import Path

import pytest
from rccl_calls import fetch_rccl


class FakeApt:
    """An updated Apt as pick_version sees it: the versions apt-cache madison would list."""

    def __init__(self, available):
        self.available = available

    def versions(self, package):
        assert package == "librccl1"
        return self.available

    def newer(self, a, b):
        return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


needs_dpkg = pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg compares Debian versions")


def test_the_pin_is_taken_when_the_archive_has_it():
    spec = fetch_rccl.SUITES["experimental"]
    apt = FakeApt([("7.2.4-1~exp4", "experimental"), (spec["version"], "experimental"), ("6.4.3-1", "sid")])
    assert fetch_rccl.pick_version(spec, apt) == (spec["version"], None)


@needs_dpkg
def test_the_newest_of_experimental_and_sid_stands_in_for_a_vanished_pin():
    spec = fetch_rccl.SUITES["experimental"]
    apt = FakeApt([("7.2.4-1~exp10", "experimental"), ("7.2.4-1~exp9", "experimental"), ("7.2.4-1", "sid")])
    version, note = fetch_rccl.pick_version(spec, apt)
    assert version == "7.2.4-1"  # ~exp sorts before the release
    assert note == ("librccl1 7.2.4-1~exp3 has left the archive; using the newest in experimental/sid: "
                    "7.2.4-1 (sid)")


def test_trixie_has_no_stand_in():
    spec = fetch_rccl.SUITES["trixie"]
    with pytest.raises(RuntimeError, match=r"librccl1 5\.4\.3-3\+b1 is no longer in trixie \(available: 5\.4\.3-4\)"):
        fetch_rccl.pick_version(spec, FakeApt([("5.4.3-4", "trixie")]))


def test_madison_lines_give_version_and_suite(tmp_path, monkeypatch):
    """What pick_version gets from apt-cache madison: the suite is the dist before "/main", not the
    index kind that ends the line; source lines and other packages are left out."""
    apt = fetch_rccl.Apt(tmp_path / "apt", ["sid", "experimental"])
    out = (" librccl1 | 7.2.4-1~exp3 | http://deb.debian.org/debian experimental/main amd64 Packages\n"
           " librccl1 |    6.4.3-1 | http://deb.debian.org/debian sid/main amd64 Packages\n"
           " librccl1 |    6.4.3-1 | http://deb.debian.org/debian sid/main Sources\n"
           "librccl-dev |  6.4.3-1 | http://deb.debian.org/debian sid/main amd64 Packages\n")
    monkeypatch.setattr(apt, "run", lambda *args, **kw: subprocess.CompletedProcess(args, 0, out, ""))
    assert apt.versions("librccl1") == [("7.2.4-1~exp3", "experimental"), ("6.4.3-1", "sid")]
    sources = (tmp_path / "apt" / "etc" / "sources.list").read_text()
    assert sources == ("deb [arch=amd64] http://deb.debian.org/debian sid main\n"
                       "deb [arch=amd64] http://deb.debian.org/debian experimental main\n")


def test_prefix_names_and_the_wrapper():
    assert fetch_rccl.key_of("experimental", "7.2.4-1~exp3") == "experimental-7.2.4-1_exp3"
    assert fetch_rccl.key_of("trixie", "5.4.3-3+b1") == "trixie-5.4.3-3+b1"
    p = Path("/cache/trixie-5.4.3-3+b1")
    assert fetch_rccl.wrapper(p) == [f"{p}/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "--library-path",
                                     f"{p}/usr/lib/x86_64-linux-gnu"]


def test_the_pins_are_the_builds_the_tests_know():
    assert {s: (v["version"], v["rccl"]) for s, v in fetch_rccl.SUITES.items()} == {
        "trixie": ("5.4.3-3+b1", "2.13.4"), "experimental": ("7.2.4-1~exp3", "2.27.7")}
    assert fetch_rccl.SUITES["experimental"]["packages"] == ["librccl1", "librccl-dev"]
