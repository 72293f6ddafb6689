"""Communicator-owned resources (docs/compatibility.md#resources). The classes are implemented in C and are
created by Communicator methods only; ``close()`` releases them, as do the communicator's
``destroy()``, ``abort()`` and ``close_all_resources()``."""

from nccl._ext import (  # implemented in C
    CommResource, CustomRedOp, DevCommResource, RegisteredBufferHandle, RegisteredWindowHandle,
)


__all__ = ["CommResource", "RegisteredBufferHandle", "RegisteredWindowHandle", "CustomRedOp",
           "DevCommResource"]
