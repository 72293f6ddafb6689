"""Fixtures shared by the whole test suite.

The loaded NCCL/RCCL library is process-global and chosen once, so tests that need a particular
library never call the bindings in the pytest process: they run code in a child interpreter whose
``NCCL_LIBRARY`` names that library.

* ``stub_libs``: the stub NCCL of tests/stubs/stub_nccl.c in a few variants (``STUB_VARIANTS``),
  built with the other C test artefacts by meson once per session (tests/artefacts.py);
  {variant: path}.
* ``stub_python(variant)``: a persistent child interpreter with that stub selected (one per
  variant per session, restarted after a crash), which has already tried to load it.
  ``.run(code)`` executes a snippet there and returns what it assigned to ``result``; the
  namespace is described in tests/stubs/stubctl.py. The stub is reset before every snippet.
* ``fresh_python(code, variant=None, env=None, open_stub=False)``: the same, in a new interpreter
  that runs just this snippet: for anything about the first load, or state that must not leak.

Both start their children with ``child_env(**overrides)``: this process's environment without the
variables that steer library discovery (children.LOADER_VARIABLES), with tests/stubs on PYTHONPATH.
Children that run one snippet and report through their output use tests/children.py directly.
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

import artefacts
import children

TESTS = Path(__file__).resolve().parent
STUBS = TESTS / "stubs"
# Replies from the children may hold stubctl objects (stubctl.Call): make them unpicklable here.
if str(STUBS) not in sys.path:
    sys.path.append(str(STUBS))

# variant (tests/stubs/meson.build builds them): the directory/file name it is used under. The file
# names decide the flavour the loader reports: librccl* is RCCL, and so is anything exporting an
# RCCL-only row.
STUB_VARIANTS = {
    "nccl": "nccl/libnccl.so.2",
    "nccl_2_29": "nccl_2_29/libnccl.so.2",
    "nccl_2_27": "nccl_2_27/libnccl.so.2",
    "rccl": "rccl/librccl.so",
    "rccl_legacy": "rccl_legacy/librccl.so",
    "not_nccl": "not_nccl/libnccl.so.2",
    "nccl_no_async_error": "nccl_no_async_error/libnccl.so.2",
}


@pytest.fixture(autouse=True)
def _trace_folder(tmp_path_factory, monkeypatch):
    """What a test's processes write as flight-recorder dumps (docs/api/trace.md) goes to a folder
    of its own, not to the machine's temporary folder; a test about the folder sets its own."""
    monkeypatch.setenv("NCCL4PY_TRACE_DIR", str(tmp_path_factory.mktemp("trace")))


# The fast tier (docs/developing.md, "Fast tier"): ./run.sh test -m "not slow" leaves out the tests
# marked slow here. A test parametrized by rank count (nranks) keeps one count in the tier, 2 where
# it has one, else its smallest; multi-rank tests keep the "segment" transport (test_transport.py
# forces each transport itself) and test_grow.py its grows to 2 ranks. SLOW names the rest: node-id
# prefixes, chosen from a full run's --durations=0, each a place that another fast test covers or
# that needs a tool run of its own.
SLOW = (
    "tests/test_docs_build.py",  # sphinx over docs/
    "tests/test_nccl_extensions.py",  # pip installs the pinned nccl-extensions wheel
    "tests/core/test_typing.py",  # mypy over the .pyi stubs
    "tests/multirank/test_under_mpirun.py",  # mpirun around a pytest per rank
    "tests/run/test_examples.py::test_example_under_mpirun",
    # 03 and 05 also run as one process, 04_split's calls in tests/multirank; 01 and 02 stay
    "tests/run/test_examples.py::test_example_under_nccl_run[03_",
    "tests/run/test_examples.py::test_example_under_nccl_run[04_",
    "tests/run/test_examples.py::test_example_under_nccl_run[05_",
    "tests/run/test_from_env.py::test_from_env_under_mpirun_broadcasts_the_id",
    # the user nobody's interpreters
    "tests/run/test_from_env.py::test_tcp_exchange_off_this_machine_needs_a_secret",
    "tests/run/test_from_env.py::test_tcp_exchange_serves_only_our_user",
    "tests/run/test_from_env.py::test_from_env_serves_another_user_nothing",
    "tests/host/test_host_engine.py::test_unused_ids_share_one_root",
    "tests/host/test_host_engine.py::test_init_beside_a_flood",
    # a compiler run over a whole extension, which the -Dwerror=true build of ./run.sh repeats
    # (test_c_sources.py's host build stays)
    "tests/test_c_sources.py::test_ext_builds_without_warnings",
    "tests/host/test_host_engine.py::test_sources_compile_without_warnings",
    "tests/shim/test_hip_sources.py::test_builds_without_warnings",
    # a child per case under RCCL 2.13.4; the same cases under 2.27.7 stay
    "tests/rccl/test_rccl_null_handles.py::test_null_handle_is_refused_before_the_library[trixie-",
    "tests/run/test_bench.py::test_plot_file",  # matplotlib; test_plot_without_matplotlib stays
    # refcount loops over every method and buffer kind; test_core_collectives.py's stay
    "tests/multirank/test_core_buffer_kinds.py::test_reference_counts_over_every_method",
    # each waits out a deadline of 3 s; test_master_addr_that_is_not_rank_0s's wait stays
    "tests/multihost/test_multihost_refusals.py::test_loopback_id_",
    "tests/multihost/test_multihost_refusals.py::test_a_firewall_that_drops_the_id_port",
    # 100 kill trials per workload; test_survivors_name_the_killed_rank's 12 per workload stay
    "tests/multirank/test_faults.py::test_survivors_name_the_killed_rank_sweep",
)


def _params(item):
    return getattr(getattr(item, "callspec", None), "params", {})


def _rank_counts(items):
    """{(file, function, other parameters): the rank counts it runs at} over items with nranks."""
    counts = {}
    for item in items:
        params = _params(item)
        if "nranks" in params:
            key = (item.nodeid.split("::")[0], item.originalname,
                   repr(sorted((k, repr(v)) for k, v in params.items() if k not in ("nranks", "transport"))))
            counts.setdefault(key, set()).add(params["nranks"])
            item.stash[_RANK_KEY] = key
    return counts


_RANK_KEY = pytest.StashKey()


def _slow(item, counts):
    params = _params(item)
    if item.nodeid.startswith(SLOW) or params.get("transport") == "direct" or params.get("new", 2) > 2:
        return True
    if _RANK_KEY in item.stash:
        ranks = counts[item.stash[_RANK_KEY]]
        return params["nranks"] != (2 if 2 in ranks else min(ranks))
    return False


def pytest_collection_modifyitems(config, items):
    counts = _rank_counts(items)
    for item in items:
        if _slow(item, counts):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def stub_libs(tmp_path_factory):
    """{variant: path} of the stub NCCL builds (STUB_VARIANTS), each copied to its file name."""
    out = tmp_path_factory.mktemp("stub_nccl")
    paths = {}
    for variant, name in STUB_VARIANTS.items():
        paths[variant] = out / name
        paths[variant].parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(artefacts.artefact(f"tests/stubs/libstub-nccl-{variant}.so"), paths[variant])
    return paths


def child_env(**overrides):
    """children.environment() (no LOADER_VARIABLES) with tests/stubs on PYTHONPATH; keyword
    arguments set (or, given None, remove) variables."""
    pythonpath = os.pathsep.join(filter(None, [str(STUBS), os.environ.get("PYTHONPATH")]))
    return children.environment(**{"PYTHONPATH": pythonpath, **overrides})


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
            # These children check the library calls a binding makes, one for one: the flight
            # recorder's queries of a new communicator's rank and size (docs/api/trace.md) are
            # left out by turning it off; tests/trace/test_recorder_stub.py checks them.
            children[variant] = child = ChildInterpreter(child_env(NCCL_LIBRARY=stub_libs[variant],
                                                                   NCCL4PY_TRACE_BUFFER="0"))
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
