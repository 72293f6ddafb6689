"""DLPack 1.0 ABI as ctypes structures, and reading a capsule (consumer side).

Declared from the DLPack specification (dlpack.h). ``parse_capsule`` never loads the HIP runtime.
"""

import ctypes
import enum

__all__ = [
    "DLDeviceType",
    "DLDataTypeCode",
    "DLDevice",
    "DLDataType",
    "DLTensor",
    "DLManagedTensor",
    "DLPackVersion",
    "DLManagedTensorVersioned",
    "DLPACK_FLAG_BITMASK_READ_ONLY",
    "DLPACK_FLAG_BITMASK_IS_COPIED",
    "CAPSULE_NAME",
    "VERSIONED_CAPSULE_NAME",
    "USED_CAPSULE_NAME",
    "USED_VERSIONED_CAPSULE_NAME",
    "parse_capsule",
]


class DLDeviceType(enum.IntEnum):
    kCPU = 1
    kCUDA = 2
    kCUDAHost = 3
    kOpenCL = 4
    kVulkan = 7
    kMetal = 8
    kVPI = 9
    kROCM = 10
    kROCMHost = 11
    kExtDev = 12
    kCUDAManaged = 13


class DLDataTypeCode(enum.IntEnum):
    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLOpaqueHandle = 3
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))),
]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]

DLPACK_FLAG_BITMASK_READ_ONLY = 1 << 0
DLPACK_FLAG_BITMASK_IS_COPIED = 1 << 1

CAPSULE_NAME = "dltensor"
VERSIONED_CAPSULE_NAME = "dltensor_versioned"
USED_CAPSULE_NAME = "used_dltensor"
USED_VERSIONED_CAPSULE_NAME = "used_dltensor_versioned"


def parse_capsule(capsule):
    """Read an unconsumed DLPack capsule without taking ownership.

    Returns ``(dl_tensor, is_readonly, used_name)``: the capsule's ``DLTensor`` (a ctypes view
    of the producer's memory, valid while the capsule or its consumer holds the tensor), whether
    the producer marked it read-only, and the name a consumer renames the capsule to. Raises
    ``BufferError`` for an object that is not a DLPack capsule or one already consumed.
    """
    from .. import _hip

    versioned, address = _hip.capsule_info(capsule)
    if versioned:
        managed = DLManagedTensorVersioned.from_address(address)
        readonly = bool(managed.flags & DLPACK_FLAG_BITMASK_READ_ONLY)
        used_name = USED_VERSIONED_CAPSULE_NAME
    else:
        managed = DLManagedTensor.from_address(address)
        readonly = False
        used_name = USED_CAPSULE_NAME
    managed._capsule = capsule  # the view must not outlive the capsule it reads
    return managed.dl_tensor, readonly, used_name
