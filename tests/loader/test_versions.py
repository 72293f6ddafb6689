"""nccl.get_version(), nccl.show_versions(), the top-level module, and the one-time notice when
the host backend is chosen because the machine has no GPU."""

import importlib.util
from pathlib import Path

import pytest


def _host_backend_installed():
    spec = importlib.util.find_spec("nccl")
    return any((Path(p) / "_lib" / "libnccl-host.so").exists() for p in spec.submodule_search_locations)


needs_host = pytest.mark.skipif(not _host_backend_installed(), reason="the host backend is not in this install")


def test_top_level_surface():
    import nccl

    assert nccl.__all__ == ["__version__", "LibraryInfo", "VersionInfo", "get_version", "show_versions"]
    assert nccl.__version__ == "0.3.1"
    with pytest.raises(AttributeError, match=r"^module 'nccl' has no attribute 'nope'$"):
        nccl.nope  # noqa: B018


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
    assert out == ["0.3.1", None, None]


def test_show_versions_rows(mini_libs, run_py):
    out = run_py("""
        import contextlib, io, json, nccl
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            nccl.show_versions()
        print(json.dumps(buf.getvalue()))
    """, {"NCCL_LIBRARY": mini_libs["rccl"]})
    assert out == ("\nNCCL versions\n-------------\n"
                   "nccl4py     : 0.3.1\n"
                   f"libnccl     : 2.28.3 @ {mini_libs['rccl']} (rccl)\n"
                   "libnccl_ep  : not available\n")


@needs_host
def test_host_backend_chosen_without_gpu_warns_once(no_gpu_dev, run_py):
    out = run_py("""
        import json, warnings
        import nccl, nccl.bindings.nccl as n
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            n.get_version(); n.get_version()
        v = nccl.get_version().nccl
        print(json.dumps({"w": [(x.category.__name__, str(x.message)) for x in w], "flavour": n.get_library_flavour(),
                          "version": str(v.version), "cuda": v.cuda_variant, "lib": v.flavour}))
    """, {"NCCL4PY_DEV_DIR": no_gpu_dev})
    assert len(out["w"]) == 1
    category, message = out["w"][0]
    assert category == "HostBackendWarning"
    assert message.startswith("nccl4py: no GPU found; using the bundled host backend (CPU)")
    assert (out["flavour"], out["version"], out["cuda"], out["lib"]) == ("host", "2.32.3", None, "host")


@needs_host
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
