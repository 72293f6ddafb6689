"""torch.distributed on nccl4py: the ``"nccl4py"`` backend (docs/api/torch.md).

``import nccl.torch`` registers it, and so does torch itself at ``import torch`` through the
``torch.backends`` entry point this package declares (nccl._torch_autoload; not with
TORCH_DEVICE_BACKEND_AUTOLOAD=0)::

    import torch.distributed as dist
    dist.init_process_group("nccl4py")   # env://, tcp:// or file://, as with gloo

CPU tensors run on the bundled host backend, CUDA/ROCm tensors on the NCCL/RCCL library nccl4py
loads, on torch's current stream. Registering imports no library and creates nothing; the
process group class is imported by the first ``init_process_group``/``new_group``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch.distributed

    from nccl.torch._group import ProcessGroupNccl4py

__all__ = ["BACKEND_NAME", "ProcessGroupNccl4py", "register"]

BACKEND_NAME = "nccl4py"


def _create(store: torch.distributed.Store, rank: int, size: int, timeout: timedelta) -> ProcessGroupNccl4py:
    """The creator torch calls for each new group of the backend (register_backend's ``func``)."""
    from nccl.torch._group import ProcessGroupNccl4py

    return ProcessGroupNccl4py(store, rank, size, timeout)


def register() -> None:
    """Registers the ``"nccl4py"`` backend with torch.distributed (for CPU and CUDA tensors).
    Idempotent. It does not become the default backend of either device."""
    import torch.distributed as dist

    if BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu", "cuda"])


def __getattr__(name: str) -> Any:
    if name == "ProcessGroupNccl4py":
        from nccl.torch._group import ProcessGroupNccl4py

        return ProcessGroupNccl4py
    raise AttributeError(f"module 'nccl.torch' has no attribute {name!r}")


register()
