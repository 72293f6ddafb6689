# Stub of nccl.core.cuda (docs/architecture.md#stream-resolution). Device and Stream are cuda.core's (real or the shim).
from types import TracebackType
from typing import Any

from nccl.core.typing import NcclDeviceSpec, NcclEventSpec, NcclStreamSpec

__all__ = ["get_stream_ptr", "get_event_ptr", "get_device_id", "get_cuda_device", "get_cuda_stream", "CudaDeviceContext",
           "get_num_devices"]

def get_stream_ptr(stream: NcclStreamSpec | None = None) -> int:
    """The stream handle (an int) that a stream= argument passes to the library: None is 0, an int is
    used as is, a cuda.core/torch/cupy Stream or any __cuda_stream__ object gives its handle.
    Raises TypeError("stream must not be a bool") for bool, NcclInvalid for anything else and
    for negative handles.
    """
def get_event_ptr(event: NcclEventSpec | None) -> int:
    """The event handle (an int) of an event spec: an int is used as is, a cuda.core Event (real
    or the shim's) or anything with a ``handle`` gives ``int(event.handle)``. bool is refused, as
    for streams; the C core calls this for NCCLCollConfig.launch_completion_event.
    """
def get_device_id(device: NcclDeviceSpec | None = None) -> int:
    """An int is returned as is, a Device gives its ``device_id``, None the current device."""
def get_cuda_device(device_id: NcclDeviceSpec | None = None) -> Any:
    """The cuda.core Device for an ordinal (None: the current device)."""
def get_cuda_stream(stream: NcclStreamSpec | None = None) -> Any:
    """A cuda.core Stream for a stream spec (None: the default stream, handle 0)."""
def get_num_devices() -> int:
    """The number of devices of the runtime behind cuda.core."""

class CudaDeviceContext:
    """``with CudaDeviceContext(device):`` makes ``device`` current and restores the previous
    current device on exit.
    """
    def __init__(self, device: NcclDeviceSpec | None) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool: ...
