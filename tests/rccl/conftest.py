"""The real RCCL: Debian's librccl1 builds, fetched by tools/fetch_rccl.py into cached prefixes.

Each prefix carries its suite's glibc, so the tests never load RCCL in the pytest process: every
check runs in a child interpreter started under that prefix's dynamic loader
(``PREFIX/.../ld-linux-x86-64.so.2 --library-path PREFIX/... python -c CODE``) with
``NCCL_LIBRARY`` naming the prefix's librccl.so.1. A child that crashes fails its test.

* ``rccl``: one of the fetched prefixes (parametrized over the suites: trixie is RCCL 2.13.4 with
  ROCm 5.7, experimental RCCL 2.27.7 with ROCm 7.2 and rccl.h), a ``Prefix``.
* A suite that is not fetched skips its tests, naming the command that fetches it; unless
  NCCL4PY_RCCL_REQUIRED lists it (comma-separated suites, or "all"), as .ci/run does: then the
  missing prefix fails them.
"""

import os
import subprocess
from pathlib import Path

import pytest
from rccl_calls import decode, fetch_rccl

import children

ROOT = Path(__file__).resolve().parents[2]

SUITES = tuple(fetch_rccl.SUITES)
# Variables a child must not inherit: they steer which NCCL/RCCL or HIP runtime loads, or preload
# libraries built for this machine's glibc.
DROPPED = ("NCCL_LIBRARY", "ROCM_PATH", "HIP_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH", "NCCL4PY_DEV_DIR",
           "NCCL4PY_HIP_LIBRARY", "LD_LIBRARY_PATH", "LD_PRELOAD", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS")
CHILD_TIMEOUT = 120


def required(suite):
    wanted = {s.strip() for s in os.environ.get("NCCL4PY_RCCL_REQUIRED", "").split(",") if s.strip()}
    return suite in wanted or "all" in wanted


class Prefix:
    """A fetched prefix: its manifest's facts, and runs of the interpreter under its loader."""

    def __init__(self, manifest):
        self.manifest = manifest
        self.suite = manifest["suite"]
        self.prefix = Path(manifest["prefix"])
        self.libdir = Path(manifest["libdir"])
        self.library = manifest["library"]  # the real file, librccl.so.1.0
        self.soname_path = str(self.libdir / "librccl.so.1")
        self.version_code = manifest["version_code"]
        self.rccl_version = manifest["rccl_version"]
        self.pinned = not manifest["substituted"]
        self.rccl_h = manifest["rccl_h"]
        self._exports = None

    def __repr__(self):
        return f"<RCCL {self.rccl_version} ({self.suite}) at {self.prefix}>"

    def view(self, directory, keep):
        """A directory of links to the entries of the prefix's library directory for which
        keep(name) is true: the same libraries with some taken away (a development symlink, a
        dependency). Returns it."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for entry in self.libdir.iterdir():
            if keep(entry.name):
                (directory / entry.name).symlink_to(entry)
        return directory

    def env(self, extra=None):
        return children.environment(drop=DROPPED, **{"NCCL_LIBRARY": self.soname_path, **(extra or {})})

    def run(self, code, env=None, args=(), timeout=CHILD_TIMEOUT, libdir=None):
        """Runs code under this prefix's loader, searching libdir (default: the prefix's);
        returns the CompletedProcess."""
        loader = [self.prefix / fetch_rccl.LDSO, "--library-path", libdir or self.libdir]
        return children.run_python(code, env=self.env(env), args=args, timeout=timeout, cwd=ROOT, launcher=loader)

    def json(self, code, env=None, args=(), libdir=None):
        """Runs code that prints JSON on its last line; returns it. Any other ending fails the test,
        a crash included, with the child's output."""
        proc = self.run(code, env=env, args=args, libdir=libdir)
        return decode(proc, self)

    def exports(self):
        """The functions the library exports, as nm -D lists them."""
        if self._exports is None:
            proc = subprocess.run(["nm", "-D", "--defined-only", self.library], capture_output=True, text=True)
            if proc.returncode != 0:
                pytest.skip(f"nm -D failed on {self.library}: {proc.stderr.strip()}")
            self._exports = {ln.split()[-1] for ln in proc.stdout.splitlines() if " T " in ln or " W " in ln}
        return self._exports


def _load(suite):
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        # ./run.sh asan preloads this machine's sanitizer runtimes, which the children (under
        # another glibc) do not get; the real-RCCL checks run in ./run.sh test.
        pytest.skip("the sanitizer build needs its runtimes preloaded; tests/rccl run in ./run.sh test")
    cache = fetch_rccl.default_cache()
    index = fetch_rccl.read_index(cache)
    manifest = fetch_rccl.read_manifest(Path(index[suite])) if suite in index else None
    if manifest is None or not Path(manifest["ldso"]).exists():
        why = (f"RCCL ({suite}) is not fetched into {cache}: run python3 tools/fetch_rccl.py --suite {suite}")
        if required(suite):
            pytest.fail(why + " (NCCL4PY_RCCL_REQUIRED lists it)", pytrace=False)
        pytest.skip(why)
    return Prefix(manifest)


_prefixes = {}


@pytest.fixture(scope="session", params=SUITES)
def rccl(request):
    suite = request.param
    if suite not in _prefixes:
        _prefixes[suite] = _load(suite)
    return _prefixes[suite]


@pytest.fixture(scope="session")
def experimental():
    """The experimental prefix alone (the one with rccl.h)."""
    if "experimental" not in _prefixes:
        _prefixes["experimental"] = _load("experimental")
    return _prefixes["experimental"]
