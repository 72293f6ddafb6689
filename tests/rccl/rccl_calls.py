"""Helpers of the real-RCCL tests (a module name of its own, unlike conftest, so test files can
import it). Parent side: fetch_rccl (tools/fetch_rccl.py), decode() and run_many(). Child side: code for calling any binding with
arguments of the right kinds, built from its signature (no hand-kept list of functions), and for
reading the library's own last-error text directly (ctypes, not through the binding under test).

CHILD_PRELUDE is prepended to the snippets the tests run under a prefix's loader; it defines
  lib            the loaded librccl (ctypes, the same mapping the bindings use)
  last_error()   ncclGetLastError(NULL) straight from the library
  scratch        the address of 64 KiB of zeroed memory (a valid pointer for any argument)
  fake_comm      the address of 256 MiB of zeroed memory: a comm RCCL can read without faulting
  args_for(fn, **given)   positional arguments for a binding, by parameter name
  outcome(fn, args)       ("ok", repr) or (exception type name, message)
"""

import importlib.util
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import children

# tools/fetch_rccl.py as a module: the tests find prefixes with its own cache and manifest code.
# Its folder goes on sys.path for what it imports from there (debian_apt).
_TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(_TOOLS) not in sys.path:
    sys.path.append(str(_TOOLS))
_spec = importlib.util.spec_from_file_location("fetch_rccl", _TOOLS / "fetch_rccl.py")
fetch_rccl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fetch_rccl)


def decode(proc, prefix):
    """The JSON a child under prefix printed last (children.last_json)."""
    return children.last_json(proc, f"the child under {prefix}")


def run_many(prefix, jobs, workers=4):
    """Runs {key: (code, args)} each in its own child, a few at a time (they mostly wait on the
    HIP runtime's start-up); returns {key: CompletedProcess}."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {key: pool.submit(prefix.run, code, None, args) for key, (code, args) in jobs.items()}
        return {key: f.result() for key, f in futures.items()}


CHILD_PRELUDE = r'''
import ctypes, inspect, json, os, sys
import numpy as np
import nccl.bindings.nccl as n
import nccl.bindings.rocm_extensions as rx
from nccl import _ext

n.get_version()  # load the library (and let the HIP runtime say what it says at start-up) first
lib = ctypes.CDLL(n.get_library_path(), mode=os.RTLD_NOLOAD)
lib.ncclGetLastError.restype = ctypes.c_char_p
lib.ncclGetLastError.argtypes = [ctypes.c_void_p]
lib.ncclGetErrorString.restype = ctypes.c_char_p
lib.ncclGetErrorString.argtypes = [ctypes.c_int]


def last_error():
    text = lib.ncclGetLastError(None)
    return text.decode(errors="replace") if text else ""


_scratch = np.zeros(1 << 16, np.uint8)
scratch = _scratch.ctypes.data
_fake_comm = np.zeros(1 << 28, np.uint8)  # zero pages: mapped on read, never written
fake_comm = _fake_comm.ctypes.data

# Integer parameters by name; every other parameter is a pointer and gets `scratch`.
INTS = {"count": 1, "sendcount": 1, "recvcount": 1, "datatype": 7, "op": 0, "root": 0, "peer": 0, "nranks": 1,
        "n_ranks": 1, "rank": 0, "myrank": 0, "n_id": 1, "color": 0, "key": 0, "size": 64, "residence": 1,
        "stat": 0, "flags": 0, "revoke_flags": 0, "shrink_flags": 0, "win_flags": 0, "exclude_ranks_count": 0,
        "sig_idx": 0, "ctx": 0, "peer_win_offset": 0, "offset": 0, "lsa_rank": 0, "n_desc": 1, "stream": 0,
        "ndev": 1, "result": 0, "status": 0}


def args_for(fn, **given):
    names = list(inspect.signature(fn).parameters)
    return [given[p] if p in given else INTS.get(p, scratch) for p in names]


def outcome(fn, args):
    try:
        return ["ok", repr(fn(*args))[:200]]
    except Exception as e:
        return [type(e).__name__, str(e)]


def function(qualified):
    module, _, name = qualified.rpartition(".")
    return getattr(rx if module == "rocm_extensions" else n, name)
'''


def snippet(body):
    """A child program: the prelude, then body."""
    return CHILD_PRELUDE + "\n" + textwrap.dedent(body)
