"""Memory from ncclMemAlloc (docs/compatibility.md#memory): ``mem_alloc``/``mem_free`` and the
``NcclMemoryResource`` behind them, a ``cuda.core`` MemoryResource per thread and device."""

from __future__ import annotations

import threading

from cuda.core import Buffer, MemoryResource

from nccl.core.cuda import CudaDeviceContext, get_device_id
from nccl.core.typing import NcclDeviceSpec, NcclStreamSpec

__all__ = ["NcclMemoryResource", "get_memory_resource", "mem_alloc", "mem_free"]


def _host_flavour() -> bool:
    from nccl.bindings import nccl as _b

    return _b.get_library_flavour() == "host"


class NcclMemoryResource(MemoryResource):
    """Allocates with ncclMemAlloc and frees with ncclMemFree on one device.

    The memory is device memory, except on the host flavour, where it is host memory and the
    resource says so (its Buffers then export DLPack kDLCPU).
    """

    __slots__ = ("_device_id", "_host")

    def __init__(self, device_id: int) -> None:
        self._handle = None
        self._device_id = int(device_id)
        self._host = _host_flavour()

    def allocate(self, size: int, stream: NcclStreamSpec | None = None) -> Buffer:
        """``size`` bytes from ncclMemAlloc (the allocation may be rounded up); the stream is unused."""
        from nccl.bindings import nccl as _b

        ptr = _b.mem_alloc(size)
        return Buffer.from_handle(ptr, size, mr=self)

    def deallocate(self, ptr: int, size: int, stream: NcclStreamSpec | None = None) -> None:
        """ncclMemFree; the stream is unused."""
        from nccl.bindings import nccl as _b

        ptr = int(ptr)
        if ptr:
            _b.mem_free(ptr)

    @property
    def is_device_accessible(self) -> bool:
        """Whether the device can access the memory (False on the host flavour)."""
        return not self._host

    @property
    def is_host_accessible(self) -> bool:
        """Whether the host can access the memory (True on the host flavour only)."""
        return self._host

    @property
    def device_id(self) -> int:
        """The device the memory is allocated on."""
        return self._device_id

    def __repr__(self) -> str:
        return f"<NcclMemoryResource device_id={self._device_id}>"


_tls = threading.local()


def get_memory_resource(device_id: int) -> NcclMemoryResource:
    """This thread's NcclMemoryResource for the device."""
    cache: dict[int, NcclMemoryResource] | None = _tls.__dict__.get("resources")
    if cache is None:
        cache = _tls.resources = {}
    device_id = int(device_id)
    mr = cache.get(device_id)
    if mr is None:
        mr = cache[device_id] = NcclMemoryResource(device_id)
    return mr


def mem_alloc(size: int, device: NcclDeviceSpec | None = None) -> Buffer:
    """``size`` bytes of ncclMemAlloc memory on ``device`` (None: the current one), as a
    cuda.core Buffer. The device is made current for the call and restored afterwards."""
    device_id = get_device_id(device)
    with CudaDeviceContext(device_id):
        return get_memory_resource(device_id).allocate(size)


def mem_free(buf: Buffer) -> None:
    """Frees a Buffer from mem_alloc now (ncclMemFree); garbage collection frees it otherwise."""
    buf.close()
