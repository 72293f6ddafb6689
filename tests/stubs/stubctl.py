"""Test-side helpers for the stub NCCL (stub_nccl.c). Imported inside the interpreters the tests
start (tests/conftest.py puts this directory on their PYTHONPATH), never by pytest itself.

* ``Stub``: a ctypes view of a loaded stub build: the calls it recorded, scripted statuses, the
  values its output hooks write, and the block/unblock switch of the GIL-release tests.
* ``serve()``: the loop of a persistent test interpreter. It reads pickled code snippets on stdin,
  runs each in a fresh namespace (``stub``, ``b`` = nccl.bindings.nccl, ``rx`` =
  nccl.bindings.rocm_extensions, ``catch``, ``u64``, ``id_pattern``), after resetting the stub, and writes
  back ``("ok", result)`` or ``("error", traceback)``, pickled behind an 8-byte length; ``result`` is
  whatever the snippet assigned to that name.
"""

import ctypes
import os
import pickle
import struct
import sys
import traceback
from collections import namedtuple

MASK64 = (1 << 64) - 1

Call = namedtuple("Call", "name args blob")


class Stub:
    """Control of one stub build, opened by path (the same mapping the extension uses)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        lib = self.lib = ctypes.CDLL(self.path)
        u64, cstr = ctypes.c_uint64, ctypes.c_char_p
        lib.stub_ncalls.restype = ctypes.c_long
        lib.stub_call.argtypes = [ctypes.c_long, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
                                  ctypes.POINTER(u64), ctypes.c_char_p, ctypes.c_int]
        lib.stub_script.argtypes = [cstr, ctypes.c_int, ctypes.c_long]
        lib.stub_set_out.argtypes = [cstr, u64]
        lib.stub_get_out.argtypes = [cstr]
        lib.stub_get_out.restype = u64
        lib.stub_set_version.argtypes = [ctypes.c_int]
        lib.stub_set_last_error.argtypes = [cstr]
        lib.stub_set_block_deadline_ms.argtypes = [ctypes.c_int]
        for name in ("stub_block", "stub_unblock", "stub_is_blocked", "stub_block_timed_out"):
            getattr(lib, name).argtypes = [cstr]
        lib.stub_wait_blocked.argtypes = [cstr, ctypes.c_int]

    @staticmethod
    def _name(name):
        return name.encode() if isinstance(name, str) else name

    def _check(self, rc, name):
        if rc < 0:
            raise KeyError(f"the stub has no row named {name!r}")
        return rc

    def reset(self):
        """Forget every call and script; restore every default."""
        self.lib.stub_reset()

    def ncalls(self):
        return self.lib.stub_ncalls()

    def call(self, i):
        """Call i (0 = the first since the last reset), as Call(name, args, blob)."""
        name = ctypes.c_char_p()
        nargs = ctypes.c_int()
        args = (ctypes.c_uint64 * 12)()
        blob = ctypes.create_string_buffer(1024)
        n = self.lib.stub_call(i, ctypes.byref(name), ctypes.byref(nargs), args, blob, len(blob))
        if n < 0:
            raise IndexError(f"call {i} is not in the stub's ring")
        return Call(name.value.decode(), tuple(args[: nargs.value]), blob.raw[:n])

    def calls(self, with_blobs=False):
        """Every recorded call: [(name, args)] or, with_blobs, [Call(name, args, blob)]."""
        out = [self.call(i) for i in range(self.ncalls())]
        return out if with_blobs else [(c.name, c.args) for c in out]

    def calls_to(self, name):
        """The Call records of one function."""
        return [c for c in self.calls(with_blobs=True) if c.name == name]

    def script(self, name, status, count=-1):
        """name returns status for its next count calls (count < 0: every call)."""
        self._check(self.lib.stub_script(self._name(name), status, count), name)

    def set_out(self, name, value):
        """The value name's output hook writes (handle, pointer, count, id seed ...)."""
        self._check(self.lib.stub_set_out(self._name(name), value & MASK64), name)

    def get_out(self, name):
        return self.lib.stub_get_out(self._name(name))

    def set_version(self, code):
        self.lib.stub_set_version(code)

    def set_struct_reader(self, on):
        """The creation functions read their ncclConfig_t as the release the stub reports would."""
        self.lib.stub_set_struct_reader(1 if on else 0)

    def set_last_error(self, text):
        self.lib.stub_set_last_error(text.encode())

    def set_block_deadline(self, seconds):
        self.lib.stub_set_block_deadline_ms(int(seconds * 1000))

    def block(self, name):
        """The next call of name blocks until unblock(name), or until the deadline passes (it then
        returns ncclTimeout and timed_out(name) turns true)."""
        self._check(self.lib.stub_block(self._name(name)), name)

    def unblock(self, name):
        self._check(self.lib.stub_unblock(self._name(name)), name)

    def wait_blocked(self, name, timeout=5.0):
        """True once a call of name is blocked (and still waiting) within timeout seconds."""
        return self._check(self.lib.stub_wait_blocked(self._name(name), int(timeout * 1000)), name) == 1

    def is_blocked(self, name):
        return self._check(self.lib.stub_is_blocked(self._name(name)), name) == 1

    def timed_out(self, name):
        return self._check(self.lib.stub_block_timed_out(self._name(name)), name) == 1


def u64(value):
    """How the stub records a C integer argument: its value as a uint64 (sign-extended)."""
    return value & MASK64


def id_pattern(seed):
    """The 128 bytes the stub's ncclGetUniqueId/ncclCommGetUniqueId write for a seed."""
    return bytes((seed + i) & 0xFF for i in range(128))


def catch(fn, *args, **kwargs):
    """Calls fn; returns ("ok", value), or (exception class name, str(exc), names of its MRO)."""
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the point is to report any exception
        return (type(exc).__name__, str(exc), tuple(c.__name__ for c in type(exc).__mro__))


def _namespace(stub):
    import nccl.bindings.nccl as b
    import nccl.bindings.rocm_extensions as rx

    return {"stub": stub, "b": b, "rx": rx, "catch": catch, "u64": u64, "id_pattern": id_pattern,
            "MASK64": MASK64, "__name__": "__snippet__"}


def serve():
    """The loop of a persistent test interpreter (see the module docstring)."""
    proto_in = sys.stdin.buffer
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the library or a snippet prints goes to stderr, not into the protocol
    sys.stdout = sys.stderr
    path = os.environ.get("NCCL_LIBRARY", "")
    stub = Stub(path) if os.environ.get("STUBCTL_OPEN", "1") == "1" and "/" in path else None
    while True:
        try:
            code = pickle.load(proto_in)
        except EOFError:
            return
        if stub is not None:
            stub.reset()
        ns = _namespace(stub)
        try:
            exec(compile(code, "<snippet>", "exec"), ns)
            reply = ("ok", ns.get("result"))
            pickle.dumps(reply)
        except BaseException:  # noqa: BLE001 - report everything, keep serving
            reply = ("error", traceback.format_exc())
        data = pickle.dumps(reply)
        proto_out.write(struct.pack("<Q", len(data)) + data)
        proto_out.flush()


if __name__ == "__main__":
    serve()
