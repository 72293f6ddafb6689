"""nccl.core versions and error strings (docs/compatibility.md#versions), in child interpreters."""

import pytest
from packaging.version import Version as PkgVersion

from nccl.core import Version


@pytest.mark.parametrize("code,text", [(23007, "2.30.7"), (22703, "2.27.3"), (2804, "2.8.4"), (21403, "2.14.3")])
def test_version_decoding(code, text):
    v = Version(code)
    assert v.nccl_version == PkgVersion(text)
    assert isinstance(v.nccl4py_version, PkgVersion)
    import nccl

    assert v.nccl4py_version == PkgVersion(nccl.__version__)
    lines = repr(v).splitlines()
    assert len(lines) > 1 and any(text in line for line in lines)
    assert any(str(v.nccl4py_version) in line for line in lines)


SNIPPET = """
import warnings
import nccl
import nccl.core as core
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    v1 = core.get_version()
    v2 = core.get_version()
path = core.get_lib_path()
result = dict(warnings=[(c.category.__name__, str(c.message), c.filename) for c in w], same=v1 is v2,
              nccl=str(v1.nccl_version), lib=str(core.get_lib_version()), lib_type=type(core.get_lib_version()).__name__,
              path=str(path), path_type=type(path).__name__, bpath=b.get_library_path(),
              err=core.get_error_string(4), err_enum=core.get_error_string(b.Result.InvalidArgument),
              berr=b.get_error_string(4), fields=[f.name for f in __import__("dataclasses").fields(v1)],
              triple=[str(v1.nccl4py), str(v1.nccl_bindings), str(v1.libnccl.version)],
              lib_info_type=type(v1.libnccl).__name__, eq=v1 == v2, top=type(nccl.get_version()).__name__,
              top_fields=[f.name for f in __import__("dataclasses").fields(nccl.get_version())],
              old=[str(v1.nccl_version), str(v1.nccl4py_version)], dunder=core.__version__)
"""


def test_host_backend(fresh_python):
    r = fresh_python(SNIPPET, env={"NCCL_LIBRARY": "host"})
    assert r["warnings"] == []  # nccl4py 0.6.0's get_version is not deprecated
    assert r["fields"] == ["nccl4py", "nccl_bindings", "libnccl"] and r["lib_info_type"] == "LibraryInfo"
    assert r["triple"] == ["0.6.0+host", "2.32.3", "2.32.3"] and r["eq"] is True
    assert r["old"] == ["2.32.3", "0.6.0+host"]  # 0.3.1's Version attributes on the same object
    assert r["top"] == "VersionInfo" and r["top_fields"] == ["nccl4py", "nccl", "nccl_ep"]  # the RCCL fork's shape
    assert r["dunder"] == "0.6.0+host"
    assert r["nccl"] == r["lib"] == "2.32.3" and r["lib_type"] == "Version"
    assert r["path_type"] == "PosixPath" and r["path"] == r["bpath"] and r["path"].endswith("libnccl-host.so")
    assert r["err"] == r["err_enum"] == r["berr"] and r["err"]


def test_older_stub(fresh_python):
    r = fresh_python(SNIPPET, variant="nccl_2_27")
    assert r["nccl"] == r["lib"] == "2.27.3"
    assert r["path"].endswith("libnccl.so.2")
