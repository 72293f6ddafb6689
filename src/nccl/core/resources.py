"""Communicator-owned resources (docs/compatibility.md#resources). The classes are implemented in C and are
created by Communicator methods only; ``close()`` releases them, as do the communicator's
``destroy()``, ``abort()`` and ``close_all_resources()``. The handle views and ``CftLeInfo``
(nccl.core._team) are here too, as in nccl4py 0.6.0's module."""

from nccl._ext import (  # implemented in C
    CommResource, CustomRedOp, DevCommResource, RegisteredBufferHandle, RegisteredWindowHandle,
)
from nccl.core._team import CftLeInfo, GinBarrierHandle, LLA2AHandle, LsaBarrierHandle, MultimemHandle

__all__ = ["MultimemHandle", "LsaBarrierHandle", "GinBarrierHandle", "LLA2AHandle", "RegisteredBufferHandle",
           "RegisteredWindowHandle", "CftLeInfo", "CustomRedOp", "DevCommResource", "CommResource"]
