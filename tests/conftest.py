"""Fixtures shared by the whole test suite.

The loaded NCCL/RCCL library is process-global and chosen once, so tests that need a particular
library never call the bindings in the pytest process: they run code in a child interpreter whose
``NCCL_LIBRARY`` names that library.

* ``stub_libs``: the stub NCCL of tests/stubs/stub_nccl.c, compiled once per session with gcc in a
  few variants (see ``STUB_VARIANTS``); {variant: path}. Skips when there is no gcc.
* ``stub_python(variant)``: a persistent child interpreter with that stub selected (one per
  variant per session, restarted after a crash), which has already tried to load it.
  ``.run(code)`` executes a snippet there and returns what it assigned to ``result``; the
  namespace is described in tests/stubs/stubctl.py. The stub is reset before every snippet.
* ``fresh_python(code, variant=None, env=None, open_stub=False)``: the same, in a new interpreter
  that runs just this snippet: for anything about the first load, or state that must not leak.

Both start their children with ``child_env(**overrides)``: this process's environment without the
variables that steer library discovery (LOADER_VARIABLES), with tests/stubs on PYTHONPATH.
"""

import os
import pickle
import selectors
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
STUBS = TESTS / "stubs"
ABI_INCLUDE = ROOT / "src" / "include"
# Replies from the children may hold stubctl objects (stubctl.Call): make them unpicklable here.
if str(STUBS) not in sys.path:
    sys.path.append(str(STUBS))

# Variables that steer discovery; children start without them unless a test sets them.
LOADER_VARIABLES = ("NCCL_LIBRARY", "ROCM_PATH", "HIP_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH",
                    "NCCL4PY_DEV_DIR")

# variant: (directory/file name, -D switches of stub_nccl.c). The file names decide the flavour the
# loader reports: librccl* is RCCL, and so is anything exporting an RCCL-only row.
STUB_VARIANTS = {
    # every NCCL 2.30 row, ncclGetVersion = 2.30.7
    "nccl": ("nccl/libnccl.so.2", []),
    # an NCCL 2.27.3: no row introduced in 2.28.0 or later
    "nccl_2_27": ("nccl_2_27/libnccl.so.2", ["-DSTUB_MAX_SINCE=22800", "-DSTUB_VERSION=22703"]),
    # RCCL: every row, the RCCL-only ones included
    "rccl": ("rccl/librccl.so", ["-DSTUB_WITH_RCCL"]),
    # an older RCCL: only the deprecated spellings ncclAllToAllv and ncclAllToAll
    "rccl_legacy": ("rccl_legacy/librccl.so",
                    ["-DSTUB_WITH_RCCL", '-DSTUB_OMIT="ncclAlltoAllv,ncclAlltoAll,ncclAllReduceWithBias"']),
    # opens, but exports no ncclGetVersion: "not an NCCL/RCCL library"
    "not_nccl": ("not_nccl/libnccl.so.2", ['-DSTUB_OMIT="ncclGetVersion"']),
    # every row but ncclCommGetAsyncError: a symbol missing after a resource was registered
    "nccl_no_async_error": ("nccl_no_async_error/libnccl.so.2", ['-DSTUB_OMIT="ncclCommGetAsyncError"']),
}
STUB_CFLAGS = ["-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", f"-I{ABI_INCLUDE}"]


def _gcc():
    return shutil.which("gcc")


def _build_stubs(out):
    """Compiles every variant: first the program that prints its version script, then the library
    linked with that script. The builds of all variants run in parallel."""
    gcc = _gcc()
    src = str(STUBS / "stub_nccl.c")

    def run_all(commands):
        procs = [(cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
                 for cmd in commands]
        outputs = []
        for cmd, proc in procs:
            stdout, stderr = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{stderr}")
            outputs.append(stdout)
        return outputs

    listers = {v: out / f"list_{v}" for v in STUB_VARIANTS}
    run_all([[gcc, *STUB_CFLAGS, *flags, "-DSTUB_LIST_EXPORTS", "-o", str(listers[v]), src]
             for v, (_, flags) in STUB_VARIANTS.items()])
    scripts = run_all([[str(listers[v])] for v in STUB_VARIANTS])
    paths, commands = {}, []
    for (variant, (name, flags)), script in zip(STUB_VARIANTS.items(), scripts):
        lib = out / name
        lib.parent.mkdir(parents=True, exist_ok=True)
        map_file = out / f"{variant}.map"
        map_file.write_text(script)
        commands.append([gcc, *STUB_CFLAGS, *flags, "-shared", "-fPIC", f"-Wl,--version-script={map_file}",
                         "-o", str(lib), src, "-lpthread"])
        paths[variant] = lib
    run_all(commands)
    return paths


@pytest.fixture(scope="session")
def stub_libs(tmp_path_factory):
    """{variant: path} of the stub NCCL builds (STUB_VARIANTS)."""
    if _gcc() is None:
        pytest.skip("gcc is needed to build the stub NCCL (tests/stubs/stub_nccl.c)")
    return _build_stubs(tmp_path_factory.mktemp("stub_nccl"))


def child_env(**overrides):
    """This process's environment minus LOADER_VARIABLES, with tests/stubs on PYTHONPATH; keyword
    arguments set (or, given None, remove) variables."""
    env = {k: v for k, v in os.environ.items() if k not in LOADER_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STUBS), env.get("PYTHONPATH")]))
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


class ChildInterpreter:
    """A child interpreter running tests/stubs/stubctl.py's serve() loop."""

    def __init__(self, env, timeout=60.0):
        self.timeout = timeout
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen([sys.executable, "-c", "import stubctl; stubctl.serve()"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     cwd=tempfile.gettempdir())

    def stderr(self):
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def alive(self):
        return self.proc.poll() is None

    def _read_reply(self, timeout):
        """Reads one reply (an 8-byte length, then the pickle), or raises AssertionError if the
        child dies or overruns."""
        fd = self.proc.stdout.fileno()
        data = b""
        need = 8
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while len(data) < need:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close()
                    raise AssertionError(f"the child interpreter ran past {timeout} s\n{self.stderr()}")
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self.proc.wait(timeout=10)
                    raise AssertionError(
                        f"the child interpreter died (exit status {self.proc.returncode})\n{self.stderr()}")
                data += chunk
                if need == 8 and len(data) >= 8:
                    need = 8 + struct.unpack("<Q", data[:8])[0]
        return pickle.loads(data[8:need])

    def run(self, code, timeout=None):
        """Runs the snippet; returns its `result`. A snippet that raises fails the test with the
        child's traceback."""
        try:
            pickle.dump(textwrap.dedent(code), self.proc.stdin)
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.proc.wait(timeout=10)
            raise AssertionError(f"the child interpreter is gone (exit status {self.proc.returncode})\n"
                                 f"{self.stderr()}") from None
        status, value = self._read_reply(timeout or self.timeout)
        if status != "ok":
            raise AssertionError(f"the snippet raised in the child interpreter:\n{value}")
        return value

    def close(self):
        if self.alive():
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


@pytest.fixture(scope="session")
def stub_python(stub_libs):
    """stub_python(variant) -> the persistent ChildInterpreter with that stub as NCCL_LIBRARY."""
    children = {}

    def get(variant):
        child = children.get(variant)
        if child is None or not child.alive():
            children[variant] = child = ChildInterpreter(child_env(NCCL_LIBRARY=stub_libs[variant]))
            # Load now, so that the loader's own calls are not in the first test's record.
            child.run("result = catch(b.get_library_path)")
        return child

    yield get
    for child in children.values():
        child.close()


@pytest.fixture
def fresh_python(stub_libs):
    """fresh_python(code, variant=None, env=None, open_stub=False) runs code in a new interpreter
    and returns its `result`. variant selects that stub as NCCL_LIBRARY; open_stub=True also opens
    it through ctypes (as `stub`) before the snippet runs, which maps the library, so leave it off
    when the test is about what happens before the first load."""

    def run(code, variant=None, env=None, open_stub=False, timeout=60.0):
        overrides = dict(env or {})
        if variant is not None:
            overrides.setdefault("NCCL_LIBRARY", stub_libs[variant])
        overrides["STUBCTL_OPEN"] = "1" if open_stub else "0"
        child = ChildInterpreter(child_env(**overrides), timeout=timeout)
        try:
            return child.run(code)
        finally:
            child.close()

    return run
