"""Reading a DLPack capsule (consumer side), through nccl._ext.

The DLPack ABI is declared once, in C (src/include/dlpack_abi.h): ``nccl._ext._dlpack_read`` reads
a capsule's tensor there, with the code the buffer resolver uses (src/ext/buffer/buffer_dlpack.c), and
the enums below are built from its values (``nccl._ext._dlpack_codes``). ``parse_capsule`` never
loads the HIP runtime (nor does nccl._ext load a library).
"""

import enum
from typing import NamedTuple

from nccl import _ext

__all__ = [
    "DLDeviceType",
    "DLDataTypeCode",
    "DEVICE_ACCESSIBLE",
    "DLDevice",
    "DLDataType",
    "DLTensor",
    "parse_capsule",
]


# ((name after "kDL", value, device-accessible), ...), ((name after "kDL", value), ...): the device
# types and data type codes of src/include/dlpack_abi.h
_DEVICE_TYPES, _DATATYPE_CODES = _ext._dlpack_codes

DLDeviceType = enum.IntEnum("DLDeviceType", [(f"k{name}", value) for name, value, _ in _DEVICE_TYPES],
                            module=__name__)
DLDeviceType.__doc__ = "DLPack's DLDeviceType (src/include/dlpack_abi.h)."
DLDataTypeCode = enum.IntEnum("DLDataTypeCode", [(f"kDL{name}", value) for name, value in _DATATYPE_CODES],
                              module=__name__)
DLDataTypeCode.__doc__ = "DLPack's DLDataTypeCode (src/include/dlpack_abi.h)."


# The device types whose memory a device can reach (device memory, pinned or managed host memory):
# the buffer resolver's rule.
DEVICE_ACCESSIBLE = frozenset(DLDeviceType(value) for _, value, accessible in _DEVICE_TYPES if accessible)


class DLDevice(NamedTuple):
    """A DLTensor's device."""

    device_type: int
    device_id: int


class DLDataType(NamedTuple):
    """A DLTensor's element type."""

    code: int
    bits: int
    lanes: int


class DLTensor(NamedTuple):
    """The fields of a capsule's DLTensor, read when the capsule was parsed."""

    data: int
    device: DLDevice
    ndim: int
    dtype: DLDataType
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    byte_offset: int


def parse_capsule(capsule):
    """Read an unconsumed DLPack capsule without taking ownership.

    Returns ``(dl_tensor, is_readonly, used_name)``: the capsule's ``DLTensor`` fields (``data``
    is the producer's address, valid while the capsule or its consumer holds the tensor), whether
    the producer marked it read-only, and the name a consumer renames the capsule to. Raises
    ``BufferError`` for an object that is not a DLPack capsule or one already consumed.
    """
    from .. import _hip

    _hip.capsule_info(capsule)  # BufferError saying why anything else is not a fresh capsule
    used_name, readonly, (data, device, ndim, dtype, shape, strides, byte_offset) = _ext._dlpack_read(capsule)
    tensor = DLTensor(data, DLDevice(*device), ndim, DLDataType(*dtype), shape, strides, byte_offset)
    return tensor, readonly, used_name
