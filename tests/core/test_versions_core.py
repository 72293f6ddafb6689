"""nccl.core versions and error strings (API.md section 5.13), in child interpreters."""

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


DEPRECATION = ("nccl.core.get_version is deprecated; use nccl.get_version (full-stack including libnccl_ep) "
               "or nccl.show_versions (human-readable) instead.")

SNIPPET = """
import warnings
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
              berr=b.get_error_string(4))
"""


def test_host_backend(fresh_python):
    r = fresh_python(SNIPPET, env={"NCCL_LIBRARY": "host"})
    assert [w[:2] for w in r["warnings"]] == [("DeprecationWarning", DEPRECATION)] * 2
    assert r["warnings"][0][2] == "<snippet>"  # attributed to the caller
    assert r["same"] is True
    assert r["nccl"] == r["lib"] == "2.32.3" and r["lib_type"] == "Version"
    assert r["path_type"] == "PosixPath" and r["path"] == r["bpath"] and r["path"].endswith("libnccl-host.so")
    assert r["err"] == r["err_enum"] == r["berr"] and r["err"]


def test_older_stub(fresh_python):
    r = fresh_python(SNIPPET, variant="nccl_2_27")
    assert r["nccl"] == r["lib"] == "2.27.3"
    assert r["path"].endswith("libnccl.so.2")
