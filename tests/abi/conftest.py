"""The binding tests run in this process against a stub NCCL (stub_nccl.c + stub_outputs.c,
generated from src/ext/abi.h), selected with NCCL_LIBRARY before anything loads a library. A second
build whose version script leaves out every row introduced in NCCL 2.28 or later plays an older
library; it is used from subprocesses, since the loaded library is process-wide."""

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# The stub is loaded into the test process itself, and the loaded library is process-wide, so
# these tests run in a pytest session of their own (tests/test_abi_stub_session.py starts it); in
# any other session they are not collected, and cannot take the library from other tests.
SESSION_VAR = "NCCL4PY_STUB_SESSION"
if os.environ.get(SESSION_VAR) != "1":
    collect_ignore_glob = ["test_*.py"]
ROOT = HERE.parent.parent


class StubCall(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 48), ("nargs", ctypes.c_int), ("args", ctypes.c_uint64 * 12),
                ("id", ctypes.c_ubyte * 128)]


def _build(out, name, exported):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the stub NCCL")
    script = out / f"{name}.map"
    script.write_text("{ global: " + " ".join(f"{s};" for s in exported) + " stub_*; local: *; };\n")
    lib = out / f"lib{name}.so"
    subprocess.run([cc, "-std=gnu11", "-shared", "-fPIC", "-O1", "-Wno-sizeof-array-argument",
                    f"-I{ROOT / 'src' / 'ext'}", f"-Wl,--version-script={script}", "-o", str(lib),
                    str(HERE / "stub_nccl.c"), str(HERE / "stub_outputs.c")], check=True)
    return lib


@pytest.fixture(scope="session")
def stub_paths(tmp_path_factory):
    from nccl import _ext

    rows = _ext._abi_symbols()
    out = tmp_path_factory.mktemp("stub_nccl")
    full = _build(out, "nccl_stub", [name for name, _, _ in rows])
    old = _build(out, "nccl_stub_227", [name for name, since, _ in rows if 0 < since < 22800])
    return {"full": full, "old": old}


class Stub:
    """ctypes view of the loaded stub: what it recorded, and scripted results."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))  # the same mapping the extension opened
        self.lib.stub_last_call.restype = ctypes.POINTER(StubCall)
        self.lib.stub_script.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self.lib.stub_set_last_error.argtypes = [ctypes.c_char_p]

    def reset(self):
        self.lib.stub_reset()

    def script(self, name, rc):
        self.lib.stub_script(name.encode(), rc)

    def set_last_error(self, text):
        self.lib.stub_set_last_error(text.encode())

    @property
    def calls(self):
        return self.lib.stub_call_count()

    def last(self):
        c = self.lib.stub_last_call().contents
        return c.name.decode(), list(c.args[: c.nargs])

    def last_id(self):
        return bytes(self.lib.stub_last_call().contents.id)


@pytest.fixture(scope="session")
def stub(stub_paths):
    import nccl.bindings.nccl as b

    saved = os.environ.get("NCCL_LIBRARY")
    os.environ["NCCL_LIBRARY"] = str(stub_paths["full"])
    try:
        loaded = b.get_library_path()
    finally:  # later tests start subprocesses from this environment
        if saved is None:
            del os.environ["NCCL_LIBRARY"]
        else:
            os.environ["NCCL_LIBRARY"] = saved
    if loaded != str(stub_paths["full"]):
        pytest.fail(f"another library was loaded in this process first: {loaded}")
    return Stub(stub_paths["full"])


@pytest.fixture
def fresh(stub):
    stub.reset()
    stub.set_last_error("stub last error")
    yield stub
    stub.reset()
