"""Library discovery order (docs/architecture.md#discovery-order), with tiny stand-in libraries and, where it is
installed, the real libnccl.so.2 of the nvidia-nccl-cu12 wheel."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

REPORT = """
import json, nccl.bindings.nccl as n
print(json.dumps({"path": n.get_library_path(), "flavour": n.get_library_flavour(),
                  "version": n.get_version(), "attempts": n.get_load_attempts()}))
"""

FAILURE = """
import json, nccl.bindings.nccl as n
try:
    n.get_version()
except n.NotSupportedError as e:
    print(json.dumps({"message": str(e), "attempts": e.attempts, "type": type(e).__name__}))
"""


def test_import_opens_nothing(mini_libs, run_py):
    out = run_py("""
        import json, nccl, nccl.bindings, nccl.bindings.nccl, nccl.bindings.rocm_extensions
        from nccl import _ext
        maps = open('/proc/self/maps').read()
        print(json.dumps({"mapped": _ext._mapped_libraries(), "mini": "libnccl.so" in maps}))
    """, {"NCCL_LIBRARY": mini_libs["nccl"]})
    assert out == {"mapped": [], "mini": False}


def test_override_path_is_the_only_candidate(mini_libs, gpu_dev, tmp_path, place, run_py):
    rocm = tmp_path / "rocm"
    place(mini_libs["rccl"], rocm / "lib", "librccl.so")
    out = run_py(REPORT, {"NCCL_LIBRARY": f"  {mini_libs['nccl']}\n", "ROCM_PATH": rocm,
                          "NCCL4PY_DEV_DIR": gpu_dev})
    assert out["path"] == str(mini_libs["nccl"])
    assert out["version"] == 22903
    assert out["flavour"] == "nccl"
    assert out["attempts"] == [[str(mini_libs["nccl"]), None]]


def test_override_failure_does_not_fall_back(mini_libs, gpu_dev, tmp_path, place, run_py):
    rocm = tmp_path / "rocm"
    place(mini_libs["rccl"], rocm / "lib", "librccl.so")
    missing = tmp_path / "nowhere" / "libnccl.so.2"
    out = run_py(FAILURE, {"NCCL_LIBRARY": missing, "ROCM_PATH": rocm, "NCCL4PY_DEV_DIR": gpu_dev})
    assert out["type"] == "NotSupportedError"
    assert out["attempts"] == [[str(missing), "not found"]]
    assert out["message"] == (
        "Could not load RCCL or NCCL library. Tried:\n"
        f"  {missing}: not found\n"
        "Set NCCL_LIBRARY to a path or SONAME, or to 'host' for the bundled host backend.")


def test_override_soname_goes_to_the_dynamic_loader(mini_libs, tmp_path, place, run_py):
    libdir = tmp_path / "ld"
    place(mini_libs["rccl"], libdir, "librccl-test.so.7")
    out = run_py(REPORT, {"NCCL_LIBRARY": "librccl-test.so.7", "LD_LIBRARY_PATH": libdir})
    assert out["path"] == str(libdir / "librccl-test.so.7")
    assert out["flavour"] == "rccl"  # by file name and by its ncclAllReduceWithBias export


def test_a_missing_dependency_named_like_the_soname_is_not_a_missing_soname(mini_libs, tmp_path, run_py):
    # NCCL_LIBRARY=libnccl-dep.so is there (on LD_LIBRARY_PATH) but needs libnccl-dep.so-gone.so,
    # which is not: dlerror's text starts with the candidate's name, yet names another file.
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the loader's test libraries")
    libdir, build = tmp_path / "ld", tmp_path / "build"
    libdir.mkdir()
    build.mkdir()
    (build / "dep.c").write_text("int nccl_dependency(void) { return 0; }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(build / "libnccl-dep.so-gone.so"), str(build / "dep.c")],
                   check=True)
    subprocess.run([cc, "-shared", "-fPIC", "-DMINI_VERSION=22903", "-o", str(libdir / "libnccl-dep.so"),
                    str(HERE / "mini_nccl.c"), f"-L{build}", "-Wl,--no-as-needed", "-l:libnccl-dep.so-gone.so"],
                   check=True)
    (build / "libnccl-dep.so-gone.so").unlink()
    out = run_py(FAILURE, {"NCCL_LIBRARY": "libnccl-dep.so", "LD_LIBRARY_PATH": libdir})
    (candidate, outcome), = out["attempts"]
    assert candidate == "libnccl-dep.so"
    assert outcome == ("found, failed to load: libnccl-dep.so-gone.so: cannot open shared object file: "
                       "No such file or directory")


def test_override_failed_to_load_keeps_dlerror(mini_libs, tmp_path, run_py):
    bogus = tmp_path / "libnccl.so.2"
    bogus.write_text("not an ELF file")
    out = run_py(FAILURE, {"NCCL_LIBRARY": bogus})
    (candidate, outcome), = out["attempts"]
    assert candidate == str(bogus)
    assert outcome.startswith("found, failed to load: ")
    assert str(bogus) in outcome  # the full dlerror text names the file


def test_library_without_ncclgetversion_is_rejected(mini_libs, run_py):
    out = run_py(FAILURE, {"NCCL_LIBRARY": mini_libs["not_nccl"]})
    assert out["attempts"] == [[str(mini_libs["not_nccl"]), "found, but not an NCCL/RCCL library (no ncclGetVersion)"]]


def test_rocm_path_then_hip_path(mini_libs, amd_dev, tmp_path, place, run_py):
    rocm, hip = tmp_path / "rocm", tmp_path / "hip"
    place(mini_libs["rccl"], rocm / "lib", "librccl.so")
    place(mini_libs["rccl_other"], hip / "lib", "librccl.so")
    both = run_py(REPORT, {"ROCM_PATH": rocm, "HIP_PATH": hip, "NCCL4PY_DEV_DIR": amd_dev})
    assert both["path"] == str(rocm / "lib" / "librccl.so")
    assert both["version"] == 22803 and both["flavour"] == "rccl"
    hip_only = run_py(REPORT, {"HIP_PATH": hip, "NCCL4PY_DEV_DIR": amd_dev})
    assert hip_only["path"] == str(hip / "lib" / "librccl.so")
    assert hip_only["version"] == 22703
    tried = [c for c, _ in hip_only["attempts"]]
    assert tried.index(str(hip / "lib" / "librccl.so")) == len(tried) - 1


def test_runtime_only_rocm_install_uses_the_so_1_sibling(mini_libs, amd_dev, tmp_path, place, run_py):
    rocm = tmp_path / "rocm"
    place(mini_libs["rccl"], rocm / "lib", "librccl.so.1")
    out = run_py(REPORT, {"ROCM_PATH": rocm, "NCCL4PY_DEV_DIR": amd_dev})
    assert out["path"] == str(rocm / "lib" / "librccl.so.1")
    assert [str(rocm / "lib" / "librccl.so"), "not found"] in out["attempts"]


def test_already_loaded_copy_is_reused(mini_libs, gpu_dev, tmp_path, place, run_py):
    rocm = tmp_path / "rocm"
    place(mini_libs["rccl"], rocm / "lib", "librccl.so")
    preloaded = place(mini_libs["rccl_other"], tmp_path / "torch_lib", "librccl.so.1")
    out = run_py(f"""
import ctypes, os
ctypes.CDLL({str(preloaded)!r}, mode=os.RTLD_LOCAL)   # as torch would, in a local scope
""" + REPORT, {"ROCM_PATH": rocm, "NCCL4PY_DEV_DIR": gpu_dev})
    assert out["path"] == str(preloaded)
    assert out["version"] == 22703
    assert out["attempts"] == [[str(preloaded), None]]


def test_override_with_another_copy_mapped_warns_once(mini_libs, tmp_path, place, run_py):
    preloaded = place(mini_libs["rccl_other"], tmp_path / "other", "librccl.so.1")
    out = run_py(f"""
        import ctypes, json, warnings
        ctypes.CDLL({str(preloaded)!r})
        import nccl.bindings.nccl as n
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            n.get_version(); n.get_version(); n.get_library_path()
        print(json.dumps({{"path": n.get_library_path(), "warnings": [str(x.message) for x in w],
                          "categories": [x.category.__name__ for x in w]}}))
    """, {"NCCL_LIBRARY": mini_libs["nccl"]})
    assert out["path"] == str(mini_libs["nccl"])
    assert out["categories"] == ["RuntimeWarning"]
    assert str(preloaded) in out["warnings"][0] and "two NCCL/RCCL copies" in out["warnings"][0]


HIDE_WHEELS = """
import json, site, sys
import nccl.bindings.nccl as n
# Hide the nvidia wheel: no site directory and no sys.path entry may hold it.
site.getsitepackages = lambda: []
site.getusersitepackages = lambda: ""
sys.path[:] = [p for p in sys.path if "site-packages" not in p]
try:
    n.get_version()
except n.NotSupportedError as e:
    print(json.dumps({"message": str(e), "attempts": e.attempts}))
"""


def test_nothing_on_a_machine_with_both_kinds_lists_every_attempt(both_dev, tmp_path, run_py):
    rocm = tmp_path / "empty_rocm"
    (rocm / "lib").mkdir(parents=True)
    out = run_py(HIDE_WHEELS, {"ROCM_PATH": rocm, "NCCL4PY_DEV_DIR": both_dev})
    tried = [c for c, _ in out["attempts"]]
    assert tried[:4] == [str(rocm / "lib" / "librccl.so"), str(rocm / "lib" / "librccl.so.1"), "librccl.so",
                         "librccl.so.1"]
    assert tried[-1] == "libnccl.so.2"
    # between them: <dir>/nvidia/nccl/lib/libnccl.so.2 for each remaining sys.path entry
    assert tried[4:-1] and all(c.endswith("/nvidia/nccl/lib/libnccl.so.2") for c in tried[4:-1])
    assert all(outcome == "not found" for _, outcome in out["attempts"])
    for candidate in tried:
        assert f"\n  {candidate}: not found" in out["message"]


def test_an_amd_machine_tries_rccl_only(amd_dev, tmp_path, run_py):
    rocm = tmp_path / "empty_rocm"
    (rocm / "lib").mkdir(parents=True)
    out = run_py(HIDE_WHEELS, {"ROCM_PATH": rocm, "NCCL4PY_DEV_DIR": amd_dev})
    assert [c for c, _ in out["attempts"]] == [str(rocm / "lib" / "librccl.so"), str(rocm / "lib" / "librccl.so.1"),
                                               "librccl.so", "librccl.so.1"]


def test_an_nvidia_machine_tries_nccl_only(gpu_dev, tmp_path, run_py):
    rocm = tmp_path / "empty_rocm"
    (rocm / "lib").mkdir(parents=True)
    out = run_py(HIDE_WHEELS, {"ROCM_PATH": rocm, "NCCL4PY_DEV_DIR": gpu_dev})
    tried = [c for c, _ in out["attempts"]]
    assert tried[-1] == "libnccl.so.2"
    assert not any("librccl" in c for c in tried), tried


def _wheel_dir(mini_libs, place, tmp_path):
    """A sys.path entry holding NVIDIA's wheel layout, with a working (mini) libnccl.so.2."""
    site_dir = tmp_path / "site"
    place(mini_libs["nccl"], site_dir / "nvidia" / "nccl" / "lib", "libnccl.so.2")
    return site_dir


@pytest.fixture
def broken_rccl(tmp_path):
    """$ROCM_PATH/lib/librccl.so that exists but cannot load: it needs a library that is gone."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the loader's test libraries")
    build, rocm = tmp_path / "build", tmp_path / "rocm"
    (rocm / "lib").mkdir(parents=True)
    build.mkdir()
    (build / "dep.c").write_text("int rocm_dependency(void) { return 0; }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(build / "libamdhip64-gone.so"), str(build / "dep.c")],
                   check=True)
    subprocess.run([cc, "-shared", "-fPIC", "-DMINI_VERSION=22707", "-DMINI_RCCL", "-o",
                    str(rocm / "lib" / "librccl.so"), str(HERE / "mini_nccl.c"), f"-L{build}", "-Wl,--no-as-needed",
                    "-lamdhip64-gone"],
                   check=True)
    (build / "libamdhip64-gone.so").unlink()
    return rocm


@pytest.mark.parametrize("devices", ["amd", "both"])
def test_an_rccl_that_fails_to_load_is_an_error_not_a_switch_to_nccl(mini_libs, place, tmp_path, broken_rccl,
                                                                     amd_dev, both_dev, run_py, devices):
    wheel = _wheel_dir(mini_libs, place, tmp_path)
    out = run_py(FAILURE, {"ROCM_PATH": broken_rccl, "NCCL4PY_DEV_DIR": amd_dev if devices == "amd" else both_dev,
                           "PYTHONPATH": wheel})
    assert out["type"] == "NotSupportedError"
    (candidate, outcome), = out["attempts"]  # nothing after the broken one
    assert candidate == str(broken_rccl / "lib" / "librccl.so")
    assert outcome == ("found, failed to load: libamdhip64-gone.so: cannot open shared object file: "
                       "No such file or directory")
    assert f"\n  {candidate}: {outcome}\n" in out["message"]


def test_the_wheel_nccl_loads_on_an_nvidia_machine(mini_libs, place, tmp_path, broken_rccl, gpu_dev, run_py):
    wheel = _wheel_dir(mini_libs, place, tmp_path)
    out = run_py(REPORT, {"ROCM_PATH": broken_rccl, "NCCL4PY_DEV_DIR": gpu_dev, "PYTHONPATH": wheel})
    assert out["path"].endswith("/nvidia/nccl/lib/libnccl.so.2")  # this one, or an installed wheel's
    assert out["flavour"] == "nccl"
    assert not any("librccl" in c for c, _ in out["attempts"])  # the RCCL chain is not an NVIDIA machine's


def test_failed_load_is_retried_after_the_environment_is_fixed(mini_libs, tmp_path, run_py):
    out = run_py(f"""
        import json, os
        import nccl.bindings.nccl as n
        first = None
        try:
            n.get_version()
        except n.NotSupportedError as e:
            first = e.attempts
        os.environ["NCCL_LIBRARY"] = {str(mini_libs['nccl'])!r}
        print(json.dumps({{"first": first, "version": n.get_version(), "attempts": n.get_load_attempts()}}))
    """, {"NCCL_LIBRARY": tmp_path / "missing.so"})
    assert out["first"] == [[str(tmp_path / "missing.so"), "not found"]]
    assert out["version"] == 22903
    assert out["attempts"] == [[str(mini_libs["nccl"]), None]]


def test_concurrent_first_use_loads_once(mini_libs, run_py):
    out = run_py("""
        import json, threading
        import nccl.bindings.nccl as n
        from nccl import _ext
        results, barrier = [], threading.Barrier(8)
        def worker():
            barrier.wait()
            results.append((n.get_library_path(), n.get_version()))
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(json.dumps({"distinct": sorted(set(results)), "attempts": n.get_load_attempts(),
                          "mapped": _ext._mapped_libraries()}))
    """, {"NCCL_LIBRARY": mini_libs["nccl"]})
    assert out["distinct"] == [[str(mini_libs["nccl"]), 22903]]
    assert len(out["attempts"]) == 1
    assert out["mapped"] == [str(mini_libs["nccl"])]  # one copy mapped, not one per thread


def test_python_m_nccl_reports_the_library(mini_libs):
    env = dict(os.environ, NCCL_LIBRARY=str(mini_libs["rccl"]))
    res = subprocess.run([sys.executable, "-m", "nccl"], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert f"path         : {mini_libs['rccl']}\n" in res.stdout
    assert "flavour      : rccl\n" in res.stdout
    assert "version      : 2.28.3\n" in res.stdout


@pytest.mark.parametrize("library, expected", [
    (None, (None, False)), ("  \t\n", (None, False)), (" HOST\n", ("HOST", True)),
    ("\tlibrccl.so.1 ", ("librccl.so.1", False)),
])
def test_library_selection_is_the_loaders_reading(tmp_path, run_py, library, expected):
    """_ext._library_selection(): NCCL_LIBRARY stripped of blanks, whether it names the host backend,
    and the GPU nodes of NCCL4PY_DEV_DIR (kfd first, nvidia<N> sorted, nvidiactl and nvidia-uvm
    not GPUs), without loading anything."""
    dev = tmp_path / "dev_sel"
    dev.mkdir()
    for name in ("nvidia10", "nvidiactl", "nvidia-uvm", "kfd", "nvidia1", "renderD128"):
        (dev / name).touch()
    env = {"NCCL4PY_DEV_DIR": dev} if library is None else {"NCCL4PY_DEV_DIR": dev, "NCCL_LIBRARY": library}
    out = run_py("""
        import json
        from nccl import _ext
        print(json.dumps({"selection": _ext._library_selection(), "mapped": _ext._mapped_libraries()}))
    """, env)
    assert out == {"selection": {"library": expected[0], "host": expected[1], "dev_dir": str(dev), "amd": True,
                                 "nvidia": True, "nodes": [str(dev / "kfd"), str(dev / "nvidia1"),
                                                           str(dev / "nvidia10")]},
                   "mapped": []}


def test_library_selection_without_device_nodes(no_gpu_dev, run_py):
    out = run_py("""
        import json
        from nccl import _ext
        print(json.dumps(_ext._library_selection()))
    """, {"NCCL4PY_DEV_DIR": no_gpu_dev})
    assert out == {"library": None, "host": False, "dev_dir": str(no_gpu_dev), "amd": False, "nvidia": False,
                   "nodes": []}
