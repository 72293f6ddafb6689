"""nccl.core's op argument: a bool is not an op (issue 15, item 7).

bool is an int subclass, so True would pass as PROD (1) and False as SUM (0); both are refused
with TypeError before the library is called. A 1-rank communicator on the host backend, in a
fresh interpreter.
"""

import pytest

pytest.importorskip("numpy")


@pytest.mark.timeout(120)
def test_bool_op_is_a_type_error(fresh_python):
    r = fresh_python("""
import numpy as np
import nccl.core as nccl
comm = nccl.Communicator.init(nranks=1, rank=0, unique_id=nccl.get_unique_id())
x = np.arange(4, dtype=np.float32) + 2
y = np.zeros(4, np.float32)
out = {}
for name, call in [("allreduce True", lambda: comm.allreduce(x, y, True)),
                   ("allreduce op=False", lambda: comm.allreduce(x, y, op=False)),
                   ("reduce True", lambda: comm.reduce(x, y, True, root=0)),
                   ("reduce_scatter True", lambda: comm.reduce_scatter(x, y[:4], True))]:
    try:
        call()
        out[name] = "no error"
    except Exception as exc:
        out[name] = (type(exc).__name__, str(exc))
out["y untouched"] = bool((y == 0).all())
comm.allreduce(x, y, 1)  # an int is still an op (PROD)
out["int op"] = y.tolist()
comm.destroy()
result = out
""", env={"NCCL_LIBRARY": "host"})
    for name, fn in [("allreduce True", "allreduce"), ("allreduce op=False", "allreduce"),
                     ("reduce True", "reduce"), ("reduce_scatter True", "reduce_scatter")]:
        assert r[name] == ("TypeError", f"{fn}() argument 'op' must be a RedOp, not bool"), r
    assert r["y untouched"] is True
    assert r["int op"] == [2.0, 3.0, 4.0, 5.0]
