"""nccl.core.interop.{cupy,torch} (docs/compatibility.md#interop) without the frameworks: the messages of
a missing framework, and argument checks against small stand-in modules. Neither torch nor CuPy
is imported by importing these modules."""

import sys
import types

import pytest

from nccl.core import NcclDataType, NcclInvalid
from nccl.core.interop import cupy as ncupy
from nccl.core.interop import torch as ntorch


def test_missing_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    for call in (lambda: ncupy.resolve_array(object()), lambda: ncupy.empty(4)):
        with pytest.raises(ModuleNotFoundError) as ei:
            call()
        assert str(ei.value) == "CuPy is not installed"


def test_missing_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    for call in (lambda: ntorch.resolve_tensor(object()), lambda: ntorch.empty(4)):
        with pytest.raises(ModuleNotFoundError) as ei:
            call()
        assert str(ei.value) == "PyTorch is not installed"


def test_cupy_bad_order_and_dtype():
    with pytest.raises(NcclInvalid) as ei:
        ncupy.empty(4, order="K")
    assert ei.value.msg == ("Invalid memory order: must be 'C' or 'F', got 'K'. "
                            "NCCL arrays support row-major (C) and column-major (F) layouts only.")
    with pytest.raises(NcclInvalid) as ei:
        ncupy.empty(4, dtype="not-a-dtype")
    assert ei.value.msg.startswith("Invalid data type: could not convert")


def _fake_cupy():
    mod = types.ModuleType("cupy")

    class ndarray:
        def __init__(self, ptr, size, dtype, device):
            self.data = types.SimpleNamespace(ptr=ptr)
            self.size = size
            self.dtype = dtype
            self.device = types.SimpleNamespace(id=device)

    mod.ndarray = ndarray
    return mod


def test_cupy_resolve_array(monkeypatch):
    import numpy as np

    fake = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert ncupy.resolve_array(fake.ndarray(0x1000, 6, np.dtype("float32"), 1)) == (0x1000, 6, NcclDataType.FLOAT32, 1)
    assert ncupy.resolve_array(fake.ndarray(8, 2, np.dtype(bool), 0))[2] is NcclDataType.UINT8
    with pytest.raises(NcclInvalid) as ei:
        ncupy.resolve_array([1, 2])
    assert ei.value.msg == "array must be a CuPy array, got list"


def _fake_torch():
    mod = types.ModuleType("torch")
    names = ["float16", "float32", "float64", "bfloat16", "int8", "int32", "int64", "uint8", "bool", "int16",
             "complex64", "float8_e4m3fn", "float8_e5m2", "uint32", "uint64"]
    for n in names:
        setattr(mod, n, types.SimpleNamespace(name=n, __repr__=None))

    class dtype_repr(str):
        pass

    for n in names:
        setattr(mod, n, dtype_repr(f"torch.{n}"))

    class Tensor:
        def __init__(self, ptr, numel, dtype, index):
            self._ptr, self._numel, self.dtype = ptr, numel, dtype
            self.device = types.SimpleNamespace(index=index, type="cuda")

        def data_ptr(self):
            return self._ptr

        def numel(self):
            return self._numel

    class device:
        def __init__(self, kind, index=None):
            if ":" in str(kind):
                kind, index = kind.split(":")
                index = int(index)
            self.type, self.index = kind, index

        def __str__(self):
            return self.type if self.index is None else f"{self.type}:{self.index}"

    mod.Tensor = Tensor
    mod.device = device
    mod.get_default_dtype = lambda: mod.float32
    mod.cuda = types.SimpleNamespace(current_device=lambda: 0)
    return mod


@pytest.mark.parametrize("name,member", [("float16", "FLOAT16"), ("float32", "FLOAT32"), ("float64", "FLOAT64"),
                                         ("bfloat16", "BFLOAT16"), ("int8", "INT8"), ("int32", "INT32"),
                                         ("int64", "INT64"), ("uint8", "UINT8"), ("bool", "UINT8"),
                                         ("float8_e4m3fn", "FLOAT8E4M3"), ("float8_e5m2", "FLOAT8E5M2"),
                                         ("uint32", "UINT32"), ("uint64", "UINT64")])
def test_torch_resolve_tensor(monkeypatch, name, member):
    fake = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    t = fake.Tensor(0x2000, 10, getattr(fake, name), 3)
    assert ntorch.resolve_tensor(t) == (0x2000, 10, NcclDataType[member], 3)


def test_torch_unsupported_dtype_and_type(monkeypatch):
    fake = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    with pytest.raises(NcclInvalid) as ei:
        ntorch.resolve_tensor(fake.Tensor(1, 1, fake.int16, 0))
    assert ei.value.msg == ("Unsupported torch dtype torch.int16 has no NCCL equivalent. "
                            "NCCL does not support complex, int16, or quantized types.")
    with pytest.raises(NcclInvalid) as ei:
        ntorch.resolve_tensor(3)
    assert ei.value.msg == "tensor must be a PyTorch tensor, got int"


def test_torch_empty_checks(monkeypatch):
    fake = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    with pytest.raises(NcclInvalid) as ei:
        ntorch.empty(2, 3, morder="X")
    assert ei.value.msg == "Invalid memory order: must be 'C' or 'F', got 'X'"
    with pytest.raises(NcclInvalid) as ei:
        ntorch.empty((2, 3), device="cpu")
    assert ei.value.msg == "NCCL tensors must be on CUDA device, got cpu"


def test_importing_interop_imports_no_framework(fresh_python):
    r = fresh_python("""
import sys
import nccl.core
nccl.core.cupy, nccl.core.torch
result = ("torch" in sys.modules, "cupy" in sys.modules)
""")
    assert r == (False, False)
