"""The test suite's C artefacts, built with meson once per test session.

The project's meson build with -Dtests=true adds tests/meson.build's targets: the stub NCCL and HIP
libraries, the loader's mini libraries and the host backend's C drivers. ``built()`` configures
that build into a temporary directory on first use, with -Dtests_host_library naming the
installed package's nccl/_lib (the host-backend tests test the installed libnccl-host.so, not a
rebuild), compiles the ``test-artefacts`` alias, and returns the directory; ``artefact(path)``
is one file of it. ``compile_target`` builds one more target of the project in such a
directory (a warnings check of the host library or of the HIP extension), ``build_extension``
the HIP extension with extra compiler flags in a directory of its own. Directories are removed
when the interpreter exits. With $NCCL4PY_TEST_ARTEFACTS set, ``built()`` is that directory, built
beforehand (.ci/aarch64 cross-compiles it for aarch64), and nothing is configured for it.

Under ``./run.sh asan`` (the sanitizer runtimes preloaded into this interpreter) every build is
configured as run.sh configures the package (-Db_sanitize=address,undefined -Db_lundef=false),
so the programs are instrumented themselves; build tools and built programs run without the
preload (``tool_env()``).
"""

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SANITIZE = "libasan" in os.environ.get("LD_PRELOAD", "")
SANITIZER_OPTIONS = ("-Db_sanitize=address,undefined", "-Db_lundef=false") if SANITIZE else ()
# A build directory whose test artefacts were compiled beforehand, for another architecture than
# the build machine's: .ci/aarch64 cross-compiles them for the tests it runs under qemu-aarch64.
PREBUILT = os.environ.get("NCCL4PY_TEST_ARTEFACTS")

_lock = threading.RLock()
_dirs = {}      # configure options -> build directory
_outputs = {}   # (build directory, target) -> what compiling it printed


class BuildError(RuntimeError):
    """A step of the test build failed; the message holds what meson or the compiler printed."""


def tool_env():
    """This process's environment for build tools and the programs built: without the sanitizer
    preload, and with this interpreter's scripts directory (meson and ninja of the test extra)
    first on PATH."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PATH"] = os.pathsep.join(filter(None, [str(Path(sys.executable).parent), env.get("PATH")]))
    return env


def installed_package():
    """The directory of the installed nccl package (found without importing it)."""
    spec = importlib.util.find_spec("nccl")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("nccl is not installed: the tests run against the installed package (./run.sh test)")
    return Path(list(spec.submodule_search_locations)[0])


def installed_host_library():
    return installed_package() / "_lib" / "libnccl-host.so"


def _run(tool, args, what):
    exe = shutil.which(tool, path=tool_env()["PATH"])
    if exe is None:
        raise BuildError(f"{tool} is needed to build the test artefacts (it is in the test extra: pip install '.[test]')")
    r = subprocess.run([exe, *args], cwd=ROOT, env=tool_env(), capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise BuildError(f"{what} failed ({tool} {' '.join(args)}):\n{r.stdout}\n{r.stderr}")
    return r.stdout + r.stderr


def build_dir(*options):
    """A build directory of the project configured with -Dtests=true and these options (plus the
    sanitizer options under ./run.sh asan); configured once per set of options."""
    # plain compiler messages: the warnings checks read them
    options = ("-Dtests=true", "-Db_colorout=never", *SANITIZER_OPTIONS, *options)
    with _lock:
        path = _dirs.get(options)
        if path is None:
            path = Path(tempfile.mkdtemp(prefix="nccl4py-test-build-"))
            atexit.register(shutil.rmtree, path, True)
            _run("meson", ["setup", *options, str(path)], "configuring the test build")
            _dirs[options] = path
        return path


def compile_target(directory, target):
    """Builds one target (an output path in directory, e.g. src/host/libnccl-host.so, or an
    alias such as test-artefacts) with ninja, and returns
    what the build printed the first time, so a warnings check sees every compiler message even
    if it asks twice. Raises BuildError with the compiler's messages when it fails."""
    key = (Path(directory), target)
    with _lock:
        if key not in _outputs:
            _outputs[key] = _run("ninja", ["-C", str(directory), target], f"building {target}")
        return _outputs[key]


def built():
    """The session's build directory with every test artefact compiled: PREBUILT when set."""
    if PREBUILT:
        return Path(PREBUILT)
    with _lock:
        directory = build_dir(f"-Dtests_host_library={installed_host_library().parent}")
        compile_target(directory, "test-artefacts")
        return directory


def artefacts_output():
    """What compiling the test artefacts printed (compiler warnings included)."""
    return compile_target(built(), "test-artefacts")


def artefact(relative):
    """A built test artefact by its path in the build directory (e.g. tests/host/host_smoke_test)."""
    path = built() / relative
    if not path.exists():
        raise BuildError(f"the test build has no {relative} (see tests/meson.build)")
    return path


def build_extension(dest, extra_flags=()):
    """The HIP extension nccl._hip_compat._hip, built by the project's own target with
    extra_flags added to its compiler flags, copied into dest; returns the copy. Raises
    BuildError (a RuntimeError) with the compiler's messages when the build fails."""
    directory = build_dir(f"-Dc_args={' '.join(extra_flags)}") if extra_flags else built()
    name = "_hip" + sysconfig.get_config_var("EXT_SUFFIX")
    compile_target(directory, f"src/hip/{name}")
    out = Path(dest) / name
    shutil.copyfile(directory / "src" / "hip" / name, out)
    return out
