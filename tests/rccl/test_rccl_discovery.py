"""Finding the real RCCL and its HIP runtime the way a ROCm machine would.

* On an AMD machine (a kfd device node, NCCL4PY_DEV_DIR) with RCCL under $ROCM_PATH, discovery
  loads that RCCL; when it cannot load (its HIP runtime is missing), the result is an error that
  shows the dynamic loader's message, never NVIDIA's libnccl from the nvidia-nccl-cu12 wheel that
  this environment has installed.
* The cuda.core shim opens each ROCm's HIP runtime by the name a runtime-only install has:
  libamdhip64.so.5 for ROCm 5.7 (trixie), libamdhip64.so.7 for ROCm 7 (experimental). The
  prefix's libdir is seen through a view without the development symlinks (libamdhip64.so comes
  with librccl-dev), and nothing has loaded RCCL first.
"""

import re
from pathlib import Path

import pytest

REPORT = """
import json
import nccl.bindings.nccl as n
from nccl import _ext
try:
    out = {"path": n.get_library_path(), "flavour": n.get_library_flavour(), "attempts": n.get_load_attempts()}
except n.NotSupportedError as e:
    out = {"error": str(e), "attempts": e.attempts}
maps = open("/proc/self/maps").read()
out["libnccl_mapped"] = "libnccl.so" in maps
print(json.dumps(out))
"""


@pytest.fixture
def amd_machine(tmp_path, rccl):
    """(environment of an AMD machine whose $ROCM_PATH/lib/librccl.so is the prefix's RCCL, rocm)"""
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "kfd").touch()
    rocm = tmp_path / "rocm"
    (rocm / "lib").mkdir(parents=True)
    (rocm / "lib" / "librccl.so").symlink_to(rccl.library)
    return {"NCCL_LIBRARY": None, "NCCL4PY_DEV_DIR": dev, "ROCM_PATH": rocm}, rocm


def test_wheel_nccl_is_installed():
    """The trap the next test sets: the wheel's libnccl.so.2 is there to be (wrongly) taken."""
    import site

    assert any((Path(d) / "nvidia" / "nccl" / "lib" / "libnccl.so.2").exists() for d in site.getsitepackages())


def test_an_amd_machine_loads_the_rccl_under_rocm_path(rccl, amd_machine):
    env, rocm = amd_machine
    out = rccl.json(REPORT, env=env)
    assert out["flavour"] == "rccl" and out["path"] == rccl.library
    assert out["attempts"][-1] == [str(rocm / "lib" / "librccl.so"), None]
    assert not out["libnccl_mapped"]


def test_an_rccl_that_cannot_load_is_an_error_not_nvidias_nccl(rccl, amd_machine, tmp_path):
    env, rocm = amd_machine
    without_hip = rccl.view(tmp_path / "no_hip", lambda name: not name.startswith("libamdhip64"))
    out = rccl.json(REPORT, env=env, libdir=without_hip)
    candidate = str(rocm / "lib" / "librccl.so")
    assert "path" not in out, out  # nothing loaded: neither this RCCL nor the wheel's libnccl
    assert not out["libnccl_mapped"]
    assert [c for c, _ in out["attempts"]] == [candidate]
    outcome = out["attempts"][0][1]
    # The dlerror names the HIP runtime RCCL needs: absent from the prefix, or, where the system has
    # its own libamdhip64 (Debian 12's libamdhip64-5, which CI installs), that one failing to load
    # under the prefix's glibc.
    assert re.fullmatch(r"found, failed to load: libamdhip64\.so\.\d+: (cannot open shared object file: "
                        r"No such file or directory|cannot enable executable stack as shared object requires: "
                        r"Invalid argument)", outcome), outcome
    assert f"\n  {candidate}: {outcome}\n" in out["error"]


SHIM = """
import json
from nccl._hip_compat import register_cuda_core_shim, _hip
assert register_cuda_core_shim(force=True)
from cuda.core.system import get_num_devices
from nccl import _ext
res = {}
try:
    res["devices"] = get_num_devices()
except Exception as e:
    res["devices"] = [type(e).__name__, str(e)]
res["path"] = _hip.library_path()
res["attempts"] = _hip.load_attempts()
res["rccl_mapped"] = _ext._mapped_libraries()
print(json.dumps(res))
"""


def hip_soname(rccl):
    """libamdhip64.so.<major> of the runtime RCCL itself pulled in when the prefix was verified."""
    (path,) = {str(Path(p).name) for p in rccl.manifest["hip_runtime"]}
    return re.match(r"libamdhip64\.so\.\d+", path).group(0)


def test_the_shim_finds_this_rocms_hip_runtime(rccl, tmp_path):
    expected = hip_soname(rccl)
    assert expected == {"trixie": "libamdhip64.so.5", "experimental": "libamdhip64.so.7"}.get(rccl.suite, expected)
    runtime_only = rccl.view(tmp_path / "runtime", lambda name: not name.endswith(".so"))
    out = rccl.json(SHIM, env={"NCCL_LIBRARY": None}, libdir=runtime_only)
    assert out["rccl_mapped"] == []  # the HIP runtime was not brought in by RCCL
    assert out["devices"] == 0, out
    assert out["path"] is not None and Path(out["path"]).name == expected, out
