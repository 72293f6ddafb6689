"""Error paths of nccl.core that used to leak: a failure after the library made or registered
something gives it back (or never lets the library make it), and drops every reference taken.
The stub library (tests/stubs) records the calls that reach it."""

# A device buffer for a GPU-flavour stub: numpy memory handed out as a DLPack capsule whose
# device reads kDLCUDA:0 (the stub never touches it).
DEVICE_BUFFER = """
import ctypes, gc, sys, warnings
import numpy as np
import nccl.core as nc

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

class OnDevice:
    def __init__(self, n):
        self.host = np.zeros(n, np.float32)
    def __dlpack_device__(self):
        return (2, 0)
    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        cap = self.host.__dlpack__()  # a DLPack 0.x capsule: DLTensor first, device_type at byte 8
        ctypes.c_int32.from_address(_get_pointer(cap, b"dltensor") + 8).value = 2
        return cap

stub.set_out("ncclCommCuDevice", 0)
"""


def test_init_all_makes_its_wrappers_before_the_communicators(stub_python):
    """A Communicator subclass that fails to make its second instance: the library was never
    asked for communicators, so none is left to destroy (with the GIL held, as this used to) or to
    leak; the wrappers already made are null and go quietly."""
    r = stub_python("nccl").run(DEVICE_BUFFER + """
class Flaky(nc.Communicator):
    made = 0
    def __init__(self, *args, **kwargs):
        type(self).made += 1
        if type(self).made == 2:
            raise RuntimeError("the second wrapper fails")

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    failed = catch(Flaky.init_all, [0, 1, 2])
    gc.collect()
calls = [name for name, _ in stub.calls()]
comms = nc.Communicator.init_all([0, 1])
made = [c.ptr for c in comms]
for c in comms:
    c.destroy()
result = (failed[:2], calls, [str(w.message) for w in caught], made,
          [(name, args[0]) for name, args in stub.calls()])
""")
    failed, calls, warned, made, after = r
    assert failed == ("RuntimeError", "the second wrapper fails")
    assert calls == [] and warned == []
    # the working path is unchanged: handles from ncclCommInitAll, each destroyed by its wrapper
    assert after[0][0] == "ncclCommInitAll" and len(made) == 2 and all(made)
    assert after[1:] == [("ncclCommDestroy", made[0]), ("ncclCommDestroy", made[1])]


def test_register_window_closes_what_it_registered_when_the_state_check_fails(stub_python):
    """The window is registered, then the state check cannot run (no ncclCommGetAsyncError): the
    resource is closed and untracked, and its references to the buffer and the communicator
    dropped, before the FunctionNotFoundError propagates."""
    r = stub_python("nccl_no_async_error").run(DEVICE_BUFFER + """
stub.set_out("ncclCommWindowRegister", 0)  # no handle yet: the state decides
comm = nc.Communicator(0x1234)
buf = OnDevice(4)
before = (sys.getrefcount(buf), sys.getrefcount(comm))
failed = catch(comm.register_window, buf)
gc.collect()
after = (sys.getrefcount(buf), sys.getrefcount(comm))
calls = [name for name, _ in stub.calls()]
comm.close_all_resources()  # nothing left to close
result = (failed[:2], before, after, calls, len(stub.calls()) == len(calls))
""")
    failed, before, after, calls, nothing_more = r
    assert failed == ("FunctionNotFoundError", failed[1]) and "ncclCommGetAsyncError" in failed[1]
    assert after == before
    assert calls == ["ncclCommCuDevice", "ncclCommWindowRegister"]
    assert nothing_more


def test_register_window_failed_state_query_closes_the_window(stub_python):
    """The same path with the query present but failing: the NCCLError propagates and the window's
    references are dropped."""
    r = stub_python("nccl").run(DEVICE_BUFFER + """
stub.set_out("ncclCommWindowRegister", 0)
stub.script("ncclCommGetAsyncError", 3)  # ncclInternalError
comm = nc.Communicator(0x1234)
buf = OnDevice(4)
before = sys.getrefcount(buf)
failed = catch(comm.register_window, buf)
gc.collect()
text_lookups = ("ncclGetLastError", "ncclGetErrorString")  # made while raising
result = (failed[0], sys.getrefcount(buf) - before, [n for n, _ in stub.calls() if n not in text_lookups])
""")
    assert r == ("NCCLInternalError", 0, ["ncclCommCuDevice", "ncclCommWindowRegister", "ncclCommGetAsyncError"])
