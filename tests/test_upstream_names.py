"""Drop-in for NVIDIA nccl4py 0.6.0's low level: every public name of its nccl.bindings.nccl
exists in ours (upstream_names_0_6.py lists them), with the same parameter names, enum members
and struct properties, so that the gap cannot reopen. Importing the module loads no library."""

import inspect

import pytest
from upstream_names_0_6 import CLASSES, ENUMS, FUNCTIONS, VALUES

import nccl.bindings.nccl as b

# The creation functions keep the 0.3.1 form (slot address first) as their signature; the
# 0.6.0 form (no slot, a Comm or Window returned) is chosen by argument count.
TWO_FORMS = {"comm_init_rank", "comm_init_rank_config", "comm_init_rank_scalable", "comm_split", "comm_shrink",
             "comm_grow", "comm_window_register"}

ALL = sorted(set(FUNCTIONS) | set(ENUMS) | set(CLASSES) | set(VALUES))


def test_the_reference_lists_139_names():
    assert len(ALL) == 139


@pytest.mark.parametrize("name", sorted(ALL))
def test_name_exists(name):
    assert hasattr(b, name), f"nccl.bindings.nccl lacks nccl4py 0.6.0's {name}"
    assert name in b.__all__


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - TWO_FORMS))
def test_parameter_names(name):
    assert tuple(inspect.signature(getattr(b, name)).parameters) == FUNCTIONS[name]


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_enum_members(name):
    enum = getattr(b, name)
    assert {member: int(getattr(enum, member)) for member in ENUMS[name]} == ENUMS[name]


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_class_members(name):
    cls = getattr(b, name)
    assert [m for m in CLASSES[name] if not hasattr(cls, m)] == []


def test_values_are_numpy_dtypes():
    import numpy as np

    assert all(isinstance(getattr(b, name), np.dtype) for name in VALUES)


def test_old_spellings_are_aliases():
    assert b.RedOp_dummy is b.RedOpDummy and b.ResourceWindow_vidmem is b.ResourceWindowVidmem
    assert b.lla2a_calc_slots is b.ll_a2a_calc_slots
