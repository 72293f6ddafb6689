"""A null communicator or window is refused before the library is called, with one exception that
is every error its callers expect: ``ValueError`` (what the bindings raised before), ``NcclInvalid``
(what nccl.core raised before) and ``NCCLError`` with status ``InvalidArgument`` (what NCCL 2.32.3
returns for a null handle, and what the RCCL fork's tests expect). docs/compatibility.md#argument-conventions
has the rule."""

import pickle

from nccl import _errors


def test_the_class_is_each_of_the_errors():
    cls = _errors.NCCLNullHandleError
    assert issubclass(cls, _errors.NCCLInvalidArgument) and issubclass(cls, _errors.NCCLError)
    assert issubclass(cls, ValueError) and issubclass(cls, _errors.NcclInvalid)
    e = cls("all_reduce() argument 'comm' must not be a null communicator")
    assert str(e) == "all_reduce() argument 'comm' must not be a null communicator"
    assert (e.status, e.last_error, e.msg) == (4, "", str(e))
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), str(back), back.status, back.msg) == (cls, str(e), 4, str(e))


def test_exported_where_the_other_binding_errors_are():
    import nccl.bindings.nccl as b
    import nccl.core as nc

    assert b.NCCLNullHandleError is _errors.NCCLNullHandleError
    assert "NCCLNullHandleError" in b.__all__
    assert nc.NcclInvalid is _errors.NcclInvalid


# (layer, call, message): the bindings' converters and nccl.core's methods, communicator and window.
CASES = [
    ("bindings", "b.all_reduce(1, 2, 3, 7, 0, 0, 0)", "all_reduce() argument 'comm' must not be a null communicator"),
    ("bindings", "b.comm_destroy(b.Comm())", "comm_destroy() argument 'comm' must not be a null communicator"),
    ("bindings", "b.win_get_user_ptr(1, 0)", "win_get_user_ptr() argument 'win' must not be a null window"),
    ("bindings", "b.comm_window_deregister(1, b.Window())",
     "comm_window_deregister() argument 'win' must not be a null window"),
    ("bindings", "b.comm_split(b.Comm(), 0, 0, 0)", "comm_split() argument 'comm' must not be a null communicator"),
    ("core", "nc.Communicator().allreduce(x, y, nc.SUM)", "Cannot allreduce: Communicator not initialized"),
    ("core", "nc.Communicator(0).nranks", "Cannot get nranks: Communicator not initialized"),
    ("core", "nc.Communicator().register_window(x)", "Cannot register_window: Communicator not initialized"),
    ("core", "_ext.CommResource(nc.Communicator())",
     "Invalid communicator: cannot create resource with communicator ptr=0"),
]

SNIPPET = """
import sys
import numpy as np
import nccl.core as nc
from nccl import _ext
x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
out = []
for layer, call, _ in {cases!r}:
    caught = []
    for catcher in (ValueError, b.NCCLError, b.NCCLInvalidArgument, nc.NcclInvalid):
        try:
            eval(call)
        except catcher as e:
            caught.append((type(e).__name__, str(e), e.status, e.last_error, getattr(e, "msg", None)))
    out.append(caught)
comm = b.Comm()
counts = (sys.getrefcount(comm), sys.getrefcount(b.NCCLNullHandleError))
for _ in range(20_000):
    try:
        b.comm_destroy(comm)
    except ValueError:
        pass
result = (out, stub.calls(), (sys.getrefcount(comm) - counts[0], sys.getrefcount(b.NCCLNullHandleError) - counts[1]))
"""


def test_both_layers_raise_it_with_their_messages(stub_python):
    out, calls, refs = stub_python("nccl").run(SNIPPET.format(cases=CASES))
    for (layer, call, message), caught in zip(CASES, out):
        want = ("NCCLNullHandleError", message, 4, "", message)
        # every one of the four except clauses catches it, unchanged
        assert caught == [want] * 4, (layer, call, caught)
    assert calls == []  # the library was never called
    assert refs == (0, 0)
