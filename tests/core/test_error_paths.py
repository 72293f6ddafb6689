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


def test_register_window_always_returns_its_handle(stub_python):
    """nccl4py 0.6.0: register_window returns the RegisteredWindowHandle even while the library
    has not filled the handle yet (no state query, nothing closed); close() releases the buffer."""
    r = stub_python("nccl").run(DEVICE_BUFFER + """
stub.set_out("ncclCommWindowRegister", 0)  # no handle yet
comm = nc.Communicator(0x1234)
buf = OnDevice(4)
before = sys.getrefcount(buf)
win = comm.register_window(buf)
calls = [name for name, _ in stub.calls()]
state = (type(win).__name__, win.handle, win.is_valid)
comm.close_all_resources()
del win
gc.collect()
result = (state, calls, sys.getrefcount(buf) - before)
""")
    assert r == (("RegisteredWindowHandle", 0, False), ["ncclCommCuDevice", "ncclCommWindowRegister"], 0)
