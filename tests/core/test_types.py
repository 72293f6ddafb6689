"""nccl.core enums and constants (docs/compatibility.md#names-and-types). Pure Python: nothing loads a library."""

import enum
import sys

import numpy as np
import pytest

import nccl.core as core
from nccl.core import NcclInvalid
from nccl.core._types import (CommShrinkFlag, CommSuspendFlag, CTAPolicy, NcclCommMemStat, NcclDataType,
                              NcclGinConnectionType, NcclGinType, NcclRedOp, WindowFlag)

DTYPES = {"INT8": 0, "UINT8": 1, "INT32": 2, "UINT32": 3, "INT64": 4, "UINT64": 5, "FLOAT16": 6,
          "FLOAT32": 7, "FLOAT64": 8, "BFLOAT16": 9, "FLOAT8E4M3": 10, "FLOAT8E5M2": 11}
DTYPE_ALIASES = {"CHAR": "INT8", "INT": "INT32", "HALF": "FLOAT16", "FLOAT": "FLOAT32", "DOUBLE": "FLOAT64"}
ITEMSIZE = {"INT8": 1, "UINT8": 1, "INT32": 4, "UINT32": 4, "INT64": 8, "UINT64": 8, "FLOAT16": 2,
            "FLOAT32": 4, "FLOAT64": 8, "BFLOAT16": 2, "FLOAT8E4M3": 1, "FLOAT8E5M2": 1}


def test_datatype_members_and_values():
    assert {m.name: m.value for m in NcclDataType} == DTYPES
    assert issubclass(NcclDataType, enum.IntEnum)


@pytest.mark.parametrize("alias,target", sorted(DTYPE_ALIASES.items()))
def test_datatype_aliases_are_the_same_member(alias, target):
    assert NcclDataType[alias] is NcclDataType[target]
    assert getattr(core, alias) is NcclDataType[target]


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_module_constants_are_members(name):
    assert getattr(core, name) is NcclDataType[name]
    assert NcclDataType(DTYPES[name]) is NcclDataType[name]
    assert NcclDataType[name].itemsize == ITEMSIZE[name]


def test_redop_members_and_constants():
    assert {m.name: m.value for m in NcclRedOp} == {"SUM": 0, "PROD": 1, "MAX": 2, "MIN": 3, "AVG": 4}
    for m in NcclRedOp:
        assert getattr(core, m.name) is m


@pytest.mark.parametrize("cls,base,members,aliases", [
    (NcclGinType, enum.IntEnum, {"NONE": 0, "PROXY": 2, "GDAKI": 3, "GPI": 4}, {}),
    (NcclGinConnectionType, enum.IntEnum, {"NONE": 0, "FULL": 1, "RAIL": 2}, {}),
    (NcclCommMemStat, enum.IntEnum,
     {"GPU_MEM_SUSPEND": 0, "GPU_MEM_SUSPENDED": 1, "GPU_MEM_PERSIST": 2, "GPU_MEM_TOTAL": 3},
     {"GpuMemSuspend": "GPU_MEM_SUSPEND", "GpuMemSuspended": "GPU_MEM_SUSPENDED",
      "GpuMemPersist": "GPU_MEM_PERSIST", "GpuMemTotal": "GPU_MEM_TOTAL"}),
    (CTAPolicy, enum.IntFlag, {"DEFAULT": 0, "EFFICIENCY": 1, "ZERO": 2},
     {"Default": "DEFAULT", "Efficiency": "EFFICIENCY", "Zero": "ZERO"}),
    (CommShrinkFlag, enum.IntEnum, {"DEFAULT": 0, "ABORT": 1}, {"Default": "DEFAULT", "Abort": "ABORT"}),
    (CommSuspendFlag, enum.IntFlag, {"MEM": 1}, {"Mem": "MEM"}),
    (WindowFlag, enum.IntFlag, {"DEFAULT": 0, "COLL_SYMMETRIC": 1, "STRICT_ORDERING": 2},
     {"Default": "DEFAULT", "CollSymmetric": "COLL_SYMMETRIC", "StrictOrdering": "STRICT_ORDERING"}),
])
def test_other_enums(cls, base, members, aliases):
    assert issubclass(cls, base)
    for name, value in members.items():
        assert cls[name].value == value and cls[name].name == name
    for alias, target in aliases.items():
        assert cls[alias] is cls[target]


def test_gin_type_has_no_value_1():
    with pytest.raises(ValueError):
        NcclGinType(1)


@pytest.mark.parametrize("spec,expected", [
    (np.dtype("float32"), "FLOAT32"), ("float32", "FLOAT32"), (np.float32, "FLOAT32"), (float, "FLOAT64"),
    ("float16", "FLOAT16"), ("float64", "FLOAT64"), ("int8", "INT8"), ("int32", "INT32"), ("int64", "INT64"),
    ("uint8", "UINT8"), ("uint32", "UINT32"), ("uint64", "UINT64"), (np.bool_, "UINT8"), ("?", "UINT8"),
    ("<f4", "FLOAT32"), (">i8", "INT64"),
])
def test_numpy_specs_go_through_missing(spec, expected):
    assert NcclDataType(spec) is NcclDataType[expected]
    assert NcclDataType.from_numpy_dtype(spec) is NcclDataType[expected]


def test_ml_dtypes_by_name():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert NcclDataType(ml_dtypes.bfloat16) is NcclDataType.BFLOAT16
    assert NcclDataType.from_numpy_dtype(np.dtype(ml_dtypes.float8_e4m3fn)) is NcclDataType.FLOAT8E4M3
    assert NcclDataType.from_numpy_dtype(ml_dtypes.float8_e5m2) is NcclDataType.FLOAT8E5M2
    with pytest.raises(NcclInvalid) as ei:
        NcclDataType.from_numpy_dtype(ml_dtypes.float8_e4m3fnuz)
    assert ei.value.msg == ("Unsupported data type: numpy dtype float8_e4m3fnuz (kind=V, itemsize=1, "
                            "name=float8_e4m3fnuz) has no NCCL equivalent")


@pytest.mark.parametrize("spec", ["int16", "complex64", "uint16", "float128" if hasattr(np, "float128") else "c16"])
def test_unsupported_numpy_dtype_message(spec):
    d = np.dtype(spec)
    with pytest.raises(NcclInvalid) as ei:
        NcclDataType.from_numpy_dtype(d)
    assert ei.value.msg == (f"Unsupported data type: numpy dtype {d} (kind={d.kind}, itemsize={d.itemsize}, "
                            f"name={d.name}) has no NCCL equivalent")
    with pytest.raises(NcclInvalid):
        NcclDataType(d)


@pytest.mark.parametrize("bad", [12, -1, 99])
def test_bad_int_is_value_error(bad):
    with pytest.raises(ValueError):
        NcclDataType(bad)


def test_non_dtype_object_is_value_error():
    with pytest.raises(ValueError):
        NcclDataType(object())


@pytest.mark.parametrize("name", ["INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "FLOAT32",
                                  "FLOAT64"])
def test_numpy_dtype_plain(name):
    member = NcclDataType[name]
    assert member.numpy_dtype == np.dtype(name.lower())
    assert NcclDataType(member.numpy_dtype) is member


def test_numpy_dtype_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert NcclDataType.BFLOAT16.numpy_dtype == np.dtype(ml_dtypes.bfloat16)
    assert NcclDataType.FLOAT8E4M3.numpy_dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert NcclDataType.FLOAT8E5M2.numpy_dtype == np.dtype(ml_dtypes.float8_e5m2)


@pytest.mark.parametrize("name,npname", [("BFLOAT16", "bfloat16"), ("FLOAT8E4M3", "float8_e4m3fn"),
                                         ("FLOAT8E5M2", "float8_e5m2")])
def test_numpy_dtype_without_ml_dtypes(monkeypatch, name, npname):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import raises ImportError
    with pytest.raises(NcclInvalid) as ei:
        NcclDataType[name].numpy_dtype
    assert ei.value.msg.startswith(f"Cannot create numpy dtype '{npname}': ml-dtypes package is not installed.")


def test_member_names_in_messages():
    assert str(NcclDataType.FLOAT32) == "FLOAT32"
    assert f"{NcclDataType.CHAR}" == "INT8"
    assert int(NcclDataType.FLOAT32) == 7
    assert f"{NcclDataType.FLOAT32:d}" == "7" and f"{NcclDataType.UINT64:>8}" == "  UINT64"
    assert "%d" % NcclDataType.DOUBLE == "8"


def test_not_provided_constants():
    for name in ("NCCL_SPLIT_NOCOLOR", "NCCL_UNDEF_INT", "NCCL_UNDEF_FLOAT", "NCCL_MAGIC"):
        assert not hasattr(core, name)


def test_enums_pickle():
    import pickle

    for member in (NcclDataType.HALF, NcclRedOp.AVG, CTAPolicy.ZERO, WindowFlag.COLL_SYMMETRIC):
        assert pickle.loads(pickle.dumps(member)) is member
