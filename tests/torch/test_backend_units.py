"""The "nccl4py" backend's pieces that need no peer: registration (import and torch's autoload),
the operator and dtype staging, init_process_group's timeout, the refusals. What loads a library
runs in a child interpreter (tests/children.py), one rank of its own."""

import sys
import textwrap
from importlib import metadata

import pytest
import torch
import torch.distributed as dist

import children
from nccl.torch import _convert as cv

ONE_RANK = """
import os, sys, tempfile, warnings
from datetime import timedelta
import torch, torch.distributed as dist
import nccl.torch
store_file = tempfile.mktemp()
def init(**kw):
    dist.init_process_group("nccl4py", init_method="file://" + store_file, rank=0, world_size=1, **kw)
"""


def run(code, **env):
    """A child interpreter running ONE_RANK + code on the host backend; what it printed."""
    env.setdefault("NCCL_LIBRARY", "host")
    for name in ("NCCL_HOST_TIMEOUT", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NCCL4PY_UNIQUE_ID"):
        env.setdefault(name, None)
    drop = tuple(k for k, v in env.items() if v is None)
    proc = children.run_python(ONE_RANK + textwrap.dedent(code), timeout=120,
                               env=children.environment(drop=drop, **{k: v for k, v in env.items() if v is not None}))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ---- operators and dtypes ----

def test_reduce_op_hash_is_its_red_op_type():
    opts = dist.AllreduceOptions()
    for member in dist.ReduceOp.RedOpType.__members__.values():
        if member == dist.ReduceOp.RedOpType.PREMUL_SUM:
            opts.reduceOp = dist._make_nccl_premul_sum(0.25)
            assert cv.premul_factor(opts.reduceOp) == 0.25
        else:
            opts.reduceOp = dist.ReduceOp(member)
        assert cv.op_code(opts.reduceOp) == hash(opts.reduceOp) == int(member)


def test_bool_reductions_become_byte_max_and_min():
    t = torch.tensor([True, False])
    buf, op, back = cv.reducible(t, cv.SUM, "all_reduce", written=True)
    assert buf.dtype == torch.uint8 and buf.data_ptr() == t.data_ptr() and back is None
    assert op == cv.NCCL_OP[cv.MAX]
    assert cv.reducible(t, cv.PRODUCT, "all_reduce", written=True)[1] == cv.NCCL_OP[cv.MIN]
    with pytest.raises(TypeError, match="^nccl4py: all_reduce does not support AVG on bool tensors$"):
        cv.reducible(t, cv.AVG, "all_reduce", written=True)


def test_int16_reduces_through_an_int32_copy():
    t = torch.tensor([30000, -7], dtype=torch.int16)
    buf, op, back = cv.reducible(t, cv.SUM, "reduce", written=True)
    assert buf.dtype == torch.int32 and op == cv.NCCL_OP[cv.SUM]
    buf.mul_(2)
    back()
    assert t.tolist() == [-5536, -14]  # 60000 wraps in 16 bits, as torch's own int16 sum does


def test_complex_sums_over_real_parts_and_refuses_order():
    c = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64)
    buf, op, back = cv.reducible(c, cv.AVG, "all_reduce", written=True)
    assert buf.shape == (2, 2) and buf.dtype == torch.float32 and op == cv.NCCL_OP[cv.AVG]
    with pytest.raises(TypeError, match="^nccl4py: all_reduce does not support MAX on complex tensors$"):
        cv.reducible(c, cv.MAX, "all_reduce", written=True)


def test_non_contiguous_tensors_are_copied_and_copied_back():
    base = torch.zeros(3, 2)
    col = base[:, 1]
    buf, back = cv.movable(col, written=True)
    assert buf.is_contiguous() and buf.data_ptr() != col.data_ptr()
    buf.fill_(5)
    back()
    assert base.tolist() == [[0, 5], [0, 5], [0, 5]]
    assert cv.movable(col, written=False)[1] is None


def test_dtypes_without_nccl_equivalent_move_as_bytes():
    t = torch.arange(3, dtype=torch.int16)
    buf, back = cv.movable(t, written=True)
    assert buf.dtype == torch.uint8 and buf.numel() == 6 and buf.data_ptr() == t.data_ptr() and back is None


def test_bitwise_fold_refuses_floating_point():
    rows = torch.tensor([[6, 3], [5, 1]], dtype=torch.int64)
    assert cv.fold_bitwise(rows, cv.BXOR, "all_reduce").tolist() == [3, 2]
    with pytest.raises(TypeError, match="^nccl4py: all_reduce does not support BOR on torch.float64 tensors$"):
        cv.fold_bitwise(rows.double(), cv.BOR, "all_reduce")


# ---- registration ----

def test_the_distribution_declares_the_torch_backends_entry_point():
    points = [ep for ep in metadata.entry_points(group="torch.backends") if ep.name == "nccl4py"]
    assert [ep.value for ep in points] == ["nccl._torch_autoload:autoload"]


def test_import_torch_registers_the_backend_through_the_entry_point():
    code = ("import sys, torch, torch.distributed as dist\n"
            "print('nccl4py' in dist.Backend.backend_list, 'nccl.torch' in sys.modules, 'nccl.core' in sys.modules)")
    proc = children.run_python(code, timeout=120, env=children.environment())
    assert proc.stdout.split() == ["True", "True", "False"], proc.stderr
    proc = children.run_python(code + "\nimport nccl.torch\nprint('nccl4py' in dist.Backend.backend_list)",
                               timeout=120, env=children.environment(TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert proc.stdout.split() == ["False", "False", "False", "True"], proc.stderr


def test_a_failing_autoload_is_a_warning_not_an_error_of_import_torch():
    code = ("import sys, warnings\nsys.modules['nccl.torch'] = None\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import torch\n"
            "print([str(x.message) for x in w if 'nccl4py' in str(x.message)])")
    proc = children.run_python(code, timeout=120, env=children.environment())
    assert proc.returncode == 0, proc.stderr
    assert ("nccl4py: the torch.distributed backend was not registered at import torch (ModuleNotFoundError: import of "
            "nccl.torch halted; None in sys.modules); import nccl.torch to register it") in proc.stdout


def test_register_is_idempotent_and_claims_no_default():
    import nccl.torch

    nccl.torch.register()
    nccl.torch.register()
    assert dist.Backend.backend_list.count("nccl4py") == 1
    assert dist.Backend.backend_capability["nccl4py"] == ["cpu", "cuda"]
    assert dist.Backend.default_device_backend_map["cpu"] == "gloo"


# ---- timeouts ----

def test_init_process_group_timeout_is_the_host_deadline():
    out = run("""
        from nccl.bindings import nccl as b
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            init(timeout=timedelta(seconds=42))
            dist.new_group([0], timeout=timedelta(seconds=7))
        print(os.environ["NCCL_HOST_TIMEOUT"], b.param_get_parameter("NCCL_HOST_TIMEOUT"))
        print([str(x.message) for x in w if "deadline" in str(x.message)])
        dist.destroy_process_group()
    """)
    first, second = out.splitlines()
    assert first == "42 42"
    assert second == str(["nccl4py: the host backend's deadline is 42 s, fixed when the library was first used in "
                          "this process; this process group's timeout of 7 s does not apply to its CPU operations "
                          "(set NCCL_HOST_TIMEOUT before the first process group to choose it)"])


def test_a_deadline_the_user_set_is_kept_without_warning():
    out = run("""
        from nccl.bindings import nccl as b
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            init(timeout=timedelta(seconds=42))
        print(b.param_get_parameter("NCCL_HOST_TIMEOUT"), [str(x.message) for x in w if "deadline" in str(x.message)])
        dist.destroy_process_group()
    """, NCCL_HOST_TIMEOUT="13")
    assert out.split() == ["13", "[]"]


def test_a_rank_waiting_for_the_unique_id_times_out_with_the_groups_timeout():
    out = run("""
        import time
        from nccl.torch import ProcessGroupNccl4py
        t0 = time.monotonic()
        try:
            ProcessGroupNccl4py(dist.HashStore(), 1, 2, timedelta(seconds=1))
        except dist.DistStoreError as exc:
            print(round(time.monotonic() - t0), str(exc).splitlines()[0])
    """)
    seconds, message = out.strip().split(" ", 1)
    assert int(seconds) in (1, 2)
    assert message.startswith("nccl4py: rank 1 waited 0:00:01 for rank 0's unique id (store key 'nccl4py/cpu'): ")


# ---- refusals and lifetime ----

def test_refusals_name_what_is_not_supported():
    out = run("""
        init()
        for call in (lambda: dist.all_reduce(torch.empty(2, device="meta")),
                     lambda: dist.group.WORLD.allreduce([torch.ones(1), torch.ones(1)], dist.AllreduceOptions()),
                     lambda: dist.recv(torch.empty(1)),
                     lambda: dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BXOR)):
            try:
                call()
            except Exception as exc:
                print(type(exc).__name__, exc)
        dist.destroy_process_group()
    """)
    assert out.splitlines() == [
        "RuntimeError nccl4py: tensors on meta are not supported (CPU and CUDA/ROCm only)",
        "ValueError nccl4py: all_reduce takes one tensor per call, got 2",
        "RuntimeError nccl4py: receiving from any source (dist.recv/irecv without src) is not supported: NCCL "
        "matches a receive with a send by the peer's rank; name the source rank",
        "TypeError nccl4py: all_reduce does not support BXOR on torch.float32 tensors",
    ]


@pytest.mark.parametrize("end,how", [("shutdown", "shut down"), ("abort", "aborted")])
def test_a_group_that_ended_refuses_operations(end, how):
    out = run(f"""
        init()
        pg = dist.group.WORLD
        pg.{end}()
        try:
            pg.allreduce([torch.ones(1)], dist.AllreduceOptions())
        except RuntimeError as exc:
            print(exc)
    """)
    assert out.strip() == f"nccl4py: this process group was {how}; it runs no more operations"


def test_destroy_and_init_again():
    out = run("""
        init()
        dist.destroy_process_group()
        dist.init_process_group("nccl4py", init_method="file://" + store_file + "2", rank=0, world_size=1)
        t = torch.ones(3)
        dist.all_reduce(t)
        print(t.tolist(), dist.get_backend())
        dist.destroy_process_group()
    """)
    assert out.strip() == "[1.0, 1.0, 1.0] nccl4py"
