"""nccl.get_version(), nccl.show_versions(), the top-level module, and the one-time notice when
the host backend is chosen because the machine has no GPU."""

import importlib.metadata
import subprocess
import sys

import pytest

import children


def test_top_level_surface():
    import nccl

    assert nccl.__all__ == ["__version__", "LibraryInfo", "VersionInfo", "get_version", "show_versions"]
    # upstream's release number, with the local label that tells this package from NVIDIA's
    # (docs/install.md#which-package-is-installed), the same string pip and importlib.metadata see
    assert nccl.__version__ == "0.6.0+host" == importlib.metadata.version("nccl4py")
    with pytest.raises(AttributeError, match=r"^module 'nccl' has no attribute 'nope'$"):
        nccl.nope  # noqa: B018


@pytest.mark.parametrize("requirement, met", [
    ("nccl4py>=0.6,<0.7", True),   # what packages written for NVIDIA's 0.6 (vLLM's pin) ask for
    ("nccl4py==0.6.0", True),      # a local label is ignored by a specifier without one (PEP 440)
    ("nccl4py==0.6.0+host", True),  # the pin docs/install.md gives: this package, never NVIDIA's
    ("nccl4py>=0.7", False),
])
def test_version_meets_upstream_requirements(requirement, met):
    from packaging.requirements import Requirement

    version = importlib.metadata.version("nccl4py")
    assert Requirement(requirement).specifier.contains(version) is met


def test_library_info_str_and_positional_construction():
    from pathlib import Path

    from packaging.version import Version

    from nccl import LibraryInfo

    info = LibraryInfo(Version("2.30.7"), Version("12.9"), Path("/x/libnccl.so.2"))
    assert info.flavour is None
    assert str(info) == "2.30.7+cuda12.9 @ /x/libnccl.so.2"
    assert str(LibraryInfo(Version("2.28.3"), None, None, "rccl")) == "2.28.3"


def test_get_version_when_nothing_loads(tmp_path, run_py):
    out = run_py("""
        import json, nccl
        v = nccl.get_version()
        print(json.dumps([str(v.nccl4py), v.nccl, v.nccl_ep]))
    """, {"NCCL_LIBRARY": tmp_path / "missing.so"})
    assert out == ["0.6.0+host", None, None]


def test_show_versions_rows(mini_libs, run_py):
    out = run_py("""
        import contextlib, io, json, nccl
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            nccl.show_versions()
        print(json.dumps(buf.getvalue()))
    """, {"NCCL_LIBRARY": mini_libs["rccl"]})
    assert out == ("\nNCCL versions\n-------------\n"
                   "nccl4py     : 0.6.0+host\n"
                   f"libnccl     : 2.28.3 @ {mini_libs['rccl']} (rccl)\n"
                   "libnccl_ep  : not available\n")


def test_host_backend_chosen_without_gpu_warns_once(no_gpu_dev, run_py):
    out = run_py("""
        import json, warnings
        import nccl, nccl.bindings.nccl as n
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            n.get_version(); n.get_version()
        v = nccl.get_version().nccl
        print(json.dumps({"w": [(x.category.__name__, str(x.message), x.filename) for x in w],
                          "flavour": n.get_library_flavour(),
                          "version": str(v.version), "cuda": v.cuda_variant, "lib": v.flavour}))
    """, {"NCCL4PY_DEV_DIR": no_gpu_dev})
    assert len(out["w"]) == 1
    category, message, filename = out["w"][0]
    assert category == "HostBackendWarning" and filename == "<string>"  # the user's code, python -c here
    assert message == ("nccl4py: no GPU found; using the bundled host backend (CPU). Set NCCL_LIBRARY=host to "
                       "choose it and silence this notice.")
    assert (out["flavour"], out["version"], out["cuda"], out["lib"]) == ("host", "2.32.3", None, "host")


def test_host_backend_warning_names_the_users_line(no_gpu_dev, tmp_path):
    """Loaded deep inside nccl4py's Python code (from_env -> UniqueId -> get_unique_id), the notice
    still names the user's file and line, as one warning line and that line's source."""
    script = tmp_path / "user_script.py"
    script.write_text("import nccl.core as nccl\n\ncomm = nccl.Communicator.from_env()\ncomm.destroy()\n")
    env = children.environment(NCCL4PY_DEV_DIR=no_gpu_dev)
    for var in children.LAUNCH_VARIABLES:
        env.pop(var, None)
    r = subprocess.run([sys.executable, "-W", "always::Warning", str(script)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if "HostBackendWarning" in line]
    assert warning == [f"{script}:3: HostBackendWarning: nccl4py: no GPU found; using the bundled host backend "
                       "(CPU). Set NCCL_LIBRARY=host to choose it and silence this notice."]
    assert "site-packages" not in r.stderr and "_env.py" not in r.stderr


def test_naming_the_host_backend_is_silent(run_py):
    out = run_py("""
        import json, warnings
        import nccl.bindings.nccl as n
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            n.get_version()
        print(json.dumps({"w": len(w), "flavour": n.get_library_flavour()}))
    """, {"NCCL_LIBRARY": " HOST "})
    assert out == {"w": 0, "flavour": "host"}


def test_the_host_backend_warning_class():
    from nccl.bindings._internal.utils import HostBackendWarning, NotSupportedError

    assert issubclass(HostBackendWarning, RuntimeWarning)
    assert issubclass(NotSupportedError, RuntimeError)


# NCCL's two encodings of a version code: major*1000 + minor*100 + patch up to 2.8, and
# major*10000 + minor*100 + patch from 2.9 on.
VERSION_CODES = [
    (2300, "2.3.0"), (2408, "2.4.8"), (2708, "2.7.8"), (2804, "2.8.4"),
    (20900, "2.9.0"), (20906, "2.9.6"), (21403, "2.14.3"), (22703, "2.27.3"), (22807, "2.28.7"),
    (23007, "2.30.7"), (0, "0.0.0"),
]


@pytest.mark.parametrize("code, text", VERSION_CODES)
def test_version_code_decoding(code, text):
    """The one decoder (the C loader's, nccl._ext._version_text) and everything that formats a
    version code through it: nccl.get_version's LibraryInfo, nccl.core.Version, the doctor."""
    from packaging.version import Version

    from nccl import _ext
    from nccl._show_versions import _decode_version
    from nccl.core import Version as CoreVersion

    assert _ext._version_text(code) == text
    assert _decode_version(code) == Version(text)
    assert CoreVersion(code).nccl_version == Version(text)


@pytest.mark.parametrize("bad, error, message", [
    (-1, ValueError, "_version_text() argument 'code' must be non-negative, got -1"),
    (1 << 40, OverflowError, "_version_text() argument 'code' does not fit in a C int"),
    ("23007", TypeError, "_version_text() argument 'code' must be an int, not str"),
    (2.5, TypeError, "_version_text() argument 'code' must be an int, not float"),
])
def test_version_code_decoding_rejects(bad, error, message):
    from nccl import _ext

    with pytest.raises(error) as info:
        _ext._version_text(bad)
    assert str(info.value) == message


def test_function_not_found_names_both_versions(fresh_python):
    """The loader formats the library's and the entry point's versions with the same decoder."""
    r = fresh_python("""
        try:
            b.comm_revoke(0, 0)
        except Exception as exc:
            result = (type(exc).__name__, str(exc))
    """, variant="nccl_2_27")
    assert r[0] == "FunctionNotFoundError"
    assert r[1].endswith("(nccl 2.27.3); it requires NCCL >= 2.28.7"), r[1]
