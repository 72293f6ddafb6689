"""The C test artefacts (tests/meson.build, built once per session by tests/artefacts.py): they
compile without warnings, the host driver runs against the installed host library, and the
installed package holds none of them."""

import os
import re
import subprocess

import artefacts


def test_artefacts_compile_without_warnings():
    output = artefacts.artefacts_output()
    for target in ("tests/stubs/libstub-nccl-nccl.so", "tests/loader/librccl.so", "tests/shim/libstub_hip.so",
                   "tests/host/host_smoke_test", "tests/host/reduce_kernels_test"):
        assert f"Linking target {target}\n" in output, output
    assert "warning:" not in output, output


def test_host_driver_loads_the_installed_library():
    exe = artefacts.artefact("tests/host/host_smoke_test")
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, env=artefacts.tool_env(), check=True)
    found = re.search(r"^\s*libnccl-host\.so => (\S+)", ldd.stdout, flags=re.M)
    assert found, ldd.stdout
    assert os.path.realpath(found.group(1)) == os.path.realpath(artefacts.installed_host_library())


def test_installed_package_has_no_test_artefacts():
    package = artefacts.installed_package()
    binaries = sorted(str(p.relative_to(package)) for p in package.rglob("*")
                      if p.is_file() and (".so" in p.suffixes or os.access(p, os.X_OK)) and p.suffix != ".py")
    suffix = next(p for p in binaries if p.startswith("_ext.")).removeprefix("_ext")
    assert binaries == [f"_ext{suffix}", f"_hip_compat/_hip{suffix}", "_lib/libnccl-host.so"]
